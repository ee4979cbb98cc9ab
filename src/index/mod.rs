//! The read index (`.state/index/`): what every document file held when it was last read,
//! beside its stat data, so that a read of the board reads only the files that changed.
//!
//! It is derived and local: never synced or committed, rebuilt from the files whenever it
//! is missing, torn, written by another version or for other settings; deleting it only
//! costs time. It is never trusted over the files: every read compares each file's stat
//! data with the cached ones (see [`stat`] for when equal stat data mean an unchanged
//! file) and reads again what differs, so a hand edit, a `git checkout`, a pull, a sync or
//! another worktree's write is seen by the next read, whoever made it and whether or not
//! tavern was running. A directory's own stat data tell whether files were created,
//! removed or renamed in it: while they are unchanged its names are taken from the index
//! instead of listing it.
//!
//! Per directory (a region, or a region of the archive) the index is a manifest and
//! buckets (files hashed by name), each file written whole and renamed over, so that
//! readers never lock and a read that changed one document rewrites one bucket. Writers
//! do not lock either: two racing writers each write a bucket that was true when they read
//! the files; the manifest lists the id of each bucket it was written with, and a bucket
//! with another id is checked against a listing of the directory.

pub(crate) mod dir;
pub(crate) mod files;
pub(crate) mod stat;

use std::borrow::Cow;
use std::os::fd::OwnedFd;

use files::{Bucket, Entry, Manifest, Outcome};
use rustix::fs::FileType;
use stat::StatKey;

use crate::board::Board;
use crate::doc::{Document, Region};
use crate::error::{Error, Result};
use crate::scan::{DocFile, Scan, Skipped};

/// Bumped whenever what the index stores, or how a file's outcome is decided, changes.
const FORMAT: u32 = 2;

/// Reads every document file of one directory (a region, or its archive) through the
/// index: the documents `keep` accepts, sorted by file name, and the files skipped.
pub(crate) fn read_dir(
    board: &Board,
    region: Region,
    archived: bool,
    needles: &[Vec<String>],
    keep: &(dyn Fn(&Document) -> bool + Sync),
) -> Result<Scan> {
    let dir = if archived {
        board.archive_dir(region)
    } else {
        board.region_dir(region)
    };
    let Some(dir_fd) = dir::open(&dir, false)? else {
        return Ok(Scan::default());
    };
    // Taken before the listing: a change during it makes the next read list again.
    let dir_key = stat::fstat(&dir_fd).map_err(|e| Error::io(&dir, "list", e))?;
    let index_dir = crate::layout::index_dir(&board.root).join(if archived {
        format!("archive-{}", region.dir())
    } else {
        region.dir().to_string()
    });
    let area = Area {
        board,
        region,
        archived,
        dir_fd,
        area: dir::Area::new(
            dir,
            index_dir,
            stat::Clocks::now(),
            fingerprint(board),
            dir::list_docs,
        ),
        needles,
    };
    area.read(dir_key, keep)
}

/// One directory being read.
struct Area<'a> {
    board: &'a Board,
    region: Region,
    archived: bool,
    dir_fd: OwnedFd,
    area: dir::Area,
    /// Words the documents wanted must hold (see `Query::needles`).
    needles: &'a [Vec<String>],
}

/// What reading one bucket gave.
#[derive(Default)]
struct Part {
    scan: Scan,
    /// The bucket's id now (a new one when it was written).
    id: u64,
    /// A listing had to be used, or the bucket was written.
    changed: bool,
    error: Option<Error>,
}

impl Area<'_> {
    fn read(&self, dir_key: StatKey, keep: &(dyn Fn(&Document) -> bool + Sync)) -> Result<Scan> {
        let start = self.area.start(Some(dir_key))?;
        let count = start.manifest.buckets.len();
        let parts = dir::each_bucket(count, |b| {
            self.read_bucket(&start.manifest, b, start.names_known, keep)
        });
        let mut scan = Scan::default();
        let mut ids = Vec::with_capacity(count);
        let mut changed = false;
        for part in parts {
            if let Some(e) = part.error {
                return Err(e);
            }
            changed |= part.changed;
            ids.push(part.id);
            scan.docs.extend(part.scan.docs);
            scan.skipped.extend(part.scan.skipped);
        }
        scan.docs.sort_by(|a, b| a.file_id.cmp(&b.file_id));
        scan.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        self.area.finish(start, Some(dir_key), ids, changed);
        Ok(scan)
    }

    fn read_bucket(
        &self,
        manifest: &Manifest,
        b: usize,
        names_known: bool,
        keep: &(dyn Fn(&Document) -> bool + Sync),
    ) -> Part {
        let count = manifest.buckets.len();
        let path = files::bucket_path(&self.area.index_dir, manifest.generation, b);
        let bytes = files::load(&path).unwrap_or_default();
        let cached = files::decode_bucket(&bytes)
            .filter(|bk| bk.fingerprint == self.area.fingerprint)
            .unwrap_or_default();
        let mut part = Part {
            id: cached.id,
            ..Part::default()
        };
        // Its names: the cached ones while the directory is unchanged and this bucket is
        // the one the manifest was written with; else this bucket's share of a listing.
        let listed: Option<Vec<&str>> = if names_known && cached.id == manifest.buckets[b] {
            None
        } else {
            part.changed = true;
            match self.area.share(b, count) {
                Ok(names) => Some(names),
                Err(e) => {
                    part.error = Some(e);
                    return part;
                }
            }
        };
        // Both are sorted by name: walk them side by side.
        let mut old = cached.entries.into_iter().peekable();
        let mut rewrite = false;
        let pairs: Vec<(Cow<'_, str>, Option<Entry<'_>>)> = match listed {
            None => old.map(|e| (e.name.clone(), Some(e))).collect(),
            Some(names) => {
                let mut pairs = Vec::with_capacity(names.len());
                for name in names {
                    while old.next_if(|e| *e.name < *name).is_some() {
                        rewrite = true; // a name no longer listed
                    }
                    pairs.push((Cow::Borrowed(name), old.next_if(|e| e.name == name)));
                }
                rewrite |= old.next().is_some();
                pairs
            }
        };
        let mut entries = Vec::with_capacity(pairs.len());
        for (name, old) in pairs {
            let had = old.is_some();
            let (entry, outcome) = match self.read_entry(&name, old) {
                Read::Gone => {
                    rewrite |= had;
                    continue;
                }
                Read::Cached(entry, outcome) => {
                    rewrite |= !had; // a name the bucket did not hold (not an id)
                    (entry, outcome)
                }
                Read::Fresh(entry, outcome, same) => {
                    rewrite |= !same || entry.racy;
                    (entry, outcome)
                }
            };
            match outcome {
                Some(Ok(doc)) if keep(&doc) => part.scan.docs.push(doc),
                Some(Ok(_)) | None => {}
                Some(Err(s)) => part.scan.skipped.push(s),
            }
            entries.push(entry);
        }
        if rewrite {
            let bucket = Bucket {
                id: files::unique(),
                fingerprint: self.area.fingerprint,
                entries,
            };
            files::save(&path, &files::encode_bucket(&bucket));
            part.id = bucket.id;
            part.changed = true;
        }
        part
    }

    /// One file: its cached outcome when its stat data are unchanged, else read again.
    fn read_entry<'e>(&self, name: &str, old: Option<Entry<'e>>) -> Read<'e> {
        let path = self.area.dir.join(format!("{name}.md"));
        let file = |key: Option<StatKey>| DocFile {
            id: name.to_string(),
            path: path.clone(),
            is_symlink: key.is_some_and(|k| k.file_type() == FileType::Symlink),
            is_special: key.is_some_and(|k| {
                !matches!(k.file_type(), FileType::RegularFile | FileType::Symlink)
            }),
        };
        // A name that is not an id is skipped whatever the file holds: no need to look.
        if crate::id::validate(name).is_err() {
            let outcome = crate::scan::read_one(self.board, self.region, &file(None));
            let entry = Entry {
                name: Cow::Owned(name.to_string()),
                key: StatKey::default(),
                racy: false,
                plain: false,
                outcome: Outcome::Skipped(Cow::Borrowed("")),
            };
            return Read::Cached(entry, Some(outcome));
        }
        let file_name = format!("{name}.md");
        let Some(key) = dir::stat_name(&self.dir_fd, &file_name) else {
            return Read::Gone;
        };
        let old = match old {
            Some(mut old) if !old.racy && old.key == key && key != StatKey::default() => {
                if old.plain
                    && let Outcome::Doc(text) = &old.outcome
                    && !holds_needles(text, self.needles)
                {
                    return Read::Cached(old, None);
                }
                let outcome = match &mut old.outcome {
                    // The text moves into the document; the entry keeps a copy only when
                    // the bucket is rewritten (it borrows the file's bytes until then).
                    Outcome::Doc(text) => crate::store::parse_doc(
                        self.board,
                        self.region,
                        name,
                        text.to_string(),
                        &path,
                    )
                    .map(|mut d| {
                        d.archived = self.archived;
                        Ok(d)
                    })
                    .ok(),
                    Outcome::Skipped(problem) => Some(Err(Skipped {
                        path: self.board.rel(&path),
                        problem: problem.to_string(),
                    })),
                };
                match outcome {
                    Some(outcome) => return Read::Cached(old, Some(outcome)),
                    None => Some(old),
                }
            }
            old => old,
        };
        // Read it as a full scan does, between two looks at its stat data: a change while
        // it was read shows in them, and the read is not trusted next time.
        let outcome =
            crate::scan::read_one(self.board, self.region, &file(Some(key))).map(|mut d| {
                d.archived = self.archived;
                d
            });
        let after = dir::stat_name(&self.dir_fd, &file_name);
        let entry = Entry {
            name: Cow::Owned(name.to_string()),
            key,
            racy: key.racy_read(after, self.area.now.wall),
            plain: outcome.as_ref().is_ok_and(|d| {
                d.raw.is_ascii() && crate::doc::fast::parse(d.frontmatter()).is_some()
            }),
            outcome: match &outcome {
                Ok(doc) => Outcome::Doc(Cow::Owned(doc.raw.clone())),
                Err(s) => Outcome::Skipped(Cow::Owned(s.problem.clone())),
            },
        };
        let same = old.is_some_and(|o| o == entry);
        Read::Fresh(entry, Some(outcome), same)
    }
}

enum Read<'e> {
    /// The file is no longer there.
    Gone,
    /// From the index (None: a document the needles rule out, not parsed).
    Cached(Entry<'e>, Option<std::result::Result<Document, Skipped>>),
    /// Read from the file just now; whether the index held the same.
    Fresh(
        Entry<'e>,
        Option<std::result::Result<Document, Skipped>>,
        bool,
    ),
}

/// Does an ASCII text hold one word of each list, ignoring ASCII case?
fn holds_needles(text: &str, needles: &[Vec<String>]) -> bool {
    if needles.is_empty() {
        return true;
    }
    let lower = text.to_ascii_lowercase();
    needles
        .iter()
        .all(|any| any.iter().any(|n| lower.contains(n.as_str())))
}

/// What the cached outcomes depend on besides the files: this program, the board's
/// settings (size and YAML limits), and where the board is (skip messages name paths).
fn fingerprint(board: &Board) -> u64 {
    let text = format!(
        "{FORMAT}\0{}\0{}\0{:?}",
        env!("CARGO_PKG_VERSION"),
        board.root.display(),
        board.config
    );
    files::fnv(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board() -> (tempfile::TempDir, Board) {
        let dir = tempfile::tempdir().unwrap();
        crate::board::init(dir.path()).unwrap();
        let board = Board::open(&dir.path().join(".tavern")).unwrap();
        (dir, board)
    }

    fn doc(id: &str, title: &str) -> String {
        format!("---\nid: {id}\ntitle: {title}\nstatus: pending\n---\n")
    }

    fn titles(board: &Board) -> Vec<String> {
        read_dir(board, Region::Tasks, false, &[], &|_| true)
            .unwrap()
            .docs
            .iter()
            .map(|d| d.title().to_string())
            .collect()
    }

    /// The one bucket of the tasks' index (a small board has one), decoded.
    fn with_bucket(board: &Board, f: impl FnOnce(&mut Bucket<'static>)) {
        let dir = crate::layout::index_dir(&board.root).join("tasks");
        let bytes = std::fs::read(files::manifest_path(&dir)).unwrap();
        let manifest = files::decode_manifest(&bytes).unwrap();
        assert_eq!(manifest.buckets.len(), 1);
        let path = files::bucket_path(&dir, manifest.generation, 0);
        let bytes: &'static [u8] = std::fs::read(&path).unwrap().leak();
        let mut bucket = files::decode_bucket(bytes).unwrap();
        f(&mut bucket);
        files::save(&path, &files::encode_bucket(&bucket));
    }

    #[test]
    fn a_file_read_within_a_tick_of_its_change_is_read_again_next_time() {
        let (_dir, board) = board();
        std::fs::write(board.root.join("tasks/t-1.md"), doc("t-1", "first")).unwrap();
        assert_eq!(titles(&board), ["first"]);
        // Just written: racy, so a same-tick change could hide behind equal stat data.
        let mut cached_key = StatKey::default();
        with_bucket(&board, |b| {
            assert!(b.entries[0].racy, "a file changed just now is racy");
            cached_key = b.entries[0].key;
            // What a same-tick change would leave: other text under the same stat data.
            b.entries[0].outcome = Outcome::Doc(Cow::Owned(doc("t-1", "stale")));
        });
        assert_eq!(titles(&board), ["first"], "a racy entry is read again");
        // Once trusted (not racy) with equal stat data, the cache is what is read: the
        // stale text shows, which is why racy entries must never be trusted.
        with_bucket(&board, |b| {
            assert_eq!(b.entries[0].key, cached_key);
            b.entries[0].racy = false;
            b.entries[0].outcome = Outcome::Doc(Cow::Owned(doc("t-1", "stale")));
        });
        assert_eq!(titles(&board), ["stale"]);
        // Any other stat data (here: a different ctime) and it is read again.
        with_bucket(&board, |b| b.entries[0].key.ctime -= 1);
        assert_eq!(titles(&board), ["first"]);
    }

    #[test]
    fn needles_pass_over_only_plain_cached_documents() {
        let (_dir, board) = board();
        let path = board.root.join("tasks/t-1.md");
        // A value YAML reads as `pending` though its text does not hold the word.
        std::fs::write(
            &path,
            "---\nid: t-1\ntitle: escaped\nstatus: \"pend\\u0069ng\"\n---\n",
        )
        .unwrap();
        let pending = |board: &Board| {
            read_dir(
                board,
                Region::Tasks,
                false,
                &[vec!["pending".into()]],
                &|d| d.status() == Some("pending"),
            )
            .unwrap()
            .docs
            .len()
        };
        assert_eq!(pending(&board), 1, "read from the file");
        with_bucket(&board, |b| {
            assert!(
                !b.entries[0].plain,
                "a quoted scalar is not in the plain subset"
            );
            b.entries[0].racy = false;
        });
        assert_eq!(
            pending(&board),
            1,
            "a cached document that is not plain is parsed"
        );
        // Were it marked plain, the needle would pass over it: why `plain` must be exact.
        with_bucket(&board, |b| b.entries[0].plain = true);
        assert_eq!(pending(&board), 0);
        // A plain document that holds the needle in any case is parsed, and then matched.
        std::fs::write(&path, doc("t-1", "plain")).unwrap();
        assert_eq!(pending(&board), 1);
        with_bucket(&board, |b| {
            assert!(b.entries[0].plain, "what tavern writes is plain");
            b.entries[0].racy = false;
        });
        assert_eq!(pending(&board), 1, "parsed from the index");
    }

    #[test]
    fn a_wall_clock_jump_distrusts_the_whole_index() {
        let (_dir, board) = board();
        std::fs::write(board.root.join("tasks/t-1.md"), doc("t-1", "first")).unwrap();
        titles(&board);
        with_bucket(&board, |b| {
            b.entries[0].racy = false;
            b.entries[0].outcome = Outcome::Doc(Cow::Owned(doc("t-1", "stale")));
        });
        assert_eq!(titles(&board), ["stale"]);
        let dir = crate::layout::index_dir(&board.root).join("tasks");
        let mut manifest =
            files::decode_manifest(&std::fs::read(files::manifest_path(&dir)).unwrap()).unwrap();
        manifest.clocks.wall += 3_600_000_000_000; // written an hour "later" by the wall
        files::save(
            &files::manifest_path(&dir),
            &files::encode_manifest(&manifest),
        );
        assert_eq!(titles(&board), ["first"]);
    }
}
