//! The task graph: `depends_on` (what a task waits for) and `parent` (subtasks). Cycles
//! are refused when they would be written and reported by `check`.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

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

/// Does a task with this id exist, on the board or in the archive?
pub fn task_exists(board: &Board, id: &str) -> bool {
    crate::id::validate(id).is_ok()
        && (std::fs::symlink_metadata(board.doc_path(Region::Tasks, id)).is_ok()
            || std::fs::symlink_metadata(board.archive_dir(Region::Tasks).join(format!("{id}.md")))
                .is_ok())
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

fn node(tasks: &HashMap<String, Document>, id: &str) -> Value {
    match tasks.get(id) {
        Some(d) if d.archived => {
            json!({"id": id, "title": d.title(), "status": d.status(), "archived": true})
        }
        Some(d) => json!({"id": id, "title": d.title(), "status": d.status()}),
        None => json!({"id": id, "title": null, "status": null, "missing": true}),
    }
}

/// A tree below `id` along `next` (ids), each id expanded once.
fn expand(
    tasks: &HashMap<String, Document>,
    id: &str,
    next: &dyn Fn(&str) -> Vec<String>,
    seen: &mut HashSet<String>,
) -> Vec<Value> {
    let mut out = Vec::new();
    for child in next(id) {
        let mut n = node(tasks, &child);
        if seen.insert(child.clone()) {
            n["children"] = Value::Array(expand(tasks, &child, next, seen));
        } else {
            n["children"] = Value::Array(Vec::new());
            n["repeated"] = true.into();
        }
        out.push(n);
    }
    out
}

/// `deps ID`: what the task waits for (transitively) and what waits for it.
pub fn deps(board: &Board, id: &str) -> Result<Value> {
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
    let mut root = node(&tasks, id);
    root["waits_for"] = Value::Array(expand(
        &tasks,
        id,
        &forward,
        &mut HashSet::from([id.to_string()]),
    ));
    root["waited_on_by"] = Value::Array(expand(
        &tasks,
        id,
        &backward,
        &mut HashSet::from([id.to_string()]),
    ));
    Ok(root)
}

/// `tree ID`: the task's subtasks (tasks whose `parent` is it), recursively.
pub fn tree(board: &Board, id: &str) -> Result<Value> {
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
    let mut root = node(&tasks, id);
    root["children"] = Value::Array(expand(
        &tasks,
        id,
        &children,
        &mut HashSet::from([id.to_string()]),
    ));
    Ok(root)
}

/// Renders a tree of nodes (`children`) as indented text lines.
pub fn render(nodes: &[Value], depth: usize, out: &mut String) {
    for n in nodes {
        let status = n["status"].as_str().unwrap_or("missing");
        let title = n["title"].as_str().unwrap_or("");
        let more = if n.get("repeated").is_some() {
            " (see above)"
        } else if n.get("archived").is_some() {
            " (archived)"
        } else {
            ""
        };
        out.push_str(&format!(
            "{}{} [{status}] {title}{more}\n",
            "  ".repeat(depth),
            n["id"].as_str().unwrap_or("")
        ));
        if let Some(children) = n["children"].as_array() {
            render(children, depth + 1, out);
        }
    }
}
