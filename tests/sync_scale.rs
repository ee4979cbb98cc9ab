//! `tavern sync` of thousands of documents: it finishes both ways, and a merge of
//! thousands of documents that both clones changed starts a bounded number of git
//! processes, not one (or several) per document. Counted with a `git` first on PATH that
//! logs each invocation and runs the real one.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::sync_branch::two_clones;
use crate::util::git;
use crate::worktrees::tavern;

/// A directory holding a `git` that appends each invocation's arguments to `log` (one
/// line each) and runs the real git.
fn git_shim(dir: &Path, log: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let real = std::env::split_paths(&std::env::var_os("PATH").expect("PATH"))
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH");
    let shim = dir.join("shim");
    std::fs::create_dir_all(&shim).unwrap();
    let script = shim.join("git");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    shim
}

/// `tavern ARGS` in `dir` with the shim of [`git_shim`] first on PATH.
fn tavern_counted(dir: &Path, shim: &Path, args: &[&str]) -> crate::util::Out {
    let mut c = Command::new(crate::util::BIN);
    c.args(args)
        .current_dir(dir)
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env("USER", "tester")
        .stdin(Stdio::null());
    git::env(&mut c);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![shim.to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    c.env("PATH", std::env::join_paths(dirs).unwrap());
    crate::util::output(c)
}

fn id(i: usize) -> String {
    format!("s{i:05}")
}

/// Writes task `i` as an editor would (no tavern command, no log entry).
fn write_task(dir: &Path, i: usize, priority: u32, title: &str, body: &[&str]) {
    let id = id(i);
    let mut text = format!(
        "---\nid: {id}\ntitle: {title}\nstatus: pending\npriority: {priority}\ntags: []\ndepends_on: []\ncreated_at: 2026-01-01T00:00:00Z\ncreated_by: tester\nupdated_at: 2026-01-01T00:00:00Z\nrev: 1\n---\n"
    );
    for line in body {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(dir.join(format!(".tavern/tasks/{id}.md")), text).unwrap();
}

const BODY: [&str; 6] = ["line 1", "line 2", "line 3", "line 4", "line 5", "line 6"];

#[test]
fn thousands_of_documents_sync_both_ways_and_merge_without_a_git_process_each() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _remote) = two_clones(tmp.path());
    // More documents than one pipe's worth of object names: git answers while it reads.
    let n = 4000;
    for i in 0..n {
        write_task(&a, i, 1, &format!("task {i}"), &BODY);
    }
    let sent = tavern(&a, &["sync", "--json"]).ok().json();
    assert_eq!(sent["outcome"], "pushed", "{sent}");
    let got = tavern(&b, &["sync", "--json"]).ok().json();
    assert_eq!(got["outcome"], "fast-forwarded", "{got}");
    for i in [0, n / 2, n - 1] {
        let path = format!(".tavern/tasks/{}.md", id(i));
        assert_eq!(
            std::fs::read(a.join(&path)).unwrap(),
            std::fs::read(b.join(&path)).unwrap()
        );
    }

    // 2,000 documents changed on each side: a field and the body's first line in a,
    // another field and a line added at the body's end in b.
    let m = 2000;
    for i in 0..m {
        let mut body = BODY.to_vec();
        body[0] = "line 1, edited in a";
        write_task(&a, i, 2, &format!("task {i}"), &body);
        let mut body = BODY.to_vec();
        body.push("line 7, added in b");
        write_task(&b, i, 1, &format!("task {i}, retitled in b"), &body);
    }
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "pushed"
    );
    let log = tmp.path().join("git-calls.log");
    let shim = git_shim(tmp.path(), &log);
    let merged = tavern_counted(&b, &shim, &["sync", "--json"]).ok().json();
    assert_eq!(merged["outcome"], "merged", "{merged}");
    assert_eq!(merged["merged"].as_array().map(Vec::len), Some(m));
    assert_eq!(merged["conflicts"], serde_json::json!([]));
    let calls = std::fs::read_to_string(&log).unwrap();
    let count = calls.lines().count();
    assert!(
        count > 5 && count <= 60,
        "{count} git processes for a merge of {m} documents:\n{calls}"
    );
    // Both sides' changes in every document, the same on both clones.
    assert_eq!(
        tavern(&a, &["sync", "--json"]).ok().json()["outcome"],
        "fast-forwarded"
    );
    for i in 0..n {
        let path = format!(".tavern/tasks/{}.md", id(i));
        let text = std::fs::read_to_string(a.join(&path)).unwrap();
        assert_eq!(
            text,
            std::fs::read_to_string(b.join(&path)).unwrap(),
            "{path}"
        );
        if i < m {
            for want in [
                "priority: 2\n",
                &format!("title: task {i}, retitled in b\n"),
                "rev: 2\n",
                "---\nline 1, edited in a\nline 2\n",
                "line 6\nline 7, added in b\n",
            ] {
                assert!(text.contains(want), "{path} lacks {want:?}:\n{text}");
            }
        }
    }
    let log_a = std::fs::read_to_string(a.join(".tavern/log.yaml")).unwrap();
    assert_eq!(
        log_a.matches("op: \"sync-merge\"").count(),
        m,
        "one sync-merge entry per merged document"
    );
    assert_eq!(
        log_a,
        std::fs::read_to_string(b.join(".tavern/log.yaml")).unwrap()
    );
}
