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

    // Settings this tavern does not know: ignored, so a board a newer tavern configured
    // still works here, but a misspelled one would be silent without this.
    let yaml = crate::layout::board_yaml(&board.root);
    for setting in
        crate::board::unknown_settings(&std::fs::read_to_string(yaml).unwrap_or_default())
    {
        push(
            crate::layout::BOARD_YAML.to_string(),
            format!(
                "unknown setting '{setting}', ignored: misspelled, or for a newer tavern than this one ({})",
                env!("CARGO_PKG_VERSION")
            ),
        );
    }

    // Ownership rules (owners: in board.yaml) that overlap with different owners.
    for problem in crate::holds::overlapping_owner_rules(board) {
        push(crate::layout::BOARD_YAML.to_string(), problem);
    }

    // The documents, each made on the thread that read it (through the read index) into
    // what the checks below need of it: its id, and a task's depends_on; what can be
    // judged of a document alone (its status, every field against the schema) is judged
    // there. Questions that claim a decision are kept whole until the log is read.
    let workflow = &board.config.workflow;
    let found = std::sync::Mutex::new(Found::default());
    let found_lock = || found.lock().unwrap_or_else(|p| p.into_inner());
    let judge = |doc: &Document, problems: &mut Vec<Problem>, refs: &mut Vec<Reference>| {
        let path = doc.rel_path();
        if doc.region == Region::Tasks && !doc.archived {
            match doc.status() {
                None => problems.push(Problem {
                    path: path.clone(),
                    problem: "has no status".into(),
                }),
                Some(s) if !workflow.is_state(s) => problems.push(Problem {
                    path: path.clone(),
                    problem: format!(
                        "status '{s}' is not a state of the workflow ({})",
                        workflow.states.join(", ")
                    ),
                }),
                Some(_) => {}
            }
        }
        // Every field against the schema (what a write checks, for what came by hand or
        // by sync), archived documents too: they are read, listed and queried as well.
        for (key, value) in &doc.fields {
            // Said in their own words: a task's status, and what depends_on names.
            if doc.region == Region::Tasks && key == "status" {
                continue;
            }
            // What a reference names is looked up once every document is listed (no look
            // at the disk for a document that is there): judged first as if it named
            // documents that exist. Said in their own words: what depends_on names.
            let problem = match crate::schema::references(doc.region, key, value) {
                Some((tasks_only, ids)) => {
                    match crate::schema::value_problem_with(
                        board,
                        doc.region,
                        &path,
                        key,
                        value,
                        &|_, _| true,
                    ) {
                        None => {
                            if key != "depends_on" {
                                refs.push(Reference {
                                    path: path.clone(),
                                    key: key.clone(),
                                    tasks_only,
                                    ids: ids.into_iter().map(str::to_string).collect(),
                                });
                            }
                            None
                        }
                        // A value wrong in itself: judged in full, as a write judges it.
                        Some(_) => {
                            crate::schema::value_problem(board, doc.region, &path, key, value)
                        }
                    }
                }
                None => crate::schema::value_problem(board, doc.region, &path, key, value),
            };
            if let Some(problem) = problem
                && !(key == "depends_on" && problem.starts_with("depends_on names"))
            {
                problems.push(Problem {
                    path: path.clone(),
                    problem,
                });
            }
        }
    };
    let each = |doc: Document| {
        let mut problems = Vec::new();
        let mut refs = Vec::new();
        judge(&doc, &mut problems, &mut refs);
        let depends_on = if doc.region == Region::Tasks && !doc.archived {
            doc.list("depends_on")
        } else {
            Vec::new()
        };
        let claims = crate::ops::decisions::claims_decision(&doc);
        let mut found = found_lock();
        found.problems.append(&mut problems);
        found.references.append(&mut refs);
        let region = region_index(doc.region);
        if doc.archived {
            found.archived[region].insert(doc.file_id.clone());
        } else {
            found.live[region].insert(doc.file_id.clone(), depends_on);
        }
        if claims {
            found.claiming.push(doc);
        }
    };
    let skipped =
        scan::each_prefiltered(board, &Region::ALL, false, &[], &|_| true, &|_| true, &each)?;
    let archived_skipped =
        scan::each_prefiltered(board, &Region::ALL, true, &[], &|_| true, &|_| true, &each)?;
    let found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    let Found {
        live,
        mut archived,
        claiming,
        problems,
        references,
    } = found;
    report.problems.extend(problems);
    let mut push = |path: String, problem: String| report.problems.push(Problem { path, problem });
    for s in &skipped {
        if !s.problem.starts_with("is a symbolic link") {
            push(s.path.clone(), s.problem.clone());
        }
    }
    for s in &archived_skipped {
        push(s.path.clone(), s.problem.clone());
    }
    // An archived task is still a task: depending on one (done, then archived) is fine.
    // The archive's files are its documents and the files skipped there.
    let skipped_paths: HashSet<&str> = skipped
        .iter()
        .chain(&archived_skipped)
        .map(|s| s.path.as_str())
        .collect();
    for s in &archived_skipped {
        if let Some((region, name)) = s.path.strip_prefix("archive/").and_then(doc_name) {
            archived[region_index(region)].insert(name.to_string());
        }
    }
    // One id in two regions: each names the one before it (tasks, observations,
    // questions).
    for (i, region) in Region::ALL.iter().enumerate().skip(1) {
        let mut ids: Vec<&String> = live[i].keys().collect();
        ids.sort();
        for id in ids {
            if let Some(j) = (0..i).rev().find(|&j| live[j].contains_key(id)) {
                push(
                    format!("{}/{id}.md", region.dir()),
                    format!("id '{id}' is also used by {}/{id}.md", Region::ALL[j].dir()),
                );
            }
        }
    }
    // What the documents' references name: a document listed above is there; any other
    // is looked for on the disk, as a write looks.
    let exists = |id: &str, tasks_only: bool| {
        let listed = |r: Region| {
            let r = region_index(r);
            live[r].contains_key(id)
                || archived[r].contains(id)
                || skipped_paths.contains(format!("{}/{id}.md", Region::ALL[r].dir()).as_str())
        };
        if tasks_only {
            listed(Region::Tasks)
        } else {
            Region::ALL.into_iter().any(listed)
        }
    };
    for r in &references {
        if let Some(missing) = r
            .ids
            .iter()
            .find(|id| !exists(id, r.tasks_only) && !crate::schema::exists(board, id, r.tasks_only))
        {
            push(
                r.path.clone(),
                crate::schema::missing_reference(&r.key, missing, r.tasks_only),
            );
        }
    }
    let tasks = &live[region_index(Region::Tasks)];
    let archived_tasks = &archived[region_index(Region::Tasks)];
    for (id, deps) in tasks {
        for dep in deps {
            if !tasks.contains_key(dep.as_str()) && !archived_tasks.contains(dep) {
                push(
                    format!("tasks/{id}.md"),
                    format!("depends_on names '{dep}', which is not a task on this board"),
                );
            }
        }
    }
    for cycle in dependency_cycles(tasks) {
        let first = format!("tasks/{}.md", cycle[0]);
        push(first, format!("dependency cycle: {}", cycle.join(" -> ")));
    }

    // The log, an entry at a time: what the checks need of it is kept, not the log.
    // A document's file the reads above listed is there: only the others are looked
    // at again for being lost.
    let listed = |doc: &str| {
        doc_name(doc).is_some_and(|(region, name)| {
            let r = region_index(region);
            live[r].contains_key(name) || archived[r].contains(name)
        }) || skipped_paths.contains(doc)
            || skipped_paths.contains(format!("archive/{doc}").as_str())
    };
    let mut lost = crate::sync::health::Lost::new(&listed);
    // An archived question is read (by `show`, a waiting agent) as much as a live one: a
    // decision forged there (by hand, or arriving by sync) is reported too. Only the
    // entries about the questions that claim one are kept.
    let claimed: HashSet<String> = claiming
        .iter()
        .map(crate::ops::decisions::log_path)
        .collect();
    let mut about: Vec<crate::log::Entry> = Vec::new();
    let mut log_entries = 0;
    // Parsed, and looked up, on every core: only an entry about a file the reads did not
    // list, or about a question that claims a decision, comes back whole.
    let kept = |e: crate::log::Entry| {
        let about = claimed.contains(&e.doc);
        (about || !listed(&e.doc)).then_some((e, about))
    };
    let (end, unreadable) = crate::log::each_entry(board, &kept, &mut |kept| {
        log_entries += 1;
        if let Some((e, is_about)) = kept {
            lost.see(&e);
            if is_about {
                about.push(e);
            }
        }
    })?;
    crate::log::sort(&mut about);
    for p in forged_decisions(board, claiming.iter(), &about) {
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
        let line = lines_before(&board.log_path(), end) + 1;
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
        .extend(crate::sync::health::problems(board, lost));
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
    report.documents = live.iter().map(HashMap::len).sum();
    report.log_entries = log_entries;
    report
        .problems
        .sort_by(|a, b| a.path.cmp(&b.path).then_with(|| a.problem.cmp(&b.problem)));
    Ok(report)
}

/// What the reads of the documents keep for the checks that need the whole board.
#[derive(Default)]
struct Found {
    /// Per region (in [`Region::ALL`]'s order): each document's id, with a task's
    /// depends_on (empty for the others).
    live: [HashMap<String, Vec<String>>; 3],
    /// Per region: the ids of the archived documents.
    archived: [HashSet<String>; 3],
    /// The questions (on the board or archived) that claim a human decision.
    claiming: Vec<Document>,
    /// What was found wrong with a document on its own.
    problems: Vec<Problem>,
    /// The references whose value is right in itself (but depends_on, which is judged
    /// with the dependencies): what they name is looked up once every id is known.
    references: Vec<Reference>,
}

/// A document's reference to others (`parent`, `about`, `blocks`).
struct Reference {
    path: String,
    key: String,
    tasks_only: bool,
    ids: Vec<String>,
}

fn region_index(region: Region) -> usize {
    Region::ALL
        .iter()
        .position(|r| *r == region)
        .unwrap_or_default()
}

/// The region and file name (less `.md`) of a document's path as the log names it
/// (`tasks/x.md`).
fn doc_name(path: &str) -> Option<(Region, &str)> {
    let (dir, file) = path.split_once('/')?;
    let region = Region::ALL.into_iter().find(|r| r.dir() == dir)?;
    Some((region, file.strip_suffix(".md")?))
}

/// How many lines the first `end` bytes of a file hold (read a block at a time).
fn lines_before(path: &std::path::Path, end: u64) -> usize {
    use std::io::Read;
    let Ok(file) = std::fs::File::open(path) else {
        return 0;
    };
    let mut file = file.take(end);
    let mut buf = vec![0; 64 * 1024];
    let mut lines = 0;
    while let Ok(n) = file.read(&mut buf)
        && n > 0
    {
        lines += buf[..n].iter().filter(|b| **b == b'\n').count();
    }
    lines
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
/// `tasks` gives each task's depends_on by its id.
pub fn dependency_cycles(tasks: &HashMap<String, Vec<String>>) -> Vec<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Active,
        Done,
    }
    let mut marks: HashMap<&str, Mark> = HashMap::new();
    let mut cycles = Vec::new();
    let mut seen_cycles: HashSet<Vec<String>> = HashSet::new();
    let mut ids: Vec<&str> = tasks.keys().map(String::as_str).collect();
    ids.sort();
    for start in ids {
        if marks.contains_key(start) {
            continue;
        }
        // Iterative DFS: (node, deps, next dep index); `path` mirrors the stack.
        let mut stack: Vec<(&str, &[String], usize)> = vec![(start, &tasks[start], 0)];
        let mut path: Vec<&str> = vec![start];
        marks.insert(start, Mark::Active);
        while let Some((node, deps, i)) = stack.last_mut() {
            if *i >= deps.len() {
                marks.insert(node, Mark::Done);
                stack.pop();
                path.pop();
                continue;
            }
            let dep = &deps[*i];
            *i += 1;
            let Some((dep_id, dep_deps)) = tasks.get_key_value(dep.as_str()) else {
                continue;
            };
            let dep_id = dep_id.as_str();
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
                    stack.push((dep_id, dep_deps, 0));
                }
            }
        }
    }
    cycles
}
