//! What watch mode tracks: which files under the board are part of the blackboard, what
//! each one is, and which are noise (temp files, editors' swap and backup files, runtime
//! state, the log, the files watch mode itself rewrites).

use std::path::{Path, PathBuf};

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
    let parts: Vec<&str> = rel.split('/').collect();
    if parts.iter().any(|p| p.is_empty() || is_noise(p)) {
        return None;
    }
    let tracked = |area, id: &str| {
        Some(Tracked {
            rel: rel.to_string(),
            area,
            id: id.to_string(),
        })
    };
    match parts.as_slice() {
        [region, name] if Region::parse(region).is_some_and(|r| r.dir() == *region) => {
            let stem = name.strip_suffix(".md")?;
            tracked(Area::Doc(Region::parse(region)?), stem)
        }
        ["solutions", task, _, ..] => tracked(Area::Solution, task),
        ["control", "sources", name] => tracked(Area::Source, name.strip_suffix(".md")?),
        ["control", "agents", name] => tracked(Area::Agent, name.strip_suffix(".md")?),
        ["control", "PAUSE"] => tracked(Area::Pause, "PAUSE"),
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
}
