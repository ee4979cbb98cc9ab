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

/// The paths among `paths` whose deletion `log` (a log.yaml's bytes) explains: the latest
/// entry about the file (by seq, then origin) is a `delete`, or for a document or card a
/// `move` (archive) too.
pub fn explained(log_text: &[u8], paths: &[&str]) -> HashSet<String> {
    let wanted: HashSet<&str> = paths.iter().copied().collect();
    let mut latest: HashMap<String, ((u64, String), String)> = HashMap::new();
    for chunk in log::chunks(log_text) {
        let (_, bytes) = chunk;
        // Most entries are about other files: look at the text before parsing.
        if !wanted
            .iter()
            .any(|p| bytes.windows(p.len()).any(|w| w == p.as_bytes()))
        {
            continue;
        }
        let Some(e) = log::parse_entry(&String::from_utf8_lossy(bytes)) else {
            continue;
        };
        if !wanted.contains(e.doc.as_str()) {
            continue;
        }
        let key = (e.seq, e.origin.clone());
        match latest.get(&e.doc) {
            Some((k, _)) if *k >= key => {}
            _ => {
                latest.insert(e.doc.clone(), (key, e.op.clone()));
            }
        }
    }
    latest
        .into_iter()
        .filter(|(doc, (_, op))| match kept(doc) {
            Kept::Always => op == "delete",
            _ => op == "delete" || op == "move",
        })
        .map(|(doc, _)| doc)
        .collect()
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
