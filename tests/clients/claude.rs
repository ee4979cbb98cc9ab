//! Claude Code (`@anthropic-ai/claude-code`), headless (`claude -p`), against the stand-in
//! through ANTHROPIC_BASE_URL.

use serde_json::json;

use super::*;

/// `claude ARGS` in the project, talking to nothing but the stand-in at `port`.
fn claude(p: &Project, c: &Client, port: u16) -> Command {
    let mut cmd = p.client_cmd(&c.bin);
    cmd.env("SHELL", "/bin/bash")
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-standin")
        // No traffic but the model's: no telemetry, error reports or update checks.
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1");
    cmd
}

/// One `claude -p` run; returns its session id.
fn run(p: &Project, c: &Client, model: &StandIn, prompt: &str, resume: Option<&str>) -> String {
    let mut cmd = claude(p, c, model.port);
    cmd.args(["-p", prompt, "--output-format", "stream-json", "--verbose"])
        // What a user allows a headless run: tavern's commands and tavern's MCP tools.
        .args(["--allowedTools", "Bash(tavern *)", "mcp__tavern"]);
    if let Some(id) = resume {
        cmd.args(["--resume", id]);
    }
    let out = finish(cmd, &c.label);
    assert!(
        out.code == 0,
        "{}: `claude -p` failed ({}):\n{}\n{}",
        c.label,
        out.code,
        out.stdout,
        out.stderr
    );
    out.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| v["session_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("{}: no session id in the output:\n{}", c.label, out.stdout))
}

#[test]
fn claude_code_runs_the_agent_loop_on_the_board() {
    let Some(c) = client("@anthropic-ai/claude-code", "claude", "Claude Code") else {
        return;
    };
    let p = Project::new();
    let first = p.board.task("Fix the parser", &[]);
    let second = p.board.task("Write the docs", &[]);
    let untouched = project_files(&p);
    p.tavern(&["setup", "claude", "--mcp"]).ok();

    // A session: the MCP claim (its schema loaded through tool search first, as Claude Code
    // defers MCP tools), `tavern start` in the shell, then a context so full that Claude
    // Code compacts it before the next turn.
    let model = StandIn::start(json!([
        {"tool": "ToolSearch", "input": {"query": "select:mcp__tavern__claim", "max_results": 5}},
        {"tool": "mcp__tavern__claim", "input": {"id": first}},
        {"tool": "Bash", "input": {"command": format!("tavern start {first}"), "description": "Start the task"}, "tokens": 990_000},
        {"when": "<summary>", "text": "<analysis>Started the task.</analysis>\n<summary>Claimed and started the task.</summary>"},
        {"text": "Working on it."}
    ]));
    let session = run(&p, &c, &model, "Work on the board.", None);
    let log = p.log();
    let agents = registered(&log, "claude");
    let [agent] = &agents[..] else {
        panic!(
            "{}: expected one agent registered by the session, got {agents:?}:\n{}",
            c.label,
            show(&log)
        );
    };
    registered_once(&log, agent, &c.label);
    let requests = model.scripted();
    assert!(
        requests
            .first()
            .is_some_and(|r| text(r).contains(&format!("You are registered as agent `{agent}`"))),
        "{}: the session-start context did not reach the model naming `{agent}` (SessionStart hook)",
        c.label
    );
    let claims = entries(&log, "claim", &first);
    assert!(
        claims.len() == 1 && claims[0]["actor"] == *agent && claims[0]["via"] == "mcp",
        "{}: the MCP claim did not claim {first} as `{agent}`:\n{}",
        c.label,
        show(&log)
    );
    let starts = entries(&log, "start", &first);
    assert!(
        starts.len() == 1 && starts[0]["actor"] == *agent,
        "{}: `tavern start` in the shell tool did not act as `{agent}` (TAVERN_AGENT through CLAUDE_ENV_FILE):\n{}",
        c.label,
        show(&log)
    );
    let compacted = requests
        .iter()
        .position(|r| r["turn"]["when"] == "<summary>")
        .unwrap_or_else(|| {
            panic!(
                "{}: the forced compaction never asked for a summary",
                c.label
            )
        });
    assert!(
        requests[compacted + 1..]
            .iter()
            .any(|r| text(r).contains(&format!(
                "The context was compacted; this is the tavern board again. You are agent `{agent}`"
            ))),
        "{}: after the compaction the board summary did not come back (SessionStart, source compact)",
        c.label
    );
    let releases = entries(&log, "release", &first);
    assert!(
        releases.len() == 1
            && releases[0]["actor"] == *agent
            && releases[0]["note"] == format!("{agent} deregistered"),
        "{}: the end of the session did not give {first} back (SessionEnd hook):\n{}",
        c.label,
        show(&log)
    );
    drop(model);

    // The same conversation resumed: a new process, a new agent, and the model told so.
    let model = StandIn::start(json!([
        {"tool": "Bash", "input": {"command": format!("tavern claim {second}"), "description": "Claim"}},
        {"text": "Claimed."}
    ]));
    run(&p, &c, &model, "Carry on.", Some(&session));
    let log = p.log();
    let agents = registered(&log, "claude");
    let [_, resumed] = &agents[..] else {
        panic!(
            "{}: expected the resumed session to register a second agent, got {agents:?}",
            c.label
        );
    };
    let requests = model.scripted();
    assert!(
        requests
            .first()
            .and_then(last_agent)
            .is_some_and(|a| a == *resumed),
        "{}: the resumed session was not told its new name `{resumed}` last",
        c.label
    );
    let claims = entries(&log, "claim", &second);
    assert!(
        claims.len() == 1 && claims[0]["actor"] == *resumed,
        "{}: `tavern claim` in the resumed session did not act as `{resumed}`:\n{}",
        c.label,
        show(&log)
    );
    assert!(
        entries(&log, "release", &second)
            .iter()
            .any(|e| e["actor"] == *resumed),
        "{}: the end of the resumed session did not give {second} back",
        c.label
    );
    removed(&p, "claude", &untouched, &c.label);
}

/// `claude mcp list` starts every MCP server to see that it answers: tavern's leaves no
/// agent card and nothing in the log (it registers at the first tool call, which a health
/// check never makes).
#[test]
fn claude_code_health_check_leaves_no_agent() {
    let Some(c) = client("@anthropic-ai/claude-code", "claude", "Claude Code") else {
        return;
    };
    let p = Project::new();
    // The user's scope: a project's .mcp.json server is only listed until the user approves
    // it in an interactive start, while the user's own servers are checked at once.
    p.tavern(&["setup", "claude", "--user", "--mcp"]).ok();
    let mut cmd = claude(&p, &c, 9);
    cmd.args(["mcp", "list"]);
    let out = finish(cmd, &c.label);
    assert!(
        out.code == 0
            && out
                .stdout
                .contains("tavern: tavern mcp --client claude - ✔ Connected"),
        "{}: `claude mcp list` did not find tavern's server connected ({}):\n{}\n{}",
        c.label,
        out.code,
        out.stdout,
        out.stderr
    );
    let log = p.log();
    assert!(
        log.is_empty(),
        "{}: the health check `claude mcp list` left entries in the log:\n{}",
        c.label,
        show(&log)
    );
    p.tavern(&["agent", "list"])
        .ok()
        .stdout_is("AGENT  STATUS  SEEN  HOLDS  CAPABILITIES\n");
    let cards: Vec<_> = std::fs::read_dir(p.root().join(".tavern/control/agents"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        cards.is_empty(),
        "{}: the health check `claude mcp list` left agent cards: {cards:?}",
        c.label
    );
}

/// The pre-edit hook in the released client: Claude Code's own Write tool, scripted to
/// write a file another agent holds and one nobody holds. The held one is refused before
/// the tool runs and the model is told who holds it; the free one is written.
#[test]
fn claude_code_cannot_write_a_path_another_agent_holds() {
    let Some(c) = client("@anthropic-ai/claude-code", "claude", "Claude Code") else {
        return;
    };
    let p = Project::new();
    p.tavern(&["setup", "claude"]).ok();
    p.tavern(&[
        "hold",
        "--as",
        "coder-7",
        "src/held.rs",
        "--reason",
        "mid-refactor",
    ])
    .ok();
    std::fs::create_dir_all(p.root().join("src")).unwrap();
    let held = p.root().join("src/held.rs");
    let free = p.root().join("src/free.rs");
    let model = StandIn::start(json!([
        {"tool": "Write", "input": {"file_path": held, "content": "overwritten\n"}},
        {"tool": "Write", "input": {"file_path": free, "content": "written\n"}},
        {"text": "Done."}
    ]));
    let mut cmd = claude(&p, &c, model.port);
    cmd.args([
        "-p",
        "Write the files.",
        "--output-format",
        "stream-json",
        "--verbose",
    ])
    .args(["--allowedTools", "Write", "Bash(tavern *)"]);
    let out = finish(cmd, &c.label);
    assert!(
        out.code == 0,
        "{}: `claude -p` failed:\n{}\n{}",
        c.label,
        out.stdout,
        out.stderr
    );
    assert!(!held.exists(), "{}: the held file was written", c.label);
    assert_eq!(
        std::fs::read_to_string(&free).ok().as_deref(),
        Some("written\n"),
        "{}: the free file was not written:\n{}",
        c.label,
        out.stdout
    );
    let told = model
        .requests()
        .iter()
        .any(|r| text(r).contains("coder-7 holds src/held.rs") && text(r).contains("mid-refactor"));
    assert!(
        told,
        "{}: the model was not told who holds src/held.rs:\n{}",
        c.label, out.stdout
    );
}
