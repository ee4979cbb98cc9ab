//! The exchange with the remote, through the `git` executable: this clone's copies of the
//! records (`refs/tavern/claims/*`, read without starting git when the refs are plain
//! files), record commits, the push under a lease that is the compare-and-swap, and one
//! fetch for one record or all of them.

use crate::board::Board;
use crate::error::{Error, Result};
use crate::sync::git::{self, Git, Output};

use super::record::Record;
use super::refname::{REF_PREFIX, ref_name};
use super::wording::{Failure, first_line};

pub(super) fn git(board: &Board) -> Git {
    Git::new(board.project())
}

/// The repository's common directory (where refs and config live), if the board is in one.
fn common_dir(board: &Board) -> Option<std::path::PathBuf> {
    crate::sync::repo::Repo::find(board.project()).map(|r| r.common_dir)
}

/// Points this clone's copy of a task's record at `sha` (no git started when the refs are
/// plain files).
pub(super) fn set_local(board: &Board, g: &Git, name: &str, sha: &str) -> Result<()> {
    if common_dir(board).is_some_and(|c| git::write_ref_file(&c, name, sha)) {
        return Ok(());
    }
    let out = g.output(&["update-ref", name, sha], None)?;
    if !out.success {
        return Err(git_error(g, "update-ref", &out));
    }
    Ok(())
}

/// This clone, as records name it.
pub(super) fn origin(board: &Board) -> String {
    format!(
        "{}:{}",
        crate::agents::host_name(),
        board.project().display()
    )
}

/// The record this clone last saw for `task`, from its local copy of the ref.
pub fn known(board: &Board, task: &str) -> Result<Option<Record>> {
    let name = ref_name(task);
    // Most claims are of a task with no record yet: the refs' files say so, no git needed.
    if let Some(c) = common_dir(board)
        && git::read_ref_file(&c, &name) == git::RefLookup::Absent
    {
        return Ok(None);
    }
    Ok(list(&git(board), &name)?.into_iter().next())
}

/// The records of this clone's refs under `pattern` (one ref, or the prefix of all).
fn list(g: &Git, pattern: &str) -> Result<Vec<Record>> {
    let out = g.output(
        &[
            "for-each-ref",
            "--format=%(objectname)%00%(contents)%00",
            pattern,
        ],
        None,
    )?;
    if !out.success {
        return Err(git_error(g, "for-each-ref", &out));
    }
    Ok(Record::parse_all(&out.stdout))
}

/// Every record this clone knows.
pub fn all_known(board: &Board) -> Result<Vec<Record>> {
    list(&git(board), REF_PREFIX)
}

pub(super) fn git_error(g: &Git, what: &str, out: &Output) -> Error {
    Error::Git {
        command: format!("git {what}"),
        dir: g.dir().to_path_buf(),
        message: out.stderr.trim().to_string(),
    }
}

/// What every fetch of records asks for: `spec` only, no tags, no FETCH_HEAD, no
/// submodules; `prune` removes the copies of records the remote no longer has.
fn fetch(g: &Git, remote: &str, spec: &str, prune: bool) -> Result<Output> {
    let mut args = vec![
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        "--no-recurse-submodules",
    ];
    if prune {
        args.push("--prune");
    }
    args.extend([remote, spec]);
    g.output(&args, None)
}

/// Fetches every record of the remote into this clone's copies.
fn fetch_every_record(g: &Git, remote: &str) -> Result<Output> {
    fetch(g, remote, &format!("+{REF_PREFIX}*:{REF_PREFIX}*"), true)
}

/// Fetches the remote's record of `task` into this clone's copy (removing the copy when
/// the remote has none) and returns it; a remote that cannot be reached is `why` as the
/// error: the caller words it.
pub(super) fn refresh(
    board: &Board,
    task: &str,
    remote: &str,
    unreachable: impl FnOnce(String) -> Failure,
) -> Result<Option<Record>> {
    let g = git(board);
    let name = ref_name(task);
    let out = fetch(&g, remote, &format!("+{name}:{name}"), false)?;
    if !out.success {
        if out.stderr.contains("couldn't find remote ref") {
            let _ = g.output(&["update-ref", "-d", &name], None)?;
            return Ok(None);
        }
        return Err(unreachable(super::wording::fetch_failed(&out.stderr)).into());
    }
    Ok(list(&g, &name)?.into_iter().next())
}

/// The empty tree every record commit has: an object git knows without storing it.
fn empty_tree(board: &Board) -> &'static str {
    let sha256 = common_dir(board)
        .and_then(|c| std::fs::read_to_string(c.join("config")).ok())
        .is_some_and(|t| {
            git::config_lookup(&t, "extensions.objectformat") == git::Lookup::Set("sha256".into())
        });
    if sha256 {
        "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
    } else {
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    }
}

/// Writes a record's commit object locally and returns its sha: one `git commit-tree`,
/// the message on its standard input.
pub(super) fn commit(board: &Board, record: &Record, parent: Option<&str>) -> Result<String> {
    let g = git(board);
    let tree = empty_tree(board);
    let mut args = vec![
        "-c",
        "user.name=tavern",
        "-c",
        "user.email=tavern@localhost",
        "commit-tree",
        "--no-gpg-sign",
        tree,
    ];
    if let Some(p) = parent {
        args.push("-p");
        args.push(p);
    }
    let message = record.message();
    let out = g.output(&args, Some(message.as_bytes()))?;
    if !out.success {
        return Err(git_error(&g, "commit-tree", &out));
    }
    Ok(out.stdout.trim().to_string())
}

/// How a push of one ref ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum PushResult {
    Done,
    /// The lease did not hold: the remote's ref is not what we expected.
    Stale,
    /// The remote could not update the ref: another push held its lock, or (rarely) the
    /// remote is broken. Retried after a fetch; said as unconfirmed if it persists.
    Busy(String),
    /// Could not reach the remote, or it refused (a hook, permissions).
    Failed(String),
}

/// Pushes `sha` to the ref of `task` only if the remote's ref is `expected` (absent when
/// None); `sha` None deletes the ref under the same lease.
pub(super) fn push(
    g: &Git,
    remote: &str,
    task: &str,
    sha: Option<&str>,
    expected: Option<&str>,
) -> Result<PushResult> {
    let name = ref_name(task);
    let spec = format!("{}:{name}", sha.unwrap_or(""));
    let lease = format!("--force-with-lease={name}:{}", expected.unwrap_or(""));
    let out = g.output(
        &[
            "push",
            "--porcelain",
            "--no-verify",
            "--no-recurse-submodules",
            &lease,
            remote,
            &spec,
        ],
        None,
    )?;
    Ok(push_result(&out, &name))
}

fn push_result(out: &Output, name: &str) -> PushResult {
    // Porcelain: one line per ref, `FLAG\tFROM:TO\tSUMMARY`.
    let line = out.stdout.lines().find(|l| {
        l.split('\t')
            .nth(1)
            .is_some_and(|s| s.ends_with(&format!(":{name}")))
    });
    if out.success {
        return PushResult::Done;
    }
    match line {
        Some(l) if l.contains("(stale info)") => PushResult::Stale,
        Some(l) if l.contains("(failed to update ref)") || l.contains("(failed to lock)") => {
            PushResult::Busy(l.split('\t').nth(2).unwrap_or(l).trim().to_string())
        }
        Some(l) => PushResult::Failed(l.split('\t').nth(2).unwrap_or(l).trim().to_string()),
        None => PushResult::Failed(first_line(&out.stderr)),
    }
}

/// Before `claim --next` tries candidates on a connected board: every record on the
/// remote, fetched in one exchange, so that tasks other clones hold or finished are skipped
/// instead of each being learnt by losing a push to it. Unreachable: exit 7.
pub fn fetch_for_next(
    board: &Board,
    remote: &str,
) -> Result<std::collections::HashMap<String, Record>> {
    let g = git(board);
    let out = fetch_every_record(&g, remote)?;
    if !out.success {
        return Err(Failure::Unsurveyed {
            remote: remote.to_string(),
            project: board.project().to_path_buf(),
            why: first_line(&out.stderr),
        }
        .into());
    }
    Ok(all_known(board)?
        .into_iter()
        .map(|r| (r.task.clone(), r))
        .collect())
}

/// Every record on the remote, fetched into this clone's copies (copies of records the
/// remote no longer has are removed). Not connected: none. Unreachable: git's error.
pub fn fetch_all(board: &Board) -> Result<Vec<Record>> {
    let Some(remote) = super::remote(board)? else {
        return Ok(Vec::new());
    };
    let g = git(board);
    let out = fetch_every_record(&g, &remote)?;
    if !out.success {
        return Err(Error::Git {
            command: format!("git fetch {remote} {REF_PREFIX}*"),
            dir: g.dir().to_path_buf(),
            message: out.stderr.trim().to_string(),
        });
    }
    all_known(board)
}

/// What `claim --next` knows of the remote's records before it tries candidates, from one
/// `git ls-remote` (no objects sent): the records whose copy in this clone is the remote's
/// (`known`), and the refs that differ (`changed`: another clone claimed, moved or released
/// that task since this clone last looked). Unreachable: exit 7.
#[derive(Debug, Default)]
pub struct Survey {
    pub known: std::collections::HashMap<String, Record>,
    changed: std::collections::HashSet<String>,
}

impl Survey {
    /// The remote's record of `task` is not the one this clone has.
    pub fn changed(&self, task: &str) -> bool {
        self.changed.contains(&ref_name(task))
    }
}

/// See [`Survey`].
pub fn survey(board: &Board, remote: &str) -> Result<Survey> {
    let g = git(board);
    let pattern = format!("{REF_PREFIX}*");
    let out = g.output(&["ls-remote", "--refs", remote, &pattern], None)?;
    if !out.success {
        return Err(Failure::Unsurveyed {
            remote: remote.to_string(),
            project: board.project().to_path_buf(),
            why: first_line(&out.stderr),
        }
        .into());
    }
    let mut theirs: std::collections::HashMap<&str, &str> = out
        .stdout
        .lines()
        .filter_map(|l| {
            let (sha, name) = l.split_once('\t')?;
            Some((name.trim(), sha.trim()))
        })
        .collect();
    let mut survey = Survey::default();
    for r in all_known(board)? {
        let name = ref_name(&r.task);
        if theirs.remove(name.as_str()) == Some(r.sha.as_str()) {
            survey.known.insert(r.task.clone(), r);
        } else {
            survey.changed.insert(name);
        }
    }
    survey
        .changed
        .extend(theirs.into_keys().map(str::to_string));
    Ok(survey)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(success: bool, stdout: &str, stderr: &str) -> Output {
        Output {
            success,
            code: Some(if success { 0 } else { 1 }),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn a_push_is_read_from_its_porcelain_line_for_the_ref() {
        let name = "refs/tavern/claims/t1";
        assert_eq!(push_result(&out(true, "", ""), name), PushResult::Done);
        assert_eq!(
            push_result(
                &out(
                    false,
                    "!\tabc:refs/tavern/claims/t1\t[rejected] (stale info)\nDone\n",
                    ""
                ),
                name
            ),
            PushResult::Stale
        );
        assert_eq!(
            push_result(
                &out(
                    false,
                    "!\tabc:refs/tavern/claims/t1\t[remote rejected] (failed to update ref)\n",
                    ""
                ),
                name
            ),
            PushResult::Busy("[remote rejected] (failed to update ref)".into())
        );
        assert_eq!(
            push_result(
                &out(
                    false,
                    "!\tabc:refs/tavern/claims/t1\t[remote rejected] (hook declined)\n",
                    ""
                ),
                name
            ),
            PushResult::Failed("[remote rejected] (hook declined)".into())
        );
        // Another ref's line is not this one's; no line at all: git's first word.
        assert_eq!(
            push_result(
                &out(
                    false,
                    "!\tabc:refs/tavern/claims/t10\t[rejected] (stale info)\n",
                    "\nfatal: could not read from remote repository\nmore\n"
                ),
                name
            ),
            PushResult::Failed("fatal: could not read from remote repository".into())
        );
    }
}
