//! What watch mode tracks: which files under the board are part of the blackboard, what
//! each one is, and which are noise (temp files, editors' swap and backup files, runtime
//! state, the log, the files watch mode itself rewrites).

use std::path::{Path, PathBuf};

use super::snapshot::StatKey;
use crate::board::Board;
use crate::doc::Region;

/// What kind of file a tracked path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Area {
    /// `tasks/<id>.md`, `observations/<id>.md`, `questions/<id>.md`.
    Doc(Region),
    /// Anything under `solutions/<task-id>/`.
    Solution,
    /// `control/sources/<name>.md`.
    Source,
    /// `control/agents/<id>.md`.
    Agent,
    /// `control/PAUSE`.
    Pause,
}

/// A tracked file: its board-relative path (`/` separators) and what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracked {
    pub rel: String,
    pub area: Area,
    /// The document id (file stem); for a solution file, the task id it belongs to.
    pub id: String,
}

impl Tracked {
    /// The region name given to sources (`TAVERN_REGION`, `{region}`).
    pub fn region(&self) -> &'static str {
        match self.area {
            Area::Doc(r) => r.dir(),
            Area::Solution => "solutions",
            Area::Source | Area::Agent | Area::Pause => "control",
        }
    }

    /// The document region, for `region:` terms in queries (None outside the three).
    pub fn doc_region(&self) -> Option<Region> {
        match self.area {
            Area::Doc(r) => Some(r),
            _ => None,
        }
    }

    /// The lock tavern's own writes of this file take (DESIGN §5), if tavern writes it.
    pub fn lock_name(&self) -> Option<String> {
        match self.area {
            Area::Doc(r) => Some(crate::layout::doc_lock(r, &self.id)),
            Area::Agent => Some(crate::layout::agent_lock(&self.id)),
            Area::Pause => Some(PAUSE_LOCK.to_string()),
            Area::Solution | Area::Source => None,
        }
    }

    /// Is the file named by a valid id (its own, or its task's under `solutions/`)?
    /// control/PAUSE is named by no id.
    pub fn named_by_id(&self) -> bool {
        self.area == Area::Pause || crate::id::validate(&self.id).is_ok()
    }

    /// Files whose frontmatter carries a `rev` that tavern bumps on every write.
    pub fn has_rev(&self) -> bool {
        matches!(self.area, Area::Doc(_) | Area::Agent)
    }
}

/// The lock `pause` and `resume` take.
pub use crate::layout::PAUSE_LOCK;

/// Directories watched recursively (solutions hold whole trees) and flat ones.
pub const RECURSIVE_DIRS: [&str; 1] = ["solutions"];
pub const FLAT_DIRS: [&str; 6] = [
    "tasks",
    "observations",
    "questions",
    "control",
    "control/sources",
    "control/agents",
];

/// Is this file name noise? Temp files (tavern's are dot files), editors' swap, backup and
/// autosave files, and vim's write probe.
pub fn is_noise(name: &str) -> bool {
    name.starts_with('.')
        || name.starts_with('#')
        || name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swx")
        || name.ends_with(".tmp")
        || name == "4913"
        // JetBrains IDEs' "safe write": x___jb_tmp___ is renamed over x, x___jb_old___ is
        // the old x, removed after.
        || name.ends_with("___jb_tmp___")
        || name.ends_with("___jb_old___")
}

/// What a board-relative path is, or None if watch mode ignores it.
pub fn classify(rel: &str) -> Option<Tracked> {
    let (area, id) = kind(rel)?;
    Some(Tracked {
        rel: rel.to_string(),
        area,
        id: id.to_string(),
    })
}

/// What [`classify`] says of a path, without allocating: its area and id.
pub fn kind(rel: &str) -> Option<(Area, &str)> {
    if rel.split('/').any(|p| p.is_empty() || is_noise(p)) {
        return None;
    }
    let mut parts = rel.split('/');
    let first = parts.next()?;
    let second = parts.next()?;
    let third = parts.next();
    let more = parts.next().is_some();
    match (first, second, third, more) {
        (region, name, None, _) if Region::parse(region).is_some_and(|r| r.dir() == region) => {
            let stem = name.strip_suffix(".md")?;
            Some((Area::Doc(Region::parse(region)?), stem))
        }
        ("solutions", task, Some(_), _) => Some((Area::Solution, task)),
        ("control", "sources", Some(name), false) => {
            Some((Area::Source, name.strip_suffix(".md")?))
        }
        ("control", "agents", Some(name), false) => Some((Area::Agent, name.strip_suffix(".md")?)),
        ("control", "PAUSE", None, _) => Some((Area::Pause, "PAUSE")),
        _ => None,
    }
}

/// The board-relative form of an absolute path under the board, if it is one.
pub fn relative(board: &Board, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(&board.root).ok()?;
    let mut out = String::new();
    for c in rel.components() {
        let std::path::Component::Normal(s) = c else {
            return None;
        };
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(s.to_str()?);
    }
    Some(out)
}

/// Every tracked file on the board now (symlinks and other special files included, so
/// that they can be reported; nothing is followed).
pub fn walk(board: &Board) -> Vec<Tracked> {
    let mut out = Vec::new();
    for dir in FLAT_DIRS {
        out.extend(walk_dir(board, &board.root.join(dir), false));
    }
    for dir in RECURSIVE_DIRS {
        out.extend(walk_dir(board, &board.root.join(dir), true));
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out.dedup_by(|a, b| a.rel == b.rel);
    out
}

/// Every tracked file under `dir` (a directory under the board), and in its
/// subdirectories when `recursive`.
pub fn walk_dir(board: &Board, dir: &Path, recursive: bool) -> Vec<Tracked> {
    let mut out = Vec::new();
    each_under(board, dir, recursive, &mut |t, _| out.push(t));
    out
}

/// Calls `f` with every tracked file on the board now and its path, in no set order, each
/// once: what [`walk`] lists, without holding the whole list.
pub fn each(board: &Board, f: &mut dyn FnMut(Tracked, &Path)) {
    for dir in FLAT_DIRS {
        each_under(board, &board.root.join(dir), false, f);
    }
    for dir in RECURSIVE_DIRS {
        each_under(board, &board.root.join(dir), true, f);
    }
}

fn each_under(board: &Board, dir: &Path, recursive: bool, f: &mut dyn FnMut(Tracked, &Path)) {
    let walker = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .follow_root_links(false)
        .max_depth(if recursive { usize::MAX } else { 1 })
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !is_noise(&e.file_name().to_string_lossy()));
    for entry in walker.flatten() {
        if entry.file_type().is_dir() {
            continue;
        }
        if let Some(t) = relative(board, entry.path()).and_then(|rel| classify(&rel)) {
            f(t, entry.path());
        }
    }
}

/// What the stat pass of a rescan found: the tracked files whose stat key differs from the
/// one known (or that are gone since they were listed), and how many known files it saw.
#[derive(Debug, Default)]
pub struct StatPass {
    pub changed: Vec<String>,
    pub known: usize,
}

/// Boards with fewer tracked files than this are statted on one thread.
const PARALLEL_FROM: usize = 4096;

/// Stats every tracked file on the board now (without reading any) and compares its stat
/// key with `known(rel)` (the one last recorded, None if none is). The flat directories
/// are listed with one `getdents` stream each and their files statted relative to the
/// open directory (one path step, not the whole path), in parallel on a large board; the
/// trees under `solutions/` are walked. Nothing is allocated for a file whose key is
/// unchanged.
pub fn stat_pass(
    board: &Board,
    known: &(dyn Fn(&str) -> Option<(StatKey, bool)> + Sync),
) -> StatPass {
    let mut dirs: Vec<(&str, rustix::fd::OwnedFd)> = Vec::new();
    // Names of all flat directories, NUL-terminated, one after the other: (directory,
    // start, end with the NUL).
    let mut names: Vec<u8> = Vec::new();
    let mut items: Vec<(u16, u32, u32)> = Vec::new();
    let mut rel = String::new();
    for dir in FLAT_DIRS {
        let Some(fd) = open_dir(&board.root.join(dir)) else {
            continue;
        };
        let Ok(mut listing) = rustix::fs::Dir::read_from(&fd) else {
            continue;
        };
        let d = dirs.len() as u16;
        while let Some(Ok(entry)) = listing.read() {
            let name = entry.file_name().to_bytes();
            let Ok(text) = std::str::from_utf8(name) else {
                continue;
            };
            if entry.file_type() == rustix::fs::FileType::Directory || is_noise(text) {
                continue;
            }
            rel.clear();
            rel.push_str(dir);
            rel.push('/');
            rel.push_str(text);
            if kind(&rel).is_none() {
                continue;
            }
            let start = names.len() as u32;
            names.extend_from_slice(entry.file_name().to_bytes_with_nul());
            items.push((d, start, names.len() as u32));
        }
        dirs.push((dir, fd));
    }
    let stat_items = |chunk: &[(u16, u32, u32)]| -> StatPass {
        let mut out = StatPass::default();
        let mut rel = String::new();
        for &(d, start, end) in chunk {
            let (dir, fd) = &dirs[d as usize];
            let c_name = std::ffi::CStr::from_bytes_with_nul(&names[start as usize..end as usize])
                .expect("a name read with its NUL");
            let stat = match rustix::fs::statat(fd, c_name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st)
                    if rustix::fs::FileType::from_raw_mode(st.st_mode)
                        == rustix::fs::FileType::Directory =>
                {
                    continue;
                }
                Ok(st) => Some(StatKey::of_stat(&st)),
                Err(_) => None,
            };
            rel.clear();
            rel.push_str(dir);
            rel.push('/');
            rel.push_str(std::str::from_utf8(c_name.to_bytes()).unwrap_or_default());
            if differs(known(&rel), stat, &mut out.known) {
                out.changed.push(rel.clone());
            }
        }
        out
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let mut pass = if threads < 2 || items.len() < PARALLEL_FROM {
        stat_items(&items)
    } else {
        let per = items.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = items
                .chunks(per)
                .map(|chunk| s.spawn(|| stat_items(chunk)))
                .collect();
            let mut all = StatPass::default();
            for h in handles {
                // A thread that panicked stats nothing: its files are looked at.
                let part = h.join().unwrap_or_default();
                all.known += part.known;
                all.changed.extend(part.changed);
            }
            all
        })
    };
    for dir in RECURSIVE_DIRS {
        each_under(board, &board.root.join(dir), true, &mut |t, path| {
            if differs(known(&t.rel), StatKey::read(path), &mut pass.known) {
                pass.changed.push(t.rel);
            }
        });
    }
    pass
}

/// Must a file be looked at, with the stat key and racy flag recorded for it (None: not
/// known) and the one it has now (None: gone since it was listed)? Counts the known ones.
fn differs(was: Option<(StatKey, bool)>, now: Option<StatKey>, known: &mut usize) -> bool {
    match was {
        Some((stat, racy)) => {
            *known += 1;
            racy || Some(stat) != now
        }
        None => now.is_some(),
    }
}

/// Opens a directory of the board to list and stat in; None when it is missing or not a
/// directory (a symlink in its place is not followed, as the walk does not follow it).
fn open_dir(dir: &Path) -> Option<rustix::fd::OwnedFd> {
    use rustix::fs::OFlags;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    rustix::fs::open(dir, flags, rustix::fs::Mode::empty()).ok()
}

/// The absolute path of a tracked file.
pub fn abs(board: &Board, rel: &str) -> PathBuf {
    board.root.join(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_what_the_board_holds() {
        let c = |s: &str| classify(s).map(|t| (t.area, t.id));
        assert_eq!(
            c("tasks/task-1.md"),
            Some((Area::Doc(Region::Tasks), "task-1".into()))
        );
        assert_eq!(
            c("questions/q-1.md"),
            Some((Area::Doc(Region::Questions), "q-1".into()))
        );
        assert_eq!(
            c("solutions/task-1/design.md"),
            Some((Area::Solution, "task-1".into()))
        );
        assert_eq!(
            c("solutions/task-1/impl/src/a b.rs"),
            Some((Area::Solution, "task-1".into()))
        );
        assert_eq!(
            c("control/sources/reviewer.md"),
            Some((Area::Source, "reviewer".into()))
        );
        assert_eq!(c("control/PAUSE"), Some((Area::Pause, "PAUSE".into())));
        for ignored in [
            "tasks/.task-1.md.123.0.tmp",
            "tasks/task-1.md~",
            "tasks/.task-1.md.swp",
            "tasks/4913",
            "tasks/task-1.md___jb_tmp___",
            "solutions/task-1/main.rs___jb_old___",
            "tasks/notes.txt",
            "task/task-1.md",
            "tasks/sub/task-1.md",
            "log.yaml",
            "board.yaml",
            ".state/watch/shadow/tasks/task-1.md",
            "control/schedule.md",
            "control/metrics.md",
            "archive/tasks/task-1.md",
            "templates/task.md",
            "solutions/task-1/.git/HEAD",
            "solutions/loose.md",
            "obs/x.md",
        ] {
            assert_eq!(classify(ignored), None, "{ignored}");
        }
    }

    #[test]
    fn the_stat_pass_names_what_differs_and_counts_what_it_knows() {
        let dir = tempfile::tempdir().unwrap();
        crate::board::init(dir.path()).unwrap();
        let board = Board::open(&dir.path().join(".tavern")).unwrap();
        let put = |rel: &str, text: &str| std::fs::write(board.root.join(rel), text).unwrap();
        for rel in [
            "tasks/same.md",
            "tasks/racy.md",
            "tasks/edited.md",
            "tasks/new.md",
        ] {
            put(rel, "x\n");
        }
        put("tasks/.same.md.1.tmp", "noise");
        put("tasks/notes.txt", "not a document");
        put("observations/obs-1.md", "o\n");
        std::fs::create_dir_all(board.root.join("solutions/task-1/src")).unwrap();
        put("solutions/task-1/src/a.rs", "fn a() {}\n");
        std::fs::create_dir(board.root.join("tasks/dir.md")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", board.root.join("tasks/link.md")).unwrap();
        let stat = |rel: &str| StatKey::read(&board.root.join(rel)).unwrap();
        let mut known: std::collections::HashMap<String, (StatKey, bool)> = [
            "tasks/same.md",
            "tasks/racy.md",
            "tasks/edited.md",
            "tasks/link.md",
            "observations/obs-1.md",
            "solutions/task-1/src/a.rs",
        ]
        .iter()
        .map(|rel| (rel.to_string(), (stat(rel), false)))
        .collect();
        known.get_mut("tasks/racy.md").unwrap().1 = true;
        known.get_mut("tasks/edited.md").unwrap().0.size += 1;
        // Known and gone: not seen, so not counted (the caller looks for what is gone).
        known.insert("tasks/gone.md".into(), (stat("tasks/same.md"), false));
        let lookup = |rel: &str| known.get(rel).copied();
        let pass = stat_pass(&board, &lookup);
        let mut changed = pass.changed.clone();
        changed.sort();
        assert_eq!(
            changed,
            ["tasks/edited.md", "tasks/new.md", "tasks/racy.md"]
        );
        assert_eq!(pass.known, 6);
        // Each file that differs, found the same on several threads.
        for i in 0..PARALLEL_FROM {
            put(&format!("tasks/t-{i}.md"), "y\n");
        }
        let pass = stat_pass(&board, &lookup);
        assert_eq!(pass.changed.len(), 3 + PARALLEL_FROM);
        assert_eq!(pass.known, 6);
    }
}
