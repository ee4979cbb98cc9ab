//! When the watcher saves its state and rewrites its reports: throttled, so that a burst
//! of changes costs a few writes, not one per change. Only the clocks live here; the
//! event loop does the writing when they say it is due.

use std::time::{Duration, Instant};

/// How often schedule.md and metrics.md may be rewritten.
const REPORT_EVERY: Duration = Duration::from_millis(250);
/// How often the queue and the handled changes' shadows are saved while changes come in.
const PERSIST_EVERY: Duration = Duration::from_millis(100);
/// How often the log cursor and metrics are saved while changes come in.
const SAVE_EVERY: Duration = Duration::from_secs(1);
/// How often the snapshot is: it only saves reading unchanged files at the next start (the
/// shadows are what says a change was handled), and on a big board it is megabytes.
const SNAPSHOT_EVERY: Duration = Duration::from_secs(30);
/// How often old run outputs are removed (also once at start).
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// How often the watcher checks that its board and its lock are still there.
const CHECK_EVERY: Duration = Duration::from_secs(1);

pub struct Chores {
    report_dirty: bool,
    last_report: Instant,
    /// When the queue and the shadows of what was handled must be saved.
    persist_due: Option<Instant>,
    state_dirty: bool,
    last_save: Instant,
    last_snapshot: Instant,
    /// When old run outputs were last removed; `None` until the first time, at start.
    last_prune: Option<Instant>,
    /// When the board and the lock were last checked to be still there.
    last_check: Instant,
}

impl Chores {
    pub fn new(now: Instant) -> Chores {
        Chores {
            report_dirty: true,
            last_report: now - REPORT_EVERY,
            persist_due: None,
            state_dirty: false,
            last_save: now,
            last_snapshot: now,
            last_prune: None,
            last_check: now,
        }
    }

    /// Changes were handled: the queue, the shadows, the cursor and the reports are due.
    pub fn handled(&mut self, now: Instant) {
        self.queue_changed(now);
        self.state_dirty = true;
    }

    /// The queue (or what runs) changed: it is saved soon and the reports rewritten.
    pub fn queue_changed(&mut self, now: Instant) {
        self.persist_due.get_or_insert(now + PERSIST_EVERY);
        self.report_dirty = true;
    }

    /// Something the reports show changed.
    pub fn report_changed(&mut self) {
        self.report_dirty = true;
    }

    pub fn persist_due(&self, now: Instant) -> bool {
        self.persist_due.is_some_and(|due| now >= due)
    }

    pub fn persisted(&mut self) {
        self.persist_due = None;
    }

    /// The cursor is saved only after the shadows: entries past it are handled for good.
    pub fn save_due(&self, now: Instant) -> bool {
        self.state_dirty && self.persist_due.is_none() && now >= self.last_save + SAVE_EVERY
    }

    /// Is the snapshot due with this save (or `all`)?
    pub fn snapshot_due(&self, now: Instant, all: bool) -> bool {
        all || now >= self.last_snapshot + SNAPSHOT_EVERY
    }

    pub fn saved(&mut self, now: Instant, snapshot: bool) {
        if snapshot {
            self.last_snapshot = now;
        }
        self.state_dirty = false;
        self.last_save = now;
    }

    pub fn report_due(&self, now: Instant) -> bool {
        self.report_dirty && now >= self.last_report + REPORT_EVERY
    }

    pub fn reported(&mut self, now: Instant) {
        self.report_dirty = false;
        self.last_report = now;
    }

    pub fn prune_due(&self, now: Instant) -> bool {
        self.last_prune.is_none_or(|last| now >= last + PRUNE_EVERY)
    }

    pub fn pruned(&mut self, now: Instant) {
        self.last_prune = Some(now);
    }

    /// Is it time to check that the board and the lock are still there? (Marks it done.)
    pub fn check_due(&mut self, now: Instant) -> bool {
        let due = now >= self.last_check + CHECK_EVERY;
        if due {
            self.last_check = now;
        }
        due
    }

    /// The next time one of the chores is due.
    pub fn next_wake(&self) -> Instant {
        let mut wake = self.last_check + CHECK_EVERY;
        if self.report_dirty {
            wake = wake.min(self.last_report + REPORT_EVERY);
        }
        if self.state_dirty {
            wake = wake.min(self.last_save + SAVE_EVERY);
        }
        if let Some(due) = self.persist_due {
            wake = wake.min(due);
        }
        wake
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_throttled_and_the_cursor_waits_for_the_shadows() {
        let t = Instant::now();
        let mut c = Chores::new(t);
        // At start: the reports at once, nothing else but the presence check.
        assert!(c.report_due(t));
        c.reported(t);
        assert!(!c.report_due(t + REPORT_EVERY / 2));
        assert_eq!(c.next_wake(), t + CHECK_EVERY);
        c.handled(t);
        assert!(!c.persist_due(t));
        assert_eq!(c.next_wake(), t + PERSIST_EVERY);
        // A second batch before the first is saved does not push the save back.
        c.handled(t + PERSIST_EVERY / 2);
        assert!(c.persist_due(t + PERSIST_EVERY));
        // The cursor not before the shadows are written.
        assert!(!c.save_due(t + SAVE_EVERY));
        c.persisted();
        assert!(c.save_due(t + SAVE_EVERY));
        assert!(!c.snapshot_due(t + SAVE_EVERY, false));
        assert!(c.snapshot_due(t + SAVE_EVERY, true));
        c.saved(t + SAVE_EVERY, false);
        assert!(!c.save_due(t + SAVE_EVERY * 3));
        assert!(c.snapshot_due(t + SNAPSHOT_EVERY, false));
        assert!(c.prune_due(t));
        c.pruned(t);
        assert!(!c.prune_due(t + PRUNE_EVERY / 2));
        assert!(c.prune_due(t + PRUNE_EVERY));
        assert!(!c.check_due(t));
        assert!(c.check_due(t + CHECK_EVERY));
        assert!(!c.check_due(t + CHECK_EVERY));
    }
}
