//! Holds across clones (DESIGN §14): on a connected board, a hold, a renewal and a release
//! are confirmed by the remote before they count, through the same compare-and-swap as
//! claims (a push under `--force-with-lease`), on refs sharded by where a hold can meet
//! another.
//!
//! Two holds can only meet when their patterns can match one path, so a hold lives in the
//! shard of its pattern's first segment: `refs/tavern/holds/paths/<top>` for patterns
//! starting with the literal name `<top>` (`src/**`, `src/*.rs`), `refs/tavern/holds/globs`
//! for those whose first segment is a glob (`**/*.md`, `*.rs`: they may meet anything), and
//! `refs/tavern/holds/named/<name>` for a named resource. A glob-first hold is written into
//! `globs` and into every path shard, so a hold under `src` is decided by `paths/src` alone;
//! `globs` lists the path shards, and creating one (its first hold ever) rewrites `globs`
//! too, copying its glob holds, so a glob hold and a new shard never miss each other. Every
//! change is one `git push --atomic` of the shards it touches, each under a lease on the
//! record this clone last saw: all of them or none.
//!
//! A shard's record is a commit (the empty tree, the record it replaced as parent) whose
//! message is a title and a JSON body: `{"holds": [...], "shards": [...]}`. Expired holds
//! count for nothing and are dropped by whoever writes the shard next.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::board::Board;
use crate::error::{Error, Kind, Result};
use crate::holds::{Conflict, Hold, Resource};
use crate::sync::git::Git;

use super::exchange::{
    PushResult, commit_message, fetch, git, git_error, origin, push_many, push_result,
};
use super::refname::component;

/// Where hold records live, on the remote and in every clone.
pub const REF_PREFIX: &str = "refs/tavern/holds/";
/// The shard of glob-first holds, which lists every path shard.
pub const GLOBS: &str = "refs/tavern/holds/globs";
const PATHS: &str = "refs/tavern/holds/paths/";
const NAMED: &str = "refs/tavern/holds/named/";

/// How often a change is tried again after losing a race it can still build on (another
/// hold landed in the same shard), before it gives up as a conflict.
const MAX_ATTEMPTS: usize = 12;
/// A shard key is at most this many bytes of the name (longer ones share a shard:
/// sharding is about contention, the overlap check within a shard is exact).
const MAX_KEY: usize = 60;
/// A record over this size, or with more holds, is not one tavern wrote.
const MAX_RECORD: usize = 1 << 20;
const MAX_HOLDS: usize = 4096;

/// Which shard a resource's holds live in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Shard {
    /// Patterns whose first segment is this literal name.
    Path(String),
    /// Patterns whose first segment is a glob.
    Globs,
    Named(String),
}

/// A name's shard key: its first [`MAX_KEY`] bytes (whole characters), so a ref name
/// component, `%XX`-encoded at worst, stays within what a file name may be.
fn key(name: &str) -> String {
    let mut end = name.len().min(MAX_KEY);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

fn shard_of(r: &Resource) -> Shard {
    match r {
        Resource::Named(n) => Shard::Named(key(n)),
        Resource::Path(p) => {
            let first = p.split('/').next().unwrap_or("");
            if first.is_empty() || first.contains(['*', '?', '[', '\\']) {
                Shard::Globs
            } else {
                Shard::Path(key(first))
            }
        }
    }
}

impl Shard {
    fn ref_name(&self) -> String {
        match self {
            Shard::Path(top) => format!("{PATHS}{}", component(top)),
            Shard::Globs => GLOBS.to_string(),
            Shard::Named(n) => format!("{NAMED}{}", component(n)),
        }
    }

    /// Does a hold of `r` belong in this shard's record?
    fn keeps(&self, r: &Resource) -> bool {
        let home = shard_of(r);
        home == *self || (matches!(self, Shard::Path(_)) && home == Shard::Globs)
    }
}

/// One hold as a shard's record keeps it: the hold and the clone it was made on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Held {
    #[serde(flatten)]
    pub hold: Hold,
    pub origin: String,
}

/// A request waiting in line (`hold --wait`) on the remote: kept in the record of every
/// shard its resources live in, in the order the remote took them (each record is a
/// compare-and-swap, and a waiter joins every shard it needs in one atomic push, so two
/// waiters are in the same order in every shard they share). Its lease (`until`) is
/// renewed while it waits; a waiter that died drops out when its lease runs out.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Queued {
    /// Unique across clones: `ORIGIN#N`.
    pub ticket: String,
    pub agent: String,
    pub resources: Vec<Resource>,
    #[serde(default)]
    pub shared: bool,
    pub since: String,
    /// Its lease: it counts until then.
    pub until: String,
}

/// What a change does to the line of waiters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueOp {
    /// Join the line at its end (or, already in it, renew its lease in place).
    Join,
    /// Its turn: only earlier waiters count against its holds, and it leaves the line
    /// with the grant.
    Turn,
    /// Leave the line (it gave up).
    Leave,
}

/// A shard's record.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Record {
    #[serde(default)]
    holds: Vec<Held>,
    /// Who waits for what here, first come first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    queue: Vec<Queued>,
    /// In `globs` only: the keys of every path shard.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    shards: BTreeSet<String>,
}

impl Record {
    fn message(&self, name: &str) -> String {
        let body = serde_json::to_string(self).unwrap_or_default();
        format!(
            "hold records of {}\n\n{body}\n",
            name.strip_prefix(REF_PREFIX).unwrap_or(name)
        )
    }

    /// A record another clone pushed is input: bounded, and every hold checked.
    fn parse(name: &str, message: &str) -> Result<Record> {
        let bad = |why: String| {
            Error::input(format!(
                "the hold record {name} (on the remote and in this clone) is not one tavern wrote: {why}; remove the ref on the remote (`git push REMOTE :{name}`) to drop the holds it keeps"
            ))
        };
        if message.len() > MAX_RECORD {
            return Err(bad(format!("over {MAX_RECORD} bytes")));
        }
        let body = message.split_once("\n\n").map_or("", |(_, b)| b).trim();
        let rec: Record = serde_json::from_str(body).map_err(|e| bad(e.to_string()))?;
        if rec.holds.len() > MAX_HOLDS || rec.queue.len() > MAX_HOLDS {
            return Err(bad(format!("over {MAX_HOLDS} holds or waiters")));
        }
        for q in &rec.queue {
            let odd = [q.ticket.as_str(), &q.agent, &q.since, &q.until]
                .into_iter()
                .chain(q.resources.iter().map(Resource::text))
                .any(|t| t.len() > crate::holds::MAX_TEXT || t.chars().any(char::is_control));
            if odd
                || q.resources.len() > crate::holds::MAX_RESOURCES
                || crate::ops::validate_actor(&q.agent).is_err()
            {
                return Err(bad(format!("a waiter '{}' is malformed", key(&q.agent))));
            }
        }
        for held in &rec.holds {
            let h = &held.hold;
            let plain = [
                h.agent.as_str(),
                &h.id,
                &h.since,
                h.resource.text(),
                &held.origin,
            ]
            .into_iter()
            .chain(h.until.as_deref())
            .chain(h.task.as_deref());
            // Shown in messages as they are: no control characters (a reason is quoted).
            let odd = plain
                .clone()
                .any(|t| t.len() > crate::holds::MAX_TEXT || t.chars().any(char::is_control));
            let long = h
                .reason
                .as_ref()
                .is_some_and(|r| r.len() > crate::holds::MAX_TEXT);
            let nobody = crate::ops::validate_actor(&h.agent).is_err();
            if nobody || odd || long || h.owner_rule {
                return Err(bad(format!("a hold of '{}' is malformed", key(&h.agent))));
            }
        }
        Ok(rec)
    }

    fn live(&mut self, now: DateTime<Utc>) {
        self.holds.retain(|h| !expired(&h.hold, now));
        self.queue.retain(|q| {
            DateTime::parse_from_rfc3339(&q.until).is_ok_and(|u| u.with_timezone(&Utc) > now)
        });
    }
}

fn expired(h: &Hold, now: DateTime<Utc>) -> bool {
    h.until
        .as_deref()
        .and_then(|u| DateTime::parse_from_rfc3339(u).ok())
        .is_some_and(|u| u.with_timezone(&Utc) <= now)
}

/// This clone's copies of the shard records: ref -> (sha, record).
fn copies(board: &Board, g: &Git) -> Result<BTreeMap<String, (String, Record)>> {
    let out = g.output(
        &[
            "for-each-ref",
            "--format=%(refname)%00%(objectname)%00%(contents)%00",
            REF_PREFIX,
        ],
        None,
    )?;
    if !out.success {
        return Err(git_error(g, "for-each-ref", &out));
    }
    let _ = board;
    let mut map = BTreeMap::new();
    let mut parts = out.stdout.split('\0');
    while let (Some(name), Some(sha), Some(message)) = (parts.next(), parts.next(), parts.next()) {
        let name = name.trim_start_matches('\n').to_string();
        if name.is_empty() {
            break;
        }
        let rec = Record::parse(&name, message)?;
        map.insert(name, (sha.to_string(), rec));
    }
    Ok(map)
}

/// Fetches every shard record of the remote into this clone's copies.
fn fetch_all(board: &Board, g: &Git, remote: &str) -> Result<std::result::Result<(), String>> {
    let out = fetch(
        g,
        board,
        remote,
        &format!("+{REF_PREFIX}*:{REF_PREFIX}*"),
        true,
        true,
    )?;
    Ok(if out.success {
        // Best effort: a copy not rewritten grows old, and the hook then asks again.
        let _ = remember(board, g);
        Ok(())
    } else {
        Err(format!("fetching the hold records failed: {}", out.why()))
    })
}

/// This clone's last copy of the live holds made on other clones, for the pre-edit and
/// pre-commit hooks, which never start git to read the records: rewritten from the copies
/// of the records at every fetch of them (so its mtime is when they were last fetched),
/// and empty when none was live then (a stat tells the hook so). Machine-local.
pub const ELSEWHERE: &str = ".state/holds-elsewhere.json";
/// When the hooks last tried to refresh [`ELSEWHERE`] (they try at most once per bound).
const TRIED: &str = ".state/holds-elsewhere.tried";

/// The live holds of other clones in this clone's copies of the records, each once (its id
/// saying where it was made: `h-3 on box:/path`).
fn others(board: &Board, g: &Git) -> Result<Vec<Hold>> {
    Ok(others_all(board, g)?.0)
}

/// A waiter of another clone in the remote's line, as this clone last fetched it.
#[derive(Clone, Debug)]
pub struct WaitingElsewhere {
    /// The clone it waits on (`box:/path`).
    pub clone: String,
    /// Its number on that clone (the `N` of its ticket `ORIGIN#N`).
    pub number: u64,
    pub waiter: Queued,
}

/// [`others`], and the live waiters of other clones in the records' lines (each once, in
/// the order of the first line it is in; the records are read in their refs' order).
fn others_all(board: &Board, g: &Git) -> Result<(Vec<Hold>, Vec<WaitingElsewhere>)> {
    let mine = origin(board);
    let now = crate::time::now();
    let mut out: Vec<Hold> = Vec::new();
    let mut waiting: Vec<WaitingElsewhere> = Vec::new();
    for (_, (_, mut rec)) in copies(board, g)? {
        rec.live(now);
        for q in std::mem::take(&mut rec.queue) {
            let Some((clone, n)) = q.ticket.rsplit_once('#') else {
                continue;
            };
            let seen = waiting.iter().any(|w| w.waiter.ticket == q.ticket);
            if clone != mine && !seen {
                waiting.push(WaitingElsewhere {
                    clone: clone.to_string(),
                    number: n.parse().unwrap_or_default(),
                    waiter: q,
                });
            }
        }
        for h in rec.holds.into_iter().filter(|h| h.origin != mine) {
            let seen = out
                .iter()
                .any(|o| o.agent == h.hold.agent && o.resource == h.hold.resource);
            if !seen {
                let mut hold = h.hold;
                hold.id = format!("{} on {}", hold.id, h.origin);
                out.push(hold);
            }
        }
    }
    Ok((out, waiting))
}

/// Rewrites [`ELSEWHERE`] from this clone's copies of the records.
pub fn remember(board: &Board, g: &Git) -> Result<()> {
    // No hold record in this clone at all (the common case): no git to ask.
    let none = super::exchange::common_dir(board).is_some_and(|c| {
        !c.join("reftable").exists()
            && !c.join(REF_PREFIX).exists()
            && !std::fs::read_to_string(c.join("packed-refs")).is_ok_and(|t| t.contains(REF_PREFIX))
    });
    let held = if none { Vec::new() } else { others(board, g)? };
    let bytes = if held.is_empty() {
        Vec::new()
    } else {
        let mut b = serde_json::to_vec(&held).unwrap_or_default();
        b.push(b'\n');
        b
    };
    crate::file::write(
        &board.root.join(ELSEWHERE),
        &bytes,
        crate::file::Durability::Cache,
    )
}

/// What the hooks know of other clones' holds.
#[derive(Debug, Default)]
pub struct Seen {
    /// Live holds of other clones, as last fetched.
    pub holds: Vec<Hold>,
    /// When they were fetched (None: this clone never fetched them: not connected, or
    /// never synced since it was).
    pub fetched: Option<DateTime<Utc>>,
    /// The copy is older than the bound and could not be refreshed now: why.
    pub stale: Option<String>,
}

fn age_of(path: &std::path::Path) -> Option<(std::time::Duration, std::time::SystemTime)> {
    let m = std::fs::metadata(path).ok()?.modified().ok()?;
    Some((
        std::time::SystemTime::now()
            .duration_since(m)
            .unwrap_or_default(),
        m,
    ))
}

/// The holds of other clones as the hooks see them: this clone's last copy
/// ([`ELSEWHERE`], one stat when it is fresh and empty), refreshed first when it is older
/// than `fresh` (one fetch of the hold records, killed after `limit`), at most once per
/// `fresh` for every hook of this clone; a refresh that fails leaves the last copy, and
/// says why in `stale`. No copy at all: nothing known (the board is not connected, or has
/// not synced since it was).
pub fn seen(board: &Board, fresh: std::time::Duration, limit: std::time::Duration) -> Seen {
    let path = board.root.join(ELSEWHERE);
    let Some((age, _)) = age_of(&path) else {
        return Seen::default();
    };
    let mut stale = None;
    if fresh.is_zero() || age > fresh {
        let tried = board.root.join(TRIED);
        let due = age_of(&tried).is_none_or(|(a, _)| fresh.is_zero() || a > fresh);
        if due {
            let _ = crate::file::write(&tried, b"", crate::file::Durability::Cache);
            match refresh(board, limit) {
                Ok(true) => {}
                Ok(false) => {
                    // No longer connected: nothing of other clones counts.
                    let _ = std::fs::remove_file(&path);
                    return Seen::default();
                }
                Err(why) => stale = Some(why),
            }
        } else {
            stale = Some(format!(
                "a refresh was tried less than {} ago",
                crate::time::format_millis(fresh.as_millis() as u64)
            ));
        }
    }
    let Some((_, when)) = age_of(&path) else {
        return Seen::default();
    };
    let fetched: DateTime<Utc> = when.into();
    let bytes = std::fs::read(&path).unwrap_or_default();
    let holds: Vec<Hold> = if bytes.is_empty() {
        Vec::new()
    } else {
        match serde_json::from_slice(&bytes) {
            Ok(h) => h,
            Err(e) => {
                stale = Some(format!("{ELSEWHERE} does not parse ({e})"));
                Vec::new()
            }
        }
    };
    let now = crate::time::now();
    Seen {
        holds: holds.into_iter().filter(|h| !expired(h, now)).collect(),
        fetched: Some(fetched),
        stale,
    }
}

/// Fetches the hold records (for at most `limit`) and rewrites [`ELSEWHERE`]: false when
/// the board is no longer connected; the error says why it could not.
fn refresh(board: &Board, limit: std::time::Duration) -> std::result::Result<bool, String> {
    let remote = match crate::sync::remote(board) {
        Ok(Some(r)) => r,
        Ok(None) => return Ok(false),
        Err(e) => return Err(e.to_string()),
    };
    let g = git(board);
    let spec = format!("+{REF_PREFIX}*:{REF_PREFIX}*");
    let args = [
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
        "--prune",
        remote.as_str(),
        spec.as_str(),
    ];
    match g.output_within(&args, limit) {
        Ok(Some(out)) if out.success => {
            remember(board, &g).map_err(|e| e.to_string())?;
            Ok(true)
        }
        Ok(Some(out)) => Err(format!(
            "fetching them from the remote '{remote}' failed: {}",
            out.why()
        )),
        Ok(None) => Err(format!(
            "the remote '{remote}' did not answer within {}",
            crate::time::format_millis(limit.as_millis() as u64)
        )),
        Err(e) => Err(e.to_string()),
    }
}

/// What a change asks the remote to record for holds.
pub struct Change<'a> {
    /// Holds to add (or renew: they replace the same agent's hold of the same resource).
    pub add: &'a [Hold],
    /// Holds to drop: (agent, resource).
    pub drop: &'a [(String, Resource)],
    /// How messages name it: "holding src/a.rs", "releasing h-3".
    pub what: String,
    /// A waiter joining, taking its turn or leaving the line (None: a request that does
    /// not wait, which every live waiter it overlaps stands before).
    pub queue: Option<(&'a Queued, QueueOp)>,
}

/// The ticket a waiter of this clone has on the remote for its local ticket `n`.
pub fn ticket(board: &Board, n: u64) -> String {
    format!("{}#{n}", origin(board))
}

/// What the remote said.
#[derive(Debug)]
pub enum Outcome {
    /// The remote holds the change (or had nothing to change).
    Done,
    /// Holds of other agents on the remote overlap what was asked.
    Refused(Vec<Conflict>),
}

fn unconfirmed(board: &Board, remote: &str, what: &str, why: &str) -> Error {
    Error::Unconfirmed {
        task: format!("hold:{what}"),
        remote: remote.to_string(),
        message: format!(
            "cannot confirm {what} with the remote '{remote}' ({}): {why}; nothing was changed",
            board.project().display()
        ),
    }
}

/// The fetch of the hold records lost every attempt to another git process of this clone
/// updating or locking its copies (exit 1, as for a claim record's copy): not the remote.
fn local_race_lost(board: &Board, what: &str, why: &str) -> Error {
    Error::Request {
        kind: Kind::Other,
        path: None,
        message: crate::msg!(format!(
            "cannot confirm {what}: this clone's copies of the hold records could not be updated ({why}): another git process of this clone updated them or held a lock at each attempt (another tavern command's git, one left running by a killed tavern process, or your own); the remote is not at fault. Nothing was changed in {}: run the same command again (if no git process runs and the lock stays, remove it)",
            board.project().display()
        )),
    }
}

/// Confirms `change` with `remote`: decides from this clone's copies first, and from the
/// remote's records (one fetch) when a copy is stale or shows a conflict; pushes every
/// shard it touches in one atomic push under leases. Called under the holds' lock, before
/// the local registry is written. Unreachable: exit 7, nothing changed; a push whose
/// answer was lost is resolved by fetching the records (ours there: done; else decided
/// again), and exit 8 when the remote cannot be asked.
pub fn confirm(board: &Board, remote: &str, agent: &str, change: &Change) -> Result<Outcome> {
    let g = git(board);
    let mine = origin(board);
    let mut fresh = false;
    let mut busy: Option<(String, Option<String>)> = None;
    let refetch = || -> Result<()> {
        fetch_all(board, &g, remote)?.map_err(|why| {
            if crate::sync::git::local_race(&why) {
                local_race_lost(board, &change.what, &why)
            } else {
                unconfirmed(board, remote, &change.what, &why)
            }
        })
    };
    // What to drop is decided on the remote's records: a copy may lack a shard.
    if !change.drop.is_empty() {
        refetch()?;
        fresh = true;
    }
    for attempt in 0..MAX_ATTEMPTS {
        let copies = copies(board, &g)?;
        let now = crate::time::now();
        let globs = copies
            .get(GLOBS)
            .map(|(_, r)| r.clone())
            .unwrap_or_default();
        let mut glob_holds = globs.clone();
        glob_holds.live(now);

        // The shards this change touches.
        let resources = change
            .add
            .iter()
            .map(|h| h.resource.clone())
            .chain(change.drop.iter().map(|(_, r)| r.clone()))
            .chain(
                change
                    .queue
                    .iter()
                    .flat_map(|(q, _)| q.resources.iter().cloned()),
            );
        let mut targets: BTreeSet<Shard> = BTreeSet::new();
        let mut new_tops: BTreeSet<String> = BTreeSet::new();
        for r in resources {
            let s = shard_of(&r);
            if s == Shard::Globs {
                targets.insert(Shard::Globs);
                targets.extend(globs.shards.iter().cloned().map(Shard::Path));
            }
            targets.insert(s);
        }
        for h in change.add {
            if let Shard::Path(top) = shard_of(&h.resource)
                && !copies.contains_key(&Shard::Path(top.clone()).ref_name())
            {
                new_tops.insert(top);
                targets.insert(Shard::Globs);
            }
        }
        // Dropping from a shard that does not exist changes nothing there.
        targets.retain(|s| {
            copies.contains_key(&s.ref_name())
                || matches!(s, Shard::Path(t) if new_tops.contains(t))
                || (*s == Shard::Globs && !new_tops.is_empty())
                || change.add.iter().any(|h| shard_of(&h.resource) == *s)
                || change.queue.is_some_and(|(q, op)| {
                    op == QueueOp::Join && q.resources.iter().any(|r| shard_of(r) == *s)
                })
        });

        // What stands in the way: holds of others in the touched shards (a new path shard
        // starts with the glob holds).
        let mut conflicts: Vec<Conflict> = Vec::new();
        for s in &targets {
            let mut rec = match copies.get(&s.ref_name()) {
                Some((_, r)) => r.clone(),
                None => glob_holds.clone(),
            };
            rec.live(now);
            for h in change.add {
                for other in &rec.holds {
                    let o = &other.hold;
                    let blocks = o.agent != agent
                        && !(o.shared && h.shared)
                        && o.resource.overlaps(&h.resource);
                    let seen = conflicts.iter().any(|c| {
                        c.wanted == h.resource
                            && c.hold.agent == o.agent
                            && c.hold.resource == o.resource
                    });
                    if blocks && !seen {
                        let mut hold = o.clone();
                        if other.origin != mine {
                            hold.id = format!("{} on {}", o.id, other.origin);
                        }
                        conflicts.push(Conflict {
                            wanted: h.resource.clone(),
                            hold,
                            queued: false,
                        });
                    }
                }
                // Waiters before it (every live one, for a request that does not wait):
                // nobody jumps the line.
                let mine_at = match change.queue {
                    Some((q, QueueOp::Turn)) => rec.queue.iter().position(|w| w.ticket == q.ticket),
                    _ => None,
                };
                let earlier = &rec.queue[..mine_at.unwrap_or(rec.queue.len())];
                for w in earlier {
                    let blocks = w.agent != agent
                        && !(w.shared && h.shared)
                        && w.resources.iter().any(|r| r.overlaps(&h.resource));
                    let seen = conflicts
                        .iter()
                        .any(|c| c.queued && c.hold.id == format!("queue:{}", w.ticket));
                    if blocks && !seen {
                        conflicts.push(Conflict::queued_behind(
                            &h.resource,
                            &w.ticket,
                            &w.agent,
                            w.shared,
                            &w.since,
                            &w.until,
                        ));
                    }
                }
            }
        }
        if !conflicts.is_empty() {
            if fresh {
                return Ok(Outcome::Refused(conflicts));
            }
            refetch()?;
            fresh = true;
            continue;
        }

        // The new records.
        let replaced = |h: &Held| {
            change
                .drop
                .iter()
                .any(|(a, r)| *a == h.hold.agent && *r == h.hold.resource)
                || change
                    .add
                    .iter()
                    .any(|n| n.agent == h.hold.agent && n.resource == h.hold.resource)
        };
        let mut refs = Vec::new();
        let mut ours = Vec::new();
        for s in &targets {
            let name = s.ref_name();
            let old = copies.get(&name);
            let mut rec = match old {
                Some((_, r)) => r.clone(),
                None if matches!(s, Shard::Path(_)) => Record {
                    holds: glob_holds.holds.clone(),
                    queue: glob_holds.queue.clone(),
                    shards: BTreeSet::new(),
                },
                None => Record::default(),
            };
            let before = old.map(|(_, r)| serde_json::to_string(r).unwrap_or_default());
            rec.live(now);
            rec.holds.retain(|h| !replaced(h));
            for h in change.add.iter().filter(|h| s.keeps(&h.resource)) {
                rec.holds.push(Held {
                    hold: h.clone(),
                    origin: mine.clone(),
                });
            }
            if *s == Shard::Globs {
                rec.shards.extend(new_tops.iter().cloned());
            }
            match change.queue {
                Some((q, QueueOp::Turn | QueueOp::Leave)) => {
                    rec.queue.retain(|w| w.ticket != q.ticket);
                }
                Some((q, QueueOp::Join)) if q.resources.iter().any(|r| s.keeps(r)) => {
                    match rec.queue.iter_mut().find(|w| w.ticket == q.ticket) {
                        Some(w) => w.until = q.until.clone(),
                        None => rec.queue.push(q.clone()),
                    }
                }
                _ => {}
            }
            if before.as_deref() == Some(serde_json::to_string(&rec).unwrap_or_default().as_str()) {
                continue;
            }
            let parent = old.map(|(sha, _)| sha.as_str());
            let sha = commit_message(board, &rec.message(&name), parent)?;
            ours.push((name.clone(), sha.clone()));
            refs.push((name, Some(sha), old.map(|(sha, _)| sha.clone())));
        }
        if refs.is_empty() {
            return Ok(Outcome::Done);
        }
        let out = push_many(&g, remote, true, &refs)?;
        // Under --atomic, the refs that did not fail themselves say "atomic push failed"
        // (refused by this side) or "atomic transaction failed" (by the remote, which may
        // not say why: a lease that no longer held under its lock, a ref another push
        // locked): decided again from the remote's records.
        let results: Vec<PushResult> = refs
            .iter()
            .map(|(n, _, _)| match push_result(&out, n) {
                PushResult::Failed(why) if why.contains("(atomic ") => {
                    PushResult::Busy { why, lock: None }
                }
                r => r,
            })
            .collect();
        let result = if results.iter().all(|r| *r == PushResult::Done) {
            PushResult::Done
        } else if results.contains(&PushResult::Stale) {
            PushResult::Stale
        } else if let Some(b) = results
            .iter()
            .find(|r| matches!(r, PushResult::Busy { .. }))
        {
            match b {
                PushResult::Busy { why, lock } => PushResult::Busy {
                    why: why.clone(),
                    lock: lock.clone(),
                },
                _ => unreachable!(),
            }
        } else if let Some(PushResult::Unknown(lost)) =
            results.iter().find(|r| matches!(r, PushResult::Unknown(_)))
        {
            PushResult::Unknown(lost.clone())
        } else {
            match results
                .into_iter()
                .find(|r| matches!(r, PushResult::Failed(_)))
            {
                Some(PushResult::Failed(why)) => PushResult::Failed(why),
                _ => PushResult::Unknown("git push failed without a word".into()),
            }
        };
        match result {
            PushResult::Done => {
                for (name, sha) in &ours {
                    set_copy(&g, name, sha);
                }
                return Ok(Outcome::Done);
            }
            PushResult::Stale => {
                refetch()?;
                fresh = true;
                busy = None;
            }
            PushResult::Busy { why, lock } => {
                std::thread::sleep(std::time::Duration::from_millis(20 << attempt.min(5)));
                refetch()?;
                fresh = true;
                busy = Some((why, lock));
            }
            PushResult::Failed(why) => {
                return Err(unconfirmed(board, remote, &change.what, &why));
            }
            PushResult::Unknown(lost) => {
                // Only the remote can say: its records, fetched; ours among them (or built
                // on) means the push took, all of it (it was atomic).
                if let Err(why) = fetch_all(board, &g, remote)? {
                    return Err(Error::Request {
                        kind: Kind::Unknown,
                        path: None,
                        message: crate::msg!(format!(
                            "the remote '{remote}' ({}) may have taken {} ({lost}), and it cannot be asked now ({why}): the outcome is unknown, and this clone's holds are as they were; the same command run again asks the remote and finishes or reports it",
                            board.project().display(),
                            change.what
                        )),
                    });
                }
                let (name, sha) = &ours[0];
                let now_there = copies_sha(&g, name);
                let took = match now_there {
                    Some(there) => {
                        there == *sha
                            || g.output(&["merge-base", "--is-ancestor", sha, &there], None)?
                                .success
                    }
                    None => false,
                };
                if took {
                    return Ok(Outcome::Done);
                }
                fresh = true;
            }
        }
    }
    if let Some((why, lock)) = busy {
        let lock = match lock {
            Some(l) => format!("its lock file {l} exists"),
            None => "it could not lock the record".to_string(),
        };
        return Err(unconfirmed(
            board,
            remote,
            &change.what,
            &format!(
                "{lock} ({why}, {MAX_ATTEMPTS} attempts): a push there still runs, or a git killed on the remote left the lock behind (stale); if no push is running on the remote, remove that file there"
            ),
        ));
    }
    Err(Error::conflict(
        board.rel(&board.root.join(crate::holds::FILE)),
        format!(
            "the remote '{remote}' hold records kept changing ({MAX_ATTEMPTS} attempts) while {}; retry",
            change.what
        ),
    ))
}

/// This clone's copy of `name` now points at `sha` (best effort: the next exchange
/// fetches it anyway, and a stale copy only costs a retry).
fn set_copy(g: &Git, name: &str, sha: &str) {
    let _ = g.output(&["update-ref", name, sha], None);
}

fn copies_sha(g: &Git, name: &str) -> Option<String> {
    let out = g
        .output(&["rev-parse", "--verify", "--quiet", name], None)
        .ok()?;
    out.success
        .then(|| out.stdout.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The live holds made on other clones, as this clone's copies of the records say them
/// (each once; its id says where it was made: `h-3 on box:/path`). With `remote`, the
/// records are fetched first; a fetch that fails leaves the copies as they were and says
/// why (the second value).
pub fn elsewhere(board: &Board, remote: Option<&str>) -> Result<(Vec<Hold>, Option<String>)> {
    let (holds, _, unfetched) = elsewhere_all(board, remote)?;
    Ok((holds, unfetched))
}

/// [`elsewhere`], with the waiters of other clones in the remote's line.
pub fn elsewhere_all(
    board: &Board,
    remote: Option<&str>,
) -> Result<(Vec<Hold>, Vec<WaitingElsewhere>, Option<String>)> {
    let g = git(board);
    let unfetched = match remote {
        Some(r) => fetch_all(board, &g, r)?.err(),
        None => None,
    };
    let (holds, waiting) = others_all(board, &g)?;
    Ok((holds, waiting, unfetched))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str) -> Resource {
        Resource::Path(p.into())
    }

    #[test]
    fn a_pattern_lives_in_the_shard_of_its_first_segment() {
        assert_eq!(shard_of(&path("src/**")), Shard::Path("src".into()));
        assert_eq!(shard_of(&path("src/*.rs")), Shard::Path("src".into()));
        assert_eq!(
            shard_of(&path("README.md")),
            Shard::Path("README.md".into())
        );
        assert_eq!(shard_of(&path("**/*.md")), Shard::Globs);
        assert_eq!(shard_of(&path("s*/a.rs")), Shard::Globs);
        assert_eq!(shard_of(&path("**")), Shard::Globs);
        assert_eq!(
            shard_of(&Resource::Named("db:test".into())),
            Shard::Named("db:test".into())
        );
        assert_eq!(
            Shard::Path("Src".into()).ref_name(),
            "refs/tavern/holds/paths/%53rc"
        );
        assert_eq!(
            Shard::Named("db:test".into()).ref_name(),
            "refs/tavern/holds/named/db%3Atest"
        );
        // Long names share the shard of their first 60 bytes, cut between characters.
        let long = "é".repeat(100);
        assert_eq!(
            shard_of(&Resource::Named(long)),
            Shard::Named("é".repeat(30))
        );
        assert!(Shard::Named("é".repeat(30)).ref_name().len() < 255);
        // A path shard keeps the glob holds too; the glob shard only its own.
        assert!(Shard::Path("src".into()).keeps(&path("**/*.rs")));
        assert!(!Shard::Globs.keeps(&path("src/a.rs")));
        assert!(!Shard::Path("docs".into()).keeps(&path("src/a.rs")));
    }

    #[test]
    fn a_record_from_elsewhere_is_checked() {
        let name = "refs/tavern/holds/paths/src";
        assert!(Record::parse(name, "t\n\n{\"holds\": []}\n").is_ok());
        assert!(Record::parse(name, "t\n\nnot json\n").is_err());
        let long = format!(
            "t\n\n{{\"holds\": [{{\"id\": \"h-1\", \"resource\": {{\"kind\": \"path\", \"name\": \"src/a\"}}, \"agent\": \"{}\", \"since\": \"x\", \"origin\": \"o\"}}]}}\n",
            "a".repeat(600)
        );
        assert!(Record::parse(name, &long).is_err());
        let hold = |agent: &str| {
            format!(
                "t\n\n{{\"holds\": [{{\"id\": \"h-1\", \"resource\": {{\"kind\": \"path\", \"name\": \"src/a\"}}, \"agent\": \"{agent}\", \"since\": \"x\", \"origin\": \"o\"}}]}}\n"
            )
        };
        assert!(Record::parse(name, &hold("a")).is_ok());
        assert!(Record::parse(name, &hold("a\\u001b[31m")).is_err());
        assert!(Record::parse(name, &hold("")).is_err());
    }
}
