//! When a cached read of a file may be trusted: its stat data as git's index keeps it
//! (device, inode, size, mode, mtime and ctime to the nanosecond), git's racy-timestamp
//! rule, and a check that the wall clock did not jump since the index was written.
//!
//! A file changed in place keeps its inode, and may keep its size; its ctime is set by the
//! kernel to the current time on every change and cannot be set back by anyone (`touch
//! -d` sets mtime, and moves ctime to now). So two states of a file with equal stat data
//! are the same state, except when both changes fell in one tick of the file system's
//! clock (a few ms on Linux; a second or two on some file systems): a file whose ctime is
//! that close to the moment it was read is "racy" and is read again next time, until it
//! is old enough to be trusted. A wall clock set back could make a later change land on a
//! ctime seen before; so the index notes the wall clock beside the boot clock, and when
//! the two disagree (or the wall clock is behind the index's), nothing cached is trusted.

use std::os::fd::AsFd;

use rustix::fs::{AtFlags, FileType, Stat};

/// How close to the moment a file was read its ctime may be for the read to be trusted
/// later. It covers the coarsest timestamps of file systems a board may live on (FAT's
/// two seconds) and a little clock skew of a network file system.
pub const RACY_NS: i128 = 3_000_000_000;

/// How far the wall clock may drift from the boot clock between two reads before the
/// index counts it as a jump (plus 0.1% of the time between them).
const JUMP_NS: i128 = 1_000_000_000;

/// A file's stat data, as compared to tell whether it changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatKey {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mode: u32,
    /// Nanoseconds since the epoch.
    pub mtime: i128,
    pub ctime: i128,
}

impl StatKey {
    // The stat fields' types differ between platforms (u32, i64, …): cast each.
    #[allow(clippy::unnecessary_cast)]
    pub fn of(st: &Stat) -> StatKey {
        StatKey {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mode: st.st_mode as u32,
            mtime: st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
            ctime: st.st_ctime as i128 * 1_000_000_000 + st.st_ctime_nsec as i128,
        }
    }

    pub fn file_type(&self) -> FileType {
        FileType::from_raw_mode(self.mode as _)
    }

    /// Changed within [`RACY_NS`] of `now` (or after it: a clock set back): a change in
    /// the same tick could follow without changing these data.
    pub fn is_racy(&self, now: i128) -> bool {
        self.ctime.max(self.mtime) > now - RACY_NS
    }
}

/// What a read of files is judged against, taken before it: git's racy rule. A file whose
/// last change (ctime, or mtime) is older than the stamp cannot change again without its
/// ctime moving to the stamp or later, so equal stat data later mean the same file; one
/// that is not older could change again within the same tick unseen, and is read again
/// next time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamp {
    /// The file system's own time (a file's ctime just set to now), on device `dev`: the
    /// same clock and the same granularity as the files' timestamps.
    Fs { dev: u64, time: i128 },
    /// The wall clock before the read, when the file system's time cannot be had for
    /// the files' device: racy within [`RACY_NS`] of it.
    Wall(i128),
}

impl Stamp {
    /// Could a file with these stat data change again without them changing?
    pub fn racy(&self, key: &StatKey) -> bool {
        match *self {
            Stamp::Fs { time, .. } => key.ctime.max(key.mtime) >= time,
            Stamp::Wall(now) => key.is_racy(now),
        }
    }

    /// Must what was read of a file with stat data `key` be read again next time? When
    /// its stat data after the read (`after`; None: gone) differ, when they could not be
    /// had (all zeros), or when it is racy.
    pub fn racy_read(&self, key: &StatKey, after: Option<StatKey>) -> bool {
        after != Some(*key) || *key == StatKey::default() || self.racy(key)
    }
}

/// The stat data of `name` in the directory `dir`, without following a symlink.
pub fn stat_at(dir: impl AsFd, name: &std::ffi::CStr) -> std::io::Result<StatKey> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .map(|st| StatKey::of(&st))
        .map_err(std::io::Error::from)
}

pub fn fstat(fd: impl AsFd) -> std::io::Result<StatKey> {
    rustix::fs::fstat(fd)
        .map(|st| StatKey::of(&st))
        .map_err(std::io::Error::from)
}

/// The clocks at one moment: wall (what file times are made from) and boot (which no one
/// sets), and which boot this is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clocks {
    pub wall: i128,
    pub boot: i128,
    pub boot_id: u128,
}

impl Clocks {
    pub fn now() -> Clocks {
        let ts = |id| {
            let t = rustix::time::clock_gettime(id);
            t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128
        };
        Clocks {
            wall: ts(rustix::time::ClockId::Realtime),
            boot: ts(rustix::time::ClockId::Boottime),
            boot_id: boot_id(),
        }
    }

    /// Did the wall clock jump between `then` and now? Within one boot the two clocks must
    /// have moved alike; across boots the wall clock must not be behind.
    pub fn jumped_since(&self, then: &Clocks) -> bool {
        if self.boot_id != then.boot_id || self.boot_id == 0 {
            return self.wall < then.wall;
        }
        let elapsed = self.boot - then.boot;
        let drift = (self.wall - then.wall) - elapsed;
        // NTP slews the wall clock by up to 0.05%: allow a little more than that.
        drift.abs() > JUMP_NS + elapsed.abs() / 1000
    }
}

/// This boot's id (Linux's random boot_id), or 0 where there is none: then only a wall
/// clock behind the index's counts as a jump.
fn boot_id() -> u128 {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .and_then(|s| u128::from_str_radix(&s.trim().replace('-', ""), 16).ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn racy_near_now_and_in_the_future() {
        let now = 100 * 1_000_000_000;
        let key = |ctime| StatKey {
            ctime,
            mtime: ctime,
            ..StatKey::default()
        };
        assert!(!key(now - RACY_NS - 1).is_racy(now));
        assert!(key(now - RACY_NS + 1).is_racy(now));
        assert!(key(now + 5_000_000_000).is_racy(now));
        // An mtime set into the future by `touch -d` is racy too.
        let future_mtime = StatKey {
            ctime: now - 10 * RACY_NS,
            mtime: now + 1,
            ..StatKey::default()
        };
        assert!(future_mtime.is_racy(now));
    }

    #[test]
    fn racy_against_the_file_systems_stamp() {
        let stamp = Stamp::Fs { dev: 1, time: 500 };
        let key = |ctime, mtime| StatKey {
            dev: 1,
            ino: 9,
            ctime,
            mtime,
            ..StatKey::default()
        };
        assert!(!stamp.racy(&key(499, 499)), "older than the stamp");
        assert!(stamp.racy(&key(500, 400)), "in the stamp's tick");
        assert!(stamp.racy(&key(400, 501)), "an mtime ahead of it");
        assert!(!stamp.racy_read(&key(499, 1), Some(key(499, 1))));
        assert!(
            stamp.racy_read(&key(499, 1), Some(key(499, 2))),
            "changed meanwhile"
        );
        assert!(stamp.racy_read(&key(499, 1), None), "gone meanwhile");
        assert!(stamp.racy_read(&StatKey::default(), Some(StatKey::default())));
        // The wall clock's rule, where the file system's time cannot be had.
        let now = 100 * 1_000_000_000;
        assert!(Stamp::Wall(now).racy(&key(now - RACY_NS + 1, 0)));
        assert!(!Stamp::Wall(now).racy(&key(now - RACY_NS - 1, 0)));
    }

    #[test]
    fn a_wall_clock_jump_is_noticed() {
        let then = Clocks {
            wall: 1_000 * 1_000_000_000,
            boot: 50 * 1_000_000_000,
            boot_id: 7,
        };
        let later = |wall_s: i128, boot_s: i128, boot_id| Clocks {
            wall: wall_s * 1_000_000_000,
            boot: boot_s * 1_000_000_000,
            boot_id,
        };
        assert!(!later(1_010, 60, 7).jumped_since(&then));
        assert!(later(990, 60, 7).jumped_since(&then), "set back");
        assert!(later(5_000, 60, 7).jumped_since(&then), "set forward");
        assert!(!later(5_000, 3, 8).jumped_since(&then), "rebooted later");
        assert!(
            later(900, 3, 8).jumped_since(&then),
            "rebooted, clock behind"
        );
    }
}
