//! Errors as the command line words them: the library's message with each input it
//! names spelled as the flag that gives it, and the hints that name commands and flags
//! (the library's errors carry the data, never the CLI's words).

use tavern::error::{Error, Input};

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
    }
    .to_string()
}

/// The text of an error, as `error: …` on stderr and as `message` in `--json`.
pub fn message(e: &Error) -> String {
    match e {
        Error::Request { path, message, .. } => {
            let text = message.render(&flag);
            match path {
                Some(p) => format!("{}: {text}", p.display()),
                None => text,
            }
        }
        Error::NoBoard { .. } => format!(
            "{e}\nhint: create one with `tavern init`, or point at one with --board DIR or TAVERN_BOARD"
        ),
        Error::NoSuchBoardDir { .. } => {
            format!("{e}\nhint: check the path given with --board or TAVERN_BOARD")
        }
        Error::Paused { .. } => format!("{e}\nhint: `tavern resume` lifts the pause"),
        Error::NotRegistered { agent } => {
            format!("{e}\nhint: register it with `tavern agent register --as {agent}`")
        }
        Error::Unconfirmed { task, remote, .. } => format!(
            "{e}\nhint: retry when the remote '{remote}' is reachable (`git ls-remote {remote}` tells); \
             or act on this clone alone with --local, at the risk that another machine claims {task} too \
             (the remote hears of it at the task's next confirmed move)"
        ),
        _ => e.to_string(),
    }
}
