//! What watch mode reports as it goes: typed, serialisable events handed to the caller's
//! sink. The library never prints; a front-end renders them (`tavern watch` as text lines
//! or, with `--json`, one JSON object per line: these fields plus `event` and `at`).

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use super::fsevents::NativeFailure;
use super::scheduler::Activation;
use super::sources::Problem;

/// How the watcher notices changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `once`: one look at what changed since the last run.
    Once,
    /// The platform's file events (inotify, FSEvents, …).
    Native,
    /// A rescan every so often.
    Polling(Duration),
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Mode::Once => f.write_str("once"),
            Mode::Native => f.write_str("native file events"),
            Mode::Polling(every) => write!(f, "polling every {}", human_duration(*every)),
        }
    }
}

impl Serialize for Mode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// An activation as events name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ActivationInfo {
    pub source: String,
    pub doc: String,
    /// The document id (`{id}`).
    pub id: String,
    pub region: String,
    /// The event that matched the source's `on:`.
    pub trigger: String,
    /// The seq of the change that caused it.
    pub cause: u64,
    pub chain: u32,
}

impl From<&Activation> for ActivationInfo {
    fn from(a: &Activation) -> Self {
        ActivationInfo {
            source: a.source.clone(),
            doc: a.doc.clone(),
            id: a.doc_id.clone(),
            region: a.region.clone(),
            trigger: a.event.clone(),
            cause: a.seq,
            chain: a.depth,
        }
    }
}

/// Why an activation was not started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Skip {
    /// The change was the source's own write.
    #[serde(rename = "own write")]
    OwnWrite,
    /// A previous watcher started it for this very change (it was killed before it saved
    /// that the change was handled).
    #[serde(rename = "already started")]
    AlreadyStarted,
}

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Event {
    /// The watcher runs.
    Watching {
        board: PathBuf,
        mode: Mode,
        sources: Vec<String>,
        /// Activations waiting from a previous run.
        waiting: usize,
    },
    /// A change of a tracked file, offered to the sources.
    Change {
        doc: String,
        /// Every event of the change (`changed`, `transition:review`, …).
        events: Vec<String>,
        /// Who made it (None: outside tavern; its external-edit came first).
        actor: Option<String>,
        seq: u64,
    },
    Queued(ActivationInfo),
    /// An activation of the same source for the same file was already waiting.
    Merged(ActivationInfo),
    Skipped {
        source: String,
        doc: String,
        why: Skip,
        seq: u64,
    },
    Started {
        #[serde(flatten)]
        activation: ActivationInfo,
        pid: u32,
        /// The run's output file, board-relative.
        output: String,
        /// The log entry of the start.
        seq: u64,
    },
    Finished {
        #[serde(flatten)]
        activation: ActivationInfo,
        /// ok, failed, timed-out, killed or lost.
        result: String,
        exit: Option<i32>,
        duration_ms: u64,
        seq: u64,
        note: String,
    },
    /// An activation ran past its timeout: its process group is being killed.
    Timeout {
        source: String,
        doc: String,
        pid: u32,
    },
    /// The watcher logged an alert (a loop guard, an invalid file, …).
    Alert {
        doc: String,
        seq: u64,
        note: String,
    },
    /// The watcher logged a change made outside tavern.
    ExternalEdit {
        doc: String,
        seq: u64,
        note: String,
    },
    /// The set of valid sources changed.
    Sources {
        sources: Vec<String>,
    },
    /// SIGINT or SIGTERM: no new activations; the running ones have `grace_ms` to finish.
    Stopping {
        running: usize,
        grace_ms: u64,
    },
    Stopped {
        ran: usize,
        failed: usize,
        waiting: usize,
        paused: Option<String>,
    },
    /// Something the person running the watcher should know; the watcher goes on.
    Warning(Warning),
}

/// Something that went wrong without stopping the watcher.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "warning", rename_all = "kebab-case")]
pub enum Warning {
    /// The native file watcher failed; the watcher polls instead (`at_start`: it never
    /// ran).
    NativeFailed {
        failure: NativeFailure,
        poll_every_ms: u64,
        at_start: bool,
    },
    /// A source file with problems is not used.
    SourceSkipped(Problem),
    /// Looking at a file failed (a lock, a read): looked at again in a moment, or (`again`
    /// false) not until it changes again.
    LookFailed {
        path: String,
        error: String,
        again: bool,
    },
    /// A waiting activation whose source is gone or invalid now.
    Dropped { source: String, doc: String },
    /// `.state/` was removed under the watcher (`git clean`?): it locked the board again.
    Relocked,
    /// A state or report file could not be written, or the log read or appended to.
    Trouble { message: String },
}

impl Warning {
    pub fn trouble(message: impl Into<String>) -> Event {
        Event::Warning(Warning::Trouble {
            message: message.into(),
        })
    }
}

/// A duration as tavern writes them (`2s`, `1m30s`).
pub fn human_duration(d: Duration) -> String {
    crate::time::format_duration(chrono::Duration::from_std(d).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info() -> ActivationInfo {
        ActivationInfo {
            source: "rev".into(),
            doc: "tasks/t.md".into(),
            id: "t".into(),
            region: "tasks".into(),
            trigger: "changed".into(),
            cause: 4,
            chain: 1,
        }
    }

    #[test]
    fn events_serialise_as_the_json_lines_of_tavern_watch() {
        let j = |e: &Event| serde_json::to_value(e).unwrap();
        assert_eq!(
            j(&Event::Started {
                activation: info(),
                pid: 7,
                output: ".state/runs/x".into(),
                seq: 9
            }),
            json!({"event": "started", "source": "rev", "doc": "tasks/t.md", "id": "t", "region": "tasks", "trigger": "changed", "cause": 4, "chain": 1, "pid": 7, "output": ".state/runs/x", "seq": 9})
        );
        assert_eq!(j(&Event::Queued(info()))["event"], json!("queued"));
        assert_eq!(
            j(&Event::Skipped {
                source: "a".into(),
                doc: "d".into(),
                why: Skip::OwnWrite,
                seq: 1
            }),
            json!({"event": "skipped", "source": "a", "doc": "d", "why": "own write", "seq": 1})
        );
        assert_eq!(
            j(&Event::Watching {
                board: "/b".into(),
                mode: Mode::Polling(Duration::from_millis(500)),
                sources: vec![],
                waiting: 0
            }),
            json!({"event": "watching", "board": "/b", "mode": "polling every 500ms", "sources": [], "waiting": 0})
        );
        assert_eq!(
            j(&Event::ExternalEdit {
                doc: "d".into(),
                seq: 2,
                note: "n".into()
            })["event"],
            json!("external-edit")
        );
        assert_eq!(Mode::Native.to_string(), "native file events");
    }
}
