//! One error type for the whole library, and the one place that maps it to an exit code.
//!
//! Every variant carries the context a user needs to act on it: the file, the line, the
//! current owner, the allowed transitions. The exit codes are part of the interface
//! (README, "Exit codes"): agents branch on them.

use std::fmt;
use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure, which decides the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Anything else: I/O failures, a broken environment.
    Other,
    /// Bad command-line usage: unknown flag, malformed query, ambiguous id prefix.
    Usage,
    /// Lost a race, not the owner, rev mismatch, transition not allowed now.
    Conflict,
    /// No board, no such document.
    NotFound,
    /// The board is paused (control/PAUSE exists).
    Paused,
    /// A document or input that is malformed, over a limit, or hostile.
    Invalid,
    /// A connected board's remote could not confirm a claim or a move of a claimed task
    /// (unreachable, or it refused): nothing was changed.
    Unconfirmed,
    /// A connected board's remote may have taken a claim or a move (its answer was lost)
    /// and could not be asked since: the outcome is unknown until the next command on the
    /// task finds it out.
    Unknown,
}

impl Kind {
    pub fn exit_code(self) -> u8 {
        match self {
            Kind::Other => 1,
            Kind::Usage => 2,
            Kind::Conflict => 3,
            Kind::NotFound => 4,
            Kind::Paused => 5,
            Kind::Invalid => 6,
            Kind::Unconfirmed => 7,
            Kind::Unknown => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Other => "error",
            Kind::Usage => "usage",
            Kind::Conflict => "conflict",
            Kind::NotFound => "not-found",
            Kind::Paused => "paused",
            Kind::Invalid => "invalid",
            Kind::Unconfirmed => "unconfirmed",
            Kind::Unknown => "unknown",
        }
    }
}

/// A piece of a request that a message names. The library never spells how a front-end
/// takes it (the CLI as `--if-rev`, a server as a parameter): messages keep it as this
/// value and each front-end names it its own way ([`Message::render`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// Who is acting.
    Actor,
    Title,
    /// A field set at creation (`key=value`).
    Set,
    Id,
    DependsOn,
    Topic,
    Ttl,
    Scope,
    About,
    Parent,
    Resolution,
    Permission,
    Resource,
    Reason,
    Blocks,
    Choice,
    /// Overriding a claim or a workflow-owned field (logged).
    Force,
    /// The rev the caller read, for a compare-and-swap.
    IfRev,
    /// Adding to or removing from a list field.
    AddRemove,
    /// Creating a board inside another board's project.
    Nested,
    /// Fields a write may add although the board does not declare them.
    ExtraField,
}

impl Input {
    /// A name for messages that no front-end renders: the request field's own name.
    pub fn name(self) -> &'static str {
        match self {
            Input::Actor => "actor",
            Input::Title => "title",
            Input::Set => "set",
            Input::Id => "id",
            Input::DependsOn => "depends_on",
            Input::Topic => "topic",
            Input::Ttl => "ttl",
            Input::Scope => "scope",
            Input::About => "about",
            Input::Parent => "parent",
            Input::Resolution => "resolution",
            Input::Permission => "permission",
            Input::Resource => "resource",
            Input::Reason => "reason",
            Input::Blocks => "blocks",
            Input::Choice => "choice",
            Input::Force => "force",
            Input::IfRev => "if_rev",
            Input::AddRemove => "add/remove",
            Input::Nested => "nested",
            Input::ExtraField => "extra_fields",
        }
    }
}

/// A command a message points to, as what to do next. The library never spells how a
/// front-end offers it (the CLI as `tavern list tasks`, a server as a tool): messages keep
/// it as this value and each front-end names it its own way ([`Message::render`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Listing the documents of one region, or of every region.
    List(Option<crate::doc::Region>),
    /// Listing the registered agents.
    Agents,
    /// Creating a board in this directory.
    Init(String),
    /// Moving a task to a state (any task, any state).
    Move,
    /// Claiming a task.
    Claim,
    /// Giving a claimed task back.
    Release,
    /// Asking a question.
    Ask,
    /// Answering this question (an id, or a placeholder such as `ID`).
    Answer(String),
    /// Approving this permission request.
    Approve(String),
    /// Denying this permission request.
    Deny(String),
    /// A sweep (stale claims, expired findings, leftovers of interrupted writes).
    Sweep,
    /// An exchange of the board with its remote.
    Sync,
    /// Connecting the board to a remote.
    SyncInit,
    /// An exchange that records the documents deleted by hand as deleted.
    SyncAllowingDeletions,
    /// Listing the documents of a region that a query matches (the query as typed).
    ListWhere(crate::doc::Region, String),
    /// Listing the open questions.
    Questions,
}

impl Command {
    /// A name for messages that no front-end renders: the use case's own words.
    pub fn name(&self) -> String {
        match self {
            Command::List(None) => "list".into(),
            Command::List(Some(r)) => format!("list {}", r.dir()),
            Command::Agents => "agent list".into(),
            Command::Init(dir) => format!("init {dir}"),
            Command::Move => "move ID STATE".into(),
            Command::Claim => "claim".into(),
            Command::Release => "release".into(),
            Command::Ask => "ask".into(),
            Command::Answer(id) => format!("answer {id}"),
            Command::Approve(id) => format!("approve {id}"),
            Command::Deny(id) => format!("deny {id}"),
            Command::Sweep => "sweep".into(),
            Command::Sync => "sync".into(),
            Command::SyncInit => "sync init [REMOTE]".into(),
            Command::SyncAllowingDeletions => "sync (allow_deletions)".into(),
            Command::ListWhere(r, query) => format!("list {} {query}", r.dir()),
            Command::Questions => "questions".into(),
        }
    }
}

/// Part of a [`Message`]: text, an input it names, or a command it points to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Text(String),
    Input(Input),
    Command(Command),
}

impl From<&str> for Part {
    fn from(s: &str) -> Part {
        Part::Text(s.to_string())
    }
}

impl From<String> for Part {
    fn from(s: String) -> Part {
        Part::Text(s)
    }
}

impl From<Input> for Part {
    fn from(i: Input) -> Part {
        Part::Input(i)
    }
}

impl From<Command> for Part {
    fn from(c: Command) -> Part {
        Part::Command(c)
    }
}

/// Text about a request with the inputs it names and the commands it points to kept as
/// data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message(pub Vec<Part>);

/// How a front-end names inputs and commands in a [`Message`].
pub trait Names {
    fn input(&self, input: Input) -> String;
    fn command(&self, command: &Command) -> String;
}

/// The names no front-end chose: the request's field names and the use cases' own words.
pub struct Plain;

impl Names for Plain {
    fn input(&self, input: Input) -> String {
        input.name().to_string()
    }

    fn command(&self, command: &Command) -> String {
        command.name()
    }
}

impl Message {
    /// The text with each input named by `input`, and each command in the use cases' own
    /// words ([`Command::name`]).
    pub fn render(&self, input: &dyn Fn(Input) -> String) -> String {
        struct Inputs<'a>(&'a dyn Fn(Input) -> String);
        impl Names for Inputs<'_> {
            fn input(&self, i: Input) -> String {
                (self.0)(i)
            }
            fn command(&self, c: &Command) -> String {
                c.name()
            }
        }
        self.render_with(&Inputs(input))
    }

    /// The text with each input and command named as `names` says.
    pub fn render_with(&self, names: &dyn Names) -> String {
        self.0
            .iter()
            .map(|p| match p {
                Part::Text(t) => t.clone(),
                Part::Input(i) => names.input(*i),
                Part::Command(c) => names.command(c),
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0
            .iter()
            .all(|p| matches!(p, Part::Text(t) if t.is_empty()))
    }
}

impl From<&str> for Message {
    fn from(s: &str) -> Message {
        Message(vec![Part::from(s)])
    }
}

impl From<String> for Message {
    fn from(s: String) -> Message {
        Message(vec![Part::from(s)])
    }
}

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render_with(&Plain))
    }
}

/// A [`Message`] from text and [`Input`]s: `msg!("a title is required: ", Input::Title)`.
#[macro_export]
macro_rules! msg {
    ($($part:expr),* $(,)?) => {
        $crate::error::Message(vec![$($crate::error::Part::from($part)),*])
    };
}

#[derive(Debug)]
pub enum Error {
    Io {
        path: PathBuf,
        action: &'static str,
        source: std::io::Error,
    },
    NoBoard {
        start: PathBuf,
    },
    BoardNotADir {
        path: PathBuf,
    },
    /// The board directory named explicitly does not exist at all.
    NoSuchBoardDir {
        path: PathBuf,
    },
    /// `hint` (empty for none) says where to look.
    NotFound {
        what: String,
        hint: Message,
    },
    /// Nothing of what was asked for exists ("no claimable task"): exit 4, like NotFound.
    Nothing {
        what: String,
        hint: Message,
    },
    Ambiguous {
        prefix: String,
        candidates: Vec<String>,
    },
    InvalidId {
        id: String,
        reason: &'static str,
    },
    InvalidDoc {
        path: PathBuf,
        problem: String,
    },
    InvalidInput {
        message: String,
    },
    Usage {
        message: String,
    },
    Conflict {
        path: PathBuf,
        message: String,
    },
    /// A hold refused (exit 3, like [`Error::Conflict`]): `message` names each holder,
    /// `conflicts` are the holds in the way, for a program to read.
    Held {
        path: PathBuf,
        message: String,
        conflicts: Vec<crate::holds::Conflict>,
    },
    Paused {
        reason: String,
    },
    /// The remote of a connected board could not confirm a claim or a move of a claimed
    /// task; `message` says which and why.
    Unconfirmed {
        task: String,
        remote: String,
        message: String,
    },
    /// A request the library refuses, in words that name its inputs as data: `kind`
    /// decides the exit code; `path` is the file it is about, if any.
    Request {
        kind: Kind,
        path: Option<PathBuf>,
        message: Message,
    },
    /// The acting agent is not registered (heartbeat, deregister).
    NotRegistered {
        agent: String,
    },
    /// A call that acts, and nothing names who is acting (exit 2): each front-end says how
    /// to name one.
    NoActor,
    /// A git command that tavern ran failed; `message` is git's own.
    Git {
        command: String,
        dir: PathBuf,
        message: String,
    },
}

impl Error {
    pub fn io(path: impl Into<PathBuf>, action: &'static str, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            action,
            source,
        }
    }

    pub fn invalid_doc(path: impl Into<PathBuf>, problem: impl Into<String>) -> Error {
        Error::InvalidDoc {
            path: path.into(),
            problem: problem.into(),
        }
    }

    pub fn conflict(path: impl Into<PathBuf>, message: impl Into<String>) -> Error {
        Error::Conflict {
            path: path.into(),
            message: message.into(),
        }
    }

    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage {
            message: message.into(),
        }
    }

    pub fn input(message: impl Into<String>) -> Error {
        Error::InvalidInput {
            message: message.into(),
        }
    }

    /// A refusal whose message names inputs ([`msg!`](crate::msg)).
    pub fn request(kind: Kind, message: Message) -> Error {
        Error::Request {
            kind,
            path: None,
            message,
        }
    }

    /// A refusal about a file.
    pub fn request_at(kind: Kind, path: impl Into<PathBuf>, message: Message) -> Error {
        Error::Request {
            kind,
            path: Some(path.into()),
            message,
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Error::Io { .. } | Error::Git { .. } => Kind::Other,
            Error::NoBoard { .. }
            | Error::BoardNotADir { .. }
            | Error::NoSuchBoardDir { .. }
            | Error::NotFound { .. }
            | Error::Nothing { .. } => Kind::NotFound,
            Error::Ambiguous { .. } | Error::Usage { .. } | Error::NoActor => Kind::Usage,
            Error::InvalidId { .. } | Error::InvalidDoc { .. } | Error::InvalidInput { .. } => {
                Kind::Invalid
            }
            Error::Conflict { .. } | Error::Held { .. } => Kind::Conflict,
            Error::Paused { .. } => Kind::Paused,
            Error::Unconfirmed { .. } => Kind::Unconfirmed,
            Error::Request { kind, .. } => *kind,
            Error::NotRegistered { .. } => Kind::NotFound,
        }
    }

    pub fn exit_code(&self) -> u8 {
        self.kind().exit_code()
    }

    /// The holds in the way of a refused hold (empty for any other error).
    pub fn conflicts(&self) -> &[crate::holds::Conflict] {
        match self {
            Error::Held { conflicts, .. } => conflicts,
            _ => &[],
        }
    }

    /// The file the error is about, when there is one (for `--json` output).
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Error::Io { path, .. }
            | Error::BoardNotADir { path }
            | Error::NoSuchBoardDir { path }
            | Error::InvalidDoc { path, .. }
            | Error::Conflict { path, .. }
            | Error::Held { path, .. }
            | Error::Git { dir: path, .. }
            | Error::Request {
                path: Some(path), ..
            } => Some(path),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io {
                path,
                action,
                source,
            } => {
                write!(f, "cannot {action} {}: {source}", path.display())
            }
            Error::NoBoard { start } => write!(
                f,
                "no tavern board found in {} or any parent directory",
                start.display()
            ),
            Error::BoardNotADir { path } => {
                write!(
                    f,
                    "{} is not a tavern board (no board.yaml inside)",
                    path.display()
                )
            }
            Error::NoSuchBoardDir { path } => {
                write!(f, "the board directory {} does not exist", path.display())
            }
            Error::Nothing { what, hint } => {
                write!(f, "no {what}")?;
                if !hint.is_empty() {
                    write!(f, "\nhint: {hint}")?;
                }
                Ok(())
            }
            Error::NotFound { what, hint } => {
                write!(f, "{what} not found")?;
                if !hint.is_empty() {
                    write!(f, "\nhint: {hint}")?;
                }
                Ok(())
            }
            Error::Ambiguous { prefix, candidates } => {
                write!(f, "id prefix '{prefix}' is ambiguous; it matches:")?;
                for c in candidates {
                    write!(f, "\n  {c}")?;
                }
                Ok(())
            }
            Error::InvalidId { id, reason } => {
                write!(f, "invalid id '{}': {reason}", id.escape_debug())?;
                write!(f, "\nhint: ids match [a-z0-9][a-z0-9._-]{{0,63}}")
            }
            Error::InvalidDoc { path, problem } => write!(f, "{}: {problem}", path.display()),
            Error::InvalidInput { message } | Error::Usage { message } => f.write_str(message),
            Error::Conflict { path, message } | Error::Held { path, message, .. } => {
                write!(f, "{}: {message}", path.display())
            }
            Error::Git {
                command,
                dir,
                message,
            } => write!(f, "`{command}` failed in {}: {message}", dir.display()),
            Error::Paused { reason } => {
                write!(f, "the board is paused: {reason}")
            }
            Error::Unconfirmed {
                task,
                remote,
                message,
            } => {
                // What to do next names a flag: the front-end adds it.
                let _ = (task, remote);
                f.write_str(message)
            }
            Error::Request {
                path: Some(path),
                message,
                ..
            } => write!(f, "{}: {message}", path.display()),
            Error::Request { message, .. } => write!(f, "{message}"),
            Error::NotRegistered { agent } => write!(f, "agent '{agent}' not found"),
            Error::NoActor => write!(
                f,
                "nobody is named as the actor (TAVERN_AGENT, USER and LOGNAME are all unset); nothing written"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Region;

    #[test]
    fn messages_keep_inputs_and_commands_as_data_until_a_front_end_names_them() {
        let e = Error::NotFound {
            what: "task 'x' (named in depends_on)".into(),
            hint: crate::msg!("`", Command::List(Some(Region::Tasks)), "` shows the tasks"),
        };
        // Without a front-end: the use cases' own words.
        assert_eq!(
            e.to_string(),
            "task 'x' (named in depends_on) not found\nhint: `list tasks` shows the tasks"
        );
        struct Loud;
        impl Names for Loud {
            fn input(&self, i: Input) -> String {
                format!("<{}>", i.name())
            }
            fn command(&self, c: &Command) -> String {
                format!("run {}", c.name())
            }
        }
        let m = crate::msg!("use ", Input::IfRev, " or ", Command::Answer("q-1".into()));
        assert_eq!(m.render_with(&Loud), "use <if_rev> or run answer q-1");
        assert_eq!(
            m.render(&|i| format!("[{}]", i.name())),
            "use [if_rev] or answer q-1"
        );
        assert!(Message::default().is_empty() && Message::from("").is_empty());
        assert!(!m.is_empty());
    }
}
