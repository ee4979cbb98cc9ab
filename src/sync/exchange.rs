//! `tavern sync`: one exchange of the board branch with the remote.
//!
//! The tasks follow the remote's claim records; the board as it is on disk is recorded on
//! its branch (vetted: see [`super::vet`]); the remote's branch is fetched; then the
//! branch fast-forwards, merges (field by field, see [`super::merge`]) or is pushed with
//! a lease on what was fetched, so a concurrent push is never overwritten. What the board
//! takes from the remote is vetted as well: a change it may not take is left out, the
//! board here keeps its own version of that path, the refusal is logged as an alert
//! naming the remote's commit, and the commit the board then holds (the remote's plus
//! the repair) is pushed, so the remote heals too. A lost push race fetches and merges
//! again after a random wait, up to [`MAX_ATTEMPTS`] times. The board on disk follows the branch through
//! `git read-tree -m -u`, which writes only the files that differ and refuses before
//! writing anything when one of them was written meanwhile (then the loop records and
//! tries again).

use serde::Serialize;

use crate::board::Board;
use crate::error::{Error, Result};
use crate::sync::branch::{self, BoardGit, REF, REMOTE_REF};
use crate::sync::merge::{self, Change};
use crate::sync::vet::{self, Refusal};
use crate::sync::{alert, claims, fetch, refuse_code_branch, remote, unreachable};

/// What `tavern sync` did.
#[derive(Debug, Serialize)]
pub struct Exchange {
    pub remote: String,
    /// The board had changes since the last record, now a commit on the board branch.
    pub recorded: bool,
    /// up-to-date | pushed | fast-forwarded | merged (merged, then pushed)
    pub outcome: &'static str,
    /// The board branch's commit after the exchange.
    pub commit: String,
    /// Files of the board the exchange changed on disk (relative to the board).
    pub changed: Vec<String>,
    /// Documents both sides changed, merged field by field.
    pub merged: Vec<String>,
    /// Fields both sides changed, decided by the rule (each logged as sync-conflict).
    pub conflicts: Vec<merge::Conflict>,
    /// Tasks made to follow the remote's claim records.
    pub claims_followed: Vec<String>,
    /// Pushes lost to another clone's and tried again.
    pub retries: usize,
    /// Changes the remote's branch brought that the board did not take (each logged as
    /// an alert naming the remote's commit); the board kept its own version.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<Refusal>,
    /// Files on disk that were not recorded: they may not be on the branch (a symbolic
    /// link, `.state/`, a file outside the layout, one over its size limit).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_recorded: Vec<Refusal>,
}

/// Who exchanges, and what they allow.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The actor: the author of the board commits this exchange makes, and of the
    /// `delete` entries of `allow_deletions`.
    pub actor: String,
    /// Documents and board files removed from disk by hand (no tavern command removed
    /// them) are recorded as deleted, each logged as a `delete` by the actor, instead of
    /// refusing the record.
    pub allow_deletions: bool,
}

/// How many times `tavern sync` fetches, merges and pushes again after another clone's
/// push got in first (and, counted apart, after a local write landed while it merged)
/// before it gives up. Each
/// lost race waits a random while first (see [`backoff`]), so clones that collided do not
/// collide again in step.
pub const MAX_ATTEMPTS: usize = 12;

/// How many pushes the remote's own lock of the branch may refuse before `tavern sync`
/// says so: held for milliseconds by another clone's push, for good by a killed one.
pub const MAX_LOCKED: usize = 5;

/// The rounds of one exchange, whatever happened in them: a bound that holds even if the
/// remote moved at every fetch.
const MAX_ROUNDS: usize = 4 * (MAX_ATTEMPTS + MAX_LOCKED);

/// Why the rounds of one exchange did not end in a push the remote took.
#[derive(Debug, Default)]
struct Setbacks {
    /// Races lost to other clones: a push refused by the lease (another clone's got in
    /// first), or a fetch that found the remote's branch moved again since the last one.
    lost: usize,
    /// Pushes refused because the remote's lock of the branch existed; the last one seen.
    locked: usize,
    lock: Option<String>,
    /// Merges taken again because the board here was written while they were made.
    written: usize,
    /// Rounds started over because a git command of theirs lost a race in this clone
    /// (another git process updated or locked a ref or the index it needed); the last
    /// command and git's words.
    local: usize,
    local_why: Option<String>,
}

/// How one round of an exchange ended, when it did not fail.
enum Flow {
    /// The exchange is done: the board branch and the remote's agree.
    Done,
    /// Another round: fetch, merge or push again.
    Again,
}

impl Setbacks {
    fn exhausted(&self) -> bool {
        self.lost >= MAX_ATTEMPTS
            || self.written >= MAX_ATTEMPTS
            || self.locked >= MAX_LOCKED
            || self.local >= super::LOCAL_RACE_ATTEMPTS
    }

    /// What happened, cause by cause, for the message of a sync that gave up.
    fn said(&self) -> String {
        let mut parts = Vec::new();
        if self.lost > 0 {
            parts.push(format!(
                "{} race(s) lost to other clones' pushes of the branch",
                self.lost
            ));
        }
        if self.locked > 0 {
            parts.push(format!(
                "{} push(es) refused because the remote's lock of the branch, {}, existed",
                self.locked,
                self.lock.as_deref().unwrap_or("?")
            ));
        }
        if self.written > 0 {
            parts.push(format!(
                "{} merge(s) made again because the board here was written meanwhile",
                self.written
            ));
        }
        if self.local > 0 {
            parts.push(format!(
                "{} round(s) started over because another git process of this clone updated or locked a ref or the index the exchange needed (last: {}; a git left running by a killed tavern process, or one of your own: not the remote)",
                self.local,
                self.local_why.as_deref().unwrap_or("?")
            ));
        }
        if parts.is_empty() {
            parts.push(format!(
                "the remote's branch moved at each of {MAX_ROUNDS} rounds"
            ));
        }
        parts.join(", ")
    }
}

/// How the last push of the board branch was refused.
#[derive(Clone, Copy, PartialEq)]
enum Refused {
    No,
    /// The lease, or the remote's branch found moved after: another clone's push.
    Lease,
    /// The remote's lock of the branch existed: another clone's push that moment (the
    /// next fetch finds the branch moved), or a lock left behind (it does not).
    Locked,
}

/// The wait before trying again after the `n`th setback (1, 2, ...): a random while,
/// up to 25 ms doubled per setback and at most 1.6 s, at least `floor_ms`. Random, so
/// that two clones whose pushes collided do not fetch, merge and push again in step.
fn backoff(n: usize, floor_ms: u64) {
    let cap = (25u64 << n.min(6)).min(1600);
    let jitter = getrandom::u64().unwrap_or_else(|_| {
        // No system randomness: the clock's nanoseconds and the process differ enough.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos() as u64)
            .unwrap_or(0);
        nanos ^ (u64::from(std::process::id()) << 20)
    }) % (cap + 1);
    std::thread::sleep(std::time::Duration::from_millis(floor_ms.max(jitter)));
}

/// `tavern sync`: see the module's documentation.
pub fn exchange(board: &Board, opts: &Options) -> Result<Exchange> {
    let remote = remote(board)?.ok_or_else(|| Error::Request {
        kind: crate::error::Kind::Invalid,
        path: None,
        message: crate::msg!(
            format!(
                "the board {} is not connected to a remote: `",
                board.root.display()
            ),
            crate::error::Command::SyncInit,
            "` connects it"
        ),
    })?;
    let bg = BoardGit::open(board)?.acting_as(&opts.actor);
    refuse_code_branch(&bg)?;
    let _exchange = bg.exchange_lock()?;
    super::locks::heal_exchange(&bg.repo);
    let mut x = Exchange {
        remote: remote.clone(),
        recorded: false,
        outcome: "up-to-date",
        commit: String::new(),
        changed: Vec::new(),
        merged: Vec::new(),
        conflicts: Vec::new(),
        claims_followed: Vec::new(),
        retries: 0,
        refused: Vec::new(),
        not_recorded: Vec::new(),
    };
    let mut merged_once = false;
    let mut setbacks = Setbacks::default();
    // The remote's branch as the last round fetched it, and how that round's push was
    // refused, if it was.
    let mut last_fetched: Option<Option<String>> = None;
    let mut refused_by = Refused::No;
    let record = |x: &mut Exchange, message: &str| -> Result<String> {
        // A document written back after it was archived is put in one place first.
        for kept in super::rejoin::rejoin(board, &bg)? {
            if !x.merged.contains(&kept) {
                x.merged.push(kept);
            }
        }
        let r = bg.record(board, message, opts)?;
        x.recorded |= r.moved;
        for n in r.not_recorded {
            if !x.not_recorded.contains(&n) {
                x.not_recorded.push(n);
            }
        }
        Ok(r.commit)
    };
    for _round in 0..MAX_ROUNDS {
        if setbacks.exhausted() {
            break;
        }
        x.retries = setbacks.lost + setbacks.locked + setbacks.written + setbacks.local;
        // One round; a git command of it that lost a race in this clone (another git
        // process updated or locked a ref or the index it needed) starts the round over:
        // it reads the branch, the board and the remote's branch again, never forcing a
        // ref to what an older read said.
        let round = (|| -> Result<Flow> {
            follow_claims(board, &mut x.claims_followed)?;
            let mut ours = record(&mut x, "tavern sync: the board as it is")?;
            let theirs = fetch(&bg, &remote)?;
            if let Some(last) = &last_fetched
                && *last != theirs
            {
                match refused_by {
                    // Counted when the lease refused it.
                    Refused::Lease => {}
                    // The lock was another clone's push, live: a race lost, not a lock left.
                    Refused::Locked => {
                        setbacks.locked -= 1;
                        setbacks.lost += 1;
                    }
                    // Another clone pushed between this clone's fetches: a race lost as well.
                    Refused::No => {
                        setbacks.lost += 1;
                        backoff(setbacks.lost, 0);
                    }
                }
            }
            last_fetched = Some(theirs.clone());
            refused_by = Refused::No;
            // The records after the branch, each round: every task state the fetched branch
            // holds was confirmed by a record pushed before it, so the copies of the records
            // are never older than the tasks the merge brings (following them never moves a
            // task back).
            let records = {
                let records = match claims::fetch_all(board) {
                    Ok(records) => records,
                    // A race lost in this clone (after the fetch's own attempts):
                    // the round starts over (below), it is not the remote.
                    Err(Error::Git { message, .. }) if !super::git::local_race(&message) => {
                        return Err(unreachable(
                            &bg,
                            &remote,
                            "fetch the claim records from",
                            &message,
                        ));
                    }
                    Err(e) => return Err(e),
                };
                let before = x.claims_followed.len();
                follow_listed(board, records.clone(), &mut x.claims_followed)?;
                if x.claims_followed.len() > before {
                    ours = record(
                        &mut x,
                        "tavern sync: the tasks follow the remote's claim records",
                    )?;
                }
                records
            };
            match &theirs {
                Some(t) if *t == ours => {
                    x.outcome = if merged_once { "merged" } else { "up-to-date" };
                    x.commit = ours;
                    Ok(Flow::Done)
                }
                Some(t) if is_ancestor(&bg, &ours, t)? => {
                    // Only the remote moved: take its commits, vetted.
                    let changes = vet::changes_between(&bg.git, Some(&ours), t)?;
                    let paths: Vec<String> = changes.iter().map(|(p, _)| p.clone()).collect();
                    let vetted =
                        vet::vet(board.config.limits.max_doc_bytes, &bg.git, changes, || {
                            blob_at(&bg, t, crate::layout::LOG)
                        })?;
                    let target = if vetted.refused.is_empty() {
                        t.clone()
                    } else {
                        alert_refused(board, &remote, t, &vetted.refused)?;
                        x.refused.extend(vetted.refused.iter().cloned());
                        build_commit(
                            &bg,
                            Some(&ours),
                            &vetted.taken,
                            &[t],
                            &format!(
                                "tavern sync: take the board of '{remote}' without what it may not bring"
                            ),
                        )?
                    };
                    // The files that differ are those of the changes, unless some were
                    // refused.
                    let files = if target == *t {
                        paths
                    } else {
                        changed_files(&bg, &ours, &target)?
                    };
                    if !materialize_locked(board, &bg, &ours, &target, &files)? {
                        setbacks.written += 1;
                        return Ok(Flow::Again); // written meanwhile: record it and try again
                    }
                    x.changed.extend(files);
                    bg.git.run(&["update-ref", REF, &target, &ours])?;
                    follow_listed(board, records, &mut x.claims_followed)?;
                    if target != *t {
                        merged_once = true;
                        return Ok(Flow::Again); // the repair goes to the remote at the next round
                    }
                    x.outcome = if merged_once {
                        "merged"
                    } else {
                        "fast-forwarded"
                    };
                    x.commit = t.clone();
                    Ok(Flow::Done)
                }
                Some(t) if !is_ancestor(&bg, t, &ours)? => {
                    let base = bg
                        .git
                        .output(&["merge-base", &ours, t], None)?
                        .stdout
                        .trim()
                        .to_string();
                    let base = (!base.is_empty()).then_some(base);
                    let m = merge::merge(
                        board,
                        &bg.git,
                        &bg.repo.tavern_dir(),
                        base.as_deref(),
                        &ours,
                        t,
                    )?;
                    // Deletions are explained by the merged log: theirs' entries, and the
                    // merge's own (a copy dropped so that a document is in one place).
                    let merged_log = m.changes.iter().find_map(|(p, c)| match c {
                        Change::Bytes(bytes) if p == crate::layout::LOG => Some(bytes.clone()),
                        _ => None,
                    });
                    let vetted = vet::vet(
                        board.config.limits.max_doc_bytes,
                        &bg.git,
                        m.changes,
                        || match merged_log {
                            Some(log) => Ok(log),
                            None => blob_at(&bg, t, crate::layout::LOG),
                        },
                    )?;
                    if !vetted.refused.is_empty() {
                        alert_refused(board, &remote, t, &vetted.refused)?;
                        x.refused.extend(vetted.refused.iter().cloned());
                    }
                    let commit = build_commit(
                        &bg,
                        Some(&ours),
                        &vetted.taken,
                        &[&ours, t],
                        &format!("tavern sync: merge the board of '{remote}'"),
                    )?;
                    let files = changed_files(&bg, &ours, &commit)?;
                    if !materialize_locked(board, &bg, &ours, &commit, &files)? {
                        setbacks.written += 1;
                        return Ok(Flow::Again);
                    }
                    bg.git.run(&["update-ref", REF, &commit, &ours])?;
                    x.changed.extend(files);
                    x.merged.extend(m.merged_docs);
                    x.conflicts.extend(m.conflicts);
                    merged_once = true;
                    // The merge is pushed by the next round, which also makes the tasks
                    // follow the claim records again.
                    Ok(Flow::Again)
                }
                _ => {
                    let lease = format!(
                        "--force-with-lease={REF}:{}",
                        theirs.as_deref().unwrap_or("")
                    );
                    let out = bg.remote_git().output(
                        &[
                            "push",
                            "-q",
                            "--no-verify",
                            &lease,
                            &remote,
                            &format!("{REF}:{REF}"),
                        ],
                        None,
                    )?;
                    if !out.success {
                        // The remote's ref lock exists: another clone pushing this very moment
                        // (it holds it for milliseconds: wait a little), or a git on the remote
                        // killed while it updated the branch (then it stays: said below).
                        if let Some(lock) = super::git::remote_lock(&out.stderr) {
                            setbacks.locked += 1;
                            setbacks.lock = Some(lock);
                            refused_by = Refused::Locked;
                            if !setbacks.exhausted() {
                                backoff(setbacks.locked, 100 * setbacks.locked as u64);
                            }
                            return Ok(Flow::Again);
                        }
                        // Only a lost race is tried again; a remote that refuses (a hook,
                        // permissions) or is gone is exit 7.
                        if out.stderr.contains("stale info")
                            || out.stderr.contains("fetch first")
                            || out.stderr.contains("non-fast-forward")
                            || out.stderr.contains("cannot lock ref")
                        {
                            // Another clone pushed first: wait a random while, then fetch
                            // and merge again.
                            setbacks.lost += 1;
                            refused_by = Refused::Lease;
                            if !setbacks.exhausted() {
                                backoff(setbacks.lost, 0);
                            }
                            return Ok(Flow::Again);
                        }
                        // The remote said no (a hook, permissions): nothing was taken.
                        let refused = out.stderr.contains("[remote rejected]")
                            || out.stderr.contains("[rejected]");
                        // Otherwise the push may have reached the remote even so: its answer
                        // lost (the connection dropped, the process died after the remote took
                        // the branch), or a per-ref status that said accepted with a failing
                        // exit. The remote's branch tells, before anything is said.
                        match if refused {
                            Ok(theirs.clone())
                        } else {
                            remote_branch(&bg, &remote)
                        } {
                            Ok(Some(head)) if head == ours => {} // taken: pushed
                            Ok(head) if head != theirs => {
                                // Another clone's push got in first.
                                setbacks.lost += 1;
                                refused_by = Refused::Lease;
                                if !setbacks.exhausted() {
                                    backoff(setbacks.lost, 0);
                                }
                                return Ok(Flow::Again);
                            }
                            Ok(_) => {
                                return Err(unreachable(
                                    &bg,
                                    &remote,
                                    "push the board branch to",
                                    &out.stderr,
                                ));
                            }
                            Err(asked) => {
                                return Err(unknown_push(&bg, &remote, &out.stderr, &asked));
                            }
                        }
                    }
                    // This clone's copy of the remote's branch, from what the fetch left
                    // to what the remote took: only if it is still what the fetch left.
                    // Moved meanwhile by another git process of this clone (a fetch): its
                    // value stays, not forced to this one, and the next fetch corrects it
                    // either way. The push was taken: that is not a failure.
                    let zero = "0".repeat(40);
                    let old = theirs.as_deref().unwrap_or(&zero);
                    let out = bg
                        .git
                        .output(&["update-ref", REMOTE_REF, &ours, old], None)?;
                    if !out.success && !super::git::local_race(&out.stderr) {
                        return Err(Error::Git {
                            command: format!("git update-ref {REMOTE_REF} {ours} {old}"),
                            dir: bg.repo.common_dir.clone(),
                            message: out.why(),
                        });
                    }
                    x.outcome = if merged_once { "merged" } else { "pushed" };
                    x.commit = ours;
                    Ok(Flow::Done)
                }
            }
        })();
        match round {
            Ok(Flow::Done) => return Ok(x),
            Ok(Flow::Again) => {}
            Err(Error::Git {
                command, message, ..
            }) if super::git::local_race(&message) => {
                setbacks.local += 1;
                let first = message.lines().map(str::trim).find(|l| !l.is_empty());
                setbacks.local_why = Some(format!("{command}: {}", first.unwrap_or("")));
                if !setbacks.exhausted() {
                    super::local_pause(setbacks.local);
                }
            }
            Err(e) => return Err(e),
        }
    }
    // Only the remote's lock, every time: a stale lock there (or a push that held it at
    // each try), not a lost race.
    if setbacks.locked > 0 && setbacks.lost == 0 && setbacks.written == 0 {
        let lock = setbacks.lock.as_deref().unwrap_or("?");
        return Err(Error::Request {
            kind: crate::error::Kind::Unconfirmed,
            path: Some(board.root.clone()),
            message: crate::msg!(format!(
                "the remote '{remote}' refused the board branch {} times in a row: its lock of the branch, {lock}, exists. Either another clone was pushing each time, or a git on the remote was killed while it updated the branch and left the lock behind: if nobody is pushing to the remote, remove that file there. This clone's changes are kept on the branch {}",
                setbacks.locked,
                branch::BRANCH
            )),
        });
    }
    let stale = if setbacks.locked > 0 {
        " (if nobody is pushing to the remote, its lock of the branch named above may be left by a killed git: remove that file there)"
    } else {
        ""
    };
    Err(Error::Request {
        kind: crate::error::Kind::Conflict,
        path: Some(board.root.clone()),
        message: crate::msg!(
            format!(
                "{}: {}{stale}; this clone's changes are kept on the branch {}; run `",
                if setbacks.local > 0 && setbacks.lost + setbacks.locked + setbacks.written == 0 {
                    "this clone's refs of the board could not be updated".to_string()
                } else {
                    format!("the board branch on '{remote}' could not be updated")
                },
                setbacks.said(),
                branch::BRANCH
            ),
            crate::error::Command::Sync,
            "` again"
        ),
    })
}

/// The commit the remote's board branch is at (None: it has none), asked with `git
/// ls-remote` (no objects move); Err with git's message when the remote cannot be asked.
fn remote_branch(bg: &BoardGit, remote: &str) -> std::result::Result<Option<String>, String> {
    let out = bg
        .remote_git()
        .output(&["ls-remote", "--refs", remote, REF], None)
        .map_err(|e| e.to_string())?;
    if !out.success {
        return Err(out.stderr);
    }
    Ok(out.stdout.lines().find_map(|l| {
        let (sha, name) = l.split_once('\t')?;
        (name == REF).then(|| sha.to_string())
    }))
}

/// A push of the board branch whose outcome is unknown: it failed (`pushed` is git's
/// message), and the remote could not be asked afterwards (`asked`). The remote may hold
/// this clone's branch or not; either way the board here is intact and the next sync finds
/// out (it fetches the remote's branch: this clone's commit, or the one it had).
fn unknown_push(bg: &BoardGit, remote: &str, pushed: &str, asked: &str) -> Error {
    let first = |s: &str| {
        s.lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("git failed")
            .to_string()
    };
    Error::Request {
        kind: crate::error::Kind::Unconfirmed,
        path: Some(bg.root.clone()),
        message: crate::msg!(
            format!(
                "the push of the board branch to the remote '{remote}' failed ({}) and the remote could not be asked since ({}): it may or may not have taken the branch. The board here is intact (its changes are on the branch {}); run `",
                first(pushed),
                first(asked),
                branch::BRANCH,
            ),
            crate::error::Command::Sync,
            format!(
                "` again when the remote is reachable: it finds out (`git ls-remote {remote}` tells)"
            )
        ),
    }
}

/// Logs what the board did not take from the remote's commit `theirs`, once.
pub(crate) fn alert_refused(
    board: &Board,
    remote: &str,
    theirs: &str,
    refused: &[Refusal],
) -> Result<()> {
    let short = &theirs[..theirs.len().min(12)];
    alert::once(
        board,
        &format!("refused {theirs}"),
        &refused[0].path,
        format!(
            "sync refused what the remote '{remote}' brought at commit {short} (the board kept its own version): {}",
            alert::list(refused)
        ),
    )
}

/// The bytes of `path` in commit `rev` (empty when it has none).
pub(crate) fn blob_at(bg: &BoardGit, rev: &str, path: &str) -> Result<Vec<u8>> {
    let out = bg
        .git
        .output(&["cat-file", "blob", &format!("{rev}:{path}")], None)?;
    Ok(if out.success {
        out.stdout.into_bytes()
    } else {
        Vec::new()
    })
}

/// Writes `new` over the board (which holds `old`) holding the locks tavern's own writes
/// of those files take, sorted, then the log lock, as the write protocol takes them: no
/// write is half done under it, and a watcher that reconciles a changed document under
/// its lock finds the entries that explain it already in log.yaml.
fn materialize_locked(
    board: &Board,
    bg: &BoardGit,
    old: &str,
    new: &str,
    files: &[String],
) -> Result<bool> {
    let names: std::collections::BTreeSet<String> = files
        .iter()
        .filter_map(|f| crate::watch::areas::classify(f)?.lock_name())
        .collect();
    // One open file per lock: past MAX_DOC_LOCKS (a first sync of a large board) only the
    // log lock is held, so that a common limit of open files (1024) is never reached;
    // read-tree still refuses a file written since it was recorded.
    let mut held = Vec::with_capacity(names.len().min(MAX_DOC_LOCKS) + 1);
    if names.len() <= MAX_DOC_LOCKS {
        for name in &names {
            held.push(crate::store::lock(board, name)?);
        }
    }
    held.push(crate::store::lock(board, crate::layout::LOG_LOCK)?);
    bg.materialize(Some(old), new)
}

/// The most document locks a sync holds while it writes the board (see
/// [`materialize_locked`]).
const MAX_DOC_LOCKS: usize = 512;

fn follow_claims(board: &Board, out: &mut Vec<String>) -> Result<()> {
    note_followed(claims::reconcile(board)?, out);
    Ok(())
}

/// [`follow_claims`] over the records as [`claims::fetch_all`] listed them.
fn follow_listed(
    board: &Board,
    records: Vec<claims::record::Record>,
    out: &mut Vec<String>,
) -> Result<()> {
    note_followed(claims::reconcile_listed(board, records)?, out);
    Ok(())
}

fn note_followed(ids: Vec<String>, out: &mut Vec<String>) {
    for id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
}

/// The files that differ between two commits of the board branch.
fn changed_files(bg: &BoardGit, a: &str, b: &str) -> Result<Vec<String>> {
    Ok(bg
        .git
        .run(&["diff", "--name-only", "--no-renames", a, b])?
        .lines()
        .map(str::to_string)
        .collect())
}

/// A commit whose tree is `base`'s with `changes`, with `parents`, built in an index of
/// this process alone.
pub(crate) fn build_commit(
    bg: &BoardGit,
    base: Option<&str>,
    changes: &[(String, Change)],
    parents: &[&str],
    message: &str,
) -> Result<String> {
    let index = bg.scratch_index();
    let g = bg.git.clone().with_env("GIT_INDEX_FILE", &index.0);
    match base {
        Some(base) => g.run(&["read-tree", base])?,
        None => g.run(&["read-tree", "--empty"])?,
    };
    let zero = "0".repeat(40);
    // The new contents (merged documents, the merged log) become blobs in one process.
    let written = write_blobs(
        bg,
        changes.iter().filter_map(|(_, c)| match c {
            Change::Bytes(bytes) => Some(bytes.as_slice()),
            _ => None,
        }),
    )?;
    let mut written = written.iter();
    let mut info = String::new();
    for (path, change) in changes {
        match change {
            Change::Blob { mode, sha } => info.push_str(&format!("{mode} {sha}\t{path}\n")),
            Change::Removed => info.push_str(&format!("0 {zero}\t{path}\n")),
            Change::Bytes(_) => {
                let sha = written.next().ok_or_else(|| Error::Git {
                    command: "git hash-object -w --stdin-paths".into(),
                    dir: bg.root.clone(),
                    message: "fewer objects written than asked".into(),
                })?;
                info.push_str(&format!("100644 {sha}\t{path}\n"));
            }
        }
    }
    let out = g.output(&["update-index", "--index-info"], Some(info.as_bytes()))?;
    if !out.success {
        return Err(Error::Git {
            command: "git update-index --index-info".into(),
            dir: bg.root.clone(),
            message: out.stderr.trim().to_string(),
        });
    }
    let tree = g.run(&["write-tree"])?;
    drop(index);
    bg.commit_tree(&tree, parents, message)
}

/// Writes each of `contents` as a blob of the repository, in one `git hash-object -w
/// --stdin-paths` over scratch files of this process (removed after); returns their ids
/// in order. As is, no attribute filter applied: what a merge made is what is stored.
fn write_blobs<'a>(bg: &BoardGit, contents: impl Iterator<Item = &'a [u8]>) -> Result<Vec<String>> {
    let scratch = bg.scratch_dir()?;
    let mut paths = String::new();
    for (i, bytes) in contents.enumerate() {
        let path = scratch.0.join(i.to_string());
        // Scratch input for git, read at once and removed below.
        crate::file::write_in_place(&path, bytes)?;
        paths.push_str(&path.to_string_lossy());
        paths.push('\n');
    }
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let out = bg.git.output(
        &["hash-object", "-w", "--no-filters", "--stdin-paths"],
        Some(paths.as_bytes()),
    )?;
    if !out.success {
        return Err(Error::Git {
            command: "git hash-object -w --no-filters --stdin-paths".into(),
            dir: bg.root.clone(),
            message: out.why(),
        });
    }
    Ok(out.stdout.lines().map(str::to_string).collect())
}

fn is_ancestor(bg: &BoardGit, a: &str, b: &str) -> Result<bool> {
    Ok(bg
        .git
        .output(&["merge-base", "--is-ancestor", a, b], None)?
        .success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sync_that_gives_up_names_each_cause_it_met() {
        let s = Setbacks {
            lost: 3,
            locked: 1,
            lock: Some("/r.git/refs/heads/tavern.lock".into()),
            written: 2,
            ..Setbacks::default()
        };
        assert_eq!(
            s.said(),
            "3 race(s) lost to other clones' pushes of the branch, 1 push(es) refused because the remote's lock of the branch, /r.git/refs/heads/tavern.lock, existed, 2 merge(s) made again because the board here was written meanwhile"
        );
        let local = Setbacks {
            local: 2,
            local_why: Some("git update-ref: error: cannot lock ref 'refs/heads/tavern': is at a but expected b".into()),
            ..Setbacks::default()
        };
        assert_eq!(
            local.said(),
            "2 round(s) started over because another git process of this clone updated or locked a ref or the index the exchange needed (last: git update-ref: error: cannot lock ref 'refs/heads/tavern': is at a but expected b; a git left running by a killed tavern process, or one of your own: not the remote)"
        );
        assert!(!local.exhausted());
        assert!(
            Setbacks {
                local: crate::sync::LOCAL_RACE_ATTEMPTS,
                ..Setbacks::default()
            }
            .exhausted()
        );
        let lost = Setbacks {
            lost: MAX_ATTEMPTS,
            ..Setbacks::default()
        };
        assert!(lost.exhausted());
        assert_eq!(
            lost.said(),
            format!("{MAX_ATTEMPTS} race(s) lost to other clones' pushes of the branch")
        );
        let locked = Setbacks {
            locked: MAX_LOCKED,
            ..Setbacks::default()
        };
        assert!(locked.exhausted() && !Setbacks::default().exhausted());
        // Local writes and lost races have a budget each.
        let both = Setbacks {
            lost: MAX_ATTEMPTS - 1,
            written: MAX_ATTEMPTS - 1,
            ..Setbacks::default()
        };
        assert!(!both.exhausted());
    }
}
