//! `tavern serve` keeps the board in memory and follows changes from the change feed:
//! files changed behind its back every way a user changes them (hand edits in place and by
//! rename, new, deleted and broken files, a storm of hundreds of files at once, a `git
//! checkout` of an old board, board.yaml, a `tavern sync` from another clone) must show in
//! what it serves exactly as a server started afresh on the same files serves them.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::git::{self, git};
use crate::util::{BIN, TestBoard};

/// A running `tavern serve`, killed when dropped.
struct Server {
    child: Child,
    port: u16,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(board: &Path) -> Server {
    let mut child = std::process::Command::new(BIN)
        .args(["serve", "--port", "0", "--as", "alice", "--board"])
        .arg(board)
        .env_remove("TAVERN_AGENT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn tavern serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let rest = line
        .trim()
        .strip_prefix("tavern serve: http://127.0.0.1:")
        .unwrap_or_else(|| panic!("first line: {line:?}"));
    let (port, token) = rest.split_once("/?token=").unwrap();
    Server {
        child,
        port: port.parse().unwrap(),
        token: token.to_string(),
    }
}

impl Server {
    fn get(&self, path: &str) -> Value {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nx-tavern-token: {}\r\nConnection: close\r\n\r\n",
            self.port, self.token
        )
        .unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let text = String::from_utf8_lossy(&raw);
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "GET {path}: {text}");
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_string()
        };
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
    }

    /// What a page reads: the board (every card), the waiting queue, the count beside it.
    fn shown(&self) -> Value {
        let state = self.get("/api/state");
        serde_json::json!({
            "board": self.get("/api/board?per=500"),
            // Pages of one column, as "show more" reads them.
            "pending, second page": self.get("/api/board?per=2&state=pending&offset=2"),
            "other, second page": self.get("/api/board?per=1&state=(other)&offset=1"),
            "first cards": self.get("/api/board?per=1"),
            "filtered": self.get("/api/board?per=500&q=priority%3C%3D1"),
            "waiting": self.get("/api/waiting"),
            "count": state["waiting"],
        })
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

/// Waits until the long-running server shows what a server started now on the same files
/// shows (the files no longer change), or fails after a generous deadline with both.
#[track_caller]
fn agrees(running: &Server, board: &Path, what: &str) {
    let truth = serve(board).shown();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = running.shown();
        if got == truth {
            return;
        }
        if Instant::now() > deadline {
            panic!(
                "after {what}, the running server shows\n{}\nwhile a fresh one shows\n{}",
                serde_json::to_string_pretty(&got).unwrap(),
                serde_json::to_string_pretty(&truth).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tavern(dir: &Path, args: &[&str]) -> crate::util::Out {
    let mut c = std::process::Command::new(BIN);
    c.args(args)
        .current_dir(dir)
        .env_remove("TAVERN_BOARD")
        .env("TAVERN_AGENT", "planner")
        .stdin(Stdio::null());
    git::env(&mut c);
    crate::util::output(c)
}

fn task_file(id: &str, status: &str, priority: u32, title: &str) -> String {
    format!(
        "---\nid: {id}\ntitle: {title}\nstatus: {status}\npriority: {priority}\ncreated_at: 2026-11-20T10:00:00Z\ncreated_by: planner\nrev: 1\n---\n\nWritten by hand.\n"
    )
}

/// Saves as an editor does: a temporary file renamed over the document.
fn save(board: &Path, rel: &str, text: &str) {
    let path = board.join(rel);
    let tmp = path.with_file_name(format!(
        ".{}.swp",
        path.file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
}

#[test]
fn what_the_server_shows_follows_every_change_behind_its_back() {
    let b = TestBoard::new();
    let board = b.board();
    let yaml = b
        .read("board.yaml")
        .replace("humans: []", "humans: [alice]");
    b.write("board.yaml", yaml);
    let t1 = b.task("First", &["--priority", "1"]);
    let t2 = b.task("Second", &["--depends-on", &t1]);
    let t3 = b.task("Third", &["--priority", "0"]);
    b.run(&["claim", &t1, "--as", "coder"]).ok();
    b.run(&[
        "ask",
        "Which way?",
        "--id",
        "q-1",
        "--as",
        "coder",
        "--blocks",
        &t3,
    ])
    .ok();
    git::init_repo(b.root());
    let old_board = git(b.root(), &["rev-parse", "HEAD"]);

    let s = serve(&board);
    agrees(&s, &board, "the start");

    // In place, as `sed -i` would not but a plain editor's write does: same inode.
    let text = b.read(&format!("tasks/{t2}.md"));
    b.write(
        &format!("tasks/{t2}.md"),
        text.replace("title: Second", "title: Second, edited in place"),
    );
    agrees(&s, &board, "an edit in place");

    // By rename, a new file, a deleted one, a broken one, one whose name is not an id.
    let text = b.read(&format!("tasks/{t1}.md"));
    save(
        &board,
        &format!("tasks/{t1}.md"),
        &text.replace("status: claimed", "status: review"),
    );
    save(
        &board,
        "tasks/t-hand.md",
        &task_file("t-hand", "pending", 0, "Made by hand"),
    );
    std::fs::remove_file(board.join(format!("tasks/{t3}.md"))).unwrap();
    b.write("tasks/t-broken.md", "---\ntitle: [unclosed\n---\n");
    b.write("tasks/Not An Id.md", "anything");
    agrees(&s, &board, "saves, a new file, a deletion, broken files");

    // States the workflow does not name (one "(other)" column, best first across them), a
    // second file under an existing id (the last by name gives the id its status), a task
    // moved between columns and up the order.
    for (name, status, priority) in [("t-limbo", "limbo", 2), ("t-parked", "parked", 1)] {
        save(
            &board,
            &format!("tasks/{name}.md"),
            &task_file(name, status, priority, "Elsewhere"),
        );
    }
    save(
        &board,
        "tasks/zz-copy.md",
        &task_file(&t1, "done", 3, "A copy under the first one's id"),
    );
    let text = b.read(&format!("tasks/{t2}.md"));
    save(
        &board,
        &format!("tasks/{t2}.md"),
        &text
            .replace("status: pending", "status: working")
            .replace("priority: 2", "priority: 0"),
    );
    agrees(&s, &board, "other states, an id twice, a task moved");

    // A question answered by hand: it no longer waits, nor blocks.
    let q = b.read("questions/q-1.md");
    b.write(
        "questions/q-1.md",
        q.replace("status: open", "status: answered\nanswer: left"),
    );
    agrees(&s, &board, "a question answered by hand");

    // A storm: hundreds of files at once, more than the server follows one by one.
    for i in 0..700 {
        save(
            &board,
            &format!("tasks/t-storm-{i:03}.md"),
            &task_file(&format!("t-storm-{i:03}"), "pending", i % 4, "Storm"),
        );
    }
    agrees(&s, &board, "a storm of 700 new files");
    for i in (0..700).step_by(3) {
        std::fs::remove_file(board.join(format!("tasks/t-storm-{i:03}.md"))).unwrap();
    }
    agrees(&s, &board, "a third of them deleted");

    // git: everything committed, then the old board checked out (files changed, created
    // and deleted, and the log replaced by an older one).
    git(b.root(), &["add", "-A"]);
    git(b.root(), &["commit", "-q", "-m", "later"]);
    git(b.root(), &["checkout", "-q", &old_board]);
    agrees(&s, &board, "a git checkout of the old board");
    git(b.root(), &["checkout", "-q", "main"]);
    agrees(&s, &board, "a git checkout back");

    // board.yaml: a lower size limit skips the bigger documents.
    let yaml = b.read("board.yaml");
    let limit = yaml
        .lines()
        .find(|l| l.trim_start().starts_with("max_doc_bytes:"))
        .expect("max_doc_bytes in board.yaml")
        .to_string();
    b.write("board.yaml", yaml.replace(&limit, "  max_doc_bytes: 230"));
    let shown = s.shown();
    assert!(
        !shown["board"]["skipped"].as_array().unwrap().is_empty(),
        "the lower limit skips some: {}",
        shown["board"]["skipped"]
    );
    agrees(&s, &board, "a lower max_doc_bytes");
}

#[test]
fn what_the_server_shows_follows_a_sync_from_another_clone() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _remote) = crate::sync_branch::two_clones(tmp.path());
    let yaml_path = b.join(".tavern/board.yaml");
    let yaml = std::fs::read_to_string(&yaml_path).unwrap();
    std::fs::write(&yaml_path, yaml.replace("humans: []", "humans: [alice]")).unwrap();
    let s = serve(&b.join(".tavern"));
    agrees(&s, &b.join(".tavern"), "the start");

    let mut ids = Vec::new();
    for i in 0..30 {
        let out = tavern(&a, &["new", "task", "--title", &format!("From a, {i}")]);
        out.ok();
        ids.push(out.text());
    }
    tavern(&a, &["claim", &ids[0]]).ok();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    agrees(&s, &b.join(".tavern"), "a sync bringing 30 new tasks");

    for id in &ids[1..10] {
        tavern(&a, &["edit", id, "--set", "priority=0"]).ok();
    }
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    agrees(&s, &b.join(".tavern"), "a sync bringing edits");
}
