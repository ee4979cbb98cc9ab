//! Notices: things a call noticed and handled that a person may want to know about (a
//! torn log end cut back, an agent card skipped), reported as typed values instead of
//! printed, since the library never prints. The front-end installs a sink once; the CLI's
//! prints each notice as a warning the moment it happens, a server may log it. Without a
//! sink, notices are dropped.

use std::sync::OnceLock;

/// Something handled on the way that a reader may want to know.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "notice", rename_all = "kebab-case")]
pub enum Notice {
    /// The log ended in something unreadable (a torn entry, lines added by hand) and was
    /// cut back to the last whole entry before appending. `path` is relative to the board.
    LogCut { path: String },
    /// An agent card that cannot be read was left out; `problem` says why.
    AgentCardSkipped { problem: String },
    /// A change that stands (its document was written, and a connected board's remote
    /// took its record) whose work after the write failed: `problem` says what failed and
    /// what finishes it. `path` is relative to the board.
    ChangeUnfinished { path: String, problem: String },
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::LogCut { path } => write!(
                f,
                "{path}: cut an unreadable end (a torn entry left by an interrupted write, or lines added by hand)"
            ),
            Notice::AgentCardSkipped { problem } => write!(f, "skipped agent card: {problem}"),
            Notice::ChangeUnfinished { path, problem } => {
                write!(f, "{path}: the change stands, but {problem}")
            }
        }
    }
}

type Sink = Box<dyn Fn(&Notice) + Send + Sync>;

static SINK: OnceLock<Sink> = OnceLock::new();

/// Installs where notices go, once per process; a second call is ignored.
pub fn set_sink(sink: impl Fn(&Notice) + Send + Sync + 'static) {
    let _ = SINK.set(Box::new(sink));
}

/// Reports a notice to the sink, if one is installed.
pub fn report(notice: Notice) {
    if let Some(sink) = SINK.get() {
        sink(&notice);
    }
}
