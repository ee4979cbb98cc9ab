//! What an agent may claim now, and `claim --next`: the best ready task, moving on when
//! another agent wins it.

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::index::files::Head;
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

/// [`ready`], where each ready task becomes `row(task)`, so that what a big answer holds is
/// its rows, never the tasks parsed. The read index's heads decide what they can (see
/// [`read`]); the tasks they find ready are parsed on the thread that reads them.
pub fn ready_rows<R: Send>(
    board: &Board,
    query: &Query,
    for_actor: Option<&str>,
    row: impl Fn(Document) -> R + Sync,
) -> Result<Ready<R>> {
    let found = read(board, query, for_actor, Want::Docs, &row)?;
    let all = 0..found.ready.len();
    Ok(found.made(board, query, all, &row))
}

/// One page of [`ready_rows`]: the ready tasks from the `start`th, at most `len` of them,
/// each as `row(task)`, and how many are ready in all. Decided from the read index's heads
/// where they can, and only the tasks of the page are parsed for their rows.
pub fn ready_page<R: Send>(
    board: &Board,
    query: &Query,
    for_actor: Option<&str>,
    start: usize,
    len: usize,
    row: impl Fn(Document) -> R + Sync,
) -> Result<(usize, Ready<R>)> {
    let found = read(board, query, for_actor, Want::Later, &row)?;
    let total = found.ready.len();
    let page = start.min(total)..start.saturating_add(len).min(total);
    Ok((total, found.made(board, query, page, &row)))
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

/// [`ready`], each ready task made into a [`Row`] from the read index's heads: the same
/// tasks in the same order, and none parsed whose head decides it. A head is trusted where
/// the index trusts a cached task (the journal's word, or equal stat data, never racy);
/// any other file is read again, and its head is the one it holds now.
pub fn ready_heads(board: &Board, query: &Query, for_actor: Option<&str>) -> Result<Ready<Row>> {
    let found = read(board, query, for_actor, Want::Rows, &|_| ())?;
    Ok(Ready {
        docs: found.ready.into_iter().filter_map(|c| c.row).collect(),
        skipped: found.skipped,
        lacking: found.lacking,
    })
}

/// What a read of the ready tasks wants of each.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Its [`Row`]: nothing is parsed that a head decides.
    Rows,
    /// Its document, made into a row as it is read (the tasks a head finds ready and free
    /// of dependencies); the others are parsed only if they turn out to be ready.
    Docs,
    /// Its document, later and for some of them only: nothing is parsed that a head
    /// decides.
    Later,
}

/// (priority, created, id, name): the order of `ready`, as [`scan::OrderKey::best_first`]
/// orders tasks, and then by file name.
type Ranked = (i64, crate::index::files::Created<'static>, String, String);

/// A claimable task that matches, before its dependencies and needs are weighed.
struct Candidate<R> {
    key: Ranked,
    /// Its file's name, less `.md` (the id it claims).
    name: String,
    /// Its table row, when rows are wanted.
    row: Option<Row>,
    depends_on: Vec<String>,
    needs: Vec<String>,
    /// Its row from its document, where the read parsed it for one.
    made: Option<R>,
}

impl<R> Candidate<R> {
    /// From its head: with its row when `rows`.
    fn of(name: &str, h: &Head<'_>, rows: bool) -> Candidate<R> {
        Candidate {
            key: (
                h.priority,
                h.created.clone().into_owned(),
                h.id.to_string(),
                name.to_string(),
            ),
            name: name.to_string(),
            row: rows.then(|| Row {
                id: h.id.to_string(),
                status: h.status.as_deref().unwrap_or_default().to_string(),
                pri: h.pri.as_deref().map(str::to_string),
                owner: h.claimed_by.as_deref().map(str::to_string),
                title: h.title.to_string(),
            }),
            depends_on: h.depends_on.iter().map(|d| d.to_string()).collect(),
            needs: h.needs.iter().map(|n| n.to_string()).collect(),
            made: None,
        }
    }

    /// From the task parsed, without its head (the key, dependencies and needs are what
    /// the head would hold), to be given its row from the document.
    fn parsed(d: &Document) -> Candidate<R> {
        Candidate {
            key: (
                d.priority(),
                crate::index::files::Created::of(d.created_at()),
                d.id().to_string(),
                d.file_id.clone(),
            ),
            name: d.file_id.clone(),
            row: None,
            depends_on: d.list("depends_on"),
            needs: d.list("needs"),
            made: None,
        }
    }
}

/// What [`read`] found: the ready tasks best first, those left out for the needs the
/// actor lacks, the files skipped, and what is known of whether tasks are done.
struct Found<R> {
    ready: Vec<Candidate<R>>,
    lacking: usize,
    skipped: Vec<scan::Skipped>,
    caps: Option<Vec<String>>,
    done: Done,
}

/// Whether tasks are done: as the read saw them, else looked for one by one as `ready`
/// looks (a task's file, a task skipped not being done, else the archive).
struct Done(std::collections::HashMap<String, bool>);

impl Done {
    fn is_done(&mut self, board: &Board, dep: &str) -> bool {
        if let Some(&known) = self.0.get(dep) {
            return known;
        }
        let workflow = &board.config.workflow;
        let known = crate::ops::graph::read_task(board, dep)
            .is_some_and(|d| d.status().is_some_and(|s| workflow.is_success(s)));
        self.0.insert(dep.to_string(), known);
        known
    }
}

/// The ready tasks. A task's head decides, without parsing it, whether it is claimable and
/// matches (every term a head can answer: [`Query::decide_head`]), what it depends on and
/// what it needs; a task is parsed only where a term needs its text, or (`Want::Docs`) to
/// make its row. When the terms are all of a kind heads answer, only the heads are read
/// (not the texts), and the few tasks they leave undecided are read from their files;
/// else the texts are read too, and the query's words and field lines pass over the tasks
/// they rule out (as `list` does) before any head is asked.
fn read<R: Send>(
    board: &Board,
    query: &Query,
    for_actor: Option<&str>,
    want: Want,
    row: &(dyn Fn(Document) -> R + Sync),
) -> Result<Found<R>> {
    crate::ops::sweep::sweep(board)?;
    let caps = match for_actor {
        Some(actor) => crate::agents::held_to(board, actor)?,
        None => None,
    };
    let (candidates, skipped, done) = if want != Want::Docs && query.heads_suffice() {
        by_heads(board, query, want == Want::Rows)?
    } else {
        by_texts(board, query, caps.as_deref(), want, row)?
    };
    let mut found = Found {
        ready: Vec::with_capacity(candidates.len()),
        lacking: 0,
        skipped,
        caps,
        done,
    };
    for c in candidates {
        if !c.depends_on.iter().all(|d| found.done.is_done(board, d)) {
            continue;
        }
        if !crate::agents::missing(&c.needs, found.caps.as_deref()).is_empty() {
            found.lacking += 1;
            continue;
        }
        found.ready.push(c);
    }
    found.ready.sort_unstable_by(|a, b| a.key.cmp(&b.key));
    Ok(found)
}

type Read<R> = (Vec<Candidate<R>>, Vec<scan::Skipped>, Done);

/// Every task by its head alone; the tasks whose head leaves the query undecided are read
/// from their files and judged whole.
fn by_heads<R: Send>(board: &Board, query: &Query, rows: bool) -> Result<Read<R>> {
    use std::collections::HashMap;
    let workflow = &board.config.workflow;
    let now = crate::time::now();
    // Every task's name and whether it is done; the claimable ones that match, and those
    // whose head cannot say.
    let found = std::sync::Mutex::new((HashMap::<String, bool>::new(), Vec::new(), Vec::new()));
    let skipped = crate::index::each_head(board, Region::Tasks, false, &|name, h| {
        let status = h.status.as_deref();
        let done = status.is_some_and(|s| workflow.is_success(s));
        let claimable = status.is_some_and(|s| workflow.is_claimable(s));
        let decided = claimable.then(|| query.decide_head(h, now));
        let mut found = lock(&found);
        found.0.insert(name.to_string(), done);
        match decided {
            Some(Some(true)) => found.1.push(Candidate::of(name, h, rows)),
            Some(None) => found.2.push(name.to_string()),
            _ => {}
        }
    })?;
    let (done, mut candidates, undecided) = found.into_inner().unwrap_or_else(|p| p.into_inner());
    for name in undecided {
        if let Ok(d) = crate::store::read_doc(board, Region::Tasks, &name)
            && d.status().is_some_and(|s| workflow.is_claimable(s))
            && query.matches(&d, now)
        {
            candidates.push(Candidate::of(&name, &Head::of(&d), rows));
        }
    }
    Ok((candidates, skipped, Done(done)))
}

/// The claimable tasks with their texts, as `list` reads them: passed over by their
/// status, then by the query's words and field lines; then a head that decides the query
/// takes the task's place unparsed, unless (`Want::Docs`) the task is ready by its head
/// alone (no dependency, its needs covered), when it is parsed for its row.
fn by_texts<R: Send>(
    board: &Board,
    query: &Query,
    caps: Option<&[String]>,
    want: Want,
    row: &(dyn Fn(Document) -> R + Sync),
) -> Result<Read<R>> {
    let workflow = &board.config.workflow;
    let now = crate::time::now();
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
    let found = std::sync::Mutex::new(Vec::new());
    let head = |name: &str, h: &Head<'_>| match query.decide_head(h, now) {
        Some(false) => false,
        None => true,
        Some(true) => {
            let parse = want == Want::Docs
                && h.depends_on.is_empty()
                && crate::agents::missing(&h.needs, caps).is_empty();
            if !parse {
                lock(&found).push(Candidate::of(name, h, want == Want::Rows));
            }
            parse
        }
    };
    let each = |d: Document| {
        if !(d.status().is_some_and(|s| workflow.is_claimable(s)) && query.matches(&d, now)) {
            return;
        }
        let c = match want {
            Want::Docs => {
                let mut c = Candidate::parsed(&d);
                c.made = Some(row(d));
                c
            }
            Want::Later => Candidate::parsed(&d),
            Want::Rows => Candidate::of(&d.file_id, &Head::of(&d), true),
        };
        lock(&found).push(c);
    };
    let pre = crate::index::Prefilter {
        needles: &needles,
        plain: &plain,
        status: &status,
        head: Some(&head),
    };
    let skipped = crate::index::each_in_dir(board, Region::Tasks, false, &pre, &each)?;
    let candidates = found.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok((candidates, skipped, Done(Default::default())))
}

impl<R> Found<R> {
    /// The ready tasks of `range` (of the order) with their rows; a task not parsed yet is
    /// read now, and left out if it is no longer ready.
    fn made(
        mut self,
        board: &Board,
        query: &Query,
        range: std::ops::Range<usize>,
        row: &(dyn Fn(Document) -> R + Sync),
    ) -> Ready<R> {
        let workflow = &board.config.workflow;
        let now = crate::time::now();
        let mut docs = Vec::with_capacity(range.len());
        let ready = std::mem::take(&mut self.ready);
        for c in ready.into_iter().skip(range.start).take(range.len()) {
            if let Some(made) = c.made {
                docs.push(made);
                continue;
            }
            let Ok(d) = crate::store::read_doc(board, Region::Tasks, &c.name) else {
                continue;
            };
            let ready = d.status().is_some_and(|s| workflow.is_claimable(s))
                && query.matches(&d, now)
                && d.list("depends_on")
                    .iter()
                    .all(|dep| self.done.is_done(board, dep))
                && crate::agents::missing_needs(&d, self.caps.as_deref()).is_empty();
            if ready {
                docs.push(row(d));
            }
        }
        Ready {
            docs,
            skipped: self.skipped,
            lacking: self.lacking,
        }
    }
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
