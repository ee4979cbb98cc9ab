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
//!
//! One writer at a time: `tavern watch`, or the index keeper reads start in the background
//! (`watch::keeper`). A writer holds `.state/locks/journal.lock` for as long as it writes;
//! a watcher that finds a keeper holding it asks it to stop (a cookie named [`STOP`]) and
//! takes over. A new journal is put at its path only once the caller's watches are all in
//! place ([`Writer::pending`], then [`Writer::take`]): a reader that found it earlier could
//! be answered before a directory was watched, and then trust the journal's silence about
//! a change the kernel never reported.

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
/// The cookie a watcher makes to ask the index keeper holding the journal to stop.
pub const STOP: &str = "stop";
/// How long a watcher waits for a keeper to give up the journal before it runs without one.
const TAKE_OVER_WAIT: Duration = Duration::from_secs(3);
/// How long a keeper tries for a lock held: a reader's look holds it for microseconds.
const FREE_WAIT: Duration = Duration::from_millis(100);
/// How long an invited keeper waits for the stopping watcher to let the journal go (it
/// saves its state first).
const INVITED_WAIT: Duration = Duration::from_secs(60);

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

/// The journal's writers' lock: whoever holds it writes the journal.
pub fn lock_path(root: &Path) -> PathBuf {
    crate::layout::lock_file(root, crate::layout::JOURNAL_LOCK)
}

/// Who keeps the journal: `tavern watch` or the index keeper (`by`), and its process id,
/// as the writer wrote them in the writers' lock.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Keeper {
    pub by: String,
    pub pid: u32,
}

/// Who keeps the journal now, if anyone does.
pub fn keeper(root: &Path) -> Option<Keeper> {
    if !is_kept(root) {
        return None;
    }
    let text = std::fs::read_to_string(lock_path(root)).ok()?;
    let (by, pid) = text.trim().split_once(' ')?;
    if !matches!(by, "watch" | "keeper") {
        return None;
    }
    Some(Keeper {
        by: by.to_string(),
        pid: pid.parse().ok()?,
    })
}

/// Who may take the journal when another writer holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The index keeper: only a journal no one writes.
    Free,
    /// `tavern watch`: asks a keeper that holds it to stop, and waits for it.
    TakeOver,
    /// A keeper a stopping watcher invited: waits for the watcher to let it go.
    Invited,
}

/// The writing side, held by the watcher's native event thread.
pub struct Writer {
    root: PathBuf,
    cookies: PathBuf,
    state: Mutex<State>,
}

struct State {
    /// The journal file (locked exclusively) and how long it is; None before
    /// [`Writer::take`], and once it could not be written or was given up (then readers
    /// find no journal and check every file).
    file: Option<(File, u64)>,
    /// The writers' lock, held while this writer writes.
    lock: Option<File>,
    /// Before [`Writer::take`]: what was recorded, kept for the journal it will write.
    pending: Option<Pending>,
    /// When a reader last asked (a cookie): the keeper stops when no one has for a while.
    last_cookie: Instant,
    /// A watcher asked this writer to give the journal up (a [`STOP`] cookie).
    stop_asked: bool,
    /// The successor this writer invited ([`Writer::invite`]), and whether it said it
    /// watches everything (its [`READY`] cookie was seen).
    invited: Option<(String, bool)>,
    /// How it took the journal: who it is.
    claim: Claim,
}

/// Lines recorded before the journal was taken, and the cookies they answer.
#[derive(Default)]
struct Pending {
    lines: String,
    cookies: Vec<PathBuf>,
}

/// The cookie a keeper invited by a stopping watcher makes once it watches everything:
/// `ready-` and the invitation's token.
pub const READY: &str = "ready-";

impl Writer {
    /// A writer for the board at `root` that records, but writes no journal until
    /// [`Writer::take`]: the caller starts watching (the cookie directory too) in between,
    /// so that no reader finds a journal before every directory is watched (it could be
    /// answered, and trust the journal's silence about a change no watch reported).
    pub fn pending(root: &Path) -> std::io::Result<Writer> {
        let cookies = cookie_dir(root);
        std::fs::create_dir_all(&cookies)?;
        Ok(Writer {
            root: root.to_path_buf(),
            cookies,
            state: Mutex::new(State {
                file: None,
                lock: None,
                pending: Some(Pending::default()),
                last_cookie: Instant::now(),
                stop_asked: false,
                invited: None,
                claim: Claim::Free,
            }),
        })
    }

    /// Takes the journal (the writers' lock, as `claim` allows) and starts it at its path,
    /// in a new epoch (`epoch`, or a fresh one), with what was recorded since
    /// [`Writer::pending`]. Returns the epoch. An error of kind `WouldBlock` when another
    /// writer holds the journal and does not give it up.
    pub fn take(&self, claim: Claim, epoch: Option<u64>) -> std::io::Result<u64> {
        let held = self
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lock
            .take();
        let lock = match held {
            Some(lock) => lock,
            None => take_lock(&self.root, claim)?,
        };
        sign(&lock, claim);
        self.state.lock().unwrap_or_else(|e| e.into_inner()).claim = claim;
        let epoch = epoch.unwrap_or_else(super::files::unique);
        let (mut file, mut len) = open_new(&self.root, epoch)?;
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let pending = state.pending.take().unwrap_or_default();
        file.write_all(pending.lines.as_bytes())?;
        len += pending.lines.len() as u64;
        state.file = Some((file, len));
        state.lock = Some(lock);
        for c in pending.cookies {
            let _ = std::fs::remove_file(c);
        }
        Ok(epoch)
    }

    /// [`Writer::pending`], holding the writers' lock from now on: a keeper that starts
    /// watching a big board takes a while, and no other starts beside it meanwhile. An
    /// error of kind `WouldBlock` when another writer holds it.
    pub fn pending_locked(root: &Path) -> std::io::Result<Writer> {
        let writer = Writer::pending(root)?;
        let lock = take_lock(root, Claim::Free)?;
        sign(&lock, Claim::Free);
        writer.state.lock().unwrap_or_else(|e| e.into_inner()).lock = Some(lock);
        Ok(writer)
    }

    /// Starts a journal at once ([`Writer::pending`] and [`Writer::take`]): for a caller
    /// that watches nothing itself.
    #[cfg(test)]
    pub fn start(root: &Path, claim: Claim) -> std::io::Result<Writer> {
        let writer = Writer::pending(root)?;
        writer.take(claim, None)?;
        Ok(writer)
    }

    /// Invites a successor to take the journal once it watches everything: it makes the
    /// cookie [`READY`]`token`, and [`Writer::invited_ready`] then says so.
    pub fn invite(&self, token: &str) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.invited = Some((token.to_string(), false));
    }

    pub fn invited_ready(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.invited.as_ref().is_some_and(|(_, ready)| *ready)
    }

    /// How long since a reader last asked where the journal stands (or since it started).
    pub fn idle_for(&self) -> Duration {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.last_cookie.elapsed()
    }

    /// Is the journal being written (taken, not given up or failed)?
    pub fn is_open(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.file.is_some()
    }

    pub fn cookie_dir(&self) -> &Path {
        &self.cookies
    }

    /// Records the paths of one file event (`created`: the event made them). A cookie
    /// made is written as its line and then removed: the reader's signal. True when a
    /// watcher asked, by a [`STOP`] cookie, for the journal.
    pub fn record(&self, paths: &[PathBuf], created: bool) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines = String::new();
        let mut cookies = Vec::new();
        let mut lost = false;
        for p in paths {
            if p.parent() == Some(self.cookies.as_path()) {
                if created && let Some(name) = p.file_name().and_then(|n| n.to_str()) {
                    if name == STOP {
                        state.stop_asked = true;
                    } else if let Some(token) = name.strip_prefix(READY) {
                        if let Some((invited, ready)) = &mut state.invited {
                            *ready |= invited == token;
                        }
                        // The successor's own signal, not a reader's: it removes it.
                        continue;
                    } else {
                        state.last_cookie = Instant::now();
                    }
                    lines.push('/');
                    lines.push_str(name);
                    lines.push('\n');
                    cookies.push(p.clone());
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
        if let Some(pending) = &mut state.pending {
            // Not taken yet: kept for the journal, and so are the cookies (a reader's is
            // answered once its line is written).
            if lost {
                // Nothing before this can be vouched for: the journal starts after it.
                *pending = Pending::default();
            }
            pending.lines.push_str(&lines);
            pending.cookies.extend(cookies);
            return state.stop_asked;
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
        state.stop_asked
    }

    /// Is the journal still at its path, and the cookie directory there? (`rm -r
    /// .state/index`, `git clean -fdX`.) If not, makes them anew, in a new epoch: true
    /// when the cookie directory was made again (the caller watches it again).
    pub fn verify(&self) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.file.is_none() {
            return false;
        }
        // The writers' lock removed (`rm -r .state`): another writer could lock a new file
        // and write the journal too. Lock the new one, or give the journal up.
        let lock_ours = state
            .lock
            .as_ref()
            .is_some_and(|f| same_file(f, &lock_path(&self.root)));
        if !lock_ours {
            match take_lock(&self.root, Claim::Free) {
                Ok(lock) => {
                    sign(&lock, state.claim);
                    state.lock = Some(lock);
                }
                Err(_) => {
                    state.file = None;
                    state.lock = None;
                    return false;
                }
            }
        }
        let cookies_there = std::fs::symlink_metadata(&self.cookies).is_ok_and(|m| m.is_dir());
        let journal_there = state
            .file
            .as_ref()
            .is_some_and(|(f, _)| same_file(f, &path(&self.root)));
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
        if let Some(pending) = &mut state.pending {
            *pending = Pending::default();
            return;
        }
        self.renew(&mut state);
    }

    fn renew(&self, state: &mut State) {
        if state.lock.is_none() {
            return;
        }
        state.file = open_new(&self.root, super::files::unique()).ok();
        if state.file.is_none() {
            let _ = std::fs::remove_file(path(&self.root));
        }
    }

    /// The watcher stops: reads stop going by the journal from now on.
    pub fn close(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        close(&self.root, &mut state);
    }
}

/// Removes the journal (only this writer's: another's may be at the path once the lock is
/// gone), then lets the lock go.
fn close(root: &Path, state: &mut State) {
    if let Some((file, _)) = state.file.take() {
        let at = path(root);
        if same_file(&file, &at) {
            let _ = std::fs::remove_file(at);
        }
    }
    state.lock = None;
    state.pending = None;
}

impl Drop for Writer {
    /// A watcher that stops (or falls back to polling) takes its journal with it.
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        close(&self.root, state);
    }
}

fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => crate::watch::lock::identity(&a) == crate::watch::lock::identity(&b),
        _ => false,
    }
}

/// Writes who holds the writers' lock into it, for `tavern status` (the lock is what
/// counts; a reader that finds it unlocked ignores what it says).
fn sign(lock: &File, claim: Claim) {
    let by = match claim {
        Claim::TakeOver => "watch",
        Claim::Free | Claim::Invited => "keeper",
    };
    let mut lock = lock;
    let _ = lock.set_len(0);
    let _ = std::io::Seek::seek(&mut lock, std::io::SeekFrom::Start(0));
    let _ = lock.write_all(format!("{by} {}\n", std::process::id()).as_bytes());
}

/// Is the journal's writers' lock held (a watcher or keeper writing, or starting to)?
pub fn is_kept(root: &Path) -> bool {
    let Ok(file) = File::open(lock_path(root)) else {
        return false;
    };
    matches!(
        file.try_lock_shared(),
        Err(std::fs::TryLockError::WouldBlock)
    )
}

/// Takes the writers' lock: at once, or (`TakeOver`) after asking the keeper that holds it
/// to stop and waiting for it.
fn take_lock(root: &Path, claim: Claim) -> std::io::Result<File> {
    let at = lock_path(root);
    if let Some(dir) = at.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&at)?;
    let busy = || std::io::Error::from(std::io::ErrorKind::WouldBlock);
    match file.try_lock() {
        Ok(()) => return Ok(file),
        Err(std::fs::TryLockError::Error(e)) => return Err(e),
        Err(std::fs::TryLockError::WouldBlock) => {}
    }
    // A reader that looks whether a writer runs holds the lock shared for a moment: a
    // keeper tries a little longer before it takes the lock as another writer's.
    let (stop, wait) = match claim {
        Claim::Free => (None, FREE_WAIT),
        Claim::Invited => (None, INVITED_WAIT),
        Claim::TakeOver => {
            let stop = cookie_dir(root).join(STOP);
            let _ = std::fs::write(&stop, b"");
            (Some(stop), TAKE_OVER_WAIT)
        }
    };
    let done = |stop: Option<PathBuf>| {
        if let Some(s) = stop {
            let _ = std::fs::remove_file(s);
        }
    };
    let end = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
        match file.try_lock() {
            Ok(()) => {
                done(stop);
                return Ok(file);
            }
            Err(std::fs::TryLockError::Error(e)) => {
                done(stop);
                return Err(e);
            }
            Err(std::fs::TryLockError::WouldBlock) if Instant::now() >= end => {
                done(stop);
                return Err(busy());
            }
            Err(std::fs::TryLockError::WouldBlock) => {}
        }
    }
}

/// A new journal file of epoch `epoch`, locked, renamed over the old one.
fn open_new(root: &Path, epoch: u64) -> std::io::Result<(File, u64)> {
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
    let header = format!("{MAGIC}{epoch}\n");
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

impl View {
    /// Every path (board-relative, files and directories, each once) recorded after offset
    /// `from` (0: from the journal's start), up to the view's cookie: None when `from` is
    /// not of this journal.
    pub fn changed_since(&self, from: u64) -> Option<Vec<&str>> {
        let from = usize::try_from(from).ok()?.max(self.header);
        if from > self.body.len() {
            return None;
        }
        let text = std::str::from_utf8(&self.body[from..]).ok()?;
        let mut paths: Vec<&str> = text
            .split('\n')
            .filter(|l| !l.is_empty() && !l.starts_with('/'))
            .collect();
        paths.sort_unstable();
        paths.dedup();
        Some(paths)
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
        let writer = std::sync::Arc::new(Writer::pending(&root).unwrap());
        assert!(!path(&root).exists(), "not at its path before it is taken");
        writer.take(Claim::Free, None).unwrap();
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
        let writer = Writer::start(&root, Claim::Free).unwrap();
        assert!(View::take(&root).is_none());
        assert_eq!(std::fs::read_dir(cookie_dir(&root)).unwrap().count(), 0);
        // Its file left behind by a writer that died: its lock is free.
        let kept = std::fs::read(path(&root)).unwrap();
        drop(writer);
        std::fs::write(path(&root), kept).unwrap();
        assert!(View::take(&root).is_none());
    }

    #[test]
    fn one_writer_at_a_time_and_a_watcher_takes_the_journal_from_a_keeper() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".tavern");
        std::fs::create_dir_all(&root).unwrap();
        let keeper = std::sync::Arc::new(Writer::pending(&root).unwrap());
        // Recorded before it is taken: in the journal once it is, readers blind till then.
        keeper.record(&[root.join("tasks/t-1.md")], false);
        assert!(View::take(&root).is_none());
        keeper.take(Claim::Free, Some(77)).unwrap();
        assert!(
            std::fs::read_to_string(path(&root))
                .unwrap()
                .starts_with(&format!("{MAGIC}77\n"))
        );
        let text = std::fs::read_to_string(path(&root)).unwrap();
        assert!(text.ends_with("\ntasks/t-1.md\n"), "{text:?}");
        // A second keeper finds the journal taken.
        let second = Writer::start(&root, Claim::Free).map(|_| ()).unwrap_err();
        assert_eq!(second.kind(), std::io::ErrorKind::WouldBlock);
        // A watcher asks the keeper to stop with a cookie; the keeper, told by record(),
        // closes, and the watcher's writer has the lock.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let keeping = std::thread::spawn({
            let (k, s) = (keeper.clone(), stop.clone());
            move || {
                while !s.load(std::sync::atomic::Ordering::Relaxed) {
                    let asked = std::fs::read_dir(k.cookie_dir())
                        .unwrap()
                        .flatten()
                        .any(|e| k.record(&[e.path()], true));
                    if asked {
                        k.close();
                        return true;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                false
            }
        });
        let watcher = Writer::pending(&root).unwrap();
        let epoch = watcher.take(Claim::TakeOver, None).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(keeping.join().unwrap(), "the keeper was asked to stop");
        assert!(!keeper.is_open());
        assert!(!cookie_dir(&root).join(STOP).exists());
        // The journal at the path is the watcher's, in its own epoch.
        let text = std::fs::read_to_string(path(&root)).unwrap();
        assert_eq!(text, format!("{MAGIC}{epoch}\n"));
        // The keeper, closed, removes nothing of the watcher's when dropped.
        drop(keeper);
        assert!(path(&root).exists());
        // Nobody answers a watcher's request: it gives up, and the keeper keeps the journal.
        drop(watcher);
        let silent = Writer::start(&root, Claim::Free).unwrap();
        let refused = Writer::start(&root, Claim::TakeOver)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(refused.kind(), std::io::ErrorKind::WouldBlock);
        assert!(silent.is_open() && path(&root).exists());
        assert!(!cookie_dir(&root).join(STOP).exists());
    }

    #[test]
    fn a_writer_whose_lock_was_removed_gives_the_journal_up_to_the_one_that_took_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".tavern");
        std::fs::create_dir_all(&root).unwrap();
        let first = Writer::start(&root, Claim::Free).unwrap();
        // `rm -r .state/locks`: nobody holds the new lock file, so the writer takes it.
        std::fs::remove_file(lock_path(&root)).unwrap();
        assert!(!first.verify());
        assert!(first.is_open());
        // Removed again, and another writer locks the new file first.
        std::fs::remove_file(lock_path(&root)).unwrap();
        let second = Writer::start(&root, Claim::Free).unwrap();
        assert!(!first.verify());
        assert!(!first.is_open(), "two writers never both write");
        drop(first);
        assert!(path(&root).exists(), "the second writer's journal stays");
        assert!(second.is_open());
    }

    #[test]
    fn an_invited_successor_says_it_watches_and_takes_the_journal_in_the_agreed_epoch() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(".tavern");
        std::fs::create_dir_all(&root).unwrap();
        let watcher = std::sync::Arc::new(Writer::start(&root, Claim::Free).unwrap());
        watcher.invite("abc");
        // Another token, or a reader's cookie: not the invited one.
        watcher.record(&[cookie_dir(&root).join("ready-abd")], true);
        assert!(!watcher.invited_ready());
        // The successor records in memory until it has the journal.
        let keeper = std::sync::Arc::new(Writer::pending(&root).unwrap());
        keeper.record(&[root.join("tasks/t-9.md")], false);
        let ready = cookie_dir(&root).join("ready-abc");
        std::fs::write(&ready, b"").unwrap();
        assert!(!watcher.record(std::slice::from_ref(&ready), true));
        assert!(watcher.invited_ready());
        assert!(
            ready.exists(),
            "the successor's cookie is its own to remove"
        );
        let taking = std::thread::spawn({
            let k = keeper.clone();
            move || k.take(Claim::Invited, Some(4242))
        });
        std::thread::sleep(Duration::from_millis(50));
        watcher.close();
        assert_eq!(taking.join().unwrap().unwrap(), 4242);
        // What the successor recorded before is in its journal, from its start.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let answering = std::thread::spawn({
            let (w, s) = (keeper.clone(), stop.clone());
            move || answer_cookies(w, s)
        });
        keeper.record(
            &[root.join("tasks"), root.join("solutions/t-1/a.md")],
            false,
        );
        let view = View::take(&root).expect("answered");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        answering.join().unwrap();
        assert_eq!(view.epoch, 4242);
        assert_eq!(
            view.changed_since(0),
            Some(vec!["solutions/t-1/a.md", "tasks", "tasks/t-9.md"])
        );
        assert_eq!(view.changed_since(view.at), Some(vec![]));
        assert_eq!(view.changed_since(view.at + 1), None);
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
