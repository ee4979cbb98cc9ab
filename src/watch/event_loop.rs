//! The event loop: waits for messages (file events, commands' ends, signals) and timers,
//! and hands each to its room: [`Intake`] (where to look), [`Reconciler`] (what changed),
//! [`Activations`] (which sources run), [`Chores`] (saving state and reports). It also
//! stops the watcher when its board is gone.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::activations::{self, Activations};
use super::chores::Chores;
use super::events::{Event, Warning};
use super::fsevents::{self, Msg};
use super::intake::Intake;
use super::lock::{self, WatchLock};
use super::reconcile::{Outcome, Reconciler};
use super::{Options, Summary, report};
use crate::board::Board;
use crate::error::{Error, Result};

/// How long a burst of events may keep arriving before the watcher looks (the first
/// event of a quiet board is handled after at most this long).
const DEBOUNCE: Duration = Duration::from_millis(10);
/// The longest a continuing burst delays handling.
const DEBOUNCE_MAX: Duration = Duration::from_millis(50);
/// At the end, how many times to read the log and handle what it names before stopping.
const DRAIN_ROUNDS: usize = 5;
/// After killing the activations at shutdown, how long to wait for them to be reaped.
const REAP_WAIT: Duration = Duration::from_secs(5);
/// At a stop, how long to wait for the index keeper it starts to watch every directory.
const HAND_OVER_WAIT: Duration = Duration::from_secs(3);

pub struct Watch<'a> {
    board: Board,
    opts: Options,
    rec: Reconciler,
    acts: Activations,
    intake: Intake,
    chores: Chores,
    lock: WatchLock,
    /// The board directory's identity when the watcher started.
    root_id: Option<(u64, u64)>,
    paused: Option<String>,
    /// When stopping: the end of the grace period, and whether the rest was killed.
    stopping: Option<(Instant, bool)>,
    emit: &'a mut dyn FnMut(Event),
}

impl<'a> Watch<'a> {
    pub fn open(
        board: Board,
        opts: Options,
        tx: Sender<Msg>,
        lock: WatchLock,
        emit: &'a mut dyn FnMut(Event),
    ) -> Result<Watch<'a>> {
        fsevents::ensure_dirs(&board);
        let acts = Activations::load(&board, opts.jobs, tx.clone(), emit);
        // The watcher starts before the first scan, so nothing written meanwhile is missed.
        let intake = Intake::start(&board, opts.once, opts.poll, tx, emit);
        let w = Watch {
            rec: Reconciler::open(board.clone())?,
            acts,
            intake,
            chores: Chores::new(Instant::now()),
            lock,
            root_id: dir_id(&board.root),
            paused: board.paused(),
            stopping: None,
            board,
            opts,
            emit,
        };
        Ok(w)
    }

    pub fn summary(&self) -> &Summary {
        &self.acts.summary
    }

    pub fn run(&mut self, rx: Receiver<Msg>) -> Result<()> {
        self.acts.log_lost(&self.board, &mut self.rec, self.emit)?;
        // What changed while no watcher ran: handled now, once.
        self.start_pass();
        self.rec.catch_up()?;
        self.rec.mark_catching_up();
        // Said once what changed while no watcher ran is known: a change made after it is
        // the watcher's to see live, never taken for one made before it started.
        (self.emit)(Event::Watching {
            board: self.board.root.clone(),
            mode: self.intake.mode(),
            sources: self.acts.names(),
            waiting: self.acts.sched.queue.len(),
        });
        self.process()?;
        loop {
            self.tick()?;
            // One instant for deciding what starts and how long to sleep: a cooldown that
            // ends in between would otherwise be seen by neither.
            let now = Instant::now();
            self.start_ready(now)?;
            if self.done() {
                break;
            }
            let wait = self
                .next_wake(now)
                .saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(msg) => {
                    let mut msgs = vec![msg];
                    if matches!(msgs[0], Msg::Paths(_)) {
                        collect_burst(&rx, &mut msgs);
                    }
                    for msg in msgs {
                        self.handle(msg)?;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.tick()?;
            if !self.rec.hints.is_empty() {
                self.process()?;
            }
        }
        let mark = self.hand_over(&rx)?;
        self.shutdown(mark)
    }

    /// Hints what changed while no watcher ran: the paths an index keeper's journal names
    /// after the saved state's mark, when the keeper kept that journal all along (see
    /// `mark`); else every file whose stat data differ from the saved ones.
    fn start_pass(&mut self) {
        let mark = super::mark::load(&self.board);
        // Used once, whatever happens next: a watcher killed before it saves a new one
        // leaves none, and the next start looks at every file.
        super::mark::remove(&self.board);
        let named = match (mark, &self.intake.start_view) {
            (Some(m), Some(view)) if view.epoch == m.epoch => view
                .changed_since(m.at)
                .map(|paths| paths.into_iter().map(str::to_string).collect::<Vec<_>>()),
            _ => None,
        };
        match named {
            Some(paths) => {
                for p in paths {
                    let abs = self.board.root.join(p);
                    self.intake.hint(&self.board, &mut self.rec, abs, self.emit);
                }
            }
            None => self.rec.rescan(),
        }
    }

    /// Before it stops, a watcher that keeps the journal hands it over to an index keeper
    /// it starts, so that the next start costs what changed meanwhile: the keeper watches
    /// every directory first and says so (a cookie); every change before that reached this
    /// watcher, which handles what it has not yet, and lets the journal go. The keeper then
    /// keeps a journal of the epoch agreed, from its start: the mark to save, once
    /// everything handled is saved. None when there is nothing to hand over, the keeper
    /// did not say it watches within [`HAND_OVER_WAIT`], or something is left unhandled.
    fn hand_over(&mut self, rx: &Receiver<Msg>) -> Result<Option<super::mark::Mark>> {
        let mode = crate::index::keeper::mode(&self.board);
        if !crate::index::keeper::wanted_for(mode, self.rec.snapshot.count()) {
            return Ok(None);
        }
        let Some(journal) = self.intake.journal().cloned() else {
            return Ok(None);
        };
        let invitation = super::keeper::Invitation {
            token: format!("{:x}", crate::index::files::unique()),
            epoch: crate::index::files::unique(),
        };
        journal.invite(&invitation.token);
        if !crate::index::keeper::spawn(&self.board.root, Some(&invitation.to_text())) {
            return Ok(None);
        }
        let end = Instant::now() + HAND_OVER_WAIT;
        while !journal.invited_ready() {
            if Instant::now() >= end {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        // Everything the kernel reported before the keeper watched is on the channel.
        while let Ok(msg) = rx.try_recv() {
            if !matches!(msg, Msg::Signal) {
                self.handle(msg)?;
            }
        }
        self.tick()?;
        self.process()?;
        let handled = self.rec.hints.is_empty() && self.intake.idle();
        Ok(handled.then_some(super::mark::Mark {
            epoch: invitation.epoch,
            at: 0,
        }))
    }

    /// Nothing left to do: stopping and nothing runs, or (`once`) nothing pending.
    fn done(&self) -> bool {
        let idle = self.acts.sched.running.is_empty();
        match self.stopping {
            Some((grace_end, _)) => idle || Instant::now() > grace_end + REAP_WAIT,
            None => {
                self.opts.once
                    && idle
                    && self.rec.hints.is_empty()
                    && self.intake.idle()
                    && (self.acts.sched.queue.is_empty() || self.paused.is_some())
            }
        }
    }

    fn next_wake(&self, now: Instant) -> Instant {
        let stop = self
            .stopping
            .map(|(t, killed)| if killed { t + REAP_WAIT } else { t });
        [
            self.acts.next_wake(now),
            self.intake.next_wake(),
            stop,
            Some(self.chores.next_wake()),
        ]
        .into_iter()
        .flatten()
        .fold(now + Duration::from_secs(3600), Instant::min)
    }

    fn handle(&mut self, msg: Msg) -> Result<()> {
        if self.board_gone() {
            self.still_there()?;
        }
        match msg {
            Msg::Paths(paths) => {
                self.intake.backlog.taken();
                for p in paths {
                    self.intake.hint(&self.board, &mut self.rec, p, self.emit);
                }
                self.show_notices();
            }
            Msg::Rescan => self.rec.rescan(),
            Msg::Failed(e) => {
                let warning = self.intake.native_failed(&e);
                (self.emit)(warning);
            }
            Msg::Exited { id, status } => {
                self.acts
                    .finished(&self.board, &mut self.rec, id, status, self.emit)?;
                self.chores.report_changed();
                if self.opts.once {
                    // What the command wrote is looked at before `once` decides it is done.
                    self.intake
                        .look_again(&self.board, &mut self.rec, self.emit);
                }
            }
            Msg::Signal => match self.stopping {
                None => {
                    (self.emit)(Event::Stopping {
                        running: self.acts.sched.running.len(),
                        grace_ms: self.opts.grace.as_millis() as u64,
                    });
                    self.stopping = Some((Instant::now() + self.opts.grace, false));
                }
                // A second signal: do not wait for the grace period.
                Some(_) => self.stopping = Some((Instant::now(), false)),
            },
        }
        Ok(())
    }

    /// Handles every hinted path: logs what was changed outside tavern, offers each change
    /// to the sources, then records the batch as handled.
    fn process(&mut self) -> Result<()> {
        // A removed board shows up as a burst of deletions: not to be logged into a new
        // log.yaml where the board was.
        if self.board_gone() {
            self.still_there()?;
        }
        if let Err(e) = self.rec.catch_up() {
            (self.emit)(Warning::trouble(format!("cannot read the log: {e}")));
        }
        while let Some(rel) = self.rec.hints.pop_first() {
            let outcome = self.rec.reconcile(&rel);
            self.show_notices();
            if self.rec.sources_changed {
                self.rec.sources_changed = false;
                self.acts.load_sources(&self.board, false, self.emit);
            }
            match outcome {
                Ok(Outcome::Handled(changes)) => {
                    self.intake.handled(&rel);
                    for c in changes {
                        self.acts.offer(&mut self.rec, c, self.emit)?;
                    }
                }
                Ok(Outcome::Deferred(after)) => self.intake.defer(rel, after),
                Err(e) => {
                    let (warning, gave_up) = self.intake.failed(rel, e.to_string());
                    (self.emit)(warning);
                    if gave_up {
                        self.acts.summary.failed += 1;
                    }
                }
            }
        }
        self.chores.handled(Instant::now());
        Ok(())
    }

    /// Reads the log to its end before the cursor is saved for the last time: the entries
    /// the watcher appended itself are then behind it, and a next start does not read them
    /// as left over from a run that stopped half-way. Changes other writers logged in the
    /// meantime are handled first (a few rounds at most, while they keep writing).
    fn drain_log(&mut self) -> Result<()> {
        for _ in 0..DRAIN_ROUNDS {
            self.rec.catch_up()?;
            if self.rec.hints.is_empty() {
                return Ok(());
            }
            self.process()?;
        }
        Ok(())
    }

    /// Saves the queue, then writes the shadows of the changes handled since: a crash in
    /// between handles those changes again at the next start, and never loses them. Done
    /// at most every so often while changes pour in (the queue file holds every waiting
    /// activation; writing it per batch of a burst would cost its square).
    fn persist(&mut self) -> Result<()> {
        self.acts.sched.save(&self.board)?;
        for problem in self.rec.commit() {
            // Such a change is handled again at the next start: a repeat, not a loss.
            (self.emit)(Warning::trouble(problem));
        }
        self.chores.persisted();
        Ok(())
    }

    /// Starts what may start now.
    fn start_ready(&mut self, now: Instant) -> Result<()> {
        if self.acts.drop_started_before(&self.rec, self.emit) {
            self.chores.queue_changed(Instant::now());
        }
        self.paused = self.board.paused();
        if self.stopping.is_some() || self.paused.is_some() || self.acts.sched.queue.is_empty() {
            return Ok(());
        }
        if self.board_gone() {
            // Nothing is started for a board that is gone, and nothing written where it was.
            return self.still_there();
        }
        if self
            .acts
            .start_ready(&self.board, &mut self.rec, now, self.emit)?
        {
            self.chores.queue_changed(Instant::now());
        }
        Ok(())
    }

    /// Timers: timeouts, the end of the grace period, deferred paths, polling, overflow,
    /// and the throttled writes of state and reports.
    fn tick(&mut self) -> Result<()> {
        let now = Instant::now();
        // Before anything below writes: a stat per wake-up.
        if self.board_gone() || self.chores.check_due(now) {
            self.still_there()?;
        }
        self.acts.time_out(now, self.emit);
        if let Some((grace_end, false)) = self.stopping
            && now >= grace_end
        {
            self.acts.kill_all(true);
            self.stopping = Some((now, true));
        }
        self.intake.due(&mut self.rec, now);
        if !self.rec.hints.is_empty() {
            self.process()?;
        }
        if self.chores.persist_due(now) {
            self.persist()?;
        }
        if self.chores.save_due(now) {
            self.save_state(false)?;
        }
        if self.chores.report_due(now) {
            self.write_reports(true);
        }
        if self.chores.prune_due(now) {
            self.prune_runs(now);
        }
        Ok(())
    }

    fn board_gone(&self) -> bool {
        !crate::layout::board_yaml(&self.board.root).is_file()
    }

    /// Stops the watcher when its board is gone (removed, moved away: writing on would make
    /// a half board of log and state files where it was), and keeps the one-watcher lock
    /// when `.state/` was cleaned under it.
    fn still_there(&mut self) -> Result<()> {
        // A board moved away and another made in its place is gone too: the native
        // watches followed the old directory.
        if self.board_gone() || dir_id(&self.board.root) != self.root_id {
            let n = self.acts.sched.running.len();
            self.acts.kill_all(false);
            return Err(Error::NotFound {
                what: format!("board {}", self.board.root.display()),
                hint: format!(
                    "it was removed or moved away while `tavern watch` ran (a board made in its place since is another board: start a watcher for it); the watcher stopped without writing anything more{}",
                    if n == 0 {
                        String::new()
                    } else {
                        format!(
                            " and killed the {n} activation{} that ran",
                            if n == 1 { "" } else { "s" }
                        )
                    }
                ).into(),
            });
        }
        if self.lock.verify(&self.board)? {
            (self.emit)(Event::Warning(Warning::Relocked));
        }
        self.intake.check_journal();
        Ok(())
    }

    /// Removes run outputs older than `watch.keep_runs`, except those of running commands.
    fn prune_runs(&mut self, now: Instant) {
        self.chores.pruned(now);
        let spare = self
            .acts
            .sched
            .running
            .values()
            .map(|r| self.board.root.join(&r.output))
            .collect();
        if let Err(e) = crate::runs::prune(&self.board, crate::runs::keep(&self.board), &spare) {
            (self.emit)(Warning::trouble(format!(
                "cannot remove old run outputs: {e}"
            )));
        }
    }

    /// Saves the cursor and metrics, and the snapshot when it is due (or `all`).
    fn save_state(&mut self, all: bool) -> Result<()> {
        let now = Instant::now();
        let snapshot = self.chores.snapshot_due(now, all);
        if snapshot {
            self.rec.save()?;
        } else {
            self.rec.cursor.save(&self.board)?;
        }
        self.acts.metrics.save(&self.board)?;
        self.chores.saved(now, snapshot);
        Ok(())
    }

    fn write_reports(&mut self, running: bool) {
        let mode = self.intake.mode().to_string();
        let state = report::State {
            running,
            paused: self.paused.clone(),
            jobs: self.opts.jobs,
            mode: &mode,
        };
        let schedule =
            report::render_schedule(&state, &self.acts.sched, &self.acts.sources, Instant::now());
        let metrics = report::render_metrics(&self.acts.metrics, &self.acts.sources);
        if let Err(e) = report::write(&self.board, &schedule, &metrics) {
            (self.emit)(Warning::trouble(format!(
                "cannot write control/schedule.md: {e}"
            )));
        }
        self.chores.reported(Instant::now());
    }

    fn shutdown(&mut self, mark: Option<super::mark::Mark>) -> Result<()> {
        self.intake.close_journal();
        self.drain_log()?;
        self.persist()?;
        self.save_state(true)?;
        // `once`: everything up to where the keeper's journal stood when this pass last
        // looked at it is handled; a watcher that handed its journal over: everything until the keeper
        // watched. True only once the state that says so is saved.
        let mark = mark.or_else(|| {
            let (epoch, at) = self.intake.looked_up_to()?;
            self.opts.once.then_some(super::mark::Mark { epoch, at })
        });
        if let Some(mark) = mark
            && self.rec.all_saved()
            && self.rec.hints.is_empty()
            && self.intake.idle()
        {
            super::mark::save(&self.board, mark)?;
        }
        self.write_reports(false);
        let waiting = self.acts.sched.queue.len();
        if self.paused.is_some() {
            self.acts.summary.held = waiting;
        }
        (self.emit)(Event::Stopped {
            ran: self.acts.summary.ran,
            failed: self.acts.summary.failed,
            waiting,
            paused: self.paused.clone(),
        });
        Ok(())
    }

    /// What the reconciler logged on its own account (external edits, alerts).
    fn show_notices(&mut self) {
        for n in std::mem::take(&mut self.rec.notices) {
            (self.emit)(activations::shown(&n.entry));
        }
    }
}

/// A directory's identity (device and inode), None if it is gone.
fn dir_id(path: &std::path::Path) -> Option<(u64, u64)> {
    std::fs::metadata(path)
        .ok()
        .and_then(|m| lock::identity(&m))
}

/// Gathers the rest of a burst of events: until it is quiet for DEBOUNCE, at most
/// DEBOUNCE_MAX. Anything else (an activation's end, a signal) ends the burst at once, so
/// that it is not kept waiting behind it.
pub(crate) fn collect_burst(rx: &Receiver<Msg>, msgs: &mut Vec<Msg>) {
    let end = Instant::now() + DEBOUNCE_MAX;
    loop {
        let wait = DEBOUNCE.min(end.saturating_duration_since(Instant::now()));
        match rx.recv_timeout(wait) {
            Ok(m) => {
                let other = !matches!(m, Msg::Paths(_));
                msgs.push(m);
                if other {
                    return;
                }
            }
            Err(_) => return,
        }
        if Instant::now() >= end {
            return;
        }
    }
}
