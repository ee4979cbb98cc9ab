//! The task graph: `depends_on` (what a task waits for) and `parent` (subtasks). Cycles
//! are refused when they would be written and reported by `check`.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
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

/// What `deps` and `tree` follow of a task: the tasks it waits for and its parent.
struct Edges {
    depends_on: Vec<String>,
    parent: Option<String>,
}

type Head<'a> = crate::index::files::Head<'a>;

/// The edges of every task that has any, by id, for the reverse lookups of `deps` and
/// `tree`: the archived ones too (a task on the board wins over an archived one of the
/// same id, even when the board's has no edges). Taken from the heads the read index keeps
/// (trusted only where the index trusts a cached document; any other file is read again),
/// so no task the index holds unchanged is parsed, and only the tasks with edges are kept.
fn all_edges(board: &Board) -> Result<HashMap<String, Edges>> {
    let edges_of = |h: &Head<'_>| {
        (!h.depends_on.is_empty() || h.parent.is_some()).then(|| Edges {
            depends_on: h.depends_on.iter().map(|d| d.to_string()).collect(),
            parent: h.parent.as_deref().map(str::to_string),
        })
    };
    let archived = std::sync::Mutex::new(HashMap::new());
    crate::index::each_head(board, Region::Tasks, true, &|name, h| {
        if let Some(e) = edges_of(h) {
            lock(&archived).insert(name.to_string(), e);
        }
    })?;
    let archived = archived.into_inner().unwrap_or_else(|p| p.into_inner());
    let found = std::sync::Mutex::new((HashMap::new(), Vec::new()));
    crate::index::each_head(board, Region::Tasks, false, &|name, h| {
        let edges = edges_of(h);
        let shadows = archived.contains_key(name);
        if edges.is_some() || shadows {
            let mut found = lock(&found);
            if let Some(e) = edges {
                found.0.insert(name.to_string(), e);
            }
            if shadows {
                found.1.push(name.to_string());
            }
        }
    })?;
    let (board_edges, shadowed) = found.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut all = archived;
    for name in shadowed {
        all.remove(&name);
    }
    all.extend(board_edges);
    Ok(all)
}

/// What a graph shows of a task: its title, status, and whether it is archived.
struct Shown {
    title: String,
    status: Option<String>,
    archived: bool,
}

/// What is shown of each of `ids` that is a task (on the board, else archived), from the
/// heads as [`all_edges`] takes them.
fn shown(board: &Board, ids: &HashSet<String>) -> Result<HashMap<String, Shown>> {
    let read = |archived: bool| -> Result<HashMap<String, Shown>> {
        let found = std::sync::Mutex::new(HashMap::new());
        crate::index::each_head(board, Region::Tasks, archived, &|name, h| {
            if ids.contains(name) {
                let task = Shown {
                    title: h.title.to_string(),
                    status: h.status.as_deref().map(str::to_string),
                    archived,
                };
                lock(&found).insert(name.to_string(), task);
            }
        })?;
        Ok(found.into_inner().unwrap_or_else(|p| p.into_inner()))
    };
    let mut tasks = read(true)?;
    tasks.extend(read(false)?);
    Ok(tasks)
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
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

fn node(tasks: &HashMap<String, Shown>, id: &str) -> Task {
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

/// A tree below `id` along `next` (ids), each id expanded once; each node's task holds
/// only its id until [`fill`] shows it.
fn expand(id: &str, next: &dyn Fn(&str) -> Vec<String>, seen: &mut HashSet<String>) -> Vec<Node> {
    let mut out = Vec::new();
    for child in next(id) {
        let task = node(&HashMap::new(), &child);
        let (children, repeated) = if seen.insert(child.clone()) {
            (expand(&child, next, seen), false)
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

/// The ids in trees made by [`expand`].
fn ids_in(nodes: &[Node], ids: &mut HashSet<String>) {
    for n in nodes {
        ids.insert(n.task.id.clone());
        ids_in(&n.children, ids);
    }
}

/// Shows each task of trees made by [`expand`].
fn fill(nodes: &mut [Node], tasks: &HashMap<String, Shown>) {
    for n in nodes {
        n.task = node(tasks, &n.task.id);
        fill(&mut n.children, tasks);
    }
}

/// The sorted ids of the tasks whose edges `linked` says lead to `t`, by `edges`.
fn linking(edges: &HashMap<String, Edges>, linked: impl Fn(&Edges) -> bool) -> Vec<String> {
    let mut v: Vec<String> = edges
        .iter()
        .filter(|(_, e)| linked(e))
        .map(|(id, _)| id.clone())
        .collect();
    v.sort();
    v
}

/// `deps ID`: what the task waits for (transitively) and what waits for it.
pub fn deps(board: &Board, id: &str) -> Result<Deps> {
    let edges = all_edges(board)?;
    let forward = |t: &str| {
        edges
            .get(t)
            .map(|e| e.depends_on.clone())
            .unwrap_or_default()
    };
    let backward = |t: &str| linking(&edges, |e| e.depends_on.iter().any(|x| x == t));
    let mut waits_for = expand(id, &forward, &mut HashSet::from([id.to_string()]));
    let mut waited_on_by = expand(id, &backward, &mut HashSet::from([id.to_string()]));
    let mut ids = HashSet::from([id.to_string()]);
    ids_in(&waits_for, &mut ids);
    ids_in(&waited_on_by, &mut ids);
    let tasks = shown(board, &ids)?;
    fill(&mut waits_for, &tasks);
    fill(&mut waited_on_by, &tasks);
    Ok(Deps {
        task: node(&tasks, id),
        waits_for,
        waited_on_by,
    })
}

/// `tree ID`: the task's subtasks (tasks whose `parent` is it), recursively.
pub fn tree(board: &Board, id: &str) -> Result<Node> {
    let edges = all_edges(board)?;
    let children = |t: &str| linking(&edges, |e| e.parent.as_deref() == Some(t));
    let mut children = expand(id, &children, &mut HashSet::from([id.to_string()]));
    let mut ids = HashSet::from([id.to_string()]);
    ids_in(&children, &mut ids);
    let tasks = shown(board, &ids)?;
    fill(&mut children, &tasks);
    Ok(Node {
        task: node(&tasks, id),
        children,
        repeated: false,
    })
}
