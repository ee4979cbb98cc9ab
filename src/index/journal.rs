//! The watcher's change journal: while `tavern watch` runs with native file events, it
//! appends the board-relative path of every file event under the board to
//! `.state/journal` (beside the index, not in it: removing the index keeps the journal), so that a read can learn what changed since the index was last
//! brought up to date without a `statat` of every file (DESIGN: the watcher's feed).
//!
//! A journal is only as good as the moment it is asked: events reach the watcher a little
//! after the change. So a reader first makes a cookie, a new file in `.state/cookies/` (a
//! directory the watcher watches), and waits until the watcher has written the cookie's
//! line into the journal and removed the file. The kernel queues the events of one watcher
//! in order, so every change made before the cookie was made is in the journal before the
//! cookie's line (watchman's handshake). The offset of that line is where the read stands.
//!
//! A journal is trusted only while its writer lives: the writer holds an exclusive lock on
//! the journal file, and a reader that can take a shared one knows it is dead (killed:
//! nothing removed its file). Each journal has an epoch; a writer that starts, loses events
//! (the kernel's queue overflowed, a watched directory was replaced) or lets the journal
//! grow past [`MAX_BYTES`] starts a new epoch, and what was recorded against another epoch
//! is not trusted.
//!
//! Lines: a board-relative path (`/` separators) and `\n`; a cookie is `/` and its name. A
//! path that cannot be written as a line (not UTF-8, holding a newline, outside the board)
//! starts a new epoch instead.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const MAGIC: &str = "tavern-journal 1 ";
/// A journal past this size starts a new epoch (readers then check every file once).
const MAX_BYTES: u64 = 16 << 20;
/// How long a reader waits for the watcher to take its cookie before checking every file
/// instead: a live watcher takes it within a scheduling slice or two.
const COOKIE_WAIT: Duration = Duration::from_millis(250);

pub fn path(root: &Path) -> PathBuf {
    crate::layout::state_dir(root).join("journal")
}

pub fn cookie_dir(root: &Path) -> PathBuf {
    crate::layout::state_dir(root).join("cookies")
}

/// Is the directory `rel` (board-relative) one the watcher's events cover whole: a
/// region's flat directory, or one under `solutions/`? Only there is a journal's silence
/// about a file worth anything.
pub fn covers(rel: &str) -> bool {
    crate::watch::areas::FLAT_DIRS.contains(&rel)
        || rel
            .strip_prefix("solutions/")
            .is_some_and(|r| !r.is_empty())
}

/// The writing side, held by the watcher's native event thread.
pub struct Writer {
    root: PathBuf,
    cookies: PathBuf,
    state: Mutex<State>,
}

struct State {
    /// The journal file (locked exclusively) and how long it is; None once it could not
    /// be written (then readers find no journal and check every file).
    file: Option<(File, u64)>,
}

impl Writer {
    /// Starts a journal for the board at `root`: a new epoch, and the cookie directory the
    /// caller must watch.
    pub fn start(root: &Path) -> std::io::Result<Writer> {
        let cookies = cookie_dir(root);
        std::fs::create_dir_all(&cookies)?;
        let file = open_new(root)?;
        Ok(Writer {
            root: root.to_path_buf(),
            cookies,
            state: Mutex::new(State { file: Some(file) }),
        })
    }

    pub fn cookie_dir(&self) -> &Path {
        &self.cookies
    }

    /// Records the paths of one file event (`created`: the event made them). A cookie
    /// made is written as its line and then removed: the reader's signal.
    pub fn record(&self, paths: &[PathBuf], created: bool) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines = String::new();
        let mut cookies = Vec::new();
        let mut lost = false;
        for p in paths {
            if p.parent() == Some(self.cookies.as_path()) {
                if created && let Some(name) = p.file_name().and_then(|n| n.to_str()) {
                    lines.push('/');
                    lines.push_str(name);
                    lines.push('\n');
                    cookies.push(p);
                }
                continue;
            }
            match line_of(&self.root, p) {
                // The board itself: nothing a read of a directory in it depends on.
                Some(rel) if rel.is_empty() => {}
                Some(rel) => {
                    lines.push_str(&rel);
                    lines.push('\n');
                }
                None => lost = true,
            }
        }
        if lost {
            self.renew(&mut state);
        }
        if !lines.is_empty() {
            let full = match &mut state.file {
                Some((file, len)) => {
                    if file.write_all(lines.as_bytes()).is_err() {
                        state.file = None;
                        let _ = std::fs::remove_file(path(&self.root));
                        false
                    } else {
                        *len += lines.len() as u64;
                        *len > MAX_BYTES
                    }
                }
                None => false,
            };
            if full {
                self.renew(&mut state);
            }
        }
        // Only now, with its line written: removing it tells the reader.
        for c in cookies {
            let _ = std::fs::remove_file(c);
        }
    }

    /// Is the journal still at its path, and the cookie directory there? (`rm -r
    /// .state/index`, `git clean -fdX`.) If not, makes them anew, in a new epoch: true
    /// when the cookie directory was made again (the caller watches it again).
    pub fn verify(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let cookies_there = std::fs::symlink_metadata(&self.cookies).is_ok_and(|m| m.is_dir());
        let journal_there = state.file.as_ref().is_some_and(|(f, _)| {
            match (f.metadata(), std::fs::symlink_metadata(path(&self.root))) {
                (Ok(a), Ok(b)) => {
                    crate::watch::lock::identity(&a) == crate::watch::lock::identity(&b)
                }
                _ => false,
            }
        });
        if cookies_there && journal_there {
            return false;
        }
        if !cookies_there {
            let _ = std::fs::create_dir_all(&self.cookies);
        }
        self.renew(&mut state);
        !cookies_there
    }

    /// Events were lost (or the journal is full): a new epoch.
    pub fn lost(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.renew(&mut state);
    }

    fn renew(&self, state: &mut State) {
        state.file = open_new(&self.root).ok();
        if state.file.is_none() {
            let _ = std::fs::remove_file(path(&self.root));
        }
    }
}

impl Writer {
    /// The watcher stops: reads stop going by the journal from now on.
    pub fn close(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.file.take().is_some() {
            let _ = std::fs::remove_file(path(&self.root));
        }
    }
}

impl Drop for Writer {
    /// A watcher that stops (or falls back to polling) takes its journal with it.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if state.file.take().is_some() {
            let _ = std::fs::remove_file(path(&self.root));
        }
    }
}

/// A new journal file of a new epoch, locked, renamed over the old one.
fn open_new(root: &Path) -> std::io::Result<(File, u64)> {
    let final_path = path(root);
    let dir = final_path.parent().unwrap_or(root);
    std::fs::create_dir_all(dir)?;
    let temp = dir.join(format!(".journal-{}.tmp", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .read(true)
        .open(&temp)?;
    file.lock()?;
    let header = format!("{MAGIC}{}\n", super::files::unique());
    file.write_all(header.as_bytes())?;
    std::fs::rename(&temp, &final_path)?;
    // Appends from here on (the file offset is at its end).
    Ok((file, header.len() as u64))
}

/// What a read learned from the journal: the epoch, where its cookie stands, and the
/// journal's lines before it.
pub struct View {
    pub epoch: u64,
    /// The offset of the cookie's line: every change made before the cookie is recorded
    /// before it.
    pub at: u64,
    body: Vec<u8>,
    header: usize,
}

/// The distinct number of cookies one process makes.
static COOKIES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl View {
    /// Asks the running watcher where its journal stands: None when no watcher keeps one,
    /// or it did not answer in time (the read then checks every file).
    pub fn take(root: &Path) -> Option<View> {
        let journal = path(root);
        let file = File::open(&journal).ok()?;
        // The writer holds it exclusively while it lives.
        match file.try_lock_shared() {
            Err(std::fs::TryLockError::WouldBlock) => {}
            _ => return None,
        }
        let n = COOKIES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("{}-{n}", std::process::id());
        let cookie = cookie_dir(root).join(&name);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&cookie)
            .ok()?;
        let end = Instant::now() + COOKIE_WAIT;
        let mut pause = Duration::from_micros(20);
        while std::fs::symlink_metadata(&cookie).is_ok() {
            if Instant::now() >= end {
                let _ = std::fs::remove_file(&cookie);
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(2));
        }
        // The file now at the path: the one whose writer took the cookie (a new epoch
        // would not hold its line).
        let mut body = Vec::new();
        File::open(&journal).ok()?.read_to_end(&mut body).ok()?;
        let header = body.iter().position(|&b| b == b'\n')? + 1;
        let epoch = std::str::from_utf8(&body[..header - 1])
            .ok()?
            .strip_prefix(MAGIC)?
            .parse()
            .ok()?;
        let line = format!("\n/{name}\n");
        let at = find(&body[header - 1..], line.as_bytes())? + header;
        body.truncate(at);
        Some(View {
            epoch,
            at: at as u64,
            body,
            header,
        })
    }

    /// The names (less `.md`) of the files of directory `dir` (board-relative) recorded
    /// since offset `from`: None when that cannot be told (`from` is not of this journal,
    /// or the directory itself, or one above it, was changed).
    pub fn changed_in(&self, from: u64, dir: &str) -> Option<Vec<&str>> {
        let from = usize::try_from(from).ok()?;
        if from < self.header || from > self.body.len() {
            return None;
        }
        let text = std::str::from_utf8(&self.body[from..]).ok()?;
        let mut names = Vec::new();
        for line in text.split('\n') {
            if line.is_empty() || line.starts_with('/') {
                continue;
            }
            if let Some(rest) = line.strip_prefix(dir).and_then(|r| r.strip_prefix('/')) {
                if rest.contains('/') {
                    continue;
                }
                if let Some(stem) = rest.strip_suffix(".md") {
                    names.push(stem);
                }
            } else if dir == line || dir.starts_with(&format!("{line}/")) {
                return None;
            }
        }
        names.sort_unstable();
        names.dedup();
        Some(names)
    }
}

/// The last place `needle` is in `hay` (a cookie's line is near the end).
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// A path as a journal line: board-relative with `/` separators; None when it cannot be
/// one (outside the board, not UTF-8, holding a newline). The board itself is "".
fn line_of(root: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(root).ok()?;
    let mut out = String::new();
    for c in rel.components() {
        let std::path::Component::Normal(s) = c else {
            return None;
        };
        let s = s.to_str()?;
        if s.contains('\n') {
            return None;
        }
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(s);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stand-in for the watcher's event thread: answers every cookie that appears.
    fn answer_cookies(
        writer: std::sync::Arc<Writer>,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) {
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok(entries) = std::fs::read_dir(writer.cookie_dir()) {
                for e in entries.flatten() {
                    writer.record(&[e.path()], true);
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_view_holds_what_was_recorded_before_its_cookie_and_names_changes_by_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".tavern");
        std::fs::create_dir_all(&root).unwrap();
        assert!(View::take(&root).is_none(), "no watcher, no journal");
        let writer = std::sync::Arc::new(Writer::start(&root).unwrap());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let answering = std::thread::spawn({
            let (w, s) = (writer.clone(), stop.clone());
            move || answer_cookies(w, s)
        });
        let first = View::take(&root).expect("answered");
        assert_eq!(first.changed_in(first.at, "tasks"), Some(vec![]));
        writer.record(
            &[
                root.join("tasks/t-1.md"),
                root.join("tasks/.t-1.md.tmp"),
                root.join("observations/o-1.md"),
                root.join("solutions/t-1/notes.md"),
                root.join("tasks/t-2.md"),
                root.join("tasks/t-1.md"),
            ],
            false,
        );
        let second = View::take(&root).expect("answered");
        assert_eq!(second.epoch, first.epoch);
        assert!(second.at > first.at);
        assert_eq!(
            second.changed_in(first.at, "tasks"),
            Some(vec!["t-1", "t-2"])
        );
        assert_eq!(
            second.changed_in(first.at, "observations"),
            Some(vec!["o-1"])
        );
        assert_eq!(
            second.changed_in(first.at, "solutions/t-1"),
            Some(vec!["notes"])
        );
        assert_eq!(second.changed_in(second.at, "tasks"), Some(vec![]));
        // An offset that is not of this journal's lines.
        assert_eq!(second.changed_in(second.at + 1, "tasks"), None);
        assert_eq!(second.changed_in(0, "tasks"), None);
        // The directory itself (removed, replaced, renamed): nothing can be told.
        writer.record(&[root.join("tasks")], false);
        let third = View::take(&root).expect("answered");
        assert_eq!(third.changed_in(second.at, "tasks"), None);
        assert_eq!(third.changed_in(second.at, "observations"), Some(vec![]));
        // Lost events: a new epoch, where the old offsets mean nothing.
        writer.lost();
        let fourth = View::take(&root).expect("answered");
        assert_ne!(fourth.epoch, third.epoch);
        // The journal removed under the watcher: made again, in a new epoch.
        std::fs::remove_file(path(&root)).unwrap();
        assert!(View::take(&root).is_none());
        assert!(!writer.verify(), "the cookie directory is still there");
        let fifth = View::take(&root).expect("answered");
        assert_ne!(fifth.epoch, fourth.epoch);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        answering.join().unwrap();
        // A watcher that stops takes its journal with it.
        writer.close();
        assert!(!path(&root).exists());
        assert!(View::take(&root).is_none());
    }

    #[test]
    fn a_journal_whose_writer_is_gone_or_silent_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".tavern");
        std::fs::create_dir_all(&root).unwrap();
        // Alive (its lock held) but answering no cookie: given up on, and the cookie
        // taken away.
        let writer = Writer::start(&root).unwrap();
        assert!(View::take(&root).is_none());
        assert_eq!(std::fs::read_dir(cookie_dir(&root)).unwrap().count(), 0);
        // Its file left behind by a writer that died: its lock is free.
        let kept = std::fs::read(path(&root)).unwrap();
        drop(writer);
        std::fs::write(path(&root), kept).unwrap();
        assert!(View::take(&root).is_none());
    }

    #[test]
    fn only_directories_the_watcher_sees_whole_are_covered() {
        for yes in [
            "tasks",
            "observations",
            "questions",
            "control/agents",
            "solutions/t-1",
        ] {
            assert!(covers(yes), "{yes}");
        }
        for no in ["archive/tasks", "solutions", "", "elsewhere", "tasks/sub"] {
            assert!(!covers(no), "{no}");
        }
    }
}
