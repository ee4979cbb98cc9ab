//! Nothing is deleted that nobody deleted (DESIGN §13): which files of the board may leave
//! it only through a logged command, and whether a log says one did.
//!
//! A record of the board, and every change taken from another clone, is checked against
//! this: a deletion of a kept file that no log entry explains is refused, so one clone's
//! accident (a damaged disk, a bad script, a bug) never becomes every clone's loss.

use std::collections::{HashMap, HashSet};

use crate::log;

/// How a file of the board may leave it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kept {
    /// The board's own files (board.yaml, log.yaml, .gitignore, .gitattributes, the
    /// templates): only a `delete` entry about it lets one go (`tavern sync
    /// --allow-deletions` writes one for a file removed on purpose).
    Always,
    /// Documents (in their region or the archive) and agent cards: a `move` (archive) or
    /// `delete` entry about it.
    Logged,
    /// Anything else (files under solutions/, knowledge sources, control/PAUSE, what is
    /// not the board's): free to go, unless it goes with kept files nobody deleted.
    Free,
}

/// How the file at a board-relative path may leave the board.
pub fn kept(path: &str) -> Kept {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        [crate::layout::BOARD_YAML]
        | [crate::layout::LOG]
        | [crate::layout::GITIGNORE]
        | [crate::layout::GITATTRIBUTES]
        | [crate::layout::TEMPLATES_DIR, _] => Kept::Always,
        [region, name] if is_region(region) && name.ends_with(".md") => Kept::Logged,
        [crate::layout::ARCHIVE_DIR, region, name]
            if is_region(region) && name.ends_with(".md") =>
        {
            Kept::Logged
        }
        ["control", "agents", name] if name.ends_with(".md") => Kept::Logged,
        _ => Kept::Free,
    }
}

fn is_region(dir: &str) -> bool {
    crate::doc::Region::ALL.iter().any(|r| r.dir() == dir)
}

/// The paths among `paths` whose deletion `log` (a log.yaml's bytes) explains.
///
/// A document (in its region or the archive) is explained by a `move` (archive) or
/// `delete` entry about it that nothing brought it back after, in log order (by seq, then
/// origin): a `create` of it, for the archived copy a later archive of the live one, for
/// the live copy a later removal of the archived one (an archive undone). Other entries
/// about it do not count against the move: in log order they may come after it while they
/// happened elsewhere at the same time (a watcher's `external-edit` of the version it
/// had, an alert), and neither brings a file back. The board's own files and agent cards
/// are explained only when the latest entry about them is a `delete` (for a card, or a
/// `move`).
pub fn explained(log_text: &[u8], paths: &[&str]) -> HashSet<String> {
    let wanted: HashSet<&str> = paths.iter().copied().collect();
    // The text that every entry bearing on a path holds: a document's live path (its
    // archived path holds it too).
    let needles: Vec<&str> = paths
        .iter()
        .map(|p| {
            p.strip_prefix(crate::layout::ARCHIVE_DIR)
                .and_then(|r| r.strip_prefix('/'))
                .unwrap_or(p)
        })
        .collect();
    // path -> (the latest entry about it: its key and op; the latest event that removes
    // (true) or brings back (false) a document).
    let mut latest: HashMap<String, ((u64, String), String)> = HashMap::new();
    let mut events: HashMap<String, ((u64, String), bool)> = HashMap::new();
    let mut note = |path: &str, key: &(u64, String), removes: bool| match events.get(path) {
        Some((k, _)) if k >= key => {}
        _ => {
            events.insert(path.to_string(), (key.clone(), removes));
        }
    };
    for chunk in log::chunks(log_text) {
        let (_, bytes) = chunk;
        // Most entries are about other files: look at the text before parsing.
        if !needles
            .iter()
            .any(|p| bytes.windows(p.len()).any(|w| w == p.as_bytes()))
        {
            continue;
        }
        let Some(e) = log::parse_entry(&String::from_utf8_lossy(bytes)) else {
            continue;
        };
        let key = (e.seq, e.origin.clone());
        let doc = e.doc.as_str();
        if wanted.contains(doc) {
            match latest.get(doc) {
                Some((k, _)) if *k >= key => {}
                _ => {
                    latest.insert(doc.to_string(), (key.clone(), e.op.clone()));
                }
            }
            match e.op.as_str() {
                "move" | "delete" => note(doc, &key, true),
                "create" => note(doc, &key, false),
                _ => {}
            }
        }
        let archived = format!("{}/{doc}", crate::layout::ARCHIVE_DIR);
        if e.op == "move" && wanted.contains(archived.as_str()) {
            note(&archived, &key, false); // archived (again): the archived copy is new
        }
        if e.op == "delete"
            && let Some(live) = doc
                .strip_prefix(crate::layout::ARCHIVE_DIR)
                .and_then(|r| r.strip_prefix('/'))
            && wanted.contains(live)
        {
            note(live, &key, false); // the archive undone: the live copy is back
        }
    }
    paths
        .iter()
        .filter(|doc| match kept(doc) {
            Kept::Always => latest.get(**doc).is_some_and(|(_, op)| op == "delete"),
            _ if is_document(doc) => events.get(**doc).is_some_and(|(_, removes)| *removes),
            _ => latest
                .get(**doc)
                .is_some_and(|(_, op)| op == "delete" || op == "move"),
        })
        .map(|doc| doc.to_string())
        .collect()
}

/// A document's path: in its region, or in the archive.
fn is_document(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    match parts.as_slice() {
        [region, name] => is_region(region) && name.ends_with(".md"),
        [crate::layout::ARCHIVE_DIR, region, name] => is_region(region) && name.ends_with(".md"),
        _ => false,
    }
}

/// Of the deleted `paths`, those that may not go: when any kept file among them goes
/// unexplained, every deletion the log does not explain (a clone that lost its
/// board.yaml lost its solutions too, and neither loss may spread); otherwise none.
pub fn unexplained(log_text: &[u8], paths: &[String]) -> Vec<String> {
    let kept_ones: Vec<&str> = paths
        .iter()
        .map(String::as_str)
        .filter(|p| kept(p) != Kept::Free)
        .collect();
    if kept_ones.is_empty() {
        return Vec::new();
    }
    let all: Vec<&str> = paths.iter().map(String::as_str).collect();
    let ok = explained(log_text, &all);
    if kept_ones.iter().all(|p| ok.contains(*p)) {
        return Vec::new();
    }
    paths.iter().filter(|p| !ok.contains(*p)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, op: &str, doc: &str) -> String {
        format!(
            "- {{seq: {seq}, origin: \"o\", at: \"2026-01-01T00:00:00.000Z\", actor: \"a\", op: \"{op}\", doc: \"{doc}\"}}\n"
        )
    }

    #[test]
    fn what_is_kept() {
        assert_eq!(kept("board.yaml"), Kept::Always);
        assert_eq!(kept("templates/task.md"), Kept::Always);
        assert_eq!(kept("tasks/t.md"), Kept::Logged);
        assert_eq!(kept("archive/questions/q.md"), Kept::Logged);
        assert_eq!(kept("control/agents/coder.md"), Kept::Logged);
        assert_eq!(kept("solutions/t/notes.md"), Kept::Free);
        assert_eq!(kept("control/sources/s.md"), Kept::Free);
    }

    #[test]
    fn only_the_latest_entry_about_a_file_explains_its_deletion() {
        let log = [
            entry(1, "create", "tasks/a.md"),
            entry(2, "move", "tasks/a.md"),
            entry(3, "create", "tasks/b.md"),
            entry(4, "move", "tasks/b.md"),
            entry(5, "create", "tasks/b.md"),
            entry(6, "move", "board.yaml"),
        ]
        .concat();
        let paths = ["tasks/a.md", "tasks/b.md", "tasks/c.md", "board.yaml"];
        let ok = explained(log.as_bytes(), &paths);
        assert_eq!(ok, HashSet::from(["tasks/a.md".to_string()]));
    }

    #[test]
    fn a_move_stays_explained_by_entries_that_bring_nothing_back() {
        let log = [
            entry(1, "create", "tasks/a.md"),
            entry(3, "move", "tasks/a.md"),
            // A watcher elsewhere logged its hand-edited copy later in log order.
            entry(4, "external-edit", "tasks/a.md"),
            entry(5, "alert", "tasks/a.md"),
            // b: archived, then the archive undone by a merge (the archived copy removed).
            entry(6, "create", "tasks/b.md"),
            entry(7, "move", "tasks/b.md"),
            entry(8, "delete", "archive/tasks/b.md"),
            // c: archived, the archived copy removed, archived again.
            entry(9, "create", "tasks/c.md"),
            entry(10, "move", "tasks/c.md"),
            entry(11, "delete", "archive/tasks/c.md"),
            entry(12, "move", "tasks/c.md"),
            entry(13, "external-edit", "board.yaml"),
            entry(14, "delete", "board.yaml"),
            entry(15, "edit", "board.yaml"),
        ]
        .concat();
        let paths = [
            "tasks/a.md",
            "tasks/b.md",
            "archive/tasks/b.md",
            "tasks/c.md",
            "archive/tasks/c.md",
            "board.yaml",
        ];
        let mut ok: Vec<String> = explained(log.as_bytes(), &paths).into_iter().collect();
        ok.sort();
        assert_eq!(ok, ["archive/tasks/b.md", "tasks/a.md", "tasks/c.md"]);
    }

    #[test]
    fn an_unexplained_kept_deletion_holds_back_every_unexplained_one() {
        let log = entry(2, "move", "tasks/a.md");
        let gone = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(unexplained(log.as_bytes(), &gone(&["tasks/a.md", "solutions/a/x"])).is_empty());
        assert_eq!(
            unexplained(
                log.as_bytes(),
                &gone(&["tasks/a.md", "tasks/b.md", "solutions/a/x"])
            ),
            gone(&["tasks/b.md", "solutions/a/x"])
        );
    }
}
