//! Who is acting, when nothing names anyone: a container with no `$USER`, no `$LOGNAME`,
//! no `TAVERN_AGENT` and no `--as`. Commands that write refuse (exit 2) saying how to name
//! the actor, and nothing is ever logged as `unknown`; reads work as before.

use crate::util::{TestBoard, output, snapshot};

/// `tavern ARGS` as in a container: nothing in the environment names the actor.
fn nameless(b: &TestBoard, args: &[&str]) -> crate::util::Out {
    let mut c = b.cmd(args);
    c.env_remove("USER")
        .env_remove("LOGNAME")
        .env_remove("TAVERN_AGENT");
    output(c)
}

const NO_ACTOR: &str = "error: nobody is named as the actor (no --as, and TAVERN_AGENT, USER and LOGNAME are all unset); nothing written\nhint: name who is acting with --as NAME, or export TAVERN_AGENT=NAME\n";

#[test]
fn a_write_with_nobody_named_is_refused_and_leaves_the_board_as_it_was() {
    let b = TestBoard::new();
    let t = b.task("Parse the config", &[]);
    b.run(&["ask", "Which format?", "--as", "coder"]).ok();
    let q = b.run(&["list", "questions", "--json"]).json()["documents"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let before = snapshot(&b);
    let log_before = b.log().len();
    for args in [
        vec!["new", "task", "--title", "Another"],
        vec!["edit", &t, "--set", "priority=1"],
        vec!["claim", &t],
        vec!["claim", "--next"],
        vec!["answer", &q, "JSON"],
        vec![
            "post",
            "--title",
            "Seen",
            "--topic",
            "build",
            "--severity",
            "low",
        ],
        vec!["agent", "register"],
        vec!["pause", "lunch"],
        vec!["mcp"],
    ] {
        let out = nameless(&b, &args);
        out.code(2).stdout_is("");
        out.stderr_is(NO_ACTOR);
    }
    // --json: the same error, as JSON, same exit code.
    let out = nameless(&b, &["claim", &t, "--json"]);
    out.code(2).stdout_is("");
    let err: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(err["error"]["kind"], "usage");
    assert_eq!(err["error"]["code"], 2);
    assert_eq!(
        err["error"]["message"]
            .as_str()
            .map(|m| format!("error: {m}\n")),
        Some(NO_ACTOR.to_string())
    );
    assert_eq!(snapshot(&b), before, "a refused command changed the board");
    assert_eq!(b.log().len(), log_before);
    let log = b.read("log.yaml");
    assert!(!log.contains("unknown"), "{log}");
    assert!(!b.read(&format!("questions/{q}.md")).contains("answered_by"));
}

#[test]
fn reads_work_with_nobody_named() {
    let b = TestBoard::new();
    let t = b.task("Parse the config", &[]);
    for args in [
        vec!["list"],
        vec!["show", &t],
        vec!["log"],
        vec!["check"],
        vec!["ready"],
        vec!["status"],
        vec!["questions"],
        vec!["agent", "list"],
        vec!["mcp", "--list-tools"],
    ] {
        let out = nameless(&b, &args);
        out.ok();
        assert!(
            !out.stderr.contains("nobody is named"),
            "{args:?}: {}",
            out.stderr
        );
    }
    nameless(&b, &["show", &t]).stdout_has("Parse the config");
}

#[test]
fn logname_or_tavern_agent_name_the_actor_when_user_is_unset() {
    let b = TestBoard::new();
    let mut c = b.cmd(&["new", "task", "--title", "By logname"]);
    c.env_remove("USER").env("LOGNAME", "operator");
    output(c).ok();
    let mut c = b.cmd(&["new", "task", "--title", "By agent"]);
    c.env_remove("USER")
        .env_remove("LOGNAME")
        .env("TAVERN_AGENT", "coder-7");
    output(c).ok();
    nameless(&b, &["new", "task", "--title", "By flag", "--as", "lead"]).ok();
    let actors: Vec<String> = b
        .log()
        .iter()
        .map(|e| e["actor"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(actors, ["operator", "coder-7", "lead"]);
}

#[test]
fn the_dashboard_serves_read_only_when_nobody_is_named() {
    use std::io::{BufRead, BufReader};
    let b = TestBoard::new();
    let mut c = b.cmd(&["serve", "--port", "0"]);
    c.env_remove("USER")
        .env_remove("LOGNAME")
        .env_remove("TAVERN_AGENT")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = lines.next().unwrap().unwrap();
    let note = lines.next().unwrap().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(url.starts_with("tavern serve: http://127.0.0.1:"), "{url}");
    assert_eq!(
        note,
        "note: nobody is named as the actor (no --as, and TAVERN_AGENT, USER and LOGNAME are all unset), so the page is read-only (use --as NAME)"
    );
}
