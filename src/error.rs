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
        }
    }
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
    NotFound {
        what: String,
        hint: String,
    },
    /// Nothing of what was asked for exists ("no claimable task"): exit 4, like NotFound.
    Nothing {
        what: String,
        hint: String,
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

    pub fn kind(&self) -> Kind {
        match self {
            Error::Io { .. } | Error::Git { .. } => Kind::Other,
            Error::NoBoard { .. }
            | Error::BoardNotADir { .. }
            | Error::NoSuchBoardDir { .. }
            | Error::NotFound { .. }
            | Error::Nothing { .. } => Kind::NotFound,
            Error::Ambiguous { .. } | Error::Usage { .. } => Kind::Usage,
            Error::InvalidId { .. } | Error::InvalidDoc { .. } | Error::InvalidInput { .. } => {
                Kind::Invalid
            }
            Error::Conflict { .. } => Kind::Conflict,
            Error::Paused { .. } => Kind::Paused,
            Error::Unconfirmed { .. } => Kind::Unconfirmed,
        }
    }

    pub fn exit_code(&self) -> u8 {
        self.kind().exit_code()
    }

    /// The file the error is about, when there is one (for `--json` output).
    pub fn path(&self) -> Option<&std::path::Path> {
        match self {
            Error::Io { path, .. }
            | Error::BoardNotADir { path }
            | Error::NoSuchBoardDir { path }
            | Error::InvalidDoc { path, .. }
            | Error::Conflict { path, .. }
            | Error::Git { dir: path, .. } => Some(path),
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
                "no tavern board found in {} or any parent directory\n\
                 hint: create one with `tavern init`, or point at one with --board DIR or TAVERN_BOARD",
                start.display()
            ),
            Error::BoardNotADir { path } => {
                write!(
                    f,
                    "{} is not a tavern board (no board.yaml inside)",
                    path.display()
                )
            }
            Error::NoSuchBoardDir { path } => write!(
                f,
                "the board directory {} does not exist\nhint: check the path given with --board or TAVERN_BOARD",
                path.display()
            ),
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
            Error::Conflict { path, message } => write!(f, "{}: {message}", path.display()),
            Error::Git {
                command,
                dir,
                message,
            } => write!(f, "`{command}` failed in {}: {message}", dir.display()),
            Error::Paused { reason } => {
                write!(
                    f,
                    "the board is paused: {reason}\nhint: `tavern resume` lifts the pause"
                )
            }
            Error::Unconfirmed {
                task,
                remote,
                message,
            } => write!(
                f,
                "{message}\nhint: retry when the remote '{remote}' is reachable (`git ls-remote {remote}` tells); \
                 or act on this clone alone with --local, at the risk that another machine claims {task} too \
                 (the remote hears of it at the task's next confirmed move)"
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
