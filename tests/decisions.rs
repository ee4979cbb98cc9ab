//! Human decisions are derived from the log: a permission request counts as approved or
//! denied only when the log holds `approve`/`deny` by an actor listed under `humans:`.
//! Every other way to write the decision is refused where tavern writes it (exit 3, an
//! alert in the log), and a file that claims one anyway (a hand edit) is shown as forged
//! by every reader and reported by `check`. The same for MCP (tests/mcp.rs), the
//! dashboard (tests/web.rs) and a file arriving by sync (tests/clones.rs).

use std::path::Path;

use serde_json::{Value, json};

use crate::util::{BIN, TestBoard, snapshot};

/// A board whose only human is alice, with coder's permission request q-p (network on
/// github.com).
pub fn board_with_request() -> TestBoard {
    let b = TestBoard::new();
    let cfg = b
        .read("board.yaml")
        .replace("humans: []", "humans: [alice]");
    b.write("board.yaml", cfg);
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
    .ok();
    b
}

fn alerts(b: &TestBoard) -> Vec<Value> {
    b.log().into_iter().filter(|e| e["op"] == "alert").collect()
}

/// `tavern ARGS` run at a terminal (under `script`), typing `typed`: how a human decides.
pub fn at_terminal(b: &TestBoard, args: &str, typed: &str) -> crate::util::Out {
    at_terminal_in(b.root(), args, typed)
}

/// The same in the project at `dir` (a clone), with git's test environment.
pub fn at_terminal_in(dir: &Path, args: &str, typed: &str) -> crate::util::Out {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut c = Command::new("script");
    c.args(["-qec", &format!("'{BIN}' {args}"), "/dev/null"])
        .current_dir(dir)
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env("USER", "tester")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::util::git::env(&mut c);
    let mut child = c
        .spawn()
        .expect("`script` (util-linux) runs a command at a terminal: install util-linux");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(typed.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    crate::util::Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

/// The decision `show --json` reports for a document.
fn decision(b: &TestBoard, id: &str) -> Value {
    b.run(&["--json", "show", id]).ok().json()["decision"].clone()
}

/// What a hand edit writes to claim that alice approved q-p.
fn forge_approval(b: &TestBoard) {
    let q = b.read("questions/q-p.md");
    let forged = q.replacen(
        "status: open\n",
        "status: approved\ndecided_by: alice\ndecided_at: 2026-11-25T10:00:00Z\n",
        1,
    );
    assert_ne!(q, forged);
    b.write("questions/q-p.md", forged);
}

/// Every way to write a decision with `edit`, by every reference form, by an agent and by
/// the human herself (not through approve): exit 3, the file untouched, one alert each
/// naming who tried what.
#[test]
fn edit_cannot_decide_a_permission_request_by_any_reference() {
    let b = board_with_request();
    let board = b.board();
    let abs = board.join("questions/q-p.md");
    let refs = [
        "q-p",
        "q-",
        "questions/q-p",
        "questions/q-p.md",
        ".tavern/questions/q-p.md",
        abs.to_str().unwrap(),
    ];
    let attempts: [(&[&str], &str); 7] = [
        (
            &["--set", "status=approved", "--set", "decided_by=alice"],
            "set status=approved",
        ),
        (&["--set", "status=denied"], "set status=denied"),
        (&["--set", "decided_by=alice"], "set decided_by=alice"),
        (&["--unset", "status"], "unset status"),
        (&["--set", "status=open", "--force"], "set status=open"),
        (&["--set", "resource=/etc", "--force"], "set resource=/etc"),
        (&["--set", "kind=question", "--force"], "set kind=question"),
    ];
    let before = b.read("questions/q-p.md");
    let mut expected_alerts = 0;
    for actor in ["coder", "alice"] {
        for r in refs {
            for (args, what) in attempts {
                let argv = [&["edit", r, "--as", actor][..], args].concat();
                b.run(&argv).code(3).stderr_is(&format!(
                    "error: questions/q-p.md: {actor} may not {what}: a permission request is decided only by a human listed under humans: in board.yaml, with `tavern approve q-p` or `tavern deny q-p` (logged)\n"
                ));
                expected_alerts += 1;
                let alerts = alerts(&b);
                assert_eq!(alerts.len(), expected_alerts, "{argv:?}");
                let last = alerts.last().unwrap();
                assert_eq!(last["actor"], actor);
                assert_eq!(last["doc"], "questions/q-p.md");
                assert_eq!(
                    last["note"],
                    format!(
                        "refused: {actor} may not {what} (questions/q-p.md): a permission request is decided only by a human, with approve or deny"
                    )
                );
            }
        }
    }
    assert_eq!(b.read("questions/q-p.md"), before);
    assert!(
        b.log()
            .iter()
            .all(|e| e["op"] != "edit" || e["doc"] != "questions/q-p.md")
    );
    assert_eq!(decision(&b, "q-p"), json!({"state": "open"}));
    b.run(&["check"]).ok();
}

/// `new --set` cannot make a decided question either, with or without an id.
#[test]
fn new_cannot_make_a_decided_question() {
    let b = board_with_request();
    let before = snapshot(&b);
    let n = alerts(&b).len();
    let cases: [(&[&str], &str); 4] = [
        (&["--set", "status=approved"], "set status=approved"),
        (&["--set", "decided_by=alice"], "set decided_by=alice"),
        (
            &["--set", "kind=permission", "--set", "status=denied"],
            "set status=denied",
        ),
        (
            &["--set", "decided_at=2026-11-25T10:00:00Z"],
            "set decided_at=2026-11-25T10:00:00Z",
        ),
    ];
    for (i, (args, what)) in cases.iter().enumerate() {
        let id = format!("q-n{i}");
        let argv = [
            &["new", "question", "May I?", "--id", &id, "--as", "coder"][..],
            args,
        ]
        .concat();
        b.run(&argv).code(3).stdout_is("").stderr_is(&format!(
            "error: questions/{id}.md: coder may not {what}: a permission request is decided only by a human listed under humans: in board.yaml, with `tavern approve {id}` or `tavern deny {id}` (logged)\n"
        ));
        let last = alerts(&b).pop().unwrap();
        assert_eq!(last["doc"], format!("questions/{id}.md"));
        assert_eq!(last["actor"], "coder");
    }
    // Without an id, the alert names the region.
    b.run(&[
        "new",
        "question",
        "May I?",
        "--set",
        "status=approved",
        "--as",
        "coder",
    ])
    .code(3)
    .stderr_has("coder may not set status=approved");
    assert_eq!(alerts(&b).pop().unwrap()["doc"], "questions/");
    assert_eq!(alerts(&b).len(), n + 5);
    // Nothing else was written: only the alerts were appended to the log.
    let mut after = snapshot(&b);
    after.remove("log.yaml");
    let mut before = before;
    before.remove("log.yaml");
    assert_eq!(after, before);
}

/// Issue: `new` skipped the workflow (a claimed task out of nowhere) while `edit` refused
/// the same fields. Both now refuse them with one rule: the same message, exit 2.
#[test]
fn new_refuses_what_the_workflow_owns_as_edit_does() {
    let b = TestBoard::new();
    b.run(&["new", "task", "Existing", "--id", "t-e"]).ok();
    let before = snapshot(&b);
    let rule = |key: &str| {
        format!(
            "error: '{key}' of a task changes through its workflow: use `tavern move ID STATE`, `tavern claim` or `tavern release`"
        )
    };
    for (sets, key) in [
        (
            &["--set", "status=claimed", "--set", "claimed_by=someone"][..],
            "status",
        ),
        (&["--set", "claimed_by=someone"][..], "claimed_by"),
        (
            &["--set", "claimed_at=2026-11-25T10:00:00Z"][..],
            "claimed_at",
        ),
        (&["--set", "status=done"][..], "status"),
    ] {
        let new = b.run(&[&["new", "task", "x", "--id", "t-x"][..], sets].concat());
        new.code(2)
            .stdout_is("")
            .stderr_is(&format!("{} once the task exists\n", rule(key)));
        let edit = b.run(&[&["edit", "t-e"][..], sets].concat());
        edit.code(2).stderr_is(&format!(
            "{} (or --force to override, which is logged)\n",
            rule(key)
        ));
    }
    assert_eq!(snapshot(&b), before);
    // Where the workflow starts is fine to say.
    b.run(&["new", "task", "x", "--id", "t-x", "--set", "status=pending"])
        .ok();
    assert!(b.read("tasks/t-x.md").contains("status: pending\n"));

    // A question's status and answerer are `answer`'s.
    for (sets, key) in [
        (&["--set", "status=answered"][..], "status"),
        (&["--set", "answered_by=alice"][..], "answered_by"),
    ] {
        b.run(&[&["new", "question", "Which?", "--id", "q-w"][..], sets].concat())
            .code(2)
            .stderr_is(&format!(
                "error: '{key}' of a question changes when it is answered: use `tavern answer ID` once the question exists\n"
            ));
    }
    assert!(!b.board().join("questions/q-w.md").exists());
    b.run(&[
        "new",
        "question",
        "Which?",
        "--id",
        "q-w",
        "--set",
        "status=open",
    ])
    .ok();
    b.run(&["edit", "q-w", "--set", "status=answered"])
        .code(2)
        .stderr_is("error: 'status' of a question changes when it is answered: use `tavern answer ID` (or --force to override, which is logged)\n");
    // Not a decision: --force overrides it, as for a task.
    b.run(&["edit", "q-w", "--set", "status=answered", "--force"])
        .ok();
    assert!(b.read("questions/q-w.md").contains("status: answered\n"));
}

/// The human at a terminal decides; the decision is in the log, and every reader says so.
#[test]
fn a_human_at_a_terminal_decides_and_the_log_holds_it() {
    let b = board_with_request();
    // Not yet: open everywhere.
    assert_eq!(decision(&b, "q-p"), json!({"state": "open"}));
    at_terminal(&b, "approve q-p --as alice", "q-p\n")
        .ok()
        .stdout_has("approved q-p (rev 2, approved)");
    let d = decision(&b, "q-p");
    assert_eq!(
        (d["state"].as_str(), d["by"].as_str()),
        (Some("approved"), Some("alice"))
    );
    let last = b.log().pop().unwrap();
    assert_eq!(
        (
            last["actor"].as_str(),
            last["op"].as_str(),
            last["note"].as_str()
        ),
        (
            Some("alice"),
            Some("edit"),
            Some("permission approved: network on github.com")
        )
    );
    b.run(&["questions"]).ok().stdout_is("");
    let all = b.run(&["--json", "questions", "--all"]).ok().json();
    assert_eq!(all["documents"][0]["decision"]["state"], "approved");
    b.run(&["check"]).ok();
    // Decided once: it stays decided.
    at_terminal(&b, "deny q-p --as alice", "q-p\n")
        .code(3)
        .stdout_has("it is already approved by alice");
}

/// A hand edit that claims alice approved: every reader shows it as forged, the request
/// still waits for a human, `check` names it; a human's decision then makes it whole.
#[test]
fn a_hand_edited_decision_is_forged_everywhere() {
    let b = board_with_request();
    forge_approval(&b);
    let why =
        "forged: it says approved by alice, but the log holds no approve or deny of it by a human";
    let warning = format!(
        "warning: questions/q-p.md: {why} (it counts as undecided; a human decides it with approve or deny)\n"
    );
    // show: the file as it is, the warning before it; JSON says forged.
    let shown = b
        .run(&["show", "q-p"])
        .ok()
        .stderr_is(&warning)
        .stdout
        .clone();
    assert!(shown.contains("status: approved\n"));
    let d = decision(&b, "q-p");
    assert_eq!(
        d,
        json!({"state": "forged", "says": "approved by alice", "why": "the log holds no approve or deny of it by a human"})
    );
    // questions: still waiting, marked.
    let open = b
        .run(&["questions"])
        .ok()
        .stderr_is(&warning)
        .stdout
        .clone();
    assert!(open.contains("q-p  approved (forged)  coder"), "{open}");
    let json = b.run(&["--json", "questions"]).ok().json();
    assert_eq!(json["documents"][0]["decision"]["state"], "forged");
    let listed = b.run(&["list", "questions"]).ok().stdout.clone();
    assert!(listed.contains("approved (forged)"), "{listed}");
    // summary: among the open questions, said forged.
    let summary = b.run(&["summary"]).ok().stdout.clone();
    assert!(
        summary.contains(&format!(
            "- q-p Permission: network on github.com — asked by coder — {why}\n"
        )),
        "{summary}"
    );
    let s = b.run(&["--json", "summary"]).ok().json();
    assert_eq!(s["questions"][0]["decision"]["state"], "forged");
    // check: exit 6, naming it.
    b.run(&["check"]).code(6).stderr_has(
        "questions/q-p.md: forged decision: it says approved by alice, but the log holds no approve or deny of it by a human; it counts as undecided until a human listed under humans: in board.yaml approves or denies it\n",
    );
    // An agent still cannot turn it into a decision...
    b.run(&["approve", "q-p", "--as", "coder"]).code(3);
    // ...a human can: the forged claim is replaced by a real decision.
    at_terminal(&b, "deny q-p --as alice", "q-p\n")
        .ok()
        .stdout_has("denied q-p");
    assert_eq!(decision(&b, "q-p")["state"], "denied");
    b.run(&["check"]).ok();
    b.run(&["questions"])
        .ok()
        .stdout_is("")
        .stderr_is("no open questions\n");
}

/// A forged decision still waits for a human, so `archive` leaves it where the human sees
/// it; one moved to the archive anyway (by hand, or by sync) is reported by `check` there.
/// A request a human decided archives as any finished question, and stays decided.
#[test]
fn a_forged_decision_is_not_archived_and_check_reads_the_archive() {
    let b = board_with_request();
    forge_approval(&b);
    let forged = b.read("questions/q-p.md");
    for args in [
        &["archive", "--dry-run"][..],
        &["archive"],
        &["archive", "q-p"],
    ] {
        b.run(args)
            .ok()
            .stdout_is("")
            .stderr_has("nothing to archive: no finished document matches\n");
    }
    assert_eq!(b.read("questions/q-p.md"), forged);
    assert!(!b.board().join("archive/questions/q-p.md").exists());
    assert!(b.log().iter().all(|e| e["op"] != "move"));
    // `list` sorts it among what is still open, before a finished question.
    b.run(&["ask", "Which db?", "--id", "q-a", "--as", "coder"])
        .ok();
    b.run(&["answer", "q-a", "pg", "--as", "alice"]).ok();
    let listed = b.run(&["list", "questions"]).ok().stdout.clone();
    let rows: Vec<&str> = listed.lines().skip(1).map(|l| &l[..3]).collect();
    assert_eq!(rows, ["q-p", "q-a"], "{listed}");

    // Moved into the archive by hand: check still names it, at its archived path.
    std::fs::create_dir_all(b.board().join("archive/questions")).unwrap();
    std::fs::rename(
        b.board().join("questions/q-p.md"),
        b.board().join("archive/questions/q-p.md"),
    )
    .unwrap();
    b.run(&["check"]).code(6).stderr_has(
        "archive/questions/q-p.md: forged decision: it says approved by alice, but the log holds no approve or deny of it by a human",
    );
    assert_eq!(decision(&b, "q-p")["state"], "forged");

    // Back where it was, decided by the human: archived like any finished question.
    std::fs::rename(
        b.board().join("archive/questions/q-p.md"),
        b.board().join("questions/q-p.md"),
    )
    .unwrap();
    at_terminal(&b, "deny q-p --as alice", "q-p\n").ok();
    b.run(&["archive", "q-p"])
        .ok()
        .stdout_has("questions/q-p.md: archived: moved to archive/questions/q-p.md");
    assert_eq!(decision(&b, "q-p")["state"], "denied");
    b.run(&["check"]).ok();
}

/// Task and observation commands given a permission request say it is a question (exit
/// 2), write nothing and raise no alert: they are not a way to decide it either.
#[test]
fn task_and_observation_commands_given_a_request_say_it_is_a_question() {
    let b = board_with_request();
    let before = snapshot(&b);
    for (args, says) in [
        (
            &["claim", "q-p"][..],
            "q-p is a question, not a task: claims and transitions work on tasks",
        ),
        (
            &["start", "q-p"],
            "q-p is a question, not a task: claims and transitions work on tasks",
        ),
        (
            &["move", "q-p", "done"],
            "q-p is a question, not a task: claims and transitions work on tasks",
        ),
        (
            &["ack", "q-p"],
            "q-p is a question, not an observation: ack works on observations",
        ),
        (
            &["resolve", "q-p", "--resolution", "done"],
            "q-p is a question, not an observation: resolve works on observations",
        ),
        (
            &["reject", "q-p"],
            "q-p is a question, not a task or an observation: reject works on tasks in review and on observations",
        ),
        (
            &["reject", "questions/q-p"],
            "questions/q-p names a question, and only a task or observation can be given here",
        ),
    ] {
        b.run(&[args, &["--as", "coder"]].concat())
            .code(2)
            .stderr_is(&format!("error: {says}\n"));
    }
    assert_eq!(snapshot(&b), before);
}

/// What looks like a decision but is not one: a decider other than the log's, a request
/// changed after its decision, a decider no longer listed, a question that is no request.
#[test]
fn decisions_that_do_not_hold_are_forged() {
    let b = board_with_request();
    at_terminal(&b, "approve q-p --as alice", "q-p\n").ok();
    let approved = b.read("questions/q-p.md");
    let forged_why = |b: &TestBoard| decision(b, "q-p")["why"].as_str().unwrap_or("").to_string();

    // Another human named as the decider.
    let cfg = b
        .read("board.yaml")
        .replace("humans: [alice]", "humans: [alice, bob]");
    b.write("board.yaml", &cfg);
    b.write(
        "questions/q-p.md",
        approved.replace("decided_by: alice", "decided_by: bob"),
    );
    assert_eq!(forged_why(&b), "the log says approved by alice");

    // The request changed under the decision: another resource.
    b.write(
        "questions/q-p.md",
        approved.replace("resource: github.com", "resource: /etc"),
    );
    assert_eq!(
        forged_why(&b),
        "alice decided on network on github.com, and the request has changed since"
    );
    b.run(&["check"])
        .code(6)
        .stderr_has("questions/q-p.md: forged decision");

    // The decider is no longer listed under humans.
    b.write("questions/q-p.md", &approved);
    assert_eq!(decision(&b, "q-p")["state"], "approved");
    b.write(
        "board.yaml",
        cfg.replace("humans: [alice, bob]", "humans: [bob]"),
    );
    assert_eq!(
        forged_why(&b),
        "the log's approved is by alice and is not listed under humans: in board.yaml"
    );

    // A plain question that claims a decision.
    b.run(&["ask", "Which db?", "--id", "q-db", "--as", "coder"])
        .ok();
    let q = b
        .read("questions/q-db.md")
        .replace("status: open", "status: approved");
    b.write("questions/q-db.md", q);
    assert_eq!(
        decision(&b, "q-db")["why"],
        "it is not a permission request, and only those are decided (by a human)"
    );
    // A plain open question has no decision at all.
    b.run(&["ask", "Which os?", "--id", "q-os", "--as", "coder"])
        .ok();
    assert_eq!(decision(&b, "q-os"), Value::Null);
}

/// Decisions logged before they named what they decided on (`permission approved`) still
/// count.
#[test]
fn decisions_logged_by_earlier_versions_still_count() {
    let b = board_with_request();
    at_terminal(&b, "approve q-p --as alice", "q-p\n").ok();
    let log = b.read("log.yaml");
    let old = log.replace(
        "note: \"permission approved: network on github.com\"",
        "note: \"permission approved\"",
    );
    assert_ne!(log, old);
    b.write("log.yaml", old);
    assert_eq!(decision(&b, "q-p")["state"], "approved");
    b.run(&["check"]).ok();
}

/// An agent waiting for its request (`ask --permission … --wait`) never takes a forged
/// approval for one: it is told the request is forged and keeps waiting, until a human
/// decides; readers of the request (`show`, `questions`) say forged meanwhile.
#[test]
fn a_waiting_agent_never_sees_a_forged_approval() {
    use std::io::{BufRead, BufReader};
    let b = board_with_request();
    let mut child = b
        .cmd(&[
            "ask",
            "--permission",
            "deploy",
            "--resource",
            "prod",
            "--reason",
            "ship",
            "--id",
            "q-w",
            "--as",
            "coder",
            "--wait",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "q-w\n", "ask prints the id before it waits");
    // A hand edit claims alice approved it.
    let q = b.read("questions/q-w.md");
    b.write(
        "questions/q-w.md",
        q.replacen("status: open\n", "status: approved\ndecided_by: alice\n", 1),
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut warning = String::new();
    stderr.read_line(&mut warning).unwrap();
    assert_eq!(
        warning,
        "warning: q-w: forged: it says approved by alice, but the log holds no approve or deny of it by a human (still waiting for a human)\n"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "the forged approval ended the wait"
    );
    for cmd in [&["--json", "show", "q-w"][..], &["--json", "questions"][..]] {
        let out = b.run(&[cmd, &["--as", "coder"]].concat()).ok().json();
        let d = match out.get("documents") {
            Some(docs) => docs
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["id"] == "q-w")
                .unwrap()["decision"]
                .clone(),
            None => out["decision"].clone(),
        };
        assert_eq!(d["state"], "forged", "{cmd:?}: {out}");
    }
    // The human decides: the wait ends, approved.
    at_terminal(&b, "approve q-w --as alice", "q-w\n").ok();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "approved q-w by alice\n");
    assert_eq!(status.code(), Some(0));

    // Denied: exit 3.
    let mut child = b
        .cmd(&[
            "ask",
            "--permission",
            "deploy",
            "--resource",
            "prod",
            "--reason",
            "again",
            "--id",
            "q-d",
            "--as",
            "coder",
            "--wait",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "q-d\n");
    at_terminal(&b, "deny q-d --as alice", "q-d\n").ok();
    let out = child.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "denied q-d by alice\n");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: questions/q-d.md: permission request q-d was denied by alice\n"
    );
    assert_eq!(out.status.code(), Some(3));
}

/// A question asked with --wait ends its wait when it is answered.
#[test]
fn ask_wait_ends_when_the_question_is_answered() {
    let b = TestBoard::new();
    use std::io::{BufRead, BufReader, Read};
    let mut child = b
        .cmd(&[
            "ask",
            "Which db?",
            "--options",
            "pg,sqlite",
            "--id",
            "q-db",
            "--as",
            "coder",
            "--wait",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "q-db\n", "ask prints the id before it waits");
    b.run(&["answer", "q-db", "--choice", "pg", "--as", "alice"])
        .ok();
    let status = child.wait().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert_eq!(rest, "answered q-db by alice: pg\n");
    assert_eq!(status.code(), Some(0));
}

/// A decision forged by hand on one clone arrives on the other by `tavern sync`, where it
/// cannot be refused: on both clones every reader says forged and `check` exits 6 naming
/// it; a human's decision on either clone makes both whole after the next syncs.
#[test]
fn a_forged_decision_arriving_by_sync_is_forged_on_every_clone() {
    use crate::worktrees::tavern;
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, _remote) = crate::sync_branch::two_clones(tmp.path());
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    let yaml = a.join(".tavern/board.yaml");
    std::fs::write(&yaml, read(&yaml).replace("humans: []", "humans: [alice]")).unwrap();
    tavern(
        &a,
        &[
            "ask",
            "--permission",
            "network",
            "--resource",
            "github.com",
            "--reason",
            "fetch",
            "--id",
            "q-p",
            "--as",
            "coder",
        ],
    )
    .ok();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    assert!(read(&b.join(".tavern/board.yaml")).contains("humans: [alice]"));
    // On b, someone writes the approval into the file and records it.
    let qb = b.join(".tavern/questions/q-p.md");
    std::fs::write(
        &qb,
        read(&qb).replacen(
            "status: open\n",
            "status: approved\ndecided_by: alice\ndecided_at: 2026-11-25T10:00:00Z\n",
            1,
        ),
    )
    .unwrap();
    tavern(&b, &["sync"]).ok();
    tavern(&a, &["sync"]).ok();
    assert!(
        read(&a.join(".tavern/questions/q-p.md")).contains("status: approved\ndecided_by: alice\n")
    );
    for dir in [&a, &b] {
        tavern(dir, &["check"]).code(6).stderr_has(
            "questions/q-p.md: forged decision: it says approved by alice, but the log holds no approve or deny of it by a human",
        );
        let d = tavern(dir, &["--json", "show", "q-p"]).ok().json()["decision"].clone();
        assert_eq!(d["state"], "forged", "{}", dir.display());
        tavern(dir, &["questions"])
            .ok()
            .stdout_has("q-p  approved (forged)");
    }
    // Alice decides on a; both clones agree after the next syncs.
    at_terminal_in(&a, "approve q-p --as alice", "q-p\n").ok();
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    for dir in [&a, &b] {
        let d = tavern(dir, &["--json", "show", "q-p"]).ok().json()["decision"].clone();
        assert_eq!(
            (d["state"].as_str(), d["by"].as_str()),
            (Some("approved"), Some("alice")),
            "{}",
            dir.display()
        );
        tavern(dir, &["check"]).ok();
    }
}
