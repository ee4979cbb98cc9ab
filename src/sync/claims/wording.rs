//! What claims across machines tell a person, in one place. The exchange with the remote
//! reports what happened as data ([`Failure`]); it becomes the library's [`Error`] here,
//! worded once.

use std::path::PathBuf;

use crate::error::{Error, Kind};

use super::record::Record;

/// What a step asked the remote to confirm, as messages name it.
#[derive(Clone, Debug)]
pub enum Asked {
    /// The claim of a task.
    Claim { task: String },
    /// Moving a task to a state.
    Move { task: String, to: String },
}

impl Asked {
    fn task(&self) -> &str {
        match self {
            Asked::Claim { task } | Asked::Move { task, .. } => task,
        }
    }

    fn what(&self) -> String {
        match self {
            Asked::Claim { task } => format!("the claim of {task}"),
            Asked::Move { task, to } => format!("moving {task} to {to}"),
        }
    }
}

/// Why the remote did not confirm what was asked.
#[derive(Clone, Debug)]
pub enum Failure {
    /// The remote could not be reached, or refused: nothing was confirmed (exit 7).
    Unconfirmed {
        asked: Asked,
        remote: String,
        /// The project of this clone.
        project: PathBuf,
        why: String,
    },
    /// The remote may have taken the step (its answer was lost) and could not be asked
    /// since (exit 8): the next command on the task finds out.
    Unknown {
        asked: Asked,
        remote: String,
        project: PathBuf,
        /// How the push ended.
        lost: String,
        /// Why the remote could not be asked afterwards.
        why: String,
    },
    /// The remote kept refusing to update the record because a lock file of it exists
    /// there: another push's, or a stale one left by a killed git (exit 7).
    RemoteLocked {
        asked: Asked,
        remote: String,
        project: PathBuf,
        /// The lock as the remote names it, when it does.
        lock: Option<String>,
        why: String,
        attempts: usize,
    },
    /// A lock of this clone's copy of a record stayed in the way of every attempt (exit
    /// 1): another git process holds it, or a killed one left it.
    LocalLock {
        asked: Asked,
        locks: Vec<PathBuf>,
        why: String,
    },
    /// A git command of this clone failed before anything was sent to the remote (killed,
    /// or refused by this clone's repository): nothing changed (exit 7).
    LocalGit {
        asked: Asked,
        /// The command, as `git commit-tree`.
        command: String,
        why: String,
    },
    /// `claim --next` could not learn the remote's records (exit 7).
    Unsurveyed {
        remote: String,
        project: PathBuf,
        why: String,
    },
    /// The remote's record kept changing under every attempt (exit 3).
    KeptChanging {
        path: String,
        remote: String,
        task: String,
        attempts: usize,
    },
    /// Another record holds the task, or it is final, or it was taken from this actor: the
    /// loser of a race (or a fenced former holder) is told who holds the task now (exit 3).
    Lost {
        path: String,
        /// The transition that lost.
        name: String,
        /// The state this clone's copy said.
        status: String,
        actor: String,
        remote: String,
        record: Record,
        /// The record holds the task (a claim says "claimed", else "finished").
        held: bool,
    },
}

/// Where the remote `remote` of the clone at `project` is, as git's configuration says: ` at
/// URL`, for a message about the remote (never this clone's own path); empty when git
/// cannot say.
/// The paths, joined with ", ", or `none` when there are none (a message naming the lock
/// files git found in its way).
pub(super) fn paths_or(paths: &[PathBuf], none: &str) -> String {
    if paths.is_empty() {
        return none.to_string();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn remote_url(project: &std::path::Path, remote: &str) -> String {
    crate::sync::git::Git::new(project)
        .output(&["remote", "get-url", remote], None)
        .ok()
        .filter(|o| o.success && !o.stdout.trim().is_empty())
        .map_or_else(String::new, |o| format!(" at {}", o.stdout.trim()))
}

/// Why a step is unconfirmed when fetching its record failed.
pub fn fetch_failed(why: &str) -> String {
    format!("fetching its record failed: {why}")
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Error {
        match f {
            Failure::Unconfirmed {
                asked,
                remote,
                project,
                why,
            } => Error::Unconfirmed {
                task: asked.task().to_string(),
                message: format!(
                    "cannot confirm {} with the remote '{remote}'{}: {why}; nothing was changed",
                    asked.what(),
                    remote_url(&project, &remote)
                ),
                remote,
            },
            Failure::Unknown {
                asked,
                remote,
                project,
                lost,
                why,
            } => Error::Request {
                kind: Kind::Unknown,
                path: None,
                message: crate::msg!(format!(
                    "the remote '{remote}'{} may have taken {} ({lost}), and it cannot be asked now ({why}): the outcome is unknown, and this clone's copy is as it was; the next command on {} (the same one again) asks the remote and finishes or reports it",
                    remote_url(&project, &remote),
                    asked.what(),
                    asked.task()
                )),
            },
            Failure::RemoteLocked {
                asked,
                remote,
                project,
                lock,
                why,
                attempts,
            } => {
                let lock = match lock {
                    Some(l) => format!("its lock file {l} exists"),
                    None => "it could not lock the record".to_string(),
                };
                Error::Unconfirmed {
                    task: asked.task().to_string(),
                    message: format!(
                        "cannot confirm {} with the remote '{remote}'{}: {lock} ({why}, {attempts} attempts): a push there still runs, or a git killed on the remote left the lock behind (stale); if no push is running on the remote, remove that file there; nothing was changed",
                        asked.what(),
                        remote_url(&project, &remote)
                    ),
                    remote,
                }
            }
            Failure::LocalLock { asked, locks, why } => Error::Request {
                kind: Kind::Other,
                path: None,
                message: crate::msg!(format!(
                    "cannot update this clone's copy of the record of {} ({why}): {} is held by another git process, or was left by a killed one (if no git process runs, remove it); nothing was changed",
                    asked.task(),
                    paths_or(&locks, "its lock")
                )),
            },
            Failure::LocalGit {
                asked,
                command,
                why,
            } => Error::Request {
                kind: Kind::Unconfirmed,
                path: None,
                message: crate::msg!(format!(
                    "cannot confirm {}: this clone's `{command}` failed before anything was sent to the remote ({why}); nothing was changed: run the same command again",
                    asked.what()
                )),
            },
            Failure::Unsurveyed {
                remote,
                project,
                why,
            } => Error::Unconfirmed {
                task: "the next task".into(),
                message: format!(
                    "cannot learn the claims on the remote '{remote}'{}: {why}; nothing was claimed",
                    remote_url(&project, &remote),
                ),
                remote,
            },
            Failure::KeptChanging {
                path,
                remote,
                task,
                attempts,
            } => Error::conflict(
                path,
                format!(
                    "the remote '{remote}' record of {task} kept changing ({attempts} attempts); retry"
                ),
            ),
            Failure::Lost {
                path,
                name,
                status,
                actor,
                remote,
                record,
                held,
            } => Error::conflict(
                path,
                lost_message(&name, &status, &actor, &remote, &record, held),
            ),
        }
    }
}

fn lost_message(
    name: &str,
    status: &str,
    actor: &str,
    remote: &str,
    record: &Record,
    held: bool,
) -> String {
    let whence = format!(
        "confirmed by the remote '{remote}': {} from {} at {}, epoch {}",
        record.state,
        record.origin,
        crate::time::stamp(record.at),
        record.epoch
    );
    let now = if record.agent.is_empty() {
        format!("it is {} and held by nobody", record.state)
    } else if record.agent == actor {
        format!("it is {} (by you)", record.state)
    } else {
        format!("it is held by {} ({})", record.agent, record.state)
    };
    if name == crate::workflow::CLAIM && !record.agent.is_empty() && record.agent != actor {
        let what = if held {
            "already claimed by"
        } else {
            "already finished by"
        };
        format!(
            "{what} {} (status {}; {whence}); this clone's copy now says so",
            record.agent, record.state
        )
    } else {
        format!(
            "cannot {name}: {now}, not as this clone's copy said ({status}; {whence}); this clone's copy now says so"
        )
    }
}
