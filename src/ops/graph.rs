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

/// What `deps` and `tree` show of a task, and follow.
struct GraphTask {
    title: String,
    status: Option<String>,
    archived: bool,
    depends_on: Vec<String>,
    parent: Option<String>,
}

/// Every task, by id, for the reverse lookups of `deps` and `tree`: the archived ones
/// too, so a dependency that was done and archived shows as done, not missing (a task on
/// the board wins over an archived one of the same id). Each is kept as what the graph
/// needs of it, made on the thread that read it: a big board is never held parsed.
fn all_tasks(board: &Board) -> Result<HashMap<String, GraphTask>> {
    let read = |archived: bool| -> Result<Vec<(String, GraphTask)>> {
        let found = std::sync::Mutex::new(Vec::new());
        let each = |d: Document| {
            let task = GraphTask {
                title: d.title().to_string(),
                status: d.status().map(str::to_string),
                archived: d.archived,
                depends_on: d.list("depends_on"),
                parent: d.str("parent").map(str::to_string),
            };
            let mut found = found.lock().unwrap_or_else(|p| p.into_inner());
            found.push((d.file_id, task));
        };
        scan::each_prefiltered(
            board,
            &[Region::Tasks],
            archived,
            &[],
            &|_| true,
            &|_| true,
            &each,
        )?;
        Ok(found.into_inner().unwrap_or_else(|p| p.into_inner()))
    };
    let mut tasks: HashMap<String, GraphTask> = read(true)?.into_iter().collect();
    tasks.extend(read(false)?);
    Ok(tasks)
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

fn node(tasks: &HashMap<String, GraphTask>, id: &str) -> Task {
    match tasks.get(id) {
        Some(t) => Task {
            id: id.to_string(),
            title: Some(t.title.clone()),
            status: t.status.clone(),
            missing: false,
            archived: t.archived,
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
    tasks: &HashMap<String, GraphTask>,
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
            .map(|d| d.depends_on.clone())
            .unwrap_or_default()
    };
    let backward = |t: &str| {
        let mut v: Vec<String> = tasks
            .iter()
            .filter(|(_, d)| d.depends_on.iter().any(|x| x == t))
            .map(|(id, _)| id.clone())
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
            .iter()
            .filter(|(_, d)| d.parent.as_deref() == Some(t))
            .map(|(id, _)| id.clone())
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
