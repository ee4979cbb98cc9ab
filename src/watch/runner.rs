//! Starting a knowledge source's command for one activation.
//!
//! The command runs as `sh -c RUN` in the project root, in its own process group (so a
//! timeout kills everything it started; [`crate::runs::shell`]), with the source's prompt
//! on stdin and its output in `.state/runs/`. Only `{id}`, `{path}` and `{region}` are substituted into the command
//! line, quoted when needed; everything else about the change reaches the command through
//! the environment, so a hostile title never reaches a shell.

use std::io::Write;
use std::process::{ExitStatus, Stdio};

use super::scheduler::Activation;
use super::sources::Source;
use crate::board::Board;
use crate::error::{Error, Result};
use crate::runs::file_safe;

/// A started command.
pub struct Spawned {
    pub pid: u32,
    /// Its output file, board-relative.
    pub output: String,
}

/// Starts `source` for `act`; `on_exit` is called from a thread when the command ends.
pub fn spawn(
    board: &Board,
    source: &Source,
    act: &Activation,
    on_exit: impl FnOnce(std::io::Result<ExitStatus>) + Send + 'static,
) -> Result<Spawned> {
    let stamp = act.queued_at.format("%Y%m%dT%H%M%S%.3fZ");
    let doc_path = board.root.join(&act.doc);
    let doc_path = doc_path.to_string_lossy();
    let (mut command, output) = crate::runs::shell(
        board,
        &format!(
            "{stamp}-{}-{}-{}.log",
            file_safe(&act.source),
            file_safe(&act.doc_id),
            act.id
        ),
        // The command says first that it was spawned (see [`super::starting`]).
        &format!(
            ": > {}; {}",
            super::sources::shell_word(&super::starting::mark_path(board).to_string_lossy()),
            source.command(&act.doc_id, &doc_path, &act.region)
        ),
    )?;
    let project = board.project();
    command
        .env("TAVERN_BOARD", &board.root)
        .env("TAVERN_EVENT", &act.event)
        .env("TAVERN_DOC", doc_path.as_ref())
        .env("TAVERN_ID", &act.doc_id)
        .env("TAVERN_REGION", &act.region)
        .env("TAVERN_AGENT", &source.name)
        .env("TAVERN_SEQ", act.seq.to_string())
        .env("TAVERN_CHAIN", act.depth.to_string())
        .stdin(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| Error::io(project, "start a source's command in", e))?;
    let pid = child.id();
    let stdin = child.stdin.take();
    let prompt = source.prompt.clone();
    std::thread::spawn(move || {
        // The prompt; a command that does not read it just closes the pipe.
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(prompt.as_bytes());
        }
        on_exit(child.wait());
    });
    Ok(Spawned {
        pid,
        output: board.rel(&output),
    })
}
