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
/// one recorded, that are racy, that are gone, or that are new.
#[derive(Debug, Default)]
pub struct StatPass {
    pub changed: Vec<String>,
    /// Known files it accounted for (present, or gone and in `changed`): when fewer than
    /// the snapshot holds, the caller looks for the others.
    pub known: usize,
}

/// Boards with fewer tracked files than this are statted on one thread.
const PARALLEL_FROM: usize = 4096;

/// The names of a flat directory's tracked files, as a count and a sum of their hashes: two
/// sets of names with the same count and sum are (but for a 64-bit collision) the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct NameSet {
    count: u64,
    sum: u64,
}

impl NameSet {
    fn add(&mut self, name: &[u8]) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(super::snapshot::hash(name));
    }
}

/// A flat directory being statted: its board-relative name, its open descriptor, the
/// tracked names it lists (NUL-terminated, one after the other) and their set.
struct Listed {
    rel: &'static str,
    fd: rustix::fd::OwnedFd,
    names: Vec<u8>,
    listed: NameSet,
}

/// Stats every tracked file the snapshot knows, and finds the ones it does not, without
/// reading any: `known` is every file's recorded stat key and racy flag, in the snapshot's
/// order.
///
/// Each flat directory is listed once (`getdents`), and each known file in it statted
/// relative to the open directory (one path step, not the whole path), going through the
/// known files in order (no lookup by name), on several threads on a large board. Only
/// when a directory lists other names than the known files found in it (by count and sum
/// of hashes: a file was created, or renamed into it) is each listed name looked up. Files
/// under `solutions/` (trees) are walked and looked up one by one.
pub fn stat_pass(board: &Board, known: &super::snapshot::Files) -> StatPass {
    let mut dirs: Vec<Listed> = Vec::new();
    let mut rel = String::new();
    for dir in FLAT_DIRS {
        let Some(fd) = open_dir(&board.root.join(dir)) else {
            continue;
        };
        let Ok(mut listing) = rustix::fs::Dir::read_from(&fd) else {
            continue;
        };
        let mut d = Listed {
            rel: dir,
            fd,
            names: Vec::new(),
            listed: NameSet::default(),
        };
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
            d.listed.add(name);
            d.names
                .extend_from_slice(entry.file_name().to_bytes_with_nul());
        }
        dirs.push(d);
    }
    // The known files, in order, on each thread: what differs, and per directory the set
    // of names found there.
    let stat_range = |range: std::ops::Range<usize>| -> (StatPass, Vec<NameSet>) {
        let mut out = StatPass::default();
        let mut found = vec![NameSet::default(); dirs.len()];
        for i in range {
            let Some((path, k)) = known.get_index(i) else {
                continue;
            };
            let Some((dir, name)) = path.rsplit_once('/') else {
                continue;
            };
            let Some(d) = dirs.iter().position(|d| d.rel == dir) else {
                // Under `solutions/`, or in a directory that is gone: not here.
                continue;
            };
            let now = match rustix::fs::statat(
                &dirs[d].fd,
                name,
                rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
            ) {
                Ok(st)
                    if rustix::fs::FileType::from_raw_mode(st.st_mode)
                        != rustix::fs::FileType::Directory =>
                {
                    found[d].add(name.as_bytes());
                    Some(StatKey::of_stat(&st))
                }
                // Gone, or a directory now (not a file: looked at as gone).
                _ => None,
            };
            out.known += 1;
            if k.racy || Some(k.stat) != now {
                out.changed.push(path.to_string());
            }
        }
        (out, found)
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let parts: Vec<(StatPass, Vec<NameSet>)> = if threads < 2 || known.len() < PARALLEL_FROM {
        vec![stat_range(0..known.len())]
    } else {
        let per = known.len().div_ceil(threads);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let range = t * per..((t + 1) * per).min(known.len());
                    s.spawn(move || stat_range(range))
                })
                .collect();
            handles
                .into_iter()
                // A thread that panicked accounted for nothing: its files are looked for.
                .map(|h| h.join().unwrap_or_default())
                .collect()
        })
    };
    let mut pass = StatPass::default();
    let mut found = vec![NameSet::default(); dirs.len()];
    for (part, sets) in parts {
        pass.known += part.known;
        pass.changed.extend(part.changed);
        for (f, s) in found.iter_mut().zip(sets) {
            f.count += s.count;
            f.sum = f.sum.wrapping_add(s.sum);
        }
    }
    // New names: only in a directory whose names are not the known ones found in it.
    for (d, found) in dirs.iter().zip(found) {
        if d.listed == found {
            continue;
        }
        for name in d.names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
            rel.clear();
            rel.push_str(d.rel);
            rel.push('/');
            rel.push_str(std::str::from_utf8(name).unwrap_or_default());
            if !known.contains_key(rel.as_str()) {
                pass.changed.push(rel.clone());
            }
        }
    }
    for dir in RECURSIVE_DIRS {
        each_under(board, &board.root.join(dir), true, &mut |t, path| {
            let now = StatKey::read(path);
            match known.get(t.rel.as_str()) {
                Some(k) => {
                    pass.known += 1;
                    if k.racy || Some(k.stat) != now {
                        pass.changed.push(t.rel);
                    }
                }
                None if now.is_some() => pass.changed.push(t.rel),
                None => {}
            }
        });
    }
    pass
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
        let entry = |stat, racy| super::super::snapshot::Known {
            stat,
            hash: 0,
            shadow: None,
            racy,
        };
        let mut known: super::super::snapshot::Files = [
            "tasks/same.md",
            "tasks/racy.md",
            "tasks/edited.md",
            "tasks/link.md",
            "observations/obs-1.md",
            "solutions/task-1/src/a.rs",
        ]
        .iter()
        .map(|rel| (Box::from(*rel), entry(stat(rel), false)))
        .collect();
        known.get_mut("tasks/racy.md").unwrap().racy = true;
        known.get_mut("tasks/edited.md").unwrap().stat.size += 1;
        // Known and gone: in `changed`, and accounted for.
        known.insert("tasks/gone.md".into(), entry(stat("tasks/same.md"), false));
        // In a directory that is gone: not accounted for (the caller looks for it).
        known.insert(
            "questions/q-1.md".into(),
            entry(stat("tasks/same.md"), false),
        );
        std::fs::remove_dir(board.root.join("questions")).unwrap();
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        let pass = stat_pass(&board, &known);
        assert_eq!(
            sorted(pass.changed),
            [
                "tasks/edited.md",
                "tasks/gone.md",
                "tasks/new.md",
                "tasks/racy.md"
            ]
        );
        assert_eq!(pass.known, 7);
        // Without a new name, no name is looked up: a known file renamed within the
        // directory is found as gone and as new all the same.
        std::fs::remove_file(board.root.join("tasks/new.md")).unwrap();
        std::fs::rename(
            board.root.join("tasks/same.md"),
            board.root.join("tasks/moved.md"),
        )
        .unwrap();
        let pass = stat_pass(&board, &known);
        assert_eq!(
            sorted(pass.changed),
            [
                "tasks/edited.md",
                "tasks/gone.md",
                "tasks/moved.md",
                "tasks/racy.md",
                "tasks/same.md"
            ]
        );
        // Each file that differs, found the same on several threads.
        for i in 0..PARALLEL_FROM {
            let rel = format!("tasks/t-{i}.md");
            put(&rel, "y\n");
            if i % 2 == 0 {
                known.insert(rel.as_str().into(), entry(stat(&rel), false));
            }
        }
        let pass = stat_pass(&board, &known);
        assert_eq!(pass.changed.len(), 5 + PARALLEL_FROM / 2);
        assert_eq!(pass.known, 7 + PARALLEL_FROM / 2);
    }
}
