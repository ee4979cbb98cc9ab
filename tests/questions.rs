//! Questions and permission requests: `ask`, `answer`, `questions`, `approve`/`deny` on a
//! permission request, the tasks they block and unblock, and every refusal.

use crate::util::{BIN, TestBoard, redact_times, snapshot};

/// A board with task `t-a` claimed and started by `coder`.
fn board_with_working_task() -> TestBoard {
    let b = TestBoard::new();
    b.task("Parser", &["--id", "t-a"]);
    b.run(&["claim", "t-a", "--as", "coder"]).ok();
    b.run(&["start", "t-a", "--as", "coder"]).ok();
    b
}

fn status(b: &TestBoard, rel: &str) -> String {
    b.read(rel)
        .lines()
        .find_map(|l| l.strip_prefix("status: "))
        .unwrap()
        .to_string()
}

const ASKED: &str = "---\nid: q-db\ntitle: Which database?\nstatus: open\nkind: question\nasked_by: coder\ntags: []\ncreated_at: <TIME>\ncreated_by: coder\nupdated_at: <TIME>\nrev: 1\noptions: [pg, sqlite]\nblocks: [t-a]\ncontext: storage\n---\n\nWe need one.\n";

#[test]
fn ask_creates_the_question_and_blocks_the_working_task() {
    let b = board_with_working_task();
    b.run(&[
        "ask",
        "Which database?",
        "--options",
        "pg,sqlite",
        "--blocks",
        "t-a",
        "--context",
        "storage",
        "--body",
        "We need one.",
        "--id",
        "q-db",
        "--as",
        "coder",
    ])
    .ok()
    .stdout_is("q-db\n")
    .stderr_is("");
    assert_eq!(redact_times(&b.read("questions/q-db.md")), ASKED);
    assert_eq!(status(&b, "tasks/t-a.md"), "blocked");
    let log = b.log();
    let last = log.last().unwrap();
    assert_eq!(last["op"], "transition");
    assert_eq!(last["transition"], "block");
    assert_eq!(last["actor"], "coder");
    assert_eq!(last["note"], "blocked by q-db");
}

#[test]
fn a_question_without_a_body_says_what_is_asked() {
    let b = board_with_working_task();
    b.run(&[
        "ask",
        "Which database?",
        "--options",
        "pg,sqlite",
        "--blocks",
        "t-a",
        "--context",
        "storage",
        "--id",
        "q-db",
        "--as",
        "coder",
    ])
    .ok();
    assert!(b.read("questions/q-db.md").ends_with(
        "---\n\n## Question\n\nWhich database?\n\n## Options\n\n- pg\n- sqlite\n\n## Blocks\n\nt-a\n\n## Context\n\nstorage\n"
    ));
    ask_permission(&b);
    assert!(b.read("questions/q-p.md").ends_with(
        "---\n\n## Permission\n\n- capability: network\n- resource: github.com\n- reason: fetch dependencies\n"
    ));
    b.run(&["new", "question", "--title", "Plain?", "--id", "q-plain"])
        .ok();
    assert!(b.read("questions/q-plain.md").ends_with("\nrev: 1\n---\n"));
}

#[test]
fn ask_json_prints_the_document() {
    let b = TestBoard::new();
    let out = b.run(&["ask", "Why?", "--id", "q-why", "--json"]);
    out.ok();
    let v = out.json();
    assert_eq!(v["id"], "q-why");
    assert!(v["seq"].is_u64());
}

#[test]
fn ask_warns_about_tasks_it_cannot_block_and_refuses_missing_ones() {
    let b = TestBoard::new();
    b.task("Pending", &["--id", "t-p"]);
    let out = b.run(&["ask", "Which?", "--blocks", "t-p", "--id", "q-1"]);
    out.ok().stdout_is("q-1\n").stderr_has(
        "warning: task t-p is listed in blocks but was not blocked: tasks/t-p.md: transition 'block' is not allowed: the task's status is pending",
    );
    assert!(b.read("questions/q-1.md").contains("blocks: [t-p]\n"));
    assert_eq!(status(&b, "tasks/t-p.md"), "pending");

    // Someone else's task: not the claimant, so it is not blocked either.
    let b = board_with_working_task();
    b.run(&["ask", "Which?", "--blocks", "t-a", "--as", "other"])
        .ok()
        .stderr_has("warning: task t-a is listed in blocks but was not blocked")
        .stderr_has("only the claimant may move it");
    assert_eq!(status(&b, "tasks/t-a.md"), "working");

    let before = snapshot(&b);
    b.run(&["ask", "Which?", "--blocks", "t-nope"])
        .code(4)
        .stderr_has("task 't-nope' (named in --blocks)");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn answer_records_it_and_unblocks_the_task() {
    let b = board_with_working_task();
    b.run(&[
        "ask", "Which?", "--blocks", "t-a", "--id", "q-1", "--as", "coder",
    ])
    .ok();
    b.run(&["answer", "q-1", "Use pg", "--as", "alice"])
        .ok()
        .stdout_is("answered q-1 (rev 2)\nunblocked t-a\n");
    let q = redact_times(&b.read("questions/q-1.md"));
    assert!(
        q.contains("status: answered\n")
            && q.contains("answer: Use pg\nanswered_by: alice\nanswered_at: <TIME>\n"),
        "{q}"
    );
    assert_eq!(status(&b, "tasks/t-a.md"), "working");
    let log = b.log();
    let last = log.last().unwrap();
    assert_eq!(last["transition"], "unblock");
    assert_eq!(last["actor"], "alice");
    // The answer is what the claimant waited for, not a human overriding it.
    assert_eq!(last.get("force"), None);
    assert_eq!(last["note"], "unblocked: q-1 answered");
    let seq = last["seq"].to_string();
    b.run(&[
        "log",
        "--since",
        &(last["seq"].as_u64().unwrap() - 1).to_string(),
    ])
    .ok()
    .stdout_has(&format!("{seq} "))
    .stdout_has("unblock blocked -> working rev 5 — unblocked: q-1 answered\n");
    // Only an open question can be answered.
    b.run(&["answer", "q-1", "again"])
        .code(3)
        .stderr_has("it is answered, not open");
}

#[test]
fn a_task_blocked_by_two_questions_waits_for_both() {
    let b = board_with_working_task();
    b.run(&[
        "ask", "One?", "--blocks", "t-a", "--id", "q-1", "--as", "coder",
    ])
    .ok()
    .stderr_is("");
    b.run(&[
        "ask", "Two?", "--blocks", "t-a", "--id", "q-2", "--as", "coder",
    ])
    .ok()
    .stderr_is("");
    assert_eq!(status(&b, "tasks/t-a.md"), "blocked");
    b.run(&["answer", "q-1", "yes"])
        .ok()
        .stdout_is("answered q-1 (rev 2)\n")
        .stderr_has("task t-a stays blocked: open question q-2 blocks it too");
    assert_eq!(status(&b, "tasks/t-a.md"), "blocked");
    b.run(&["answer", "q-2", "no"])
        .ok()
        .stdout_is("answered q-2 (rev 2)\nunblocked t-a\n");
    assert_eq!(status(&b, "tasks/t-a.md"), "working");
}

#[test]
fn choice_must_be_one_of_the_options() {
    let b = TestBoard::new();
    b.run(&["ask", "Which?", "--options", "pg,sqlite", "--id", "q-1"])
        .ok();
    let before = snapshot(&b);
    b.run(&["answer", "q-1", "--choice", "mysql"])
        .code(2)
        .stderr_has("'mysql' is not an option of question q-1; its options are: 'pg', 'sqlite'");
    b.run(&["answer", "q-1"]).code(2);
    assert_eq!(snapshot(&b), before);
    b.run(&["answer", "q-1", "--choice", "sqlite", "--json"])
        .ok();
    assert!(b.read("questions/q-1.md").contains("answer: sqlite\n"));
}

#[test]
fn questions_lists_open_ones_oldest_first() {
    let b = TestBoard::new();
    for id in ["q-z", "q-a", "q-m", "q-done"] {
        b.run(&["ask", &format!("Question {id}"), "--id", id]).ok();
    }
    b.run(&["edit", "q-z", "--set", "created_at=2020-01-01T00:00:00Z"])
        .ok();
    b.run(&["edit", "q-m", "--set", "created_at=2099-01-01T00:00:00Z"])
        .ok();
    b.run(&["edit", "q-a", "--set", "blocks=[t-1]"]).code(4);
    b.task("Blocked", &["--id", "t-1"]);
    b.run(&["edit", "q-a", "--set", "blocks=[t-1]"]).ok();
    b.run(&["answer", "q-done", "done", "--as", "alice"]).ok();
    // Who asked and what waits for it, rather than an OWNER a question never has.
    b.run(&["questions"]).ok().stdout_is(
        "ID   STATUS  ASKED_BY  BLOCKS  TITLE         ANSWER\n\
         q-z  open    tester    -       Question q-z  -\n\
         q-a  open    tester    t-1     Question q-a  -\n\
         q-m  open    tester    -       Question q-m  -\n",
    );
    let all = b.run(&["questions", "--all"]);
    all.ok();
    assert_eq!(all.stdout.lines().count(), 5, "{}", all.stdout);
    assert!(
        all.stdout
            .contains("q-done  answered  tester    -       Question q-done  done\n"),
        "{}",
        all.stdout
    );
    let empty = TestBoard::new();
    empty
        .run(&["questions"])
        .ok()
        .stdout_is("")
        .stderr_is("no open questions\n");
    let v = b.run(&["questions", "--json"]).json();
    let ids: Vec<&str> = v["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["q-z", "q-a", "q-m"]);
}

fn ask_permission(b: &TestBoard) {
    b.run(&[
        "ask",
        "--permission",
        "network",
        "--resource",
        "github.com",
        "--reason",
        "fetch dependencies",
        "--id",
        "q-p",
        "--as",
        "coder",
    ])
    .ok()
    .stdout_is("q-p\n");
}

fn humans(b: &TestBoard, names: &str) {
    let cfg = b
        .read("board.yaml")
        .replace("humans: []", &format!("humans: [{names}]"));
    b.write("board.yaml", cfg);
}

fn alerts(b: &TestBoard) -> Vec<serde_json::Value> {
    b.log().into_iter().filter(|e| e["op"] == "alert").collect()
}

#[test]
fn a_permission_request_has_its_fields() {
    let b = TestBoard::new();
    ask_permission(&b);
    let q = redact_times(&b.read("questions/q-p.md"));
    assert!(
        q.starts_with("---\nid: q-p\ntitle: \"Permission: network on github.com\"\nstatus: open\nkind: permission\n"),
        "{q}"
    );
    assert!(
        q.contains("capability: network\nresource: github.com\nreason: fetch dependencies\n"),
        "{q}"
    );
    // A permission request is decided, not answered.
    b.run(&["answer", "q-p", "sure"])
        .code(3)
        .stderr_has("tavern approve q-p");
}

#[test]
fn permission_is_refused_to_a_non_human_and_logged() {
    let b = TestBoard::new();
    humans(&b, "alice");
    ask_permission(&b);
    let before = snapshot(&b);
    b.run(&["approve", "q-p", "--as", "coder"])
        .code(3)
        .stderr_has("coder may not approve permission request q-p: not a human");
    b.run(&["deny", "q-p", "--as", "coder"]).code(3);
    assert_eq!(
        b.read("questions/q-p.md").as_bytes(),
        before["questions/q-p.md"].as_slice()
    );
    let alerts = alerts(&b);
    assert_eq!(alerts.len(), 2);
    assert_eq!(alerts[0]["actor"], "coder");
    assert_eq!(alerts[0]["doc"], "questions/q-p.md");
    assert!(
        alerts[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("refused: coder may not approve q-p: not a human")
    );
    assert!(
        alerts[1]["note"]
            .as_str()
            .unwrap()
            .starts_with("refused: coder may not deny q-p: not a human")
    );
}

#[test]
fn permission_is_refused_to_a_human_without_a_terminal() {
    let b = TestBoard::new();
    humans(&b, "alice");
    ask_permission(&b);
    b.run(&["approve", "q-p", "--as", "alice"])
        .code(3)
        .stderr_has("alice may not approve permission request q-p: no terminal");
    b.run_stdin(&["deny", "q-p", "--as", "alice"], "q-p\n")
        .code(3)
        .stderr_has("no terminal");
    assert!(b.read("questions/q-p.md").contains("status: open\n"));
    let alerts = alerts(&b);
    assert_eq!(alerts.len(), 2);
    assert!(
        alerts[0]["note"]
            .as_str()
            .unwrap()
            .starts_with("refused: alice may not approve q-p: no terminal")
    );
}

#[test]
fn approve_still_approves_tasks() {
    let b = board_with_working_task();
    b.run(&["submit", "t-a", "--as", "coder"]).ok();
    b.run(&["approve", "t-a", "--as", "reviewer"])
        .ok()
        .stdout_is("approved t-a (rev 5, done)\n");
}

/// Runs `tavern ARGS` under `script`, so standard input is a terminal, typing `typed`.
fn run_at_terminal(b: &TestBoard, args: &str, typed: &str) -> Option<crate::util::Out> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    if !crate::util::has_script() {
        return None;
    }
    let mut child = Command::new("script")
        .args(["-qec", &format!("'{BIN}' {args}"), "/dev/null"])
        .current_dir(b.root())
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env("USER", "tester")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run script");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(typed.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    Some(crate::util::Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    })
}

#[test]
fn a_human_at_a_terminal_decides_after_typing_the_id() {
    let b = TestBoard::new();
    humans(&b, "alice");
    ask_permission(&b);
    let Some(out) = run_at_terminal(&b, "approve q-p --as alice", "q-x\n") else {
        return;
    };
    // The prompt shows what is being decided before asking for the id.
    out.code(3).stdout_has(
        "permission request q-p from coder\r\n  capability: network\r\n  resource:   github.com\r\n  reason:     fetch dependencies\r\n  preview:\r\n    ## Permission\r\n",
    );
    out.stdout_has("type q-p to approve: ");
    out.stdout_has("the confirmation did not match");
    assert!(b.read("questions/q-p.md").contains("status: open\n"));

    let out = run_at_terminal(&b, "deny q-p --as alice", "q-p\n").unwrap();
    out.ok().stdout_has("denied q-p (rev 2, denied)");
    let q = redact_times(&b.read("questions/q-p.md"));
    assert!(
        q.contains("status: denied\n") && q.contains("decided_by: alice\ndecided_at: <TIME>\n"),
        "{q}"
    );
    let log = b.log();
    let last = log.last().unwrap();
    assert_eq!(last["op"], "edit");
    assert_eq!(last["note"], "permission denied: network on github.com");
    assert_eq!(last["actor"], "alice");
    assert_eq!(alerts(&b).len(), 1);
    // Decided once: a second decision is a conflict.
    let out = run_at_terminal(&b, "approve q-p --as alice", "q-p\n").unwrap();
    out.code(3).stdout_has("it is already denied");
}
