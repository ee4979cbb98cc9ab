//! Where the watcher looks: the native watcher's paths, the rescans of poll mode and of an
//! overflow, and the paths to look at again later. Everything ends as a hint in the
//! reconciler; this room decides only when and where.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::areas;
use super::events::{Event, Mode, Warning};
use super::fsevents::{self, Backlog, Look, Msg, Native, NativeFailure};
use super::reconcile::{Reconciler, WATCHER};
use crate::board::Board;

/// The poll interval when the native watcher fails and no poll interval was asked for.
pub const FALLBACK_POLL: Duration = Duration::from_secs(2);
/// When looking at a file failed (a lock, a read), how long before looking again.
const RETRY_AFTER: Duration = Duration::from_secs(1);
const RETRIES: u32 = 3;

pub struct Intake {
    pub backlog: Backlog,
    native: Option<Native>,
    /// The change journal the native watcher writes (see `index::journal`).
    journal: Option<std::sync::Arc<crate::index::journal::Writer>>,
    /// Poll mode: the interval and the next rescan.
    poll: Option<(Duration, Instant)>,
    /// Paths to look at again later (written half a moment ago and invalid, or a look
    /// that failed).
    deferred: Vec<(String, Instant)>,
    /// Failed looks per path.
    retries: HashMap<String, u32>,
    /// Files with names that are not UTF-8, already reported.
    undecodable: HashSet<PathBuf>,
    /// Where the journal an index keeper kept stood once this watcher watched (or, for
    /// `once`, before its pass): what changed while no watcher ran, if the saved state's
    /// mark is of it (see `mark`).
    pub start_view: Option<crate::index::journal::View>,
    /// `once`: the epoch of that journal, and where in it this pass has looked up to.
    looked: Option<(u64, u64)>,
}

impl Intake {
    /// Starts looking: nothing (`once`), a rescan every `poll`, or the native watcher
    /// (polling when it cannot start, with a warning).
    pub fn start(
        board: &Board,
        once: bool,
        poll: Option<Duration>,
        tx: Sender<Msg>,
        emit: &mut dyn FnMut(Event),
    ) -> Intake {
        let mut intake = Intake {
            backlog: Backlog::default(),
            native: None,
            journal: None,
            poll: None,
            deferred: Vec::new(),
            retries: HashMap::new(),
            undecodable: HashSet::new(),
            start_view: None,
            looked: None,
        };
        if once {
            // A keeper's journal, if one runs: asked before the pass, so that every
            // change the pass does not see is in it after this point.
            intake.start_view = crate::index::journal::View::take(&board.root);
            intake.looked = intake.start_view.as_ref().map(|v| (v.epoch, v.at));
            return intake;
        }
        if let Some(every) = poll {
            intake.poll = Some((every, Instant::now() + every));
            return intake;
        }
        // The journal reads check themselves against while this watcher runs; without
        // one (it cannot be written) they check every file, as without a watcher.
        // The journal reads go by: this watcher's, once it watches every directory.
        let journal = crate::index::journal::Writer::pending(&board.root)
            .ok()
            .map(std::sync::Arc::new);
        let extra = fsevents::Extra {
            log_and_board: false,
            journal: journal.clone(),
            journal_only: false,
        };
        match Native::start(board, tx, intake.backlog.clone(), extra) {
            Ok(n) => {
                intake.native = Some(n);
                // Every change from here on reaches this watcher. An index keeper that
                // kept the journal until now says where it stands (what changed before
                // is in it), then is asked to stop: the watcher keeps the journal.
                intake.start_view = crate::index::journal::View::take(&board.root);
                intake.journal = journal
                    .filter(|j| j.take(crate::index::journal::Claim::TakeOver, None).is_ok());
            }
            Err(e) => {
                emit(native_failed(&e, true));
                intake.poll = Some((FALLBACK_POLL, Instant::now() + FALLBACK_POLL));
            }
        }
        intake
    }

    pub fn mode(&self) -> Mode {
        match (&self.native, self.poll) {
            (Some(_), _) => Mode::Native,
            (None, Some((every, _))) => Mode::Polling(every),
            (None, None) => Mode::Once,
        }
    }

    /// Puts the change journal back when it or its cookie directory was removed (checked
    /// every second, with the lock).
    pub fn check_journal(&mut self) {
        if let (Some(j), Some(n)) = (&self.journal, &mut self.native)
            && j.verify()
        {
            n.watch_cookies(j.cookie_dir());
        }
    }

    /// The journal this watcher keeps, if it keeps one.
    pub fn journal(&self) -> Option<&std::sync::Arc<crate::index::journal::Writer>> {
        self.journal.as_ref().filter(|j| j.is_open())
    }

    /// The watcher stops: its journal goes (the process may end before anything drops).
    pub fn close_journal(&mut self) {
        if let Some(j) = self.journal.take() {
            j.close();
        }
    }

    /// The native watcher failed while it ran: polling from now on.
    pub fn native_failed(&mut self, e: &notify::Error) -> Event {
        self.native = None;
        self.close_journal();
        self.poll = Some((FALLBACK_POLL, Instant::now()));
        native_failed(e, false)
    }

    /// A path the native watcher named: the file, or everything under a directory.
    pub fn hint(
        &mut self,
        board: &Board,
        rec: &mut Reconciler,
        path: PathBuf,
        emit: &mut dyn FnMut(Event),
    ) {
        for look in fsevents::looks(board, &path) {
            match look {
                Look::File(rel) => {
                    rec.hints.insert(rel);
                }
                Look::Under(rel) => rec.rescan_dir(&rel),
                Look::GoneUnder(rel) => rec.forget_dir(&rel),
                Look::Rewatch(dir) => {
                    if let Some(n) = &mut self.native {
                        n.rewatch(board, &dir);
                    }
                }
                Look::Undecodable(path) => self.undecodable(board, rec, &path, emit),
            }
        }
    }

    /// `once`, after an activation's command ended: hints what changed since this pass
    /// last looked (what the command wrote, what anyone else did meanwhile), by the
    /// journal of the keeper that kept it all along; without one, every file is looked at.
    pub fn look_again(&mut self, board: &Board, rec: &mut Reconciler, emit: &mut dyn FnMut(Event)) {
        let view = self
            .looked
            .and_then(|_| crate::index::journal::View::take(&board.root));
        let named = match (self.looked, &view) {
            (Some((epoch, at)), Some(view)) if view.epoch == epoch => view.changed_since(at),
            _ => None,
        };
        let Some(paths) = named else {
            self.looked = None;
            rec.rescan();
            return;
        };
        let paths: Vec<PathBuf> = paths.into_iter().map(|p| board.root.join(p)).collect();
        for path in paths {
            self.hint(board, rec, path, emit);
        }
        self.looked = view.map(|v| (v.epoch, v.at));
    }

    /// `once`: the epoch of the keeper's journal and the place in it up to which this
    /// pass has looked (before the pass, or when an activation last ended).
    pub fn looked_up_to(&self) -> Option<(u64, u64)> {
        let view = self.start_view.as_ref()?;
        Some(self.looked.unwrap_or((view.epoch, view.at)))
    }

    /// A file whose name is not UTF-8 where documents live cannot be tracked (its path is
    /// not text for the log): an alert, once per path, rather than silence.
    fn undecodable(
        &mut self,
        board: &Board,
        rec: &mut Reconciler,
        path: &Path,
        emit: &mut dyn FnMut(Event),
    ) {
        let Ok(rel) = path.strip_prefix(&board.root) else {
            return;
        };
        let lossy = rel.to_string_lossy().into_owned();
        if lossy.split('/').any(areas::is_noise)
            || areas::classify(&lossy).is_none()
            || std::fs::symlink_metadata(path).is_err()
            || !self.undecodable.insert(path.to_path_buf())
        {
            return;
        }
        let note =
            format!("{lossy}: file name is not valid UTF-8; tavern cannot track it (rename it)");
        if let Err(e) = rec.alert(&lossy, WATCHER, note) {
            emit(Warning::trouble(format!("cannot log an alert: {e}")));
        }
    }

    /// A path to look at again after `after` (written half a moment ago and invalid).
    pub fn defer(&mut self, rel: String, after: Duration) {
        self.deferred.push((rel, Instant::now() + after));
    }

    /// The path was looked at: its failures are forgotten.
    pub fn handled(&mut self, rel: &str) {
        self.retries.remove(rel);
    }

    /// Looking at `rel` failed: looked at again in a moment, a few times. Returns the
    /// warning, and whether the watcher gave up on it (until it changes again).
    pub fn failed(&mut self, rel: String, error: String) -> (Event, bool) {
        let tries = self.retries.entry(rel.clone()).or_default();
        *tries += 1;
        let again = *tries <= RETRIES;
        if again {
            self.deferred
                .push((rel.clone(), Instant::now() + RETRY_AFTER));
        } else {
            self.retries.remove(&rel);
        }
        let warning = Warning::LookFailed {
            path: rel,
            error,
            again,
        };
        (Event::Warning(warning), !again)
    }

    /// What is due at `now`: deferred paths, a poll, a rescan after dropped events.
    pub fn due(&mut self, rec: &mut Reconciler, now: Instant) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|(_, t)| *t <= now);
        self.deferred = later;
        rec.hints.extend(due.into_iter().map(|(rel, _)| rel));
        if let Some((every, next)) = self.poll
            && now >= next
        {
            rec.rescan();
            self.poll = Some((every, now + every));
        }
        if self.backlog.take_overflow() {
            rec.rescan();
        }
    }

    /// Nothing deferred.
    pub fn idle(&self) -> bool {
        self.deferred.is_empty()
    }

    /// The next time something here is due.
    pub fn next_wake(&self) -> Option<Instant> {
        let deferred = self.deferred.iter().map(|(_, t)| *t).min();
        let poll = self.poll.map(|(_, t)| t);
        deferred.into_iter().chain(poll).min()
    }
}

fn native_failed(e: &notify::Error, at_start: bool) -> Event {
    Event::Warning(Warning::NativeFailed {
        failure: NativeFailure::of(e),
        poll_every_ms: FALLBACK_POLL.as_millis() as u64,
        at_start,
    })
}
