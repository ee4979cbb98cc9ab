//! The index keeper: a watcher that keeps nothing but the change journal (see
//! `index::journal`), so that reads on a big board go by the journal instead of a `statat`
//! of every file when no `tavern watch` runs. A read that finds no journal starts one in
//! the background (`index::keeper`), as git starts its file-system monitor daemon; it runs
//! no knowledge source, logs nothing and writes nothing on the board, and it stops:
//!
//! - when no read has asked it anything for `idle` (the journal is then removed, and reads
//!   check every file again until one starts a keeper anew);
//! - when a `tavern watch` asks for the journal (a [`STOP`](crate::index::journal::STOP)
//!   cookie), at SIGINT or SIGTERM;
//! - when the board is gone, the journal's lock was taken from it, or the native watcher
//!   failed.
//!
//! Only one writes the journal: a keeper that finds another writer holding it ends at
//! once ([`End::Busy`]).

use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use super::fsevents::{self, Backlog, Extra, Msg, Native, NativeFailure};
use crate::board::Board;
use crate::error::{Error, Result};
use crate::index::journal::{self, Claim, Writer};

/// How often the keeper looks at the board, its journal and its idle time.
const TICK: Duration = Duration::from_secs(1);

/// Why a keeper stopped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case", tag = "end", content = "detail")]
pub enum End {
    /// Another writer (a watcher or a keeper) holds the journal: nothing to do.
    Busy,
    /// No read asked for this long.
    Idle,
    /// A watcher took the journal over, or a signal.
    Asked,
    /// The board's directory is gone.
    BoardGone,
    /// The journal's lock was removed and another writer locked the new one.
    JournalLost,
    /// The native watcher could not start or failed.
    Failed(String),
}

/// A stopping watcher's invitation to keep the journal after it: the token of the cookie
/// that says the keeper watches everything, and the epoch its journal must have (the
/// watcher's saved state is marked with it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invitation {
    pub token: String,
    pub epoch: u64,
}

impl Invitation {
    /// As passed to the keeper's process (`TAVERN_KEEPER_INVITATION`).
    pub fn to_text(&self) -> String {
        format!("{} {}", self.token, self.epoch)
    }

    pub fn parse(text: &str) -> Option<Invitation> {
        let (token, epoch) = text.trim().split_once(' ')?;
        let token_ok = !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphanumeric());
        Some(Invitation {
            token: token_ok.then(|| token.to_string())?,
            epoch: epoch.parse().ok()?,
        })
    }
}

/// Keeps the board's change journal until one of the [`End`]s: started by a read (no
/// invitation), or by a watcher that stops.
pub fn keep(board: &Board, idle: Duration, invited: Option<&Invitation>) -> Result<End> {
    if invited.is_none() && journal::is_kept(&board.root) {
        return Ok(End::Busy);
    }
    fsevents::ensure_dirs(board);
    let start_failed = |e| Error::io(journal::path(&board.root), "start the change journal", e);
    let writer = match invited {
        // The watcher that invited it holds the lock until it has handed over.
        Some(_) => Writer::pending(&board.root),
        None => Writer::pending_locked(&board.root),
    };
    let writer = match writer {
        Ok(w) => Arc::new(w),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(End::Busy),
        Err(e) => return Err(start_failed(e)),
    };
    let (tx, rx) = std::sync::mpsc::channel();
    super::listen_for_signals(tx.clone());
    let extra = Extra {
        log_and_board: false,
        journal: Some(writer.clone()),
        journal_only: true,
    };
    let mut native = match Native::start(board, tx, Backlog::default(), extra) {
        Ok(n) => n,
        Err(e) => {
            // Reads would start one in vain every time (the watch limit, say): they do
            // not for a while (see `index::keeper`).
            let why = NativeFailure::of(&e).to_string();
            crate::index::keeper::failed(&board.root, &why);
            return Ok(End::Failed(why));
        }
    };
    // Every directory is watched: the journal may be taken. An invited keeper tells the
    // watcher so, and takes it once the watcher has handled what it saw and let it go.
    let taken = match invited {
        Some(inv) => {
            let ready = writer
                .cookie_dir()
                .join(format!("{}{}", journal::READY, inv.token));
            let _ = std::fs::write(&ready, b"");
            let taken = writer.take(Claim::Invited, Some(inv.epoch));
            let _ = std::fs::remove_file(&ready);
            taken
        }
        None => writer.take(Claim::Free, None),
    };
    match taken {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(End::Busy),
        Err(e) => return Err(start_failed(e)),
    }
    let end = loop {
        match rx.recv_timeout(TICK) {
            Ok(Msg::Signal) => break End::Asked,
            Ok(Msg::Failed(e)) => break End::Failed(NativeFailure::of(&e).to_string()),
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                break End::Failed("the native watcher stopped".into());
            }
        }
        if !board.root.is_dir() {
            break End::BoardGone;
        }
        if writer.verify() {
            native.watch_cookies(writer.cookie_dir());
        }
        if !writer.is_open() {
            break End::JournalLost;
        }
        if writer.idle_for() >= idle {
            break End::Idle;
        }
    };
    // The journal goes first: no reader may trust it once nothing watches.
    writer.close();
    drop(native);
    Ok(end)
}
