//! `tavern check`: validates the whole board and lists every problem at once.

use std::collections::{HashMap, HashSet};

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::Result;
use crate::scan;

/// One problem, naming the board-relative file it is about (the same type as a source
/// file's problems: a source problem is a board problem).
pub use crate::watch::sources::Problem;

#[derive(Debug, Default, serde::Serialize)]
pub struct Report {
    pub documents: usize,
    pub log_entries: usize,
    pub problems: Vec<Problem>,
    /// A board connected to a remote: how it stands with it (as of the last fetch).
    pub sync: Option<crate::sync::status::SyncState>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

pub fn check(board: &Board) -> Result<Report> {
    let mut report = Report::default();
    let mut push = |path: String, problem: String| report.problems.push(Problem { path, problem });

    // Symlinks anywhere in a region: never followed, always reported.
    for region in Region::ALL {
        let dir = board.region_dir(region);
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                    push(
                        board.rel(&entry.path()),
                        "is a symbolic link; documents must be regular files inside the board"
                            .into(),
                    );
                }
            }
        }
    }

    // Ownership rules (owners: in board.yaml) that overlap with different owners.
    for problem in crate::holds::overlapping_owner_rules(board) {
        push(crate::layout::BOARD_YAML.to_string(), problem);
    }

    let scan = scan::scan(board, &Region::ALL)?;
    for s in &scan.skipped {
        if !s.problem.starts_with("is a symbolic link") {
            push(s.path.clone(), s.problem.clone());
        }
    }
    let workflow = &board.config.workflow;
    let tasks: HashMap<&str, &Document> = scan
        .docs
        .iter()
        .filter(|d| d.region == Region::Tasks)
        .map(|d| (d.id(), d))
        .collect();
    // An archived task is still a task: depending on one (done, then archived) is fine.
    let archived_tasks: HashSet<String> = scan::archive_files(board, Region::Tasks)?
        .into_iter()
        .map(|f| f.id)
        .collect();
    let mut ids: HashMap<&str, String> = HashMap::new();
    for doc in &scan.docs {
        let path = doc.rel_path();
        if let Some(other) = ids.insert(doc.id(), path.clone()) {
            push(
                path.clone(),
                format!("id '{}' is also used by {other}", doc.id()),
            );
        }
        if doc.region != Region::Tasks {
            continue;
        }
        match doc.status() {
            None => push(path.clone(), "has no status".into()),
            Some(s) if !workflow.is_state(s) => push(
                path.clone(),
                format!(
                    "status '{s}' is not a state of the workflow ({})",
                    workflow.states.join(", ")
                ),
            ),
            Some(_) => {}
        }
        for dep in doc.list("depends_on") {
            if !tasks.contains_key(dep.as_str()) && !archived_tasks.contains(&dep) {
                push(
                    path.clone(),
                    format!("depends_on names '{dep}', which is not a task on this board"),
                );
            }
        }
    }
    // Every field against the schema (what a write checks, for what came by hand or by
    // sync), archived documents too: they are read, listed and queried as well.
    let archived = scan::scan_archive(board, &Region::ALL, |_| true)?;
    for s in &archived.skipped {
        push(s.path.clone(), s.problem.clone());
    }
    for doc in scan.docs.iter().chain(&archived.docs) {
        let path = doc.rel_path();
        for (key, value) in &doc.fields {
            // Said above in their own words: a task's status, and what depends_on names.
            if doc.region == Region::Tasks && key == "status" {
                continue;
            }
            if let Some(problem) =
                crate::schema::value_problem(board, doc.region, &path, key, value)
                && !(key == "depends_on" && problem.starts_with("depends_on names"))
            {
                push(path.clone(), problem);
            }
        }
    }
    for cycle in dependency_cycles(&tasks) {
        let first = format!("tasks/{}.md", cycle[0]);
        push(first, format!("dependency cycle: {}", cycle.join(" -> ")));
    }

    let (entries, end, unreadable) = crate::log::read_from(board, 0)?;
    // An archived question is read (by `show`, a waiting agent) as much as a live one: a
    // decision forged there (by hand, or arriving by sync) is reported too.
    let archived_questions = scan::scan_archive(
        board,
        &[Region::Questions],
        crate::ops::decisions::claims_decision,
    )?;
    let questions = scan.docs.iter().chain(&archived_questions.docs);
    for p in forged_decisions(board, questions, &entries) {
        push(p.path, p.problem);
    }
    for u in unreadable {
        push(
            "log.yaml".into(),
            format!("line {}: entry cannot be parsed", u.line),
        );
    }
    // What follows the last readable entry: a torn write, or lines added by hand. (A
    // writer appends each entry in one write, so a reader does not catch one half done.)
    let len = std::fs::metadata(board.log_path()).map_or(0, |m| m.len());
    if end < len {
        let text = std::fs::read(board.log_path()).unwrap_or_default();
        let line = text[..(end as usize).min(text.len())]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        push(
            "log.yaml".into(),
            format!(
                "line {line}: the end of the log cannot be read (a torn entry, or lines added by hand); the next tavern write cuts it"
            ),
        );
    }
    // What interrupted writes left: changes half made or not logged, temp files.
    for left in crate::store::write::leftovers(board)? {
        let what = if left.doc.is_empty() {
            "an interrupted write left an unreadable intent; the next tavern command removes it"
                .to_string()
        } else if left.visible {
            format!(
                "an interrupted write of {} is on disk but may be missing from the log; the next tavern command completes and logs it",
                left.doc
            )
        } else {
            format!(
                "an interrupted write of {} never reached the board; the next tavern command drops it",
                left.doc
            )
        };
        push(left.intent, what);
    }
    for temp in crate::store::write::stale_temps(board)? {
        push(
            temp,
            "a temp file left by an interrupted write; nothing refers to it: remove it (`tavern sweep` does)".into(),
        );
    }
    let gitignore = crate::layout::gitignore(&board.root);
    if let Ok(text) = std::fs::read_to_string(&gitignore)
        && !text
            .lines()
            .any(|l| l.trim() == crate::layout::GITIGNORE_TEMP_PATTERN)
    {
        push(
            crate::layout::GITIGNORE.into(),
            format!(
                "does not ignore temp files: add the line `{}` so that git never commits what an interrupted write leaves",
                crate::layout::GITIGNORE_TEMP_PATTERN
            ),
        );
    }
    // Where the board meets git: documents lost, .state/ recorded, no .gitignore, a
    // document in two places, stale locks.
    report
        .problems
        .extend(crate::sync::health::problems(board, &entries));
    // Knowledge sources: a broken one would silently never run, so it is a board problem.
    let (_, source_problems) = crate::watch::sources::load_all(board);
    report.problems.extend(source_problems);
    // A connected board: claims held here that the remote does not confirm are a problem
    // (another machine may claim the task too); ahead/behind is reported, not a problem.
    report.sync = crate::sync::status::sync_state(board).unwrap_or(None);
    for c in report.sync.iter().flat_map(|s| &s.unconfirmed) {
        report.problems.push(Problem {
            path: format!("tasks/{}.md", c.task),
            problem: format!(
                "claimed by {} here, but the remote '{}' has no record confirming it (a claim made offline with the local flag, or before the board was connected): another machine may claim it too; move it again while the remote is reachable to confirm it",
                c.holder,
                report.sync.as_ref().map_or("", |s| s.remote.as_str())
            ),
        });
    }
    report.documents = scan.docs.len();
    report.log_entries = entries.len();
    report
        .problems
        .sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.problem.cmp(&b.problem)));
    Ok(report)
}

/// Questions whose file claims a human decision that the log does not hold (a hand edit,
/// a file that arrived by sync): it counts as undecided, and a human decides it again.
fn forged_decisions<'a>(
    board: &Board,
    docs: impl Iterator<Item = &'a Document>,
    entries: &[crate::log::Entry],
) -> Vec<Problem> {
    use crate::doc::decision::Decision;
    use crate::ops::decisions;
    let mut about: HashMap<&str, Vec<&crate::log::Entry>> = HashMap::new();
    for e in entries {
        about.entry(e.doc.as_str()).or_default().push(e);
    }
    docs.filter(|d| decisions::claims_decision(d))
        .filter_map(|d| {
            let log = about.get(decisions::log_path(d).as_str());
            let Some(Decision::Forged { says, why }) =
                decisions::derive(board, d, log.map_or(&[][..], Vec::as_slice))
            else {
                return None;
            };
            Some(Problem {
                path: d.rel_path(),
                problem: format!(
                    "forged decision: it says {says}, but {why}; it counts as undecided until a human listed under humans: in board.yaml approves or denies it"
                ),
            })
        })
        .collect()
}

/// Every cycle in the depends_on graph, each once, as a path that returns to its start.
pub fn dependency_cycles(tasks: &HashMap<&str, &Document>) -> Vec<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Active,
        Done,
    }
    let mut marks: HashMap<&str, Mark> = HashMap::new();
    let mut cycles = Vec::new();
    let mut seen_cycles: HashSet<Vec<String>> = HashSet::new();
    let mut ids: Vec<&str> = tasks.keys().copied().collect();
    ids.sort();
    for start in ids {
        if marks.contains_key(start) {
            continue;
        }
        // Iterative DFS: (node, deps, next dep index); `path` mirrors the stack.
        let mut stack: Vec<(&str, Vec<String>, usize)> =
            vec![(start, tasks[start].list("depends_on"), 0)];
        let mut path: Vec<&str> = vec![start];
        marks.insert(start, Mark::Active);
        while let Some((node, deps, i)) = stack.last_mut() {
            if *i >= deps.len() {
                marks.insert(node, Mark::Done);
                stack.pop();
                path.pop();
                continue;
            }
            let dep = deps[*i].clone();
            *i += 1;
            let Some((&dep_id, dep_doc)) = tasks.get_key_value(dep.as_str()) else {
                continue;
            };
            match marks.get(dep_id) {
                Some(Mark::Active) => {
                    let from = path.iter().position(|p| *p == dep_id).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|s| s.to_string()).collect();
                    // Rotate so the smallest id leads: one spelling per cycle.
                    let min = cycle
                        .iter()
                        .enumerate()
                        .min_by_key(|(_, s)| s.as_str())
                        .map_or(0, |(i, _)| i);
                    cycle.rotate_left(min);
                    if seen_cycles.insert(cycle.clone()) {
                        let mut shown = cycle.clone();
                        shown.push(cycle[0].clone());
                        cycles.push(shown);
                    }
                }
                Some(Mark::Done) => {}
                None => {
                    marks.insert(dep_id, Mark::Active);
                    path.push(dep_id);
                    stack.push((dep_id, dep_doc.list("depends_on"), 0));
                }
            }
        }
    }
    cycles
}
