//! `completion_requires`: checks that must hold before a task may enter a success state.
//! Deterministic verification of what an agent says it did:
//!
//! ```yaml
//! completion_requires:
//!   - doc: solutions/{id}/design.md     # this document exists and matches `where`
//!     where: status=approved
//!   - region: observations              # the count of matching documents
//!     where: about={id} severity=high,critical status!=resolved
//!     count: 0                          # exactly; without `count`, at least `min` (default 1)
//!   - run: cargo test                   # sh -c in the project root, exit 0 within the timeout
//!     timeout: 10m
//! ```

use std::path::{Component, Path};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::scan;
use crate::store;

const DEFAULT_TIMEOUT: &str = "10m";

/// Runs every requirement of `task`; the first that fails refuses the transition (exit 3)
/// and says which one and why. A malformed requirement is an invalid document (exit 6).
pub fn check(board: &Board, task: &Document, transition: &str) -> Result<()> {
    let Some(reqs) = task.get("completion_requires") else {
        return Ok(());
    };
    let path = task.rel_path();
    let Value::Array(reqs) = reqs else {
        return Err(Error::invalid_doc(
            &path,
            "completion_requires must be a list of requirements",
        ));
    };
    let id = task.file_id.as_str();
    for (i, req) in reqs.iter().enumerate() {
        let n = i + 1;
        let bad =
            |why: &str| Error::invalid_doc(&path, format!("completion_requires item {n}: {why}"));
        let Value::Object(req) = req else {
            return Err(bad("must be a mapping with doc:, region: or run:"));
        };
        let text = |key: &str| {
            req.get(key)
                .and_then(Value::as_str)
                .map(|s| s.replace("{id}", id))
        };
        let failed = if let Some(doc) = text("doc") {
            check_doc(board, &doc, text("where").as_deref()).map_err(|e| bad(&e))?
        } else if let Some(region) = text("region") {
            let region = Region::parse(&region)
                .ok_or_else(|| bad("region must be tasks, observations or questions"))?;
            let count = req
                .get("count")
                .map(|v| v.as_u64().ok_or_else(|| bad("count must be a number")))
                .transpose()?;
            let min = req
                .get("min")
                .map(|v| v.as_u64().ok_or_else(|| bad("min must be a number")))
                .transpose()?;
            check_region(
                board,
                region,
                text("where").as_deref().unwrap_or(""),
                count,
                min.unwrap_or(1),
            )
            .map_err(|e| bad(&e))?
        } else if let Some(cmd) = text("run") {
            let timeout = text("timeout").unwrap_or_else(|| DEFAULT_TIMEOUT.into());
            let timeout = crate::time::parse_duration(&timeout)
                .ok_or_else(|| bad("timeout must be a duration like 30s or 10m"))?;
            check_run(board, id, n, &cmd, timeout)?
        } else {
            return Err(bad("needs one of doc:, region: or run:"));
        };
        if let Some(why) = failed {
            return Err(Error::conflict(
                &path,
                format!(
                    "transition '{transition}' refused: completion requirement {n} of {} failed: {why}",
                    reqs.len()
                ),
            ));
        }
    }
    Ok(())
}

fn query(text: &str) -> std::result::Result<Query, String> {
    Query::parse(&[text]).map_err(|e| e.to_string().lines().next().unwrap_or("").to_string())
}

/// A path inside the board, relative, with no `..`: requirements never read outside it.
fn inside(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
}

fn check_doc(
    board: &Board,
    rel: &str,
    where_: Option<&str>,
) -> std::result::Result<Option<String>, String> {
    if !inside(rel) {
        return Err(format!(
            "doc '{rel}' must be a relative path inside the board"
        ));
    }
    let q = where_.map(query).transpose()?;
    let path = board.root.join(rel);
    let text = match store::read_text(&path, board.config.limits.max_doc_bytes) {
        Ok(t) => t,
        Err(Error::NotFound { .. }) => return Ok(Some(format!("{rel} does not exist"))),
        Err(e) => return Ok(Some(e.to_string())),
    };
    let Some(q) = q else { return Ok(None) };
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("doc");
    match Document::parse(Region::Tasks, stem, text, board.config.yaml_limits()) {
        Ok(doc) if q.matches(&doc, chrono::Utc::now()) => Ok(None),
        Ok(_) => Ok(Some(format!(
            "{rel} does not match '{}'",
            where_.unwrap_or("")
        ))),
        Err(e) => Ok(Some(format!("{rel}: {e}"))),
    }
}

fn check_region(
    board: &Board,
    region: Region,
    where_: &str,
    count: Option<u64>,
    min: u64,
) -> std::result::Result<Option<String>, String> {
    let q = query(where_)?;
    let now = chrono::Utc::now();
    let found =
        scan::scan_matching(board, &[region], |d| q.matches(d, now)).map_err(|e| e.to_string())?;
    let n = found.docs.len() as u64;
    let ids: Vec<&str> = found.docs.iter().map(|d| d.id()).take(5).collect();
    let listed = if ids.is_empty() {
        String::new()
    } else {
        format!(" ({})", ids.join(", "))
    };
    Ok(match count {
        Some(c) if n != c => Some(format!(
            "{n} {} match '{where_}'{listed}, expected {c}",
            region.dir()
        )),
        None if n < min => Some(format!(
            "{n} {} match '{where_}', expected at least {min}",
            region.dir()
        )),
        _ => None,
    })
}

/// Runs a command check; its output goes to `.state/runs/`. Returns why it failed.
fn check_run(
    board: &Board,
    id: &str,
    n: usize,
    cmd: &str,
    timeout: chrono::Duration,
) -> Result<Option<String>> {
    let stamp = crate::time::now().format("%Y%m%dT%H%M%S%.3fZ");
    let (mut command, log_path) =
        crate::runs::shell(board, &format!("check-{id}-{n}-{stamp}.log"), cmd)?;
    command.stdin(Stdio::null());
    let project = board.project();
    let mut child = command
        .spawn()
        .map_err(|e| Error::io(project, "run a completion check in", e))?;
    let limit = timeout.to_std().unwrap_or(Duration::from_secs(600));
    let start = Instant::now();
    let rel_log = board.rel(&log_path);
    loop {
        match child
            .try_wait()
            .map_err(|e| Error::io(&log_path, "wait for a completion check", e))?
        {
            Some(status) if status.success() => return Ok(None),
            Some(status) => {
                return Ok(Some(format!(
                    "`{cmd}` exited with {} (output in {rel_log})",
                    status.code().map_or("a signal".into(), |c| c.to_string())
                )));
            }
            None if start.elapsed() > limit => {
                // The whole process group: the command's children too.
                crate::process::kill_group(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return Ok(Some(format!(
                    "`{cmd}` did not finish within {} (output in {rel_log})",
                    crate::time::format_duration(timeout)
                )));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}
