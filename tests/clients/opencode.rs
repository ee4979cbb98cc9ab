//! OpenCode (`opencode-ai`), headless (`opencode run`), against the stand-in through a
//! provider with a `baseURL` (OpenAI-compatible chat completions). OpenCode has no hook at
//! its exit: its claims go back by the sweep once its process is gone.

use serde_json::json;

use super::*;

/// The user's OpenCode configuration: the stand-in as the only provider, nothing shared,
/// no update checks.
fn configure(p: &Project, model: &StandIn) {
    let dir = p.home.path().join(".config/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let config = json!({
        "$schema": "https://opencode.ai/config.json",
        "model": "standin/standin",
        "small_model": "standin/standin",
        "autoupdate": false,
        "share": "disabled",
        "provider": {"standin": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Stand-in",
            "options": {"baseURL": format!("http://127.0.0.1:{}/v1", model.port), "apiKey": "sk-standin"},
            "models": {"standin": {"name": "Stand-in", "tool_call": true, "limit": {"context": 200_000, "output": 4_000}}}
        }}
    });
    std::fs::write(dir.join("opencode.json"), config.to_string()).unwrap();
}

/// One `opencode run` (`--continue` to resume the last session).
fn run(p: &Project, c: &Client, model: &StandIn, prompt: &str, resume: bool) -> String {
    configure(p, model);
    let mut cmd = p.client_cmd(&c.bin);
    cmd.arg("run");
    if resume {
        cmd.arg("--continue");
    }
    cmd.arg(prompt)
        .env("SHELL", "/bin/bash")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_SHARE", "1");
    let out = finish(cmd, &c.label);
    assert!(
        out.code == 0,
        "{}: `opencode run` failed ({}):\n{}\n{}",
        c.label,
        out.code,
        out.stdout,
        out.stderr
    );
    format!("{}\n{}", out.stdout, out.stderr)
}

/// What the sweep says of `agent`'s claim on `task` once OpenCode's process is gone and
/// the board's lease (1s here) has passed.
fn swept(p: &Project, c: &Client, agent: &str, task: &str) {
    std::thread::sleep(std::time::Duration::from_millis(1500));
    p.tavern(&["sweep"]).ok();
    let log = p.log();
    assert!(
        entries(&log, "release", task)
            .iter()
            .any(|e| e["actor"] == "tavern-sweep"
                && e["note"]
                    .as_str()
                    .is_some_and(|n| n.contains(&format!("{agent} not seen since")))),
        "{}: once OpenCode was gone the sweep did not give {task} back from `{agent}`:\n{}",
        c.label,
        show(&log)
    );
}

#[test]
fn opencode_runs_the_agent_loop_on_the_board() {
    let Some(c) = client("opencode-ai", "opencode", "OpenCode") else {
        return;
    };
    let p = Project::new();
    let config = p.board.read("board.yaml");
    p.board.write(
        "board.yaml",
        config.replace("\nlease: 5m\n", "\nlease: 1s\n"),
    );
    let first = p.board.task("Fix the parser", &[]);
    let second = p.board.task("Write the docs", &[]);
    let untouched = project_files(&p);
    p.tavern(&["setup", "opencode", "--mcp"]).ok();

    // A session: the MCP claim, `tavern start` in the shell (TAVERN_AGENT is set there by
    // the plugin), then a context so full that OpenCode compacts it and goes on.
    let model = StandIn::start(json!([
        {"tool": "tavern_claim", "input": {"id": first}},
        {"tool": "bash", "input": {"command": format!("tavern start {first}"), "description": "Start the task"}, "tokens": 990_000},
        {"when": "Here is the conversation so far", "text": "Claimed and started the task."},
        {"text": "Working on it."}
    ]));
    let said = run(&p, &c, &model, "Work on the board.", false);
    let log = p.log();
    let agents = registered(&log, "opencode");
    let [agent] = &agents[..] else {
        panic!(
            "{}: expected one agent registered by the session, got {agents:?} (did OpenCode load the plugin?):\n{said}\n{}",
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
        "{}: the session-start context did not reach the model naming `{agent}` (the plugin's session.created)",
        c.label
    );
    let claims = entries(&log, "claim", &first);
    assert!(
        claims.len() == 1 && claims[0]["actor"] == *agent && claims[0]["via"] == "mcp",
        "{}: the MCP claim did not claim {first} as `{agent}`:\n{said}\n{}",
        c.label,
        show(&log)
    );
    let starts = entries(&log, "start", &first);
    assert!(
        starts.len() == 1 && starts[0]["actor"] == *agent,
        "{}: `tavern start` in the shell tool did not act as `{agent}` (TAVERN_AGENT from the plugin's shell.env):\n{said}\n{}",
        c.label,
        show(&log)
    );
    let compacted = requests
        .iter()
        .position(|r| r["turn"]["when"] == "Here is the conversation so far")
        .unwrap_or_else(|| {
            panic!(
                "{}: the forced compaction never asked for a summary:\n{said}",
                c.label
            )
        });
    assert!(
        requests[compacted + 1..]
            .iter()
            .any(|r| text(r).contains(&format!(
                "The context was compacted; this is the tavern board again. You are agent `{agent}`"
            ))),
        "{}: after the compaction the board summary did not come back (the plugin's compaction hook and system prompt)",
        c.label
    );
    assert!(
        !p.root().join(".opencode").exists(),
        "{}: setup or the plugin left a .opencode/ in the project, where OpenCode installs its plugin package",
        c.label
    );
    swept(&p, &c, agent, &first);
    drop(model);

    // The session resumed in a new process: a new agent, told its new name (the
    // conversation so far may name the old one).
    let model = StandIn::start(json!([
        {"tool": "bash", "input": {"command": format!("tavern claim {second}"), "description": "Claim"}},
        {"text": "Claimed."}
    ]));
    let said = run(&p, &c, &model, "Carry on.", true);
    let log = p.log();
    let agents = registered(&log, "opencode");
    let [_, resumed] = &agents[..] else {
        panic!(
            "{}: expected the resumed session to register a second agent, got {agents:?}:\n{said}",
            c.label
        );
    };
    let requests = model.scripted();
    let first_request = requests.first().map(text).unwrap_or_default();
    assert!(
        first_request.contains("Claimed and started the task."),
        "{}: `opencode run --continue` did not continue the session (its summary is not in the request)",
        c.label
    );
    assert!(
        first_request.contains(&format!(
            "you are agent `{resumed}` on this project's tavern board"
        )),
        "{}: the resumed session was not told its new name `{resumed}` (the plugin's system prompt)",
        c.label
    );
    let claims = entries(&log, "claim", &second);
    assert!(
        claims.len() == 1 && claims[0]["actor"] == *resumed,
        "{}: `tavern claim` in the resumed session did not act as `{resumed}`:\n{said}\n{}",
        c.label,
        show(&log)
    );
    swept(&p, &c, resumed, &second);
    removed(&p, "opencode", &untouched, &c.label);
}
