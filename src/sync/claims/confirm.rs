//! Confirming a step with the remote: the new record is pushed under a lease on the one
//! this clone knows; a rejection fetches the remote's, decides again and retries while the
//! step can still build on it. Also the undo of a confirmed step whose local write failed,
//! and the renewal of an agent's records by its heartbeats.

use chrono::{DateTime, Utc};

use crate::board::Board;
use crate::error::Result;

use super::exchange::{self, PushResult, commit, git, known, origin, push, refresh, set_local};
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
}

/// The remote took the new record.
#[derive(Clone, Debug)]
pub struct Pushed {
    pub remote: String,
    pub record: Record,
    /// The record it replaced, if any (to put back if the local write then fails).
    pub previous: Option<Record>,
    /// The expired hold this claim took over.
    pub took_over: Option<Record>,
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
enum Decision {
    Go {
        epoch: u64,
        took_over: Option<Record>,
    },
    Lost,
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
        return Some(Decision::Go {
            epoch: 1,
            took_over: None,
        });
    };
    let mine = r.agent == step.actor;
    if r.held(board) {
        if mine {
            return Some(Decision::Go {
                epoch: r.epoch,
                took_over: None,
            });
        }
        if step.force && !step.claim {
            return Some(Decision::Go {
                epoch: r.epoch,
                took_over: None,
            });
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
        return Some(Decision::Go {
            epoch: r.epoch,
            took_over: None,
        });
    }
    if step.claim && w.is_claimable(&r.state) {
        return Some(Decision::Go {
            epoch: r.epoch + 1,
            took_over: None,
        });
    }
    if step.claim && step.local_holder.is_some() && !w.is_terminal(&r.state) {
        return None;
    }
    if step.force && !step.claim {
        return Some(Decision::Go {
            epoch: r.epoch,
            took_over: None,
        });
    }
    // A final task, or (for a move) one that is no longer held by this actor.
    Some(Decision::Lost)
}

/// Confirms `step` with `remote`: pushes the new record under a lease on the one this
/// clone knows, and on a rejection fetches the remote's, decides again, and retries while
/// the step can still build on it. Called under the task's lock, before the local write.
pub fn confirm(board: &Board, remote: &str, step: &Step) -> Result<Confirmed> {
    let g = git(board);
    let fetch = || {
        refresh(board, step.task, remote, |why| {
            step.unconfirmed(board, remote, why)
        })
    };
    let mut known = known(board, step.task)?;
    let mut fresh = false;
    // A takeover decides on the remote's word only.
    if step.local_holder.is_some() {
        known = fetch()?;
        fresh = true;
    }
    let mut busy = None;
    for _ in 0..MAX_ATTEMPTS {
        let now = crate::time::now();
        let decision = decide(board, step, known.as_ref(), now);
        let (epoch, took_over) = match decision {
            None => return Ok(Confirmed::NoRecord),
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
        let w = &board.config.workflow;
        let holder = if w.is_claimable(step.to) {
            String::new()
        } else if step.claim {
            step.actor.to_string()
        } else {
            // A forced move keeps the holder; a holder's own move keeps itself.
            known
                .as_ref()
                .map(|r| r.agent.clone())
                .filter(|a| !a.is_empty())
                .unwrap_or_else(|| step.actor.to_string())
        };
        let mut record = Record {
            sha: String::new(),
            task: step.task.to_string(),
            agent: holder,
            origin: origin(board),
            state: step.to.to_string(),
            epoch,
            at: now,
        };
        let expected = known.as_ref().map(|r| r.sha.clone());
        record.sha = commit(board, &record, expected.as_deref())?;
        match push(
            &g,
            remote,
            step.task,
            Some(&record.sha),
            expected.as_deref(),
        )? {
            PushResult::Done => {
                let _ = set_local(board, &g, &ref_name(step.task), &record.sha);
                return Ok(Confirmed::Pushed(Box::new(Pushed {
                    remote: remote.to_string(),
                    record,
                    previous: known,
                    took_over,
                })));
            }
            PushResult::Stale => {
                known = fetch()?;
                fresh = true;
                busy = None;
            }
            PushResult::Busy(why) => {
                known = fetch()?;
                fresh = true;
                busy = Some(why);
            }
            PushResult::Failed(why) => {
                return Err(step.unconfirmed(board, remote, why).into());
            }
        }
    }
    if let Some(why) = busy {
        return Err(step.unconfirmed(board, remote, why).into());
    }
    Err(Failure::KeptChanging {
        path: board.rel(&board.doc_path(crate::doc::Region::Tasks, step.task)),
        remote: remote.to_string(),
        task: step.task.to_string(),
        attempts: MAX_ATTEMPTS,
    }
    .into())
}

/// Puts back the record a confirmed step replaced, when the local write of that step
/// failed: the remote must not keep a claim this clone never recorded. Best effort; the
/// lease makes sure only our own record is replaced.
pub fn undo(board: &Board, pushed: &Pushed) {
    let g = git(board);
    let task = &pushed.record.task;
    let previous = pushed.previous.as_ref().map(|r| r.sha.as_str());
    if let Ok(PushResult::Done) = push(&g, &pushed.remote, task, previous, Some(&pushed.record.sha))
    {
        let name = ref_name(task);
        let _ = match previous {
            Some(p) => g.output(&["update-ref", &name, p], None),
            None => g.output(&["update-ref", "-d", &name], None),
        };
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

/// Renews every record this clone knows `agent` holds: a fresh `at`, pushed under the
/// usual lease, so no other machine takes those claims over. Called by heartbeats on a
/// connected board; not connected, it does nothing.
pub fn renew(board: &Board, agent: &str) -> Result<Renewed> {
    let Some(remote) = super::remote(board)? else {
        return Ok(Renewed::default());
    };
    let g = git(board);
    let held: Vec<Record> = exchange::all_known(board)?
        .into_iter()
        .filter(|r| r.agent == agent && r.held(board))
        .collect();
    let mut done = Renewed::default();
    for old in held {
        let mut r = old.clone();
        r.at = crate::time::now();
        r.origin = origin(board);
        r.sha = commit(board, &r, Some(&old.sha))?;
        match push(&g, &remote, &r.task, Some(&r.sha), Some(&old.sha))? {
            PushResult::Done => {
                let _ = set_local(board, &g, &ref_name(&r.task), &r.sha);
                done.renewed.push(r.task);
            }
            PushResult::Stale | PushResult::Busy(_) => done.lost.push(r.task),
            PushResult::Failed(why) => {
                let step = Step {
                    task: &r.task,
                    actor: agent,
                    claim: false,
                    from: &r.state,
                    to: &r.state,
                    force: false,
                    local_holder: None,
                    expired_hold_of: None,
                };
                return Err(step.unconfirmed(board, &remote, why).into());
            }
        }
    }
    Ok(done)
}
