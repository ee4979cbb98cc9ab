//! `tavern mcp` driven by a client the project did not write: the official MCP Python SDK
//! (tests/mcp/client.py, installed into target/mcp-venv by .ci/run). Each test gives the
//! client a scenario, then checks what it got back and what is on disk and in the log.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use crate::util::{BIN, TestBoard, redact_times};

/// The Python of the venv that has the MCP SDK, or None when it is missing: the test is
/// skipped (visibly, and a failure under CI; see util::skip).
fn python() -> Option<PathBuf> {
    let py = std::env::var_os("TAVERN_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-venv/bin/python")
        });
    if py.exists() {
        return Some(py);
    }
    crate::util::skip::missing(
        &format!(
            "the MCP client (python with the MCP SDK at {})",
            py.display()
        ),
        "python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp, what .ci/run does",
    );
    None
}

/// Runs one scenario through the Python client and returns what it printed.
fn drive(py: &PathBuf, scenario: Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scenario.json");
    std::fs::write(&file, scenario.to_string()).unwrap();
    let out = Command::new(py)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py"))
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the MCP client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "client output is not JSON ({e}):\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn server(b: &TestBoard, args: &[&str]) -> Value {
    let mut all = vec!["mcp"];
    all.extend_from_slice(args);
    json!({"command": BIN, "args": all, "cwd": b.root(), "env": {"USER": "tester"}})
}

fn session(py: &PathBuf, b: &TestBoard, args: &[&str], steps: Value) -> Vec<Value> {
    match drive(py, json!({"server": server(b, args), "steps": steps})) {
        Value::Array(a) => a,
        other => panic!("expected a list of results, got {other}"),
    }
}

fn call(tool: &str, args: Value) -> Value {
    json!({"op": "call", "tool": tool, "args": args})
}

/// A step that runs `tavern ARGV` in the project, as a human at the CLI would meanwhile.
fn run(b: &TestBoard, argv: &[&str]) -> Value {
    let mut all = vec![BIN];
    all.extend_from_slice(argv);
    json!({"op": "run", "argv": all, "cwd": b.root()})
}

/// The ids of a page of documents a tool returned.
fn ids(v: &Value) -> Vec<String> {
    v["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

/// A tool result's value, asserting it succeeded.
#[track_caller]
/// The whole log as the CLI reads it (`tavern --json log`: one entry per line).
fn cli_log(b: &TestBoard) -> Vec<Value> {
    b.run(&["--json", "log"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ok(r: &Value) -> &Value {
    assert_eq!(r["is_error"], json!(false), "tool call failed: {r}");
    &r["value"]
}

#[test]
fn tools_list_per_profile_is_small_and_written_for_a_model() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    let core = &session(&py, &b, &["--as", "coder-1"], json!([{"op": "tools"}]))[0];
    assert_eq!(
        core["names"],
        json!([
            "status", "ready", "claim", "move", "show", "list", "observe", "ask"
        ])
    );
    let bytes = core["bytes"].as_u64().unwrap();
    assert!(bytes <= 12 * 1024, "core tools/list is {bytes} bytes");
    let full = &session(&py, &b, &["--profile", "full"], json!([{"op": "tools"}]))[0];
    assert_eq!(full["names"].as_array().unwrap().len(), 20);
    let full_bytes = full["bytes"].as_u64().unwrap();
    assert!(
        full_bytes <= 12 * 1024,
        "full tools/list is {full_bytes} bytes"
    );
    for t in full["tools"].as_array().unwrap() {
        let d = t["description"].as_str().unwrap();
        assert!(d.len() > 30, "{} has no real description", t["name"]);
        let schema = t["inputSchema"].to_string();
        assert!(
            !schema.contains("$ref") && !schema.contains("$schema"),
            "{schema}"
        );
    }
    // An explicit list, by flag and by environment; unknown names are refused at start.
    let some = &session(
        &py,
        &b,
        &["--tools", "show,claim"],
        json!([{"op": "tools"}]),
    )[0];
    assert_eq!(some["names"], json!(["claim", "show"]));
    let mut cfg = server(&b, &[]);
    cfg["env"]["TAVERN_MCP_TOOLS"] = json!("core,log");
    let env = drive(&py, json!({"server": cfg, "steps": [{"op": "tools"}]}));
    assert_eq!(env[0]["names"].as_array().unwrap().len(), 9);
    assert_eq!(env[0]["names"][8], json!("log"));
    b.run(&["mcp", "--tools", "claim,approve"])
        .code(2)
        .stderr_has("no tool 'approve'");
    // --list-tools prints the same list, to measure without a client.
    let listed = b.run(&["mcp", "--list-tools"]);
    listed.ok();
    assert_eq!(listed.json()["tools"].as_array().unwrap().len(), 8);
    assert!(listed.stdout.len() <= 12 * 1024);
}

/// The agent loop, once through MCP and once through the CLI on an identical board: the
/// task file and the log entries come out the same.
#[test]
fn status_starts_where_tavern_events_stopped() {
    let Some(py) = python() else { return };
    let m = TestBoard::new();
    m.run(&["new", "task", "--title", "Parse", "--id", "task-a"])
        .ok();
    // `events` keeps its cursor per origin; status reads the same cursor.
    m.run(&["--as", "coder-1", "events"]).ok();
    let r = session(
        &py,
        &m,
        &["--as", "coder-1"],
        json!([call("status", json!({}))]),
    );
    let ops: Vec<&str> = ok(&r[0])["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["op"].as_str().unwrap())
        .collect();
    assert_eq!(ops, ["agent"], "only the server's own registration is new");
}

#[test]
fn the_agent_loop_leaves_what_the_cli_leaves() {
    let Some(py) = python() else { return };
    let setup = |b: &TestBoard| {
        b.run(&[
            "new", "task", "--title", "Parse", "--id", "task-a", "-p", "1",
        ])
        .ok();
        b.run(&[
            "new", "task", "--title", "Later", "--id", "task-b", "-p", "3",
        ])
        .ok();
    };
    let m = TestBoard::new();
    setup(&m);
    let r = session(
        &py,
        &m,
        &["--as", "coder-1"],
        json!([
            call("status", json!({})),
            call("ready", json!({"limit": 1})),
            call("claim", json!({})),
            call("move", json!({"id": "task-a", "action": "start"})),
            call("observe", json!({"title": "Tabs in keys", "topic": "parser", "severity": "medium", "about": ["task-a"]})),
            call("ask", json!({"question": "Which YAML?", "options": ["1.1", "1.2"], "blocks": ["task-a"]})),
            {"op": "pid"},
        ]),
    );
    let status = ok(&r[0]);
    assert_eq!(status["agent"], json!("coder-1"));
    assert!(status["summary"].as_str().unwrap().contains("task-a Parse"));
    let changes: Vec<&str> = status["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["op"].as_str().unwrap())
        .collect();
    assert_eq!(changes, ["create", "create", "agent"]);
    let ready = ok(&r[1]);
    assert_eq!(ready["total"], json!(2));
    assert_eq!(ready["documents"][0]["id"], json!("task-a"));
    assert_eq!(ready["next_cursor"], json!("1"));
    let claimed = ok(&r[2]);
    assert_eq!(claimed["id"], json!("task-a"));
    assert_eq!(claimed["claimed_by"], json!("coder-1"));
    // The claim hands back the task's body (unchanged by the transitions since).
    let file = m.read("tasks/task-a.md");
    assert_eq!(claimed["body"].as_str(), file.splitn(3, "---\n").nth(2));
    assert_eq!(ok(&r[3])["status"], json!("working"));
    let question = ok(&r[5])["id"].as_str().unwrap().to_string();
    // A human answers at the CLI; the next status shows it, then the agent submits.
    let r2 = session(
        &py,
        &m,
        &["--as", "coder-1"],
        json!([
            run(&m, &["answer", &question, "--choice", "1.2"]),
            call("status", json!({})),
            call("move", json!({"id": "task-a", "action": "submit", "note": "parser done"})),
            call("show", json!({"id": "task-a"})),
            {"op": "pid"},
        ]),
    );
    assert_eq!(r2[0]["code"], json!(0), "{}", r2[0]);
    let seen: Vec<String> = ok(&r2[1])["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["actor"].as_str().unwrap(),
                c["op"].as_str().unwrap()
            )
        })
        .collect();
    // From the last status on: the first session's work, the human's answer and the
    // unblocking it did, and this session's registration (at its first tool call).
    assert_eq!(
        seen,
        [
            "coder-1 claim",
            "coder-1 transition",
            "coder-1 create",
            "coder-1 create",
            "coder-1 transition",
            "tester edit",
            "tester transition",
            "coder-1 agent"
        ]
    );
    let shown = ok(&r2[3]);
    assert_eq!(shown["fields"]["status"], json!("review"));

    let c = TestBoard::new();
    setup(&c);
    let cli = |args: &[&str]| {
        let mut all = vec!["--as", "coder-1"];
        all.extend_from_slice(args);
        c.run(&all).ok();
    };
    let pid = r[6]["pid"].as_u64().unwrap().to_string();
    c.run(&["agent", "register", "--name", "coder-1", "--pid", &pid])
        .ok();
    cli(&["claim", "--next"]);
    cli(&["start", "task-a"]);
    cli(&[
        "post",
        "Tabs in keys",
        "--topic",
        "parser",
        "--severity",
        "medium",
        "--about",
        "task-a",
    ]);
    let q = c.run(&[
        "--as",
        "coder-1",
        "ask",
        "Which YAML?",
        "--options",
        "1.1,1.2",
        "--blocks",
        "task-a",
    ]);
    q.ok();
    // The human answered; then the second session registered the agent again, at its
    // first tool call.
    c.run(&["answer", &q.text(), "--choice", "1.2"]).ok();
    let pid2 = r2[4]["pid"].as_u64().unwrap().to_string();
    c.run(&["agent", "register", "--name", "coder-1", "--pid", &pid2])
        .ok();
    cli(&["submit", "task-a", "--note", "parser done"]);

    assert_eq!(
        redact_times(&m.read("tasks/task-a.md")),
        redact_times(&c.read("tasks/task-a.md"))
    );
    assert_eq!(
        redact_times(&m.read("control/agents/coder-1.md")),
        redact_times(&c.read("control/agents/coder-1.md"))
    );
    // The same entries, but for the random ids of the observation and the question.
    let shape = |b: &TestBoard| -> Vec<String> {
        b.log()
            .iter()
            .map(|e| {
                let doc = e["doc"].as_str().unwrap();
                let doc = if doc.starts_with("tasks/") || doc.starts_with("control/") {
                    doc.to_string()
                } else {
                    doc.split('/').next().unwrap().to_string()
                };
                format!(
                    "{} {} {} {} {} {} {} {}",
                    e["seq"],
                    e["actor"],
                    e["op"],
                    doc,
                    e["from"],
                    e["to"],
                    e["transition"],
                    e["rev"]
                )
            })
            .collect()
    };
    assert_eq!(shape(&m), shape(&c));
    // What the server wrote says it came through MCP; what the CLI wrote says nothing.
    let vias: Vec<String> = m
        .log()
        .iter()
        .map(|e| format!("{} {} {}", e["actor"], e["op"], e["via"]))
        .collect();
    assert_eq!(
        vias,
        [
            r#""tester" "create" null"#,
            r#""tester" "create" null"#,
            r#""coder-1" "agent" "mcp""#,
            r#""coder-1" "claim" "mcp""#,
            r#""coder-1" "transition" "mcp""#,
            r#""coder-1" "create" "mcp""#,
            r#""coder-1" "create" "mcp""#,
            r#""coder-1" "transition" "mcp""#,
            r#""tester" "edit" null"#,
            r#""tester" "transition" null"#,
            r#""coder-1" "agent" "mcp""#,
            r#""coder-1" "transition" "mcp""#,
        ]
    );
    assert!(c.log().iter().all(|e| e.get("via").is_none()));
}

/// Every input the CLI refuses is a tool error with the CLI's kind, code and message, and
/// the server keeps serving.
#[test]
fn bad_input_is_a_tool_error_like_the_cli_error() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "One", "--id", "task-one"])
        .ok();
    b.run(&["new", "task", "--title", "Two", "--id", "task-two"])
        .ok();
    b.run(&["new", "task", "--title", "Held", "--id", "held"])
        .ok();
    b.run(&["--as", "other", "claim", "held"]).ok();
    // (tool, arguments, the same request at the CLI, whether the messages must match)
    let cases: Vec<(&str, Value, Vec<&str>, bool)> = vec![
        ("claim", json!({"id": "nope"}), vec!["claim", "nope"], true),
        (
            "claim",
            json!({"id": "task-"}),
            vec!["claim", "task-"],
            true,
        ),
        ("claim", json!({"id": "held"}), vec!["claim", "held"], true),
        (
            "claim",
            json!({"id": "task-one", "if_rev": 9}),
            vec!["claim", "task-one", "--if-rev", "9"],
            true,
        ),
        (
            "move",
            json!({"id": "task-two", "action": "start"}),
            vec!["start", "task-two"],
            true,
        ),
        (
            "move",
            json!({"id": "held", "action": "release"}),
            vec!["release", "held"],
            true,
        ),
        (
            "move",
            json!({"id": "task-two", "action": "fly"}),
            vec!["move", "task-two", "fly"],
            false,
        ),
        (
            "show",
            json!({"id": "../etc/passwd"}),
            vec!["show", "../etc/passwd"],
            true,
        ),
        (
            "show",
            json!({"id": "Task-One"}),
            vec!["show", "Task-One"],
            true,
        ),
        (
            "list",
            json!({"query": "priority<high"}),
            vec!["list", "priority<high"],
            true,
        ),
        (
            "list",
            json!({"query": "a=b", "colour": "red"}),
            vec!["list", "--colour", "red"],
            false,
        ),
        (
            "observe",
            json!({"title": "x", "topic": "t", "severity": "huge"}),
            vec!["post", "x", "--topic", "t", "--severity", "huge"],
            true,
        ),
        (
            "observe",
            json!({"title": "x", "topic": "t", "severity": "low", "confidence": 7}),
            vec![
                "post",
                "x",
                "--topic",
                "t",
                "--severity",
                "low",
                "--confidence",
                "7",
            ],
            true,
        ),
        ("ask", json!({}), vec!["ask"], false),
        (
            "ready",
            json!({"query": "has:"}),
            vec!["ready", "has:"],
            true,
        ),
        (
            "ready",
            json!({"cursor": "x"}),
            vec!["list", "--cursor", "x"],
            false,
        ),
    ];
    let mut steps: Vec<Value> = cases
        .iter()
        .map(|(t, a, _, _)| call(t, a.clone()))
        .collect();
    steps.push(call("status", json!({})));
    let r = session(&py, &b, &["--as", "coder-1"], json!(steps));
    for (i, (tool, args, cli, same_message)) in cases.iter().enumerate() {
        let res = &r[i];
        assert_eq!(res["is_error"], json!(true), "{tool} {args}: {res}");
        let err = &res["value"]["error"];
        let mut argv = vec!["--as", "coder-1", "--json"];
        argv.extend_from_slice(cli);
        let out = b.run(&argv);
        assert_ne!(out.code, 0, "the CLI accepted {cli:?}");
        assert_eq!(
            err["code"],
            json!(out.code),
            "{tool} {args} vs {cli:?}: {res}\n{}",
            out.stderr
        );
        assert!(err["meaning"].as_str().unwrap().len() > 10);
        // (The CLI's own argument errors are not JSON yet; the library's are.)
        if let Ok(cli_err) = serde_json::from_str::<Value>(out.stderr.trim()) {
            assert_eq!(err["kind"], cli_err["error"]["kind"], "{tool} {args}");
            if *same_message {
                // The same words, each input named as the tools take it, and commands in
                // the use cases' words (`list`, where the CLI says `tavern list`).
                let cli_message = cli_err["error"]["message"]
                    .as_str()
                    .unwrap()
                    .replace("`tavern ", "`")
                    .replace("--force", "--force at the command line")
                    .replace("--if-rev", "if_rev");
                assert_eq!(err["message"], json!(cli_message), "{tool} {args}");
                assert_eq!(err["path"], cli_err["error"]["path"], "{tool} {args}");
            }
        } else {
            assert!(!same_message, "{cli:?}: {}", out.stderr);
        }
    }
    // Still serving after all of that.
    ok(&r[cases.len()]);
    // Nothing was written by the refused calls: the setup's entries and the registration.
    let ops: Vec<String> = b
        .log()
        .iter()
        .map(|e| e["op"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ops, ["create", "create", "create", "claim", "agent"]);
    // A paused board: claims are refused as the CLI refuses them, with the reason.
    let r = session(
        &py,
        &b,
        &["--as", "coder-1"],
        json!([
            run(&b, &["pause", "a human stopped it"]),
            call("claim", json!({})),
            call("claim", json!({"id": "task-one"}))
        ]),
    );
    assert_eq!(r[0]["code"], json!(0), "{}", r[0]);
    for res in &r[1..] {
        let e = &res["value"]["error"];
        assert_eq!(
            (e["kind"].as_str(), e["code"].as_u64()),
            (Some("paused"), Some(5)),
            "{res}"
        );
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("a human stopped it")
        );
    }
}

/// No tool decides a permission request or otherwise acts as a human, even for a server
/// run as an actor board.yaml lists under `humans:`.
#[test]
fn an_mcp_client_cannot_act_as_a_human() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    let config = b.read("board.yaml");
    b.write(
        "board.yaml",
        config.replace("humans: []", "humans: [alice]"),
    );
    b.run(&["new", "task", "--title", "Deploy", "--id", "task-d"])
        .ok();
    let q = b.run(&[
        "--as",
        "bot",
        "ask",
        "--permission",
        "deploy",
        "--resource",
        "prod",
        "--reason",
        "ship it",
        "--id",
        "q-perm",
    ]);
    q.ok();
    let before = b.read("questions/q-perm.md");
    let log_before = b.log().len();
    let attempts = json!([
        {"op": "tools"},
        call("move", json!({"id": "q-perm", "action": "approve"})),
        call("answer", json!({"id": "q-perm", "text": "approved"})),
        call("answer", json!({"id": "q-perm", "choice": "approve"})),
        call("edit", json!({"id": "q-perm", "set": {"status": "approved"}})),
        call("edit", json!({"id": "q-perm", "set": {"answer": "yes", "answered_by": "alice"}})),
        call("triage", json!({"id": "q-perm", "action": "resolve", "text": "granted"})),
        call("archive", json!({"query": "region:questions"})),
        call("approve", json!({"id": "q-perm"})),
        call("deny", json!({"id": "q-perm"})),
    ]);
    let r = session(&py, &b, &["--as", "alice", "--profile", "full"], attempts);
    let names = r[0]["names"].as_array().unwrap();
    for forbidden in ["approve", "deny", "decide", "grant"] {
        assert!(!names.contains(&json!(forbidden)));
    }
    for (i, res) in r.iter().enumerate().skip(1) {
        let refused = res["is_error"] == json!(true) || res.get("protocol_error").is_some();
        // archive runs, but a permission request that is open is not finished: it stays.
        let harmless = i == 7 && res["value"]["total"] == json!(0);
        assert!(refused || harmless, "attempt {i} went through: {res}");
    }
    assert_eq!(b.read("questions/q-perm.md"), before);
    // What touched it are the alerts for the attempts at a decision.
    let log = b.log();
    assert!(
        log[log_before..]
            .iter()
            .all(|e| e["doc"] != json!("questions/q-perm.md") || e["op"] == json!("alert")),
        "{log:?}"
    );
}

/// Every tool that writes, given a permission request by every reference form, by an agent
/// and by a server run as a listed human: nothing decides it; each attempt at a decision
/// (edit of its fields, move approve/reject, answer) is a conflict (3) logged as an alert,
/// and the tools that never touch questions refuse the wrong kind (2). A decision forged
/// by hand is shown as forged by show, list and status.
#[test]
fn no_tool_forges_a_decision_by_any_reference() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    let config = b.read("board.yaml");
    b.write(
        "board.yaml",
        config.replace("humans: []", "humans: [alice]"),
    );
    b.run(&[
        "--as",
        "bot",
        "ask",
        "--permission",
        "deploy",
        "--resource",
        "prod",
        "--reason",
        "ship it",
        "--id",
        "q-perm",
    ])
    .ok();
    let before = b.read("questions/q-perm.md");
    let abs = b.board().join("questions/q-perm.md");
    let refs = [
        "q-perm",
        "q-p",
        "questions/q-perm",
        "questions/q-perm.md",
        ".tavern/questions/q-perm.md",
        abs.to_str().unwrap(),
    ];
    // (tool, args, expected code, an attempt at a decision: logged)
    let attempts = |r: &str| -> Vec<(Value, u64, bool)> {
        vec![
            (
                call(
                    "edit",
                    json!({"id": r, "set": {"status": "approved", "decided_by": "alice"}}),
                ),
                3,
                true,
            ),
            (
                call(
                    "edit",
                    json!({"id": r, "set": {"decided_at": "2026-11-25T10:00:00Z"}}),
                ),
                3,
                true,
            ),
            (call("edit", json!({"id": r, "unset": ["status"]})), 3, true),
            (call("edit", json!({"id": r, "body": "rm -rf /"})), 3, true),
            (call("move", json!({"id": r, "action": "approve"})), 3, true),
            (call("move", json!({"id": r, "action": "reject"})), 3, true),
            (
                call("answer", json!({"id": r, "text": "approved"})),
                3,
                true,
            ),
            (call("claim", json!({"id": r})), 2, false),
            (call("triage", json!({"id": r, "action": "ack"})), 2, false),
        ]
    };
    for actor in ["bot", "alice"] {
        let log_before = b.log().len();
        let steps: Vec<Value> = refs.iter().flat_map(|r| attempts(r)).map(|a| a.0).collect();
        let expected: Vec<(u64, bool)> = refs
            .iter()
            .flat_map(|r| attempts(r))
            .map(|a| (a.1, a.2))
            .collect();
        let r = session(&py, &b, &["--as", actor, "--profile", "full"], json!(steps));
        for (i, (res, (code, _))) in r.iter().zip(&expected).enumerate() {
            assert_eq!(
                res["is_error"],
                json!(true),
                "attempt {i} by {actor}: {res}"
            );
            assert_eq!(
                res["value"]["error"]["code"],
                json!(code),
                "attempt {i} by {actor}: {res}"
            );
        }
        assert_eq!(b.read("questions/q-perm.md"), before, "{actor}");
        let new = &b.log()[log_before..];
        let about: Vec<&Value> = new
            .iter()
            .filter(|e| e["doc"] == json!("questions/q-perm.md"))
            .collect();
        let alerts: Vec<&Value> = about
            .iter()
            .copied()
            .filter(|e| e["op"] == json!("alert"))
            .collect();
        assert_eq!(
            about.len(),
            alerts.len(),
            "only alerts were logged about it: {about:?}"
        );
        assert_eq!(
            alerts.len(),
            expected.iter().filter(|e| e.1).count(),
            "{alerts:?}"
        );
        for a in &alerts {
            assert_eq!(a["actor"], json!(actor));
            assert_eq!(a["doc"], json!("questions/q-perm.md"));
            assert_eq!(a["via"], json!("mcp"));
            assert!(
                a["note"]
                    .as_str()
                    .unwrap()
                    .starts_with(&format!("refused: {actor} may not ")),
                "{a}"
            );
        }
    }
    // Open, as every reference form shows it; forged once a hand edit claims a decision.
    let shows: Vec<Value> = refs
        .iter()
        .map(|r| call("show", json!({"id": r})))
        .collect();
    for res in session(&py, &b, &["--as", "bot"], json!(shows)) {
        assert_eq!(ok(&res)["decision"], json!({"state": "open"}), "{res}");
    }
    b.write(
        "questions/q-perm.md",
        before.replace("status: open\n", "status: approved\ndecided_by: alice\n"),
    );
    let r = session(
        &py,
        &b,
        &["--as", "bot"],
        json!([
            call("show", json!({"id": "questions/q-perm"})),
            call("list", json!({"query": "region:questions"})),
            call("status", json!({})),
        ]),
    );
    let forged = json!({"state": "forged", "says": "approved by alice", "why": "the log holds no approve or deny of it by a human"});
    assert_eq!(ok(&r[0])["decision"], forged);
    assert_eq!(ok(&r[1])["documents"][0]["decision"], forged, "{}", r[1]);
    let summary = ok(&r[2])["summary"].as_str().unwrap();
    assert!(
        summary.contains("- q-perm Permission: deploy on prod — asked by bot — forged: it says approved by alice, but the log holds no approve or deny of it by a human\n"),
        "{summary}"
    );
}

/// Eight servers on one board, each claiming every task in its own order: each task has
/// exactly one winner, every loser gets a conflict, and the log has one claim per task.
#[test]
fn eight_servers_racing_have_one_winner_per_task() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    let tasks: Vec<String> = (0..24).map(|i| format!("task-r{i:02}")).collect();
    for t in &tasks {
        b.run(&["new", "task", "--title", t, "--id", t]).ok();
    }
    let servers: Vec<Value> = (0..8)
        .map(|i| server(&b, &["--as", &format!("agent-{i}")]))
        .collect();
    let result = drive(
        &py,
        json!({"race": {"servers": servers, "tasks": tasks, "seed": 7}}),
    );
    let mut winners = std::collections::BTreeMap::new();
    for (i, got) in result.as_array().unwrap().iter().enumerate() {
        for g in got.as_array().unwrap() {
            let task = g["task"].as_str().unwrap().to_string();
            match g["code"].as_u64().unwrap() {
                0 => {
                    assert_eq!(g["changed"], json!(true));
                    assert!(winners.insert(task, format!("agent-{i}")).is_none());
                }
                3 => {}
                other => panic!("agent-{i} got exit code {other} for {task}"),
            }
        }
    }
    assert_eq!(winners.len(), tasks.len());
    let claims: Vec<Value> = b
        .log()
        .into_iter()
        .filter(|e| e["op"] == json!("claim"))
        .collect();
    assert_eq!(claims.len(), tasks.len());
    for c in &claims {
        let task = c["doc"]
            .as_str()
            .unwrap()
            .trim_start_matches("tasks/")
            .trim_end_matches(".md");
        assert_eq!(c["actor"].as_str(), winners.get(task).map(String::as_str));
        let file = b.read(&format!("tasks/{task}.md"));
        assert!(file.contains(&format!("claimed_by: {}", winners[task])));
    }
}

/// The server registers its agent with the client process as the holder of its claims;
/// every call is a heartbeat; once the client is gone and the lease is over, the claims
/// go back to the pool.
#[test]
fn the_client_holds_the_lease_and_a_dead_clients_claims_are_swept() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    let config = b.read("board.yaml");
    b.write(
        "board.yaml",
        config.replace("\nlease: 5m\n", "\nlease: 1s\n"),
    );
    assert!(b.read("board.yaml").contains("lease: 1s"));
    b.run(&["new", "task", "--title", "Mine", "--id", "task-m"])
        .ok();
    let beat = b.board().join(".state/heartbeats/coder-9");
    let r = session(
        &py,
        &b,
        &["--as", "coder-9", "--capabilities", "rust"],
        json!([{"op": "pid"}, call("claim", json!({"id": "task-m"})), call("status", json!({}))]),
    );
    let pid = r[0]["pid"].as_u64().unwrap();
    let card = b.read("control/agents/coder-9.md");
    assert!(card.contains(&format!("pid: {pid}\n")), "{card}");
    assert!(
        card.contains("capabilities:\n- rust\n") || card.contains("capabilities: [rust]"),
        "{card}"
    );
    assert!(beat.exists());
    // The client has exited: after the lease, a sweep gives the task back.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    b.run(&["sweep"]).ok().stdout_has("released task-m");
    assert!(b.read("tasks/task-m.md").contains("status: pending"));
}

/// MCP `ready` is "tasks you could claim now": the server's agent, registered with its
/// capabilities, sees the tasks whose `needs` those cover and how many others are ready;
/// `all` lists those too; `claim` without an id takes the first it listed.
#[test]
fn ready_over_mcp_lists_what_the_agent_may_claim() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.task("Needs js", &["--id", "t-js", "-p", "0", "--needs", "js"]);
    b.task(
        "Needs rust",
        &["--id", "t-rust", "-p", "1", "--needs", "rust"],
    );
    b.task("Anyone", &["--id", "t-any", "-p", "2"]);
    let r = session(
        &py,
        &b,
        &["--as", "coder-9", "--capabilities", "rust"],
        json!([
            call("ready", json!({})),
            call("ready", json!({"all": true})),
            call("claim", json!({})),
        ]),
    );
    let mine = ok(&r[0]);
    assert_eq!(ids(mine), ["t-rust", "t-any"]);
    assert_eq!(
        (mine["total"].clone(), mine["lacking"].clone()),
        (json!(2), json!(1))
    );
    let all = ok(&r[1]);
    assert_eq!(ids(all), ["t-js", "t-rust", "t-any"]);
    assert_eq!(all["lacking"], json!(0));
    assert_eq!(ok(&r[2])["id"], json!("t-rust"));
    assert!(b.read("tasks/t-rust.md").contains("claimed_by: coder-9\n"));
    assert!(b.read("tasks/t-js.md").contains("status: pending\n"));
}

/// The `ready` tool decides from the read index's heads and parses only the tasks of the
/// page it returns: page after page, it gives what one big page gives, what `ready
/// --json` gives, and what it gives from the files alone (the index deleted), also after
/// an edit in place behind the index's back.
#[test]
fn ready_over_mcp_pages_what_a_full_scan_gives() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    for i in 0..11 {
        let (id, p) = (format!("t-{i:02}"), (i % 3).to_string());
        b.task(&format!("Task {i}"), &["--id", &id, "-p", &p]);
    }
    b.task("Needs js", &["--id", "t-js", "-p", "0", "--needs", "js"]);
    b.task("Waits", &["--id", "t-w", "-p", "0", "--depends-on", "t-00"]);
    let queries = [None, Some("priority<=1"), Some("task"), Some("tag:none")];
    let steps = || {
        let mut steps = Vec::new();
        for q in queries {
            for (all, cursor, limit) in [
                (false, "", 100),
                (false, "", 4),
                (false, "4", 4),
                (false, "8", 4),
                (true, "", 100),
            ] {
                let mut args = json!({"all": all, "cursor": cursor, "limit": limit});
                if let Some(q) = q {
                    args["query"] = json!(q);
                }
                steps.push(call("ready", args));
            }
        }
        Value::Array(steps)
    };
    let args = ["--as", "coder-9", "--capabilities", "rust"];
    // Each query's five results: pages of 4 that add up to the page of 100, and `all`,
    // which is what `ready --json --all` prints.
    let check = |r: &[Value], what: &str| {
        for (q, r) in queries.iter().zip(r.chunks(5)) {
            let whole = ok(&r[0]);
            let pages: Vec<String> = r[1..4].iter().flat_map(|p| ids(ok(p))).collect();
            assert_eq!(pages, ids(whole), "{what}: {q:?} page by page");
            for p in &r[1..4] {
                assert_eq!(ok(p)["total"], whole["total"], "{what}: {q:?}");
                assert_eq!(ok(p)["lacking"], whole["lacking"], "{what}: {q:?}");
            }
            let mut cli = vec!["ready", "--json", "--all"];
            cli.extend(q);
            let printed: Value = serde_json::from_str(&b.run(&cli).ok().stdout).unwrap();
            assert_eq!(ids(ok(&r[4])), ids(&printed), "{what}: {q:?} as the CLI");
        }
    };
    let index = b.board().join(".state/index");
    let warm = session(&py, &b, &args, steps());
    check(&warm, "at first");
    assert_eq!(ok(&warm[0])["total"], json!(11), "{}", ok(&warm[0]));
    assert_eq!(ok(&warm[0])["lacking"], json!(1));
    assert_eq!(ok(&warm[5])["total"], json!(8), "priority<=1");
    std::fs::remove_dir_all(&index).unwrap();
    let full = session(&py, &b, &args, steps());
    assert_eq!(warm, full, "the index answered differently from the files");
    // In place, at the same size, after reads that left the index trusting the file.
    session(&py, &b, &args, steps());
    let path = b.board().join("tasks/t-02.md");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("priority: 2", "priority: 0")).unwrap();
    let edited = session(&py, &b, &args, steps());
    check(&edited, "after an edit in place");
    assert_eq!(ok(&edited[5])["total"], json!(9), "priority<=1");
    assert!(ids(ok(&edited[5])).contains(&"t-02".to_string()));
    std::fs::remove_dir_all(&index).unwrap();
    let full = session(&py, &b, &args, steps());
    assert_eq!(
        edited, full,
        "after an edit in place: the index answered otherwise"
    );
}

/// A client that starts the server only to look at it (a health check such as `claude mcp
/// list`: initialize, list the tools, go) leaves no agent card; the first tool call
/// registers the agent, once.
#[test]
fn a_probe_leaves_no_card_and_the_first_tool_call_registers_the_agent() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    session(
        &py,
        &b,
        &["--as", "coder-4"],
        json!([{"op": "tools"}, {"op": "instructions"}]),
    );
    assert!(!b.board().join("control/agents/coder-4.md").exists());
    assert!(cli_log(&b).iter().all(|e| e["op"] != "agent"));
    let r = session(
        &py,
        &b,
        &["--as", "coder-4"],
        json!([{"op": "pid"}, call("status", json!({})), call("ready", json!({}))]),
    );
    ok(&r[1]);
    let notes: Vec<Value> = cli_log(&b)
        .into_iter()
        .filter(|e| e["op"] == "agent")
        .map(|e| e["note"].clone())
        .collect();
    assert_eq!(notes, [json!("registered")]);
    let pid = r[0]["pid"].as_u64().unwrap();
    assert!(
        b.read("control/agents/coder-4.md")
            .contains(&format!("pid: {pid}\n"))
    );
}

#[test]
fn documents_are_resources_and_subscribers_hear_of_changes() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "Watched", "--id", "task-w"])
        .ok();
    let file = b.read("tasks/task-w.md");
    let r = session(
        &py,
        &b,
        &["--as", "coder-1"],
        json!([
            {"op": "instructions"},
            {"op": "resources"},
            {"op": "templates"},
            {"op": "read", "uri": "tavern://tasks/task-w"},
            {"op": "read", "uri": "tavern://tasks/..%2Fboard"},
            {"op": "listen_then_run", "uri": "tavern://tasks/task-w",
             "run": [BIN, "--board", b.board(), "--as", "lead", "edit", "task-w", "--set", "priority=0"]},
        ]),
    );
    let instructions = r[0]["text"].as_str().unwrap();
    assert!(instructions.contains("`claim`") && instructions.contains("You act as `coder-1`"));
    assert_eq!(
        r[1]["uris"],
        json!([
            "tavern://guide",
            "tavern://summary",
            "tavern://tasks/task-w"
        ])
    );
    assert_eq!(r[2]["templates"], json!(["tavern://{region}/{id}"]));
    assert_eq!(r[3]["text"].as_str().unwrap(), file);
    assert!(r[4].get("protocol_error").is_some(), "{}", r[4]);
    let events = r[5]["events"].as_array().unwrap();
    assert_eq!(
        events.last().unwrap(),
        &json!("ResourceUpdated:tavern://tasks/task-w")
    );
}

/// A reviewer is an agent like any other: over MCP it decides on another agent's task in
/// review (approve and reject are `by: reviewer` in the workflow), and cannot move the task
/// otherwise.
#[test]
fn a_reviewer_over_mcp_rejects_and_approves_another_agents_task_in_review() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "Lexer", "--id", "task-r"])
        .ok();
    let coder = |args: &[&str]| {
        let mut all = vec!["--as", "coder-1"];
        all.extend_from_slice(args);
        run(&b, &all)
    };
    for step in [&["claim", "task-r"][..], &["start", "task-r"]] {
        let mut all = vec!["--as", "coder-1"];
        all.extend_from_slice(step);
        b.run(&all).ok();
    }
    let r = session(
        &py,
        &b,
        &["--as", "reviewer-1"],
        json!([
            call("move", json!({"id": "task-r", "action": "approve"})),
            coder(&["submit", "task-r"]),
            call("list", json!({"query": "status=review"})),
            call("move", json!({"id": "task-r", "action": "start"})),
            call(
                "move",
                json!({"id": "task-r", "action": "reject", "note": "no tests"})
            ),
            coder(&["submit", "task-r", "--note", "tests added"]),
            call(
                "move",
                json!({"id": "task-r", "action": "approve", "note": "good"})
            ),
        ]),
    );
    // Not in review yet: the workflow refuses, as it would at the CLI.
    assert_eq!(r[0]["is_error"], json!(true), "{}", r[0]);
    assert_eq!(r[0]["value"]["error"]["kind"], json!("conflict"));
    assert!(
        r[0]["value"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("transition 'approve' is not allowed"),
        "{}",
        r[0]
    );
    assert_eq!(r[1]["code"], json!(0), "{}", r[1]);
    assert_eq!(ok(&r[2])["total"], json!(1));
    assert_eq!(ok(&r[2])["documents"][0]["id"], json!("task-r"));
    // Anything but the decision stays the claimant's.
    assert_eq!(r[3]["is_error"], json!(true), "{}", r[3]);
    assert!(
        r[3]["value"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("held by coder-1"),
        "{}",
        r[3]
    );
    let rejected = ok(&r[4]);
    assert_eq!(
        (&rejected["status"], &rejected["claimed_by"]),
        (&json!("working"), &json!("coder-1"))
    );
    assert_eq!(r[5]["code"], json!(0), "{}", r[5]);
    assert_eq!(ok(&r[6])["status"], json!("done"));
    assert!(b.read("tasks/task-r.md").contains("status: done\n"));
    let decisions: Vec<String> = b
        .log()
        .iter()
        .filter(|e| e["op"] == "transition")
        .map(|e| {
            format!(
                "{} {} {}->{} {} {} force={}",
                e["actor"].as_str().unwrap(),
                e["transition"].as_str().unwrap(),
                e["from"].as_str().unwrap(),
                e["to"].as_str().unwrap(),
                e["note"].as_str().unwrap_or("-"),
                e["via"].as_str().unwrap_or("cli"),
                e.get("force").is_some()
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [
            "coder-1 start claimed->working - cli force=false",
            "coder-1 submit working->review - cli force=false",
            "reviewer-1 reject review->working no tests mcp force=false",
            "coder-1 submit working->review tests added cli force=false",
            "reviewer-1 approve review->done good mcp force=false",
        ]
    );
}

/// Review means someone else over MCP too: the claimant's own approve or reject is a
/// conflict naming the rule, and nothing changes; another agent's approve goes through.
#[test]
fn the_claimant_over_mcp_cannot_approve_or_reject_its_own_task() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "Lexer", "--id", "task-s"])
        .ok();
    let r = session(
        &py,
        &b,
        &["--as", "coder-1"],
        json!([
            call("claim", json!({"id": "task-s"})),
            call("move", json!({"id": "task-s", "action": "start"})),
            call("move", json!({"id": "task-s", "action": "submit"})),
            call("move", json!({"id": "task-s", "action": "approve"})),
            call("move", json!({"id": "task-s", "action": "reject"})),
        ]),
    );
    for step in &r[..3] {
        ok(step);
    }
    for (i, name) in [(3, "approve"), (4, "reject")] {
        assert_eq!(r[i]["is_error"], json!(true), "{}", r[i]);
        assert_eq!(
            r[i]["value"]["error"]["kind"],
            json!("conflict"),
            "{}",
            r[i]
        );
        let message = r[i]["value"]["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!(
                "coder-1 cannot {name} its own task (coder-1 claimed it and submitted it): review means someone else"
            )),
            "{message}"
        );
    }
    assert!(b.read("tasks/task-s.md").contains("\nstatus: review\n"));
    let r = session(
        &py,
        &b,
        &["--as", "reviewer-1"],
        json!([call("move", json!({"id": "task-s", "action": "approve"}))]),
    );
    assert_eq!(ok(&r[0])["status"], json!("done"));
}

/// The full profile's tools, each against the CLI's `--json` for the same request on the
/// same board: they are the same library calls.
#[test]
fn the_full_profile_gives_what_the_cli_gives() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "Base", "--id", "task-base"])
        .ok();
    b.write("solutions/task-base/design.md", "# Design\n\nTwo passes.\n");
    let obs = b.run(&[
        "--as",
        "bot",
        "post",
        "Slow scan",
        "--topic",
        "perf",
        "--severity",
        "low",
    ]);
    obs.ok();
    let obs = obs.text();
    let r = session(
        &py,
        &b,
        &["--as", "coder-1", "--profile", "full"],
        json!([
            call(
                "create_task",
                json!({"title": "Top", "depends_on": ["task-base"], "priority": 1, "needs": ["rust"]})
            ),
            call(
                "edit",
                json!({"id": "task-base", "set": {"priority": 0}, "add": {"tags": "core"}})
            ),
            call("edit", json!({"id": "task-base", "set": {"bad key": 1}})),
            call("edit", json!({"id": "task-base"})),
            call(
                "triage",
                json!({"id": obs, "action": "resolve", "text": "indexed"})
            ),
            call("show", json!({"id": "solutions/task-base/design.md"})),
            call("claim", json!({"id": "task-base"})),
            call("move", json!({"id": "task-base", "action": "start"})),
            call("move", json!({"id": "task-base", "action": "done"})),
            call("agents", json!({})),
            call("archive", json!({"query": "region:observations"})),
            call("search", json!({"query": "\"slow scan\" archive"})),
        ]),
    );
    // search: what the CLI finds, the same JSON.
    let cli = b
        .run(&["--json", "search", "\"slow scan\"", "archive"])
        .ok()
        .json();
    assert_eq!(ok(&r[11]), &cli);
    assert_eq!(cli["hits"][0]["id"], json!(obs));
    let created = ok(&r[0]);
    let top = created["id"].as_str().unwrap().to_string();
    assert_eq!(created["status"], json!("pending"));
    let file = b.read(&format!("tasks/{top}.md"));
    for line in [
        "priority: 1\n",
        "needs: [rust]\n",
        "depends_on: [task-base]\n",
    ] {
        assert!(file.contains(line), "{line:?} in\n{file}");
    }
    assert_eq!(ok(&r[1])["rev"], json!(2));
    let base = b.read("tasks/task-base.md");
    assert!(
        base.contains("priority: 0\n") && base.contains("tags: [core]\n"),
        "{base}"
    );
    // The library refuses what is no field name; an empty edit is refused before it.
    assert_eq!(r[2]["is_error"], json!(true), "{}", r[2]);
    assert_eq!(
        r[2]["value"]["error"]["message"],
        json!("'bad key' is not a field name (letters, digits, _ - .)")
    );
    assert_eq!(r[3]["value"]["error"]["kind"], json!("usage"), "{}", r[3]);
    assert_eq!(ok(&r[4])["status"], json!("resolved"));
    // A file under solutions/ is shown as the CLI shows it.
    let cli = b
        .run(&["--json", "show", "solutions/task-base/design.md"])
        .ok()
        .json();
    let shown = ok(&r[5]);
    assert_eq!(
        (&shown["path"], &shown["region"], &shown["body"]),
        (&cli["path"], &cli["region"], &cli["body"])
    );
    assert_eq!(ok(&r[8])["status"], json!("done"));
    let agents = ok(&r[9]);
    let cli = b.run(&["--json", "agent", "list"]).ok().json();
    assert_eq!(agents["total"], json!(1));
    let mut row = agents["agents"][0].clone();
    let mut cli_row = cli["agents"][0].clone();
    for r in [&mut row, &mut cli_row] {
        r.as_object_mut().unwrap().remove("last_seen");
    }
    assert_eq!(row, cli_row);
    assert_eq!(row["holds"], json!([]));
    assert_eq!(
        ok(&r[10])["archived"],
        json!([format!("observations/{obs}.md")])
    );

    // deps and log after the fact, from a second session, against the CLI.
    let all = cli_log(&b);
    let name = |e: &Value| format!("{}:{}", e["origin"].as_str().unwrap(), e["seq"]);
    let third_last = name(&all[all.len() - 3]);
    let r = session(
        &py,
        &b,
        &["--as", "coder-1", "--profile", "full"],
        json!([
            call("deps", json!({"id": top})),
            call("log", json!({"doc": "task-base", "limit": 3})),
            call("log", json!({"actor": "bot"})),
            call("log", json!({"since": third_last})),
            call("log", json!({"since": "not a mark"})),
        ]),
    );
    let cli = b.run(&["--json", "deps", &top]).ok().json();
    assert_eq!(ok(&r[0]), &cli);
    let log = ok(&r[1]);
    assert_eq!(log["total"], json!(5));
    let seen: Vec<String> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {} {} {}",
                e["op"].as_str().unwrap(),
                e["transition"].as_str().unwrap_or("-"),
                e["via"].as_str().unwrap_or("cli"),
                e.get("diff").is_some()
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            "claim - mcp false",
            "transition start mcp false",
            "transition done mcp false",
        ]
    );
    assert!(log["hint"].as_str().unwrap().starts_with("2 older entries"));
    let bot = ok(&r[2]);
    assert_eq!(bot["total"], json!(1));
    assert_eq!(bot["entries"][0]["op"], json!("create"));
    // since takes an entry's id as shown (ORIGIN:SEQ): the entries after it, exactly.
    let after = ok(&r[3]);
    let ids: Vec<&Value> = after["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["id"])
        .collect();
    // Against the whole log as the CLI reads it now (the session's own entries included).
    let now = cli_log(&b);
    let want: Vec<String> = now[all.len() - 2..].iter().map(name).collect();
    assert!(want.len() >= 2);
    let want: Vec<Value> = want.iter().map(|w| json!(w)).collect();
    assert_eq!(ids, want.iter().collect::<Vec<_>>());
    assert_eq!(after["total"], json!(want.len()));
    assert_eq!(r[4]["is_error"], json!(true), "{}", r[4]);
    assert_eq!(r[4]["value"]["error"]["kind"], json!("usage"), "{}", r[4]);
}

/// `tavern mcp` fed lines by hand over stdio, as a client the SDKs do not cover would: what
/// comes back, line by line.
struct Raw {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Raw {
    fn start(b: &TestBoard, args: &[&str]) -> Raw {
        use std::io::BufRead;
        let mut all = vec!["mcp"];
        all.extend_from_slice(args);
        let mut child = b
            .cmd(&all)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut raw = Raw {
            child,
            stdin,
            lines,
        };
        raw.send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}).to_string());
        assert_eq!(raw.reply().0["id"], json!(0));
        raw.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        raw
    }

    fn send(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// The next line the server writes, and its length in bytes (a guard of a minute
    /// against a server that never answers: that is the failure looked for here, not a
    /// measure of speed).
    fn reply(&self) -> (Value, usize) {
        let line = self
            .lines
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no answer within a minute"));
        let v: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:.300}"));
        (v, line.len())
    }

    /// Sends `line` and returns the answer to it.
    fn ask(&mut self, line: &str) -> (Value, usize) {
        self.send(line);
        self.reply()
    }

    /// Closes the server's input: it must exit 0.
    fn close(mut self) {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

#[test]
fn every_invalid_json_rpc_message_gets_the_specs_error_response() {
    let b = TestBoard::new();
    let mut raw = Raw::start(&b, &["--as", "coder-1"]);
    // (line, the id the answer must carry, its error code)
    let cases: Vec<(&str, Value, i64)> = vec![
        (
            r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#,
            json!(2),
            -32600,
        ),
        (r#"{"jsonrpc":"2.0","id":3,"method":5}"#, json!(3), -32600),
        (r#"{"jsonrpc":"2.0","id":4}"#, json!(4), -32600),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":"x"}"#,
            json!(5),
            -32600,
        ),
        (r#"{"id":"six","method":"ping"}"#, json!("six"), -32600),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":7}}"#,
            json!(7),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call"}"#,
            json!(8),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":[9],"method":"ping"}"#,
            Value::Null,
            -32600,
        ),
        (r#"{"jsonrpc":"2.0","method":10}"#, Value::Null, -32600),
        ("not json at all", Value::Null, -32700),
        (
            r#"{"jsonrpc":"2.0","id":12,"method":"ping""#,
            Value::Null,
            -32700,
        ),
        ("[]", Value::Null, -32600),
        ("13", Value::Null, -32600),
        (
            r#"{"jsonrpc":"2.0","id":14,"method":"no/such"}"#,
            json!(14),
            -32601,
        ),
    ];
    for (line, id, code) in &cases {
        let (v, _) = raw.ask(line);
        assert_eq!(v["jsonrpc"], "2.0", "{line}: {v}");
        assert!(v.as_object().unwrap().contains_key("id"), "{line}: {v}");
        assert_eq!(&v["id"], id, "{line}: {v}");
        assert_eq!(v["error"]["code"], json!(code), "{line}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    // A batch: every request in it is told, under its id; notifications are not.
    let (v, _) = raw.ask(r#"[{"jsonrpc":"2.0","id":20,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":21,"method":"ping"}]"#);
    let ids: Vec<&Value> = v.as_array().unwrap().iter().map(|e| &e["id"]).collect();
    assert_eq!(ids, [&json!(20), &json!(21)]);
    // Notifications, valid or not, are never answered: the next line answers the ping.
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{}}}"#);
    raw.send(r#"{"jsonrpc":"2.0","method":"notifications/no-such"}"#);
    raw.send("");
    let (v, _) = raw.ask(r#"{"jsonrpc":"2.0","id":30,"method":"ping"}"#);
    assert_eq!(v, json!({"jsonrpc": "2.0", "id": 30, "result": {}}));
    // Still serving tools.
    let (v, _) = raw.ask(r#"{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"list","arguments":{}}}"#);
    assert_eq!(v["id"], 31);
    assert_eq!(v["result"]["isError"], false, "{v}");
    raw.close();
}

#[test]
fn every_result_and_error_is_bounded_and_echoes_are_cut() {
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "Small", "--id", "task-small"])
        .ok();
    let mut raw = Raw::start(&b, &["--as", "coder-1", "--profile", "full"]);
    let mega = "x".repeat(1 << 20);
    let call = |id: u64, tool: &str, args: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}}).to_string()
    };
    // Tool errors that would echo a megabyte: the edit of the issue, an id, a query.
    for (id, line) in [
        (
            1,
            call(
                1,
                "edit",
                json!({"id": "task-small", "set": {"priority": mega}}),
            ),
        ),
        (2, call(2, "show", json!({"id": mega}))),
        (
            3,
            call(3, "list", json!({"query": format!("priority<{mega}")})),
        ),
        (
            4,
            call(4, "claim", json!({"id": "task-small", "if_rev": mega})),
        ),
    ] {
        let (v, len) = raw.ask(&line);
        assert_eq!(v["id"], id);
        assert_eq!(v["result"]["isError"], true, "{id}: {v:.300}");
        let text = v["result"]["content"][0]["text"].as_str().unwrap();
        let err: Value = serde_json::from_str(text).unwrap();
        let message = err["error"]["message"].as_str().unwrap();
        assert!(
            message.chars().count() <= 2_100,
            "{id}: {} characters",
            message.len()
        );
        assert!(len <= 8 * 1024, "{id}: an error of {len} bytes");
    }
    // Protocol errors that would echo it: a tool's name, a resource, a method, params.
    for (id, line) in [
        (10, call(10, &mega, json!({}))),
        (11, json!({"jsonrpc": "2.0", "id": 11, "method": "resources/read", "params": {"uri": format!("tavern://tasks/{mega}")}}).to_string()),
        (12, json!({"jsonrpc": "2.0", "id": 12, "method": mega}).to_string()),
        (13, json!({"jsonrpc": "2.0", "id": 13, "method": "ping", "params": mega}).to_string()),
        (14, json!({"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": 1, "arguments": {"x": mega}}}).to_string()),
    ] {
        let (v, len) = raw.ask(&line);
        assert_eq!(v["id"], id, "{v:.300}");
        assert!(v["error"]["code"].is_i64(), "{id}: {v:.300}");
        assert!(len <= 4 * 1024, "{id}: an error of {len} bytes");
    }
    // A body that costs most as sent (quotes and control characters double in JSON inside
    // JSON) comes in parts, each within the bound, that add up to the whole body.
    let body: String = "\"\u{1}\\ é ".repeat(40_000);
    let file = b.root().join("body.md");
    std::fs::write(&file, &body).unwrap();
    b.run(&[
        "new",
        "task",
        "--title",
        "Heavy",
        "--id",
        "task-heavy",
        "--body-file",
        file.to_str().unwrap(),
    ])
    .ok();
    let mut read = String::new();
    let mut offset = 0;
    for round in 100.. {
        let (v, len) = raw.ask(&call(
            round,
            "show",
            json!({"id": "task-heavy", "offset": offset}),
        ));
        assert!(len <= 80 * 1024 + 256, "a part of {len} bytes");
        let shown: Value =
            serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
        read.push_str(shown["body"].as_str().unwrap());
        match shown["body_cut"]["next_offset"].as_u64() {
            Some(next) => offset = next as usize,
            None => break,
        }
        assert!(round < 200, "the body never ended");
    }
    assert_eq!(read.trim(), body.trim());
    // The resource of that document, and the summary, within the bound too.
    for (id, uri) in [
        (300, "tavern://tasks/task-heavy"),
        (301, "tavern://summary"),
    ] {
        let (v, len) = raw.ask(&json!({"jsonrpc": "2.0", "id": id, "method": "resources/read", "params": {"uri": uri}}).to_string());
        assert!(v["result"]["contents"][0]["text"].is_string(), "{v:.300}");
        assert!(len <= 80 * 1024 + 256, "{uri}: {len} bytes");
    }
    raw.close();
}

#[test]
fn a_megabyte_in_a_tool_call_gets_a_bounded_error_through_the_sdk() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "Small", "--id", "task-small"])
        .ok();
    let mega = "x".repeat(1 << 20);
    let r = session(
        &py,
        &b,
        &["--as", "coder-1", "--profile", "full"],
        json!([
            call(
                "edit",
                json!({"id": "task-small", "set": {"priority": mega}})
            ),
            call("show", json!({"id": mega})),
            call(&mega, json!({})),
            call("show", json!({"id": "task-small"})),
        ]),
    );
    for res in &r[..2] {
        assert_eq!(res["is_error"], json!(true), "{res:.300}");
        assert!(res["bytes"].as_u64().unwrap() <= 4_096, "{}", res["bytes"]);
        let message = res["value"]["error"]["message"].as_str().unwrap();
        assert!(message.contains("characters in all]"), "{message:.300}");
    }
    let protocol = r[2]["protocol_error"].as_str().unwrap();
    assert!(protocol.len() <= 4_096, "{} bytes", protocol.len());
    assert_eq!(ok(&r[3])["fields"]["title"], "Small");
    // Nothing was written.
    assert!(b.read("tasks/task-small.md").contains("rev: 1\n"));
}

/// Holds over MCP: the full profile's hold, holds and release_hold, against another agent
/// holding through the CLI; a refusal is a tool error naming the holder.
#[test]
fn holds_over_mcp_are_the_clis_holds() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.run(&["hold", "--as", "coder-7", "src/**", "--reason", "refactor"])
        .ok();
    let r = session(
        &py,
        &b,
        &["--as", "coder-1", "--profile", "full"],
        json!([
            call("hold", json!({"paths": ["src/a.rs"]})),
            call(
                "hold",
                json!({"paths": ["docs/*.md"], "resources": ["db:test"], "shared": true, "for": "1h", "reason": "docs"})
            ),
            call("holds", json!({})),
            call("release_hold", json!({"resources": ["db:test"]})),
        ]),
    );
    assert_eq!(r[0]["is_error"], json!(true), "{}", r[0]);
    assert!(
        r[0].to_string().contains("coder-7 holds src/**"),
        "{}",
        r[0]
    );
    // The tool error names the hold in the way as `holds --json` lists it (docs/json.md).
    let err = &r[0]["value"]["error"];
    assert_eq!(err["code"], 3, "{}", r[0]);
    assert_eq!(
        err["conflicts"][0]["wanted"],
        json!({"kind": "path", "name": "src/a.rs"})
    );
    let theirs = b.run(&["holds", "--json"]).ok().json()["holds"][0].clone();
    assert_eq!(theirs["agent"], "coder-7");
    assert_eq!(err["conflicts"][0]["hold"], theirs);
    assert_eq!(err["conflicts"][0]["hold"]["reason"], "refactor");
    let granted = ok(&r[1]);
    assert_eq!(granted["holds"].as_array().unwrap().len(), 2);
    assert_eq!(granted["holds"][0]["agent"], "coder-1");
    let list = ok(&r[2]);
    assert_eq!(list["total"], 3);
    let released = ok(&r[3]);
    assert_eq!(released["released"][0]["resource"]["name"], "db:test");
    let cli = b.run(&["holds", "--json"]).ok().json();
    assert_eq!(cli["holds"].as_array().unwrap().len(), 2);
}

/// The MCP `hold` tool's `ask`, as the CLI's `hold --ask`: a refused agent asks a human
/// with the conflict attached; the call is still the refusal (code 3, its conflicts) and
/// names the question, whose body names the holder, its reason and expiry.
#[test]
fn a_refused_hold_over_mcp_can_ask_a_human() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.run(&["hold", "--as", "coder-7", "src/**", "--reason", "refactor"])
        .ok();
    let r = session(
        &py,
        &b,
        &["--as", "coder-1", "--profile", "full"],
        json!([
            call("hold", json!({"paths": ["src/a.rs"], "ask": ""})),
            call(
                "hold",
                json!({"paths": ["src/b.rs"], "ask": "Can I have src/b.rs for the fix?"})
            ),
            call("hold", json!({"paths": ["docs/x.md"], "ask": ""})),
        ]),
    );
    let mut ids = Vec::new();
    for res in &r[..2] {
        assert_eq!(res["is_error"], json!(true), "{res}");
        let err = &res["value"]["error"];
        assert_eq!(err["code"], 3, "{res}");
        assert_eq!(err["conflicts"][0]["hold"]["agent"], "coder-7", "{res}");
        let message = err["message"].as_str().unwrap();
        assert!(message.contains("coder-7 holds src/**"), "{message}");
        let id = message
            .split("; asked ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("no question named: {message}"))
            .to_string();
        ids.push(id);
    }
    let first = b.read(&format!("questions/{}.md", ids[0]));
    assert!(first.contains("May coder-1 have src/a.rs?"), "{first}");
    assert!(first.contains("coder-7 holds src/** (exclusive"), "{first}");
    assert!(first.contains("until "), "{first}");
    assert!(first.contains("reason: \"refactor\""), "{first}");
    let second = b.read(&format!("questions/{}.md", ids[1]));
    assert!(
        second.contains("Can I have src/b.rs for the fix?"),
        "{second}"
    );
    // Granted: nothing asked.
    assert_eq!(ok(&r[2])["holds"][0]["agent"], "coder-1");
    let open = b.run(&["questions", "--json"]).ok().stdout.clone();
    let log = cli_log(&b);
    for id in &ids {
        assert!(open.contains(id.as_str()), "{open}");
        let doc = format!("questions/{id}.md");
        assert!(
            log.iter()
                .any(|e| e["doc"] == doc && e["actor"] == "coder-1"),
            "{log:?}"
        );
    }
}

/// Typos are refused over MCP as at the command line: `edit` with a field the board does
/// not know (with a suggestion, exit code 2 in the error), `create_task` with an argument
/// it does not take, `list` and `ready` with a term on an unknown field; `extra_fields`
/// names a field of the board's own for one edit.
#[test]
fn mcp_refuses_unknown_fields_with_a_suggestion() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.task("Fix it", &["--id", "task-t"]);
    let before = b.read("tasks/task-t.md");
    let r = session(
        &py,
        &b,
        &["--as", "coder-1", "--profile", "full"],
        json!([
            call("edit", json!({"id": "task-t", "set": {"priorty": 0}})),
            call("create_task", json!({"title": "Other", "priorty": 0})),
            call("list", json!({"query": "stauts=pending"})),
            call("ready", json!({"query": "stauts=pending"})),
            call(
                "edit",
                json!({"id": "task-t", "set": {"estimate": 3}, "extra_fields": ["estimate"]})
            ),
        ]),
    );
    let err = &r[0]["value"]["error"];
    assert_eq!(r[0]["is_error"], json!(true), "{}", r[0]);
    assert_eq!((&err["kind"], &err["code"]), (&json!("usage"), &json!(2)));
    assert_eq!(
        err["message"],
        json!(
            "tasks/task-t.md: unknown field 'priorty' for tasks; did you mean 'priority'? (nothing written)\nhint: a field of your own is declared under fields: in board.yaml (or in the region's template); extra_fields writes it this once"
        )
    );
    assert_eq!(r[1]["is_error"], json!(true), "{}", r[1]);
    assert!(
        r[1]["value"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown field `priorty`"),
        "{}",
        r[1]
    );
    for q in [&r[2], &r[3]] {
        assert_eq!(q["is_error"], json!(true), "{q}");
        assert_eq!(q["value"]["error"]["code"], json!(2));
        assert!(
            q["value"]["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with(
                    "unknown field 'stauts' in query term 'stauts=pending'; did you mean 'status'?"
                ),
            "{q}"
        );
    }
    assert_eq!(ok(&r[4])["rev"], json!(2));
    let after = b.read("tasks/task-t.md");
    assert!(
        after.contains("estimate: 3\n") && !after.contains("priorty"),
        "{after}"
    );
    assert_eq!(b.run(&["list", "tasks"]).ok().stdout.lines().count(), 2);
    assert_ne!(before, after);
    // The task's creation, the server's registration of its agent, the one edit.
    let ops: Vec<Value> = b.log().iter().map(|e| e["op"].clone()).collect();
    assert_eq!(ops, [json!("create"), json!("agent"), json!("edit")]);
}

/// The SDK acknowledges a listen before the server's handler runs, and a client may change
/// the board the moment the acknowledgment arrives. On a board big enough that following
/// it takes a while, that change must still be heard of: the server is following the board
/// before it lets the acknowledgment go.
#[test]
fn a_change_made_right_after_the_listen_is_acknowledged_is_heard_of() {
    let Some(py) = python() else { return };
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "Watched", "--id", "task-w"])
        .ok();
    let file = b.read("tasks/task-w.md");
    for i in 0..4000 {
        b.write(
            &format!("tasks/task-bulk-{i}.md"),
            file.replace("task-w", &format!("task-bulk-{i}")),
        );
    }
    let r = session(
        &py,
        &b,
        &["--as", "coder-1"],
        json!([
            {"op": "listen_then_run", "uri": "tavern://tasks/task-w", "wait": 20,
             "run": [BIN, "--board", b.board(), "--as", "lead", "edit", "task-w", "--set", "priority=0"]},
        ]),
    );
    let events = r[0]["events"].as_array().unwrap();
    assert_eq!(
        events.last().unwrap(),
        &json!("ResourceUpdated:tavern://tasks/task-w")
    );
    assert!(b.read("tasks/task-w.md").contains("priority: 0"));
}
