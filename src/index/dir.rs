//! One directory's derived index, as the read index and the search index both keep it: a
//! manifest and buckets of files hashed by name, the directory's listing taken once when a
//! bucket needs it, the buckets brought up to date in parallel, and the manifest written
//! when anything changed. What a bucket holds is each index's own; when its entries may be
//! trusted is [`super::stat`]'s.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use super::files::{self, Manifest};
use super::journal::{self, View};
use super::stat::{self, Clocks, Stamp, StatKey};
use crate::error::{Error, Result};

/// Files per bucket an index aims at: small enough that one change rewrites little,
/// large enough that a small board is one file.
pub const PER_BUCKET: usize = 1024;

/// How far the watcher's journal may have grown past a manifest's position (bytes) before
/// a read that found nothing changed writes the manifest again at the new one.
const FEED_SLACK: u64 = 64 << 10;

/// The file an index touches to read the file system's time (see [`Area::stamp`]).
const STAMP: &str = "stamp";

/// Opens a directory of the board to stat its files relative to it; None when it is not
/// there. `nofollow`: a symlink (or anything not a directory) in its place counts as not
/// there.
pub fn open(dir: &Path, nofollow: bool) -> Result<Option<OwnedFd>> {
    use rustix::fs::OFlags;
    let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    if nofollow {
        flags |= OFlags::NOFOLLOW;
    }
    match rustix::fs::open(dir, flags, rustix::fs::Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) if nofollow => Ok(None),
        Err(e) => Err(Error::io(dir, "list", e.into())),
    }
}

/// The stat data of the document file of `id` (`ID.md`), as [`stat_name`] gives them,
/// its name put together on the stack: a read of every file makes no name for each.
pub fn stat_doc(dir_fd: &OwnedFd, id: &str) -> Option<StatKey> {
    let mut buf = [0u8; 256];
    let Some(at) = buf.get_mut(..id.len() + 4) else {
        return stat_name(dir_fd, &format!("{id}.md"));
    };
    at[..id.len()].copy_from_slice(id.as_bytes());
    at[id.len()..].copy_from_slice(b".md\0");
    // A name holding a NUL names no file (as `stat_name` finds it).
    let c_name = std::ffi::CStr::from_bytes_with_nul(at).ok()?;
    match stat::stat_at(dir_fd, c_name) {
        Ok(k) => Some(k),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => Some(StatKey::default()),
    }
}

/// A file's stat data, relative to its open directory: None when it is gone; all zeros
/// (never trusted) when it cannot be had.
pub fn stat_name(dir_fd: &OwnedFd, name: &str) -> Option<StatKey> {
    let c_name = CString::new(name).ok()?;
    match stat::stat_at(dir_fd, &c_name) {
        Ok(k) => Some(k),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => Some(StatKey::default()),
    }
}

/// Lists a directory's names (as an index keeps them), or says why it could not.
pub type Lister = fn(&Path) -> std::result::Result<Vec<String>, String>;

/// One directory and its index, being brought up to date.
pub struct Area {
    /// The directory.
    pub dir: PathBuf,
    /// Where its index is.
    pub index_dir: PathBuf,
    pub now: Clocks,
    pub fingerprint: u64,
    lister: Lister,
    /// The directory's names, listed once when some bucket needs them.
    listing: OnceLock<std::result::Result<Vec<String>, String>>,
    /// The listing's names by bucket (indices into it), split once: every bucket takes its
    /// share without going over the whole listing (which would cost buckets × names).
    shares: OnceLock<Vec<Vec<usize>>>,
    /// The directory's device (from [`Area::start`]).
    dev: OnceLock<u64>,
    /// The file system's time, taken once before the first file or listing was read.
    stamp: OnceLock<Stamp>,
    /// The directory relative to the board (`/` separators), when the watcher's journal
    /// may cover it.
    rel: Option<String>,
    root: PathBuf,
    /// Where the watcher's journal stood when this read began (see [`Area::start`]);
    /// shared by the areas of one read that [`Area::with_view`] gave it to.
    view: Arc<OnceLock<Option<View>>>,
    /// Whether a read of this directory that finds no journal starts the index keeper.
    keeper: crate::board::KeeperMode,
}

/// The manifest a read starts from.
pub struct Start {
    pub manifest: Manifest,
    /// A new generation (no usable manifest, or a bucket count that no longer fits).
    pub fresh: bool,
    /// The directory is as it was when the manifest's names were listed.
    pub names_known: bool,
    /// The watcher's journal vouches for the buckets written with the manifest: every
    /// file of theirs is as cached (no stat needed), except these names (sorted), which
    /// changed since (or were made or removed). None: check every file.
    pub trusted: Option<Vec<String>>,
}

impl Start {
    /// Does the journal vouch for bucket `b` as cached with id `id`?
    pub fn vouched(&self, b: usize, id: u64) -> bool {
        self.trusted.is_some() && self.manifest.buckets.get(b) == Some(&id)
    }

    /// The names of bucket `b` of `count` that changed since the index was written (and
    /// may need to be added to its cached names).
    pub fn changed_in_bucket(&self, b: usize, count: usize) -> Vec<&str> {
        self.trusted
            .iter()
            .flatten()
            .filter(|n| bucket_of(n, count) == b)
            .map(String::as_str)
            .collect()
    }

    /// Did `name` change since the index was written (so its cache is not vouched for)?
    pub fn changed(&self, name: &str) -> bool {
        self.trusted
            .as_ref()
            .is_some_and(|t| t.binary_search_by(|n| n.as_str().cmp(name)).is_ok())
    }
}

impl Area {
    pub fn new(
        root: &Path,
        dir: PathBuf,
        index_dir: PathBuf,
        now: Clocks,
        fingerprint: u64,
        lister: Lister,
    ) -> Area {
        let rel = dir
            .strip_prefix(root)
            .ok()
            .and_then(|r| r.to_str())
            .map(|r| r.replace(std::path::MAIN_SEPARATOR, "/"))
            .filter(|r| journal::covers(r));
        Area {
            rel,
            root: root.to_path_buf(),
            view: Arc::default(),
            dir,
            index_dir,
            now,
            fingerprint,
            lister,
            listing: OnceLock::new(),
            shares: OnceLock::new(),
            dev: OnceLock::new(),
            stamp: OnceLock::new(),
            keeper: crate::board::KeeperMode::Never,
        }
    }

    /// Lets a read of this directory that finds no journal start the index keeper, as
    /// `mode` says (see `index::keeper`).
    pub fn with_keeper(mut self, mode: crate::board::KeeperMode) -> Area {
        self.keeper = mode;
        self
    }

    /// Shares `view` (where the watcher's journal stood) with the other areas of one
    /// read: one cookie for them all. A read that answers as of one moment may take it
    /// once before it reads any of them; each manifest then records that position.
    pub fn with_view(mut self, view: Arc<OnceLock<Option<View>>>) -> Area {
        self.view = view;
        self
    }

    /// The stamp against which what is read now is judged (see [`Stamp`]): to be taken
    /// before a file of device `dev` (or the directory's listing) is read, never after.
    /// The file system's time, read back from the `stamp` file of the index's directory
    /// just touched, when that file is on the same device; else the wall clock's rule.
    pub fn stamp(&self, dev: u64) -> Stamp {
        let stamp = *self.stamp.get_or_init(|| {
            let path = self.index_dir.join(STAMP);
            let touch = || {
                let now = rustix::fs::Timespec {
                    tv_sec: 0,
                    tv_nsec: rustix::fs::UTIME_NOW,
                };
                rustix::fs::utimensat(
                    rustix::fs::CWD,
                    &path,
                    &rustix::fs::Timestamps {
                        last_access: now,
                        last_modification: now,
                    },
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                )
            };
            if touch().is_err() {
                let _ = std::fs::create_dir_all(&self.index_dir);
                let _ = std::fs::write(&path, b"");
            }
            match (touch(), rustix::fs::lstat(&path)) {
                (Ok(()), Ok(st)) => {
                    let key = StatKey::of(&st);
                    Stamp::Fs {
                        dev: key.dev,
                        time: key.ctime,
                    }
                }
                _ => Stamp::Wall(self.now.wall),
            }
        });
        match stamp {
            Stamp::Fs { dev: d, .. } if d != dev => Stamp::Wall(self.now.wall),
            s => s,
        }
    }

    /// The manifest to read with: the one on disk when it is ours, written since no clock
    /// jump, and its bucket count still fits; else a fresh one. `dir_key`: the directory's
    /// stat data, taken before any listing (None: list it every time).
    pub fn start(&self, dir_key: Option<StatKey>) -> Result<Start> {
        if let Some(k) = dir_key {
            let _ = self.dev.set(k.dev);
        }
        // Before anything is read: what changed after this is recorded after the view.
        // Taken by the first area the journal covers (a shared view, once for them all).
        let view = match self.rel {
            Some(_) => self.view.get_or_init(|| View::take(&self.root)).as_ref(),
            None => None,
        };
        let manifest = files::load(&files::manifest_path(&self.index_dir))
            .and_then(|b| files::decode_manifest(&b))
            .filter(|m| m.fingerprint == self.fingerprint && !self.now.jumped_since(&m.clocks));
        let trusted = match (view, &manifest, &self.rel) {
            (Some(v), Some(m), Some(rel)) => m
                .feed
                .filter(|&(epoch, at)| epoch == v.epoch && at <= v.at)
                .and_then(|(_, at)| v.changed_in(at, rel))
                .map(|names| names.into_iter().map(str::to_string).collect()),
            _ => None,
        };
        if let (Some(trusted), Some(m)) = (trusted, &manifest) {
            // The names are the cached ones and those the journal named: no listing, and
            // the bucket count is looked at again by a read that lists.
            return Ok(Start {
                manifest: m.clone(),
                fresh: false,
                names_known: false,
                trusted: Some(trusted),
            });
        }
        let names_known = dir_key.is_some()
            && manifest
                .as_ref()
                .is_some_and(|m| m.dir.is_some() && m.dir == dir_key);
        let start = match manifest {
            Some(m) if names_known || !self.rebucket(m.buckets.len())? => Start {
                manifest: m,
                fresh: false,
                names_known,
                trusted: None,
            },
            _ => {
                let _ = std::fs::create_dir_all(&self.index_dir);
                Start {
                    manifest: Manifest {
                        fingerprint: self.fingerprint,
                        generation: files::unique(),
                        dir: None,
                        clocks: self.now,
                        buckets: vec![0; self.ideal_buckets()?],
                        feed: None,
                    },
                    fresh: true,
                    names_known: false,
                    trusted: None,
                }
            }
        };
        if self.rel.is_some() && view.is_none() {
            super::keeper::wanted(&self.root, self.keeper, start.manifest.buckets.len());
        }
        Ok(start)
    }

    /// Writes the manifest when anything changed: `ids`, each bucket's id now; `changed`,
    /// a bucket was written or a listing used. `dir_key` as given to [`Area::start`].
    pub fn finish(&self, start: Start, dir_key: Option<StatKey>, ids: Vec<u64>, changed: bool) {
        // The names were listed (or known) after `dir_key` was taken: they are the
        // directory's as of it, unless it changed in the tick of the listing (or later).
        let listed = self.listing.get().is_some();
        let dir = match (dir_key, self.stamp.get()) {
            // Names from the journal, not a listing: the next read that does not go by the
            // journal lists again.
            _ if start.trusted.is_some() && !listed => None,
            (Some(k), Some(_)) => (!self.stamp(k.dev).racy(&k)).then_some(k),
            // Not listed: the names are the manifest's, as trusted when it was written.
            (Some(k), None) if start.names_known => Some(k),
            (Some(k), None) => (!Stamp::Wall(self.now.wall).racy(&k)).then_some(k),
            (None, _) => None,
        };
        let manifest = start.manifest;
        // Every bucket was brought up to date after the view was taken: the journal from
        // the view on says what changed since.
        let feed = self
            .view
            .get()
            .and_then(|v| v.as_ref())
            .filter(|_| self.rel.is_some())
            .map(|v| (v.epoch, v.at));
        // The journal named nothing here since the manifest's own position: that position
        // still says all the view does, so the manifest is left as it is (not written
        // again at every read with a watcher) until the journal has grown past it by
        // [`FEED_SLACK`] (what each read scans again from there).
        let feed = match (feed, manifest.feed, &start.trusted) {
            (Some((epoch, at)), Some((was_epoch, was_at)), Some(names))
                if names.is_empty()
                    && epoch == was_epoch
                    && at.saturating_sub(was_at) <= FEED_SLACK =>
            {
                Some((was_epoch, was_at))
            }
            (feed, ..) => feed,
        };
        if start.fresh
            || changed
            || manifest.dir != dir
            || ids != manifest.buckets
            || manifest.feed != feed
        {
            let written = Manifest {
                dir,
                clocks: self.now,
                buckets: ids,
                feed,
                ..manifest
            };
            files::save(
                &files::manifest_path(&self.index_dir),
                &files::encode_manifest(&written),
            );
            if start.fresh {
                self.remove_other_generations(written.generation);
            }
        }
    }

    /// The bucket count for the directory's size.
    fn ideal_buckets(&self) -> Result<usize> {
        let n = self.listing()?.len();
        Ok(n.div_ceil(PER_BUCKET).next_power_of_two().clamp(1, 4096))
    }

    /// Has the directory outgrown (or shrunk far below) `count` buckets? Then the index is
    /// rebuilt with a count that fits.
    fn rebucket(&self, count: usize) -> Result<bool> {
        let ideal = self.ideal_buckets()?;
        Ok(ideal > count * 4 || ideal * 4 < count)
    }

    /// The directory's names, sorted (listed on the first call).
    pub fn listing(&self) -> Result<&[String]> {
        let listed = self.listing.get_or_init(|| {
            if let Some(&dev) = self.dev.get() {
                self.stamp(dev);
            }
            (self.lister)(&self.dir)
        });
        match listed {
            Ok(names) => Ok(names),
            Err(e) => Err(Error::io(
                &self.dir,
                "list",
                std::io::Error::other(e.clone()),
            )),
        }
    }

    /// The listed names that belong to bucket `b` of `count` (one count per read), sorted.
    pub fn share(&self, b: usize, count: usize) -> Result<Vec<&str>> {
        let all = self.listing()?;
        let shares = self.shares.get_or_init(|| {
            let mut shares = vec![Vec::new(); count];
            for (i, name) in all.iter().enumerate() {
                shares[bucket_of(name, count)].push(i);
            }
            shares
        });
        Ok(shares[b].iter().map(|&i| all[i].as_str()).collect())
    }

    /// Removes the files of other generations and old temp files (of writers that died).
    fn remove_other_generations(&self, generation: u64) {
        let Ok(entries) = std::fs::read_dir(&self.index_dir) else {
            return;
        };
        let ours = format!("{generation}-");
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let old_temp = name.starts_with('.')
                && entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age.as_secs() > 600);
            let other = !name.starts_with('.')
                && name != "manifest"
                && name != STAMP
                && !name.starts_with(&ours);
            if old_temp || other {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// `work(b)` for every bucket `b` below `count`, spread over the cores; the results in
/// bucket order.
pub fn each_bucket<T: Send>(count: usize, work: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let worker = || {
        let mut parts = Vec::new();
        loop {
            let b = next.fetch_add(1, Ordering::Relaxed);
            if b >= count {
                return parts;
            }
            parts.push((b, work(b)));
        }
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8)
        .min(count);
    let mut parts: Vec<(usize, T)> = if threads <= 1 {
        worker()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(worker)).collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    parts.sort_by_key(|(b, _)| *b);
    parts.into_iter().map(|(_, t)| t).collect()
}

/// The bucket a name belongs to.
pub fn bucket_of(name: &str, count: usize) -> usize {
    (files::fnv(name.as_bytes()) % count as u64) as usize
}

/// The `*.md` names of a directory, less `.md`, without dot files, as the full scan
/// lists them (a name that is not UTF-8 is kept lossily: it is skipped as no id).
pub fn list_docs(dir: &Path) -> std::result::Result<Vec<String>, String> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.to_string()),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        if let Some(stem) = name.strip_suffix(".md") {
            names.push(stem.to_string());
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}
