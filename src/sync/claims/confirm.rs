//! Confirming a step with the remote: the new record is pushed under a lease on the one
//! this clone knows; a rejection fetches the remote's, decides again and retries while the
//! step can still build on it. A push whose answer was lost is not guessed at: the remote
//! is asked what it holds. Also the undo of a confirmed step whose local write failed, and
//! the renewal of an agent's records by its heartbeats.

use chrono::{DateTime, Utc};

use crate::board::Board;
use crate::error::Result;

use super::exchange::{
    self, PushResult, commit, git, known, origin, push, push_many, push_result, refresh,
    remote_sha, set_local, set_local_if,
};
use super::record::Record;
use super::refname::ref_name;
use super::wording::{Asked, Failure};

/// How often a claim retries after its push lost to a change it could still build on
/// (a released or expired record) before it gives up as a conflict.
const MAX_ATTEMPTS: usize = 8;

/// What a claim or transition asks the remote to record.
#[derive(Clone, Debug)]
pub struct Step<'a> {
    pub task: &'a str,
    pub actor: &'a str,
    /// `claim` (a new holder) rather than a move of a held task.
    pub claim: bool,
    /// The state the task is in, as this clone's copy says, and the one it moves to.
    pub from: &'a str,
    pub to: &'a str,
    /// A human's `--force`: the move goes through whoever holds the task.
    pub force: bool,
    /// A move that the workflow opens to others than the holder (`by: any`, `by:
    /// reviewer`: a reviewer's approve), or the answer to the holder's own question: it
    /// goes through while the remote's record is the hold this clone's copy saw (same
    /// state, same holder), and keeps that holder.
    pub open: bool,
    /// The holder this clone's copy names, if any.
    pub seen_holder: Option<&'a str>,
    /// On a claim, the agent this clone's copy says holds the task (another one): the
    /// claim is a takeover, allowed only if the remote's record of that hold expired.
    pub local_holder: Option<&'a str>,
    /// A sweep's release of this agent's claim: allowed only if the remote's record is that
    /// agent's and expired too (or the remote never heard of the claim).
    pub expired_hold_of: Option<&'a str>,
}

impl Step<'_> {
    fn asked(&self) -> Asked {
        if self.claim {
            Asked::Claim {
                task: self.task.to_string(),
            }
        } else {
            Asked::Move {
                task: self.task.to_string(),
                to: self.to.to_string(),
            }
        }
    }

    /// The remote could not be reached or refused: nothing was confirmed.
    fn unconfirmed(&self, board: &Board, remote: &str, why: String) -> Failure {
        Failure::Unconfirmed {
            asked: self.asked(),
            remote: remote.to_string(),
            project: board.project().to_path_buf(),
            why,
        }
    }

    /// A git command of this clone failed before the push (`e`, as [`exchange::git_error`]
    /// makes it): nothing was sent, nothing changed (exit 7, naming the command and why).
    fn local(&self, e: crate::error::Error) -> crate::error::Error {
        match e {
            crate::error::Error::Git {
                command, message, ..
            } => Failure::LocalGit {
                asked: self.asked(),
                command,
                why: message,
            }
            .into(),
            e => e,
        }
    }

    /// The agent a new record of this step names as the holder.
    fn holder(&self, board: &Board, known: Option<&Record>) -> String {
        if board.config.workflow.is_claimable(self.to) {
            String::new()
        } else if self.claim {
            self.actor.to_string()
        } else {
            // A forced or open move keeps the holder; a holder's own move keeps itself.
            known
                .map(|r| r.agent.as_str())
                .filter(|a| !a.is_empty())
                .or(self.seen_holder)
                .unwrap_or(self.actor)
                .to_string()
        }
    }
}

/// The remote holds the step's record.
#[derive(Clone, Debug)]
pub struct Pushed {
    pub remote: String,
    pub record: Record,
    /// The record it replaced, if any (to put back if the local write then fails).
    pub previous: Option<Record>,
    /// The expired hold this claim took over.
    pub took_over: Option<Record>,
    /// This call pushed it; false when the remote already had it (the step was made
    /// before and its answer lost): then there is nothing to undo.
    pub fresh: bool,
}

/// What the remote said.
#[derive(Clone, Debug)]
pub enum Confirmed {
    Pushed(Box<Pushed>),
    /// Another record holds the task (or it is final, or it was taken from this actor):
    /// this clone's copy must become the record's state, and the step fails with exit 3.
    Lost {
        remote: String,
        record: Record,
    },
    /// A takeover was asked but the remote has no record of the local hold (a `--local`
    /// claim, or one made before the board was connected): the local hold stands.
    NoRecord,
}

/// What to do with what we know of the remote's record.
#[derive(Debug, PartialEq)]
enum Decision {
    Go {
        epoch: u64,
        took_over: Option<Record>,
    },
    /// The remote's record is this step, made by this actor before (its answer lost, or
    /// this copy not written): nothing to push.
    Already,
    Lost,
}

fn go(epoch: u64) -> Option<Decision> {
    Some(Decision::Go {
        epoch,
        took_over: None,
    })
}

fn decide(
    board: &Board,
    step: &Step,
    rec: Option<&Record>,
    now: DateTime<Utc>,
) -> Option<Decision> {
    if let Some(holder) = step.expired_hold_of {
        return Some(match rec {
            None => Decision::Go {
                epoch: 1,
                took_over: None,
            },
            Some(r) if r.agent == holder && r.expired(board, now) => Decision::Go {
                epoch: r.epoch,
                took_over: Some(r.clone()),
            },
            Some(_) => Decision::Lost,
        });
    }
    let Some(r) = rec else {
        if step.local_holder.is_some() {
            return None; // Takeover of a hold the remote never saw: the local hold stands.
        }
        return go(1);
    };
    if !r.by.is_empty() && r.by == step.actor && r.state == step.to && r.state != step.from {
        return Some(Decision::Already);
    }
    let mine = r.agent == step.actor;
    if r.held(board) {
        if mine {
            return go(r.epoch);
        }
        if step.force && !step.claim {
            return go(r.epoch);
        }
        if step.open
            && !step.claim
            && r.state == step.from
            && step.seen_holder.is_none_or(|h| h == r.agent)
        {
            return go(r.epoch);
        }
        if step.claim && r.expired(board, now) {
            return Some(Decision::Go {
                epoch: r.epoch + 1,
                took_over: Some(r.clone()),
            });
        }
        return Some(Decision::Lost);
    }
    let w = &board.config.workflow;
    // A finished task moved on again (`reopen`) from the state its record has.
    if !step.claim && w.is_terminal(&r.state) && step.from == r.state {
        return go(r.epoch);
    }
    if step.claim && w.is_claimable(&r.state) {
        return go(r.epoch + 1);
    }
    if step.claim && step.local_holder.is_some() && !w.is_terminal(&r.state) {
        return None;
    }
    if step.force && !step.claim {
        return go(r.epoch);
    }
    // A final task, or (for a move) one that is no longer held by this actor.
    Some(Decision::Lost)
}

/// Confirms `step` with `remote`: pushes the new record under a lease on the one this
/// clone knows, and on a rejection fetches the remote's, decides again, and retries while
/// the step can still build on it. Called under the task's lock, before the local write.
pub fn confirm(board: &Board, remote: &str, step: &Step) -> Result<Confirmed> {
    let g = git(board);
    let asked = step.asked();
    let fetch = || refresh(board, step.task, remote, &asked).map_err(|e| step.local(e));
    let mut known = known(board, step.task).map_err(|e| step.local(e))?;
    let mut fresh = false;
    // A takeover decides on the remote's word only.
    if step.local_holder.is_some() {
        known = fetch()?;
        fresh = true;
    }
    let mut busy = None;
    for attempt in 0..MAX_ATTEMPTS {
        let now = crate::time::now();
        let (epoch, took_over) = match decide(board, step, known.as_ref(), now) {
            None => return Ok(Confirmed::NoRecord),
            Some(Decision::Already) => {
                let record = known.expect("an Already decision has a record");
                return Ok(Confirmed::Pushed(Box::new(Pushed {
                    remote: remote.to_string(),
                    previous: None,
                    took_over: None,
                    fresh: false,
                    record,
                })));
            }
            Some(Decision::Lost) if fresh => {
                return Ok(Confirmed::Lost {
                    remote: remote.to_string(),
                    record: known.expect("a lost decision has a record"),
                });
            }
            Some(Decision::Lost) => {
                known = fetch()?;
                fresh = true;
                continue;
            }
            Some(Decision::Go { epoch, took_over }) => (epoch, took_over),
        };
        let mut record = Record {
            sha: String::new(),
            task: step.task.to_string(),
            agent: step.holder(board, known.as_ref()),
            origin: origin(board),
            state: step.to.to_string(),
            // A sweep's release is the sweep's move, not the holder's.
            by: match step.expired_hold_of {
                Some(_) => crate::ops::sweep::SWEEPER.to_string(),
                None => step.actor.to_string(),
            },
            epoch,
            at: now,
        };
        let expected = known.as_ref().map(|r| r.sha.clone());
        record.sha = commit(board, &record, expected.as_deref()).map_err(|e| step.local(e))?;
        let mut result = push(
            &g,
            remote,
            step.task,
            Some(&record.sha),
            expected.as_deref(),
        )?;
        if let PushResult::Unknown(lost) = result {
            result = find_out(board, step, remote, &record.sha, expected.as_deref(), lost)?;
        }
        match result {
            PushResult::Done => {
                let _ = set_local(board, &g, &ref_name(step.task), &record.sha);
                return Ok(Confirmed::Pushed(Box::new(Pushed {
                    remote: remote.to_string(),
                    record,
                    previous: known,
                    took_over,
                    fresh: true,
                })));
            }
            PushResult::Stale => {
                known = fetch()?;
                fresh = true;
                busy = None;
            }
            PushResult::Busy { why, lock } => {
                // Another push holds the record's lock for a moment: let it finish.
                std::thread::sleep(std::time::Duration::from_millis(20 << attempt.min(5)));
                known = fetch()?;
                fresh = true;
                busy = Some((why, lock));
            }
            PushResult::Failed(why) => {
                return Err(step.unconfirmed(board, remote, why).into());
            }
            PushResult::Unknown(_) => unreachable!("found out above"),
        }
    }
    if let Some((why, lock)) = busy {
        return Err(Failure::RemoteLocked {
            asked: step.asked(),
            remote: remote.to_string(),
            project: board.project().to_path_buf(),
            lock,
            why,
            attempts: MAX_ATTEMPTS,
        }
        .into());
    }
    Err(Failure::KeptChanging {
        path: board.rel(&board.doc_path(crate::doc::Region::Tasks, step.task)),
        remote: remote.to_string(),
        task: step.task.to_string(),
        attempts: MAX_ATTEMPTS,
    }
    .into())
}

/// A push whose answer was lost (`lost`: how it ended): asks the remote what its ref of the
/// task holds now. Ours: done. What we expected to replace: the push did not take, so
/// nothing changed (unconfirmed). Another record: like a lost lease. The remote cannot be
/// asked: the outcome is unknown (exit 8), never "nothing changed".
fn find_out(
    board: &Board,
    step: &Step,
    remote: &str,
    ours: &str,
    expected: Option<&str>,
    lost: String,
) -> Result<PushResult> {
    match remote_sha(&git(board), remote, step.task)? {
        Ok(Some(sha)) if sha == ours => Ok(PushResult::Done),
        Ok(now) if now.as_deref() == expected => Ok(PushResult::Failed(format!(
            "{lost}; the remote still holds the record it had"
        ))),
        Ok(_) => Ok(PushResult::Stale),
        Err(why) => Err(Failure::Unknown {
            asked: step.asked(),
            remote: remote.to_string(),
            project: board.project().to_path_buf(),
            lost,
            why,
        }
        .into()),
    }
}

/// Puts back the record a confirmed step replaced, when the local write of that step
/// failed and left the task as it was: the remote must not keep a claim this clone never
/// recorded (every other agent would be told someone won it, and nobody did). Only for a
/// task file that was not written: a written one stands, and so does its record. The
/// lease makes sure only our own record is replaced. Ok when the remote's record is what
/// it was before the step; Err saying why it still holds the step's record (a record this
/// call did not push, the remote had it already; or the push back failed), which the same
/// command run again finds and finishes.
pub fn undo(board: &Board, pushed: &Pushed) -> std::result::Result<(), String> {
    if !pushed.fresh {
        return Err("the remote had it before this command".into());
    }
    let g = git(board);
    let task = &pushed.record.task;
    let previous = pushed.previous.as_ref().map(|r| r.sha.as_str());
    match push(&g, &pushed.remote, task, previous, Some(&pushed.record.sha)) {
        Ok(PushResult::Done) => {
            let name = ref_name(task);
            let _ = match previous {
                Some(p) => g.output(&["update-ref", &name, p], None),
                None => g.output(&["update-ref", "-d", &name], None),
            };
            Ok(())
        }
        Ok(PushResult::Stale) => Err("the remote's record changed since".into()),
        Ok(PushResult::Busy { why, .. } | PushResult::Failed(why) | PushResult::Unknown(why)) => {
            Err(format!("giving it back failed: {why}"))
        }
        Err(e) => Err(format!("giving it back failed: {e}")),
    }
}

/// What [`renew`] did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Renewed {
    /// Tasks whose record now carries a fresh time.
    pub renewed: Vec<String>,
    /// Tasks whose record had changed on the remote (taken over, released, moved).
    pub lost: Vec<String>,
}

/// A record is renewed once it is older than this part of the lease: often enough that no
/// other machine sees it expire, rarely enough that heartbeats mostly push nothing.
const RENEW_AFTER_LEASE_PART: i32 = 4;

/// Renews the records this clone knows `agent` holds that are older than a quarter of the
/// lease: a fresh `at`, pushed under the usual leases, all in one push, so no other machine
/// takes those claims over. Called by heartbeats on a connected board; it takes no task's
/// lock (an agent's own move waits for nothing) and never replaces a newer record
/// another process confirmed meanwhile. Not connected, or nothing due: no push.
pub fn renew(board: &Board, agent: &str) -> Result<Renewed> {
    let Some(remote) = super::remote(board)? else {
        return Ok(Renewed::default());
    };
    let now = crate::time::now();
    let due = crate::agents::lease(board) / RENEW_AFTER_LEASE_PART;
    let held: Vec<Record> = exchange::all_known(board)?
        .into_iter()
        .filter(|r| r.agent == agent && r.held(board) && now - r.at >= due)
        .collect();
    let mut done = Renewed::default();
    if held.is_empty() {
        return Ok(done);
    }
    let g = git(board);
    let mut renewals = Vec::with_capacity(held.len());
    for old in &held {
        let mut r = old.clone();
        r.at = now;
        r.origin = origin(board);
        r.by = agent.to_string();
        r.sha = commit(board, &r, Some(&old.sha))?;
        renewals.push(r);
    }
    let refs: Vec<(String, Option<String>, Option<String>)> = held
        .iter()
        .zip(&renewals)
        .map(|(old, r)| {
            (
                ref_name(&r.task),
                Some(r.sha.clone()),
                Some(old.sha.clone()),
            )
        })
        .collect();
    let out = push_many(&g, &remote, false, &refs)?;
    for (old, r) in held.iter().zip(renewals) {
        let name = ref_name(&r.task);
        match push_result(&out, &name) {
            PushResult::Done => {
                let _ = set_local_if(&g, &name, &r.sha, &old.sha);
                done.renewed.push(r.task);
            }
            // Its answer was lost, or another push held the record: the next heartbeat
            // looks again.
            PushResult::Busy { .. } | PushResult::Unknown(_) => {}
            // The remote moved on: lost, unless it was this agent's own move meanwhile.
            PushResult::Stale => {
                let ours_still = exchange::known(board, &r.task)?
                    .is_some_and(|k| k.sha != old.sha && k.agent == agent && k.held(board));
                if !ours_still {
                    done.lost.push(r.task);
                }
            }
            PushResult::Failed(why) => {
                let step = Step {
                    task: &r.task,
                    actor: agent,
                    claim: false,
                    from: &r.state,
                    to: &r.state,
                    force: false,
                    open: false,
                    seen_holder: None,
                    local_holder: None,
                    expired_hold_of: None,
                };
                return Err(step.unconfirmed(board, &remote, why).into());
            }
        }
    }
    Ok(done)
}
