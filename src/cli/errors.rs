//! Errors as the command line words them: the library's message with each input it
//! names spelled as the flag that gives it, and the hints that name commands and flags
//! (the library's errors carry the data, never the CLI's words).

use tavern::api::errors;
use tavern::api::{Command, Error, Input, Names};

/// How the command line names what a message names: inputs as flags, commands as the
/// command to type.
pub(super) struct Cli;

impl Names for Cli {
    fn input(&self, input: Input) -> String {
        flag(input)
    }

    fn command(&self, command: &Command) -> String {
        match command {
            Command::List(None) => "tavern list".into(),
            Command::List(Some(r)) => format!("tavern list {}", r.dir()),
            Command::Agents => "tavern agent list".into(),
            Command::Init(dir) => format!("tavern init {dir}"),
            Command::Move => "tavern move ID STATE".into(),
            Command::Claim => "tavern claim".into(),
            Command::Release => "tavern release".into(),
            Command::Ask => "tavern ask".into(),
            Command::Answer(id) => format!("tavern answer {id}"),
            Command::Approve(id) => format!("tavern approve {id}"),
            Command::Deny(id) => format!("tavern deny {id}"),
            Command::Sweep => "tavern sweep".into(),
            Command::Sync => "tavern sync".into(),
            Command::SyncInit => "tavern sync init [REMOTE]".into(),
            Command::SyncAllowingDeletions => "tavern sync --allow-deletions".into(),
            Command::ListWhere(r, query) => format!("tavern list {} {query}", r.dir()),
            Command::Questions => "tavern questions".into(),
        }
    }
}

/// How the command line takes each input a message may name.
fn flag(input: Input) -> String {
    match input {
        Input::Actor => "--as NAME or TAVERN_AGENT",
        Input::Title => "--title",
        Input::Set => "--set",
        Input::Id => "--id",
        Input::DependsOn => "--depends-on",
        Input::Topic => "--topic",
        Input::Ttl => "--ttl",
        Input::Scope => "--scope",
        Input::About => "--about",
        Input::Parent => "--parent",
        Input::Resolution => "--resolution",
        Input::Permission => "--permission",
        Input::Resource => "--resource",
        Input::Reason => "--reason",
        Input::Blocks => "--blocks",
        Input::Choice => "--choice",
        Input::Force => "--force",
        Input::IfRev => "--if-rev",
        Input::AddRemove => "--add/--remove",
        Input::Nested => "--nested",
        Input::ExtraField => "--extra-field NAME",
    }
    .to_string()
}

/// The text of an error, as `error: …` on stderr and as `message` in `--json`: the
/// library's message in the command line's words, with the hints only the command line
/// gives (its flags and environment).
pub fn message(e: &Error) -> String {
    match e {
        Error::NoBoard { .. } => format!(
            "{e}\nhint: create one with `tavern init`, or point at one with --board DIR or TAVERN_BOARD"
        ),
        Error::NoSuchBoardDir { .. } => {
            format!("{e}\nhint: check the path given with --board or TAVERN_BOARD")
        }
        Error::Paused { .. } => format!("{e}\nhint: `tavern resume` lifts the pause"),
        Error::NoActor => "nobody is named as the actor (no --as, and TAVERN_AGENT, USER and LOGNAME are all unset); nothing written\nhint: name who is acting with --as NAME, or export TAVERN_AGENT=NAME".to_string(),
        Error::NotRegistered { agent } => {
            format!("{e}\nhint: register it with `tavern agent register --as {agent}`")
        }
        Error::Unconfirmed { task, remote, .. } if task.starts_with("hold:") => format!(
            "{e}\nhint: retry when the remote '{remote}' is reachable (`git ls-remote {remote}` tells); \
             or act on this clone alone with --local, at the risk that an agent of another machine holds the same resources meanwhile"
        ),
        Error::Unconfirmed { task, remote, .. } => format!(
            "{e}\nhint: retry when the remote '{remote}' is reachable (`git ls-remote {remote}` tells); \
             or act on this clone alone with --local, at the risk that another machine claims {task} too \
             (the remote hears of it at the task's next confirmed move)"
        ),
        _ => errors::message(e, &Cli),
    }
}

/// The error object `--json` prints: `{"error": {"kind", "code", "message", "path"}}`.
pub fn report(e: &Error) -> errors::Report {
    errors::Report::new(e, &message(e))
}
