//! What an agent may claim now, and `claim --next`: the best ready task, moving on when
//! another agent wins it.

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::query::Query;
use crate::scan;
use crate::sync::claims;
use crate::workflow::CLAIM;

use super::{Options, Outcome, transition};

/// What is ready: a row per task (the task itself for [`ready`]), best first, the files
/// that could not be read, and how many ready tasks were left out because they need
/// capabilities the agent lacks.
pub struct Ready<R = Document> {
    pub docs: Vec<R>,
    pub skipped: Vec<scan::Skipped>,
    pub lacking: usize,
}

/// The tasks that are claimable now, best first: claimable state, no live claim, every
/// dependency done, matching `query`, and (`for_actor`) whose `needs` that actor's
/// capabilities cover ([`crate::agents::missing_needs`], the rule `claim` applies). None:
/// every ready task, whoever may claim it.
pub fn ready(board: &Board, query: &Query, for_actor: Option<&str>) -> Result<Ready> {
    ready_rows(board, query, for_actor, |d| d)
}

/// [`ready`], where each ready task becomes `row(task)` on the thread that read it, so
/// that what a big answer holds is its rows, never the tasks parsed.
pub fn ready_rows<R: Send>(
    board: &Board,
    query: &Query,
    for_actor: Option<&str>,
    row: impl Fn(Document) -> R + Sync,
) -> Result<Ready<R>> {
    crate::ops::sweep::sweep(board)?;
    let caps = match for_actor {
        Some(actor) => crate::agents::held_to(board, actor)?,
        None => None,
    };
    let workflow = &board.config.workflow;
    let now = crate::time::now();
    // Only the candidates are parsed; their dependencies are read one by one (with a
    // cache), so a big board of finished work is never held in memory.
    // A claimable task's text holds its status: one of the claimable states.
    let mut needles = query.needles();
    if workflow
        .claimable
        .iter()
        .all(|s| s.is_ascii() && !s.is_empty())
    {
        needles.push(
            workflow
                .claimable
                .iter()
                .map(|s| s.to_ascii_lowercase())
                .collect(),
        );
    }
    // A plain frontmatter whose status line is not a claimable state, or that fails a
    // field term, is passed over unparsed (`status()` is the field as a string), and so
    // is any cached task whose head says its status is not claimable.
    let plain = |fm: &str| {
        crate::doc::fast::field(fm, "status").is_none_or(|v| {
            v.as_ref()
                .and_then(|v| v.as_str())
                .is_some_and(|s| workflow.is_claimable(s))
        }) && query.may_match_plain(fm, now)
    };
    let status = |s: Option<&str>| {
        s.is_some_and(|s| workflow.is_claimable(s)) && query.may_match_status(s, now)
    };
    let done = std::sync::Mutex::new(std::collections::HashMap::<String, bool>::new());
    let is_done = |dep: &str| {
        if let Some(&known) = lock(&done).get(dep) {
            return known;
        }
        let known = crate::ops::graph::read_task(board, dep)
            .is_some_and(|d| d.status().is_some_and(|s| workflow.is_success(s)));
        lock(&done).insert(dep.to_string(), known);
        known
    };
    let found = std::sync::Mutex::new((Vec::new(), 0usize));
    let each = |d: Document| {
        let ready = d.status().is_some_and(|s| workflow.is_claimable(s))
            && query.matches(&d, now)
            && d.list("depends_on").iter().all(|dep| is_done(dep));
        if !ready {
            return;
        }
        if !crate::agents::missing_needs(&d, caps.as_deref()).is_empty() {
            lock(&found).1 += 1;
            return;
        }
        let key = scan::OrderKey::best_first(&d);
        let row = row(d);
        lock(&found).0.push((key, row));
    };
    let skipped = scan::each_prefiltered(
        board,
        &[Region::Tasks],
        false,
        &needles,
        &plain,
        &status,
        &each,
    )?;
    let (mut rows, lacking) = found.into_inner().unwrap_or_else(|p| p.into_inner());
    rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(Ready {
        docs: rows.into_iter().map(|(_, row)| row).collect(),
        skipped,
        lacking,
    })
}

/// A ready task as `ready`'s table shows it: its id, status, the text of its priority
/// (else severity), its claimant, and its title, as the task's file gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    pub status: String,
    pub pri: Option<String>,
    pub owner: Option<String>,
    pub title: String,
}

/// [`ready`] without a query, each ready task made into a [`Row`] from the read index's
/// heads, without parsing the tasks: the same tasks in the same order. A head is trusted
/// where the index trusts a cached task (the journal's word, or equal stat data, never
/// racy); any other file is read again, and its head is the one it holds now.
pub fn ready_heads(board: &Board, for_actor: Option<&str>) -> Result<Ready<Row>> {
    use std::collections::HashMap;
    crate::ops::sweep::sweep(board)?;
    let caps = match for_actor {
        Some(actor) => crate::agents::held_to(board, actor)?,
        None => None,
    };
    let workflow = &board.config.workflow;
    type Ranked = (i64, crate::index::files::Created<'static>, String, String);
    struct Candidate {
        key: Ranked,
        row: Row,
        depends_on: Vec<String>,
        needs: Vec<String>,
    }
    // Every task's name and whether it is done; the claimable ones with what decides them.
    let found = std::sync::Mutex::new((HashMap::<String, bool>::new(), Vec::new()));
    let skipped = crate::index::each_head(board, Region::Tasks, false, &|name, h| {
        let status = h.status.as_deref();
        let done = status.is_some_and(|s| workflow.is_success(s));
        let candidate = status
            .filter(|s| workflow.is_claimable(s))
            .map(|status| Candidate {
                key: (
                    h.priority,
                    h.created.clone().into_owned(),
                    h.id.to_string(),
                    name.to_string(),
                ),
                row: Row {
                    id: h.id.to_string(),
                    status: status.to_string(),
                    pri: h.pri.as_deref().map(str::to_string),
                    owner: h.claimed_by.as_deref().map(str::to_string),
                    title: h.title.to_string(),
                },
                depends_on: h.depends_on.iter().map(|d| d.to_string()).collect(),
                needs: h.needs.iter().map(|n| n.to_string()).collect(),
            });
        let mut found = lock(&found);
        found.0.insert(name.to_string(), done);
        if let Some(c) = candidate {
            found.1.push(c);
        }
    })?;
    let (mut done, candidates) = found.into_inner().unwrap_or_else(|p| p.into_inner());
    // A dependency that is no readable task on the board is looked for as `ready` looks:
    // its file (a task skipped is not done), else the archive.
    let mut is_done = |dep: &str| match done.get(dep) {
        Some(&known) => known,
        None => {
            let known = crate::ops::graph::read_task(board, dep)
                .is_some_and(|d| d.status().is_some_and(|s| workflow.is_success(s)));
            done.insert(dep.to_string(), known);
            known
        }
    };
    let mut rows = Vec::new();
    let mut lacking = 0;
    for c in candidates {
        if !c.depends_on.iter().all(|d| is_done(d)) {
            continue;
        }
        if let Some(caps) = caps.as_deref()
            && c.needs.iter().any(|n| !caps.contains(n))
        {
            lacking += 1;
            continue;
        }
        rows.push((c.key, c.row));
    }
    rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(Ready {
        docs: rows.into_iter().map(|(_, row)| row).collect(),
        skipped,
        lacking,
    })
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `claim --next`: claims the best ready task, moving on to the next if another agent
/// wins the race for it. Returns None when nothing is claimable.
pub fn claim_next_with(
    board: &Board,
    actor: &str,
    query: &Query,
    opts: &Options,
) -> Result<(Option<Outcome>, Vec<scan::Skipped>)> {
    if let Some(reason) = board.paused() {
        return Err(Error::Paused { reason });
    }
    // The common case, an unfiltered `claim --next` on a board without a remote, chooses
    // by the index's heads without parsing every task (see `claim_best_local`).
    let remote = if opts.local {
        None
    } else {
        claims::remote(board)?
    };
    if query.terms.is_empty() && remote.is_none() {
        return claim_best_local(board, actor, opts);
    }
    // A registered agent only gets tasks whose `needs` its capabilities cover: what
    // `ready` shows it.
    let Ready {
        docs: mut candidates,
        skipped,
        ..
    } = ready(board, query, Some(actor))?;
    // On a connected board: first the tasks whose record this clone has is still the
    // remote's (one ls-remote says which), then, only if none of those could be claimed,
    // the others, once their records are fetched.
    let mut later = Vec::new();
    if let Some(remote) = &remote {
        let survey = claims::survey(board, remote)?;
        let (now, changed): (Vec<Document>, Vec<Document>) = candidates
            .into_iter()
            .partition(|d| !survey.changed(d.id()));
        candidates = now;
        candidates.retain(|d| claims::worth_trying(board, survey.known.get(d.id()), actor));
        claims::spread(&mut candidates, actor);
        later = changed;
    }
    let opts = Options {
        local: opts.local,
        ..Options::default()
    };
    if let Some(outcome) = claim_first(board, actor, candidates, &opts)? {
        return Ok((Some(outcome), skipped));
    }
    if let Some(remote) = &remote
        && !later.is_empty()
    {
        let records = claims::fetch_for_next(board, remote)?;
        later.retain(|d| claims::worth_trying(board, records.get(d.id()), actor));
        claims::spread(&mut later, actor);
        if let Some(outcome) = claim_first(board, actor, later, &opts)? {
            return Ok((Some(outcome), skipped));
        }
    }
    Ok((None, skipped))
}

/// `claim --next` without a query or a remote: the first task of [`ready`]'s order that it
/// can claim, found without reading every ready task. The index's heads (status, priority,
/// creation time of every task, kept beside its cached text) order the claimable tasks;
/// then each, best first, is read from its file and checked as `ready` checks it (still
/// claimable, every dependency done, its needs covered) before the claim, which checks it
/// again under the document's lock. So the choice is `ready`'s first, and a stale head
/// can only cost a candidate passed over, never a wrong claim.
fn claim_best_local(
    board: &Board,
    actor: &str,
    opts: &Options,
) -> Result<(Option<Outcome>, Vec<scan::Skipped>)> {
    crate::ops::sweep::sweep(board)?;
    let workflow = &board.config.workflow;
    // Best first in the order of `scan::OrderKey::best_first` (priority, then creation time,
    // then id), merged from each bucket's own order: the first candidate is usually the
    // one claimed, and only the buckets' best are ranked before it is.
    let (candidates, skipped) = crate::index::read_claimable(board, Region::Tasks)?;
    let caps = crate::agents::held_to(board, actor)?;
    let mut done: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
    let mut is_done = |dep: &str| {
        *done.entry(dep.to_string()).or_insert_with(|| {
            crate::ops::graph::read_task(board, dep)
                .is_some_and(|d| d.status().is_some_and(|s| workflow.is_success(s)))
        })
    };
    let opts = Options {
        local: opts.local,
        ..Options::default()
    };
    for id in candidates {
        let Ok(doc) = crate::store::read_doc(board, Region::Tasks, &id) else {
            continue;
        };
        let ready = doc.status().is_some_and(|s| workflow.is_claimable(s))
            && doc.list("depends_on").iter().all(|dep| is_done(dep))
            && crate::agents::missing_needs(&doc, caps.as_deref()).is_empty();
        if !ready {
            continue;
        }
        if let Some(outcome) = claim_first(board, actor, vec![doc], &opts)? {
            return Ok((Some(outcome), skipped));
        }
    }
    Ok((None, skipped))
}

/// Claims the first of `candidates` it can, moving on when another agent wins one.
fn claim_first(
    board: &Board,
    actor: &str,
    candidates: Vec<Document>,
    opts: &Options,
) -> Result<Option<Outcome>> {
    for doc in candidates {
        match transition(board, actor, doc.id(), CLAIM, opts) {
            Ok(outcome) => return Ok(Some(outcome)),
            // Lost the race (or the task changed since the scan): try the next one.
            Err(e)
                if e.kind() == crate::error::Kind::Conflict
                    || e.kind() == crate::error::Kind::NotFound =>
            {
                continue;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}
