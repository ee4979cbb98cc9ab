//! The task graph: `depends_on` (what a task waits for) and `parent` (subtasks). Cycles
//! are refused when they would be written and reported by `check`.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::scan;
use crate::store;

/// A task named in `depends_on` or `parent`: on the board, or moved to the archive (an
/// archived task stays what it was: an archived done task is done).
pub fn read_task(board: &Board, id: &str) -> Option<Document> {
    crate::id::validate(id).ok()?;
    match store::read_doc(board, Region::Tasks, id) {
        Ok(d) => Some(d),
        Err(Error::NotFound { .. }) => super::archive::read_archived(board, Region::Tasks, id).ok(),
        Err(_) => None,
    }
}

/// If `id` depending on `deps` would close a cycle, the cycle as a path from `id` back to
/// itself. Follows depends_on through the task files (only those reachable from `deps`).
pub fn cycle_through(board: &Board, id: &str, deps: &[String]) -> Option<Vec<String>> {
    let mut seen: HashSet<String> = HashSet::new();
    // Depth-first, keeping the path so the cycle can be shown.
    fn walk(
        board: &Board,
        target: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut HashSet<String>,
    ) -> bool {
        if at == target {
            return true;
        }
        if !seen.insert(at.to_string()) {
            return false;
        }
        let Ok(doc) = store::read_doc(board, Region::Tasks, at) else {
            return false;
        };
        for dep in doc.list("depends_on") {
            path.push(dep.clone());
            if walk(board, target, &dep, path, seen) {
                return true;
            }
            path.pop();
        }
        false
    }
    for dep in deps {
        let mut path = vec![id.to_string(), dep.clone()];
        if walk(board, id, dep, &mut path, &mut seen) {
            return Some(path);
        }
    }
    None
}

/// Refuses a depends_on list that would make a cycle (exit 6).
pub fn refuse_cycle(board: &Board, id: &str, deps: &[String]) -> Result<()> {
    match cycle_through(board, id, deps) {
        Some(path) => Err(Error::input(format!(
            "tasks/{id}.md: depends_on would make a dependency cycle: {}; nothing written",
            path.join(" -> ")
        ))),
        None => Ok(()),
    }
}

/// Every task, by id, for the reverse lookups of `deps` and `tree`: the archived ones
/// too, so a dependency that was done and archived shows as done, not missing.
fn all_tasks(board: &Board) -> Result<HashMap<String, Document>> {
    let archived = scan::scan_archive(board, &[Region::Tasks], |_| true)?;
    let live = scan::scan(board, &[Region::Tasks])?;
    Ok(archived
        .docs
        .into_iter()
        .chain(live.docs)
        .map(|d| (d.file_id.clone(), d))
        .collect())
}

/// A task in a graph: its id, and its title and status when its file exists.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Task {
    pub id: String,
    pub title: Option<String>,
    pub status: Option<String>,
    /// Named (in depends_on or as a parent) but no such task file.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub missing: bool,
    /// Found in archive/ (a finished task moved there).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub archived: bool,
}

/// A task and the tasks below it along one relation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Node {
    #[serde(flatten)]
    pub task: Task,
    pub children: Vec<Node>,
    /// Already shown higher up; its children are not repeated.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
}

/// `deps`: what a task waits for (transitively) and what waits for it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Deps {
    #[serde(flatten)]
    pub task: Task,
    pub waits_for: Vec<Node>,
    pub waited_on_by: Vec<Node>,
}

fn node(tasks: &HashMap<String, Document>, id: &str) -> Task {
    match tasks.get(id) {
        Some(d) => Task {
            id: id.to_string(),
            title: Some(d.title().to_string()),
            status: d.status().map(str::to_string),
            missing: false,
            archived: d.archived,
        },
        None => Task {
            id: id.to_string(),
            title: None,
            status: None,
            missing: true,
            archived: false,
        },
    }
}

/// A tree below `id` along `next` (ids), each id expanded once.
fn expand(
    tasks: &HashMap<String, Document>,
    id: &str,
    next: &dyn Fn(&str) -> Vec<String>,
    seen: &mut HashSet<String>,
) -> Vec<Node> {
    let mut out = Vec::new();
    for child in next(id) {
        let task = node(tasks, &child);
        let (children, repeated) = if seen.insert(child.clone()) {
            (expand(tasks, &child, next, seen), false)
        } else {
            (Vec::new(), true)
        };
        out.push(Node {
            task,
            children,
            repeated,
        });
    }
    out
}

/// `deps ID`: what the task waits for (transitively) and what waits for it.
pub fn deps(board: &Board, id: &str) -> Result<Deps> {
    let tasks = all_tasks(board)?;
    let forward = |t: &str| {
        tasks
            .get(t)
            .map(|d| d.list("depends_on"))
            .unwrap_or_default()
    };
    let backward = |t: &str| {
        let mut v: Vec<String> = tasks
            .values()
            .filter(|d| d.list("depends_on").iter().any(|x| x == t))
            .map(|d| d.file_id.clone())
            .collect();
        v.sort();
        v
    };
    Ok(Deps {
        task: node(&tasks, id),
        waits_for: expand(&tasks, id, &forward, &mut HashSet::from([id.to_string()])),
        waited_on_by: expand(&tasks, id, &backward, &mut HashSet::from([id.to_string()])),
    })
}

/// `tree ID`: the task's subtasks (tasks whose `parent` is it), recursively.
pub fn tree(board: &Board, id: &str) -> Result<Node> {
    let tasks = all_tasks(board)?;
    let children = |t: &str| {
        let mut v: Vec<String> = tasks
            .values()
            .filter(|d| d.str("parent") == Some(t))
            .map(|d| d.file_id.clone())
            .collect();
        v.sort();
        v
    };
    Ok(Node {
        task: node(&tasks, id),
        children: expand(&tasks, id, &children, &mut HashSet::from([id.to_string()])),
        repeated: false,
    })
}
