//! Codex (`@openai/codex`), headless (`codex exec`), against the stand-in through a
//! `model_providers` entry with `wire_api = "responses"`. Codex runs a project's hooks only
//! once the user has trusted the project and reviewed the hooks: the test does both in
//! Codex's own terminal interface, under tmux, as a user would.

use std::time::Duration;

use serde_json::json;

use super::*;

/// The events `tavern setup codex` hooks, as Codex names them in its trust records.
const HOOKED: [&str; 3] = ["session_start", "post_tool_use", "session_end"];

/// The user's Codex configuration: the stand-in as the model provider (its address is
/// given on each run), and nothing that calls out.
fn configure(p: &Project) {
    let dir = p.home.path().join(".codex");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.toml"),
        "model = \"standin\"\nmodel_provider = \"standin\"\ncheck_for_update_on_startup = false\n\n\
         [analytics]\nenabled = false\n\n[feedback]\nenabled = false\n\n\
         [model_providers.standin]\nname = \"Stand-in\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         wire_api = \"responses\"\nenv_key = \"STANDIN_API_KEY\"\n",
    )
    .unwrap();
}

fn provider(model: Option<&StandIn>) -> String {
    let port = model.map_or(9, |m| m.port);
    format!("model_providers.standin.base_url=\"http://127.0.0.1:{port}/v1\"")
}

/// Whether Codex has recorded the project as trusted and every tavern hook as reviewed.
fn trusted(p: &Project) -> bool {
    let config =
        std::fs::read_to_string(p.home.path().join(".codex/config.toml")).unwrap_or_default();
    let root = p.root().canonicalize().unwrap();
    let hooks = root.join(".codex/hooks.json");
    config.contains(&format!("[projects.\"{}\"]", root.display()))
        && HOOKED
            .iter()
            .all(|event| config.contains(&format!("[hooks.state.\"{}:{event}:", hooks.display())))
}

/// What a user does once after `tavern setup codex`: start Codex in the project, trust the
/// folder, and at "Hooks need review" choose "Trust all and continue"; then quit.
fn review(p: &Project, c: &Client) {
    let socket = format!("tavern-codex-{}", std::process::id());
    let tmux = |args: &[&str]| {
        Command::new("tmux")
            .args(["-L", &socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("run tmux")
    };
    let start = format!(
        "exec env -i HOME={} PATH={} TERM=xterm-256color LANG=C.UTF-8 STANDIN_API_KEY=sk-standin {} -c '{}'",
        p.home.path().display(),
        path_with_tavern(),
        c.bin.display(),
        provider(None)
    );
    let root = p.root().display().to_string();
    let made = tmux(&[
        "new-session",
        "-d",
        "-s",
        "review",
        "-x",
        "160",
        "-y",
        "50",
        "-c",
        &root,
        &start,
    ]);
    assert!(
        made.status.success(),
        "tmux: {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let mut screen = String::new();
    // Bounded: a Codex that never shows its review fails the test instead of hanging it.
    for _ in 0..600 {
        if trusted(p) {
            break;
        }
        screen = String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "review"]).stdout)
            .to_string();
        if screen.contains("Trust this folder") {
            tmux(&["send-keys", "-t", "review", "Enter"]);
        } else if screen.contains("Hooks need review") {
            // The second choice: "Trust all and continue".
            tmux(&["send-keys", "-t", "review", "Down"]);
            std::thread::sleep(Duration::from_millis(200));
            tmux(&["send-keys", "-t", "review", "Enter"]);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    tmux(&["kill-server"]);
    assert!(
        trusted(p),
        "{}: trusting the folder and reviewing tavern's hooks in Codex did not record trust for {HOOKED:?}; the last screen:\n{screen}",
        c.label
    );
}

/// One `codex exec` run (`resume --last` to resume the last session).
fn run(p: &Project, c: &Client, model: &StandIn, prompt: &str, resume: bool) -> String {
    let mut cmd = p.client_cmd(&c.bin);
    cmd.arg("exec");
    if resume {
        cmd.args(["resume", "--last"]);
    }
    cmd.args(["-c", &provider(Some(model))])
        .arg(prompt)
        .env("STANDIN_API_KEY", "sk-standin");
    let out = finish(cmd, &c.label);
    assert!(
        out.code == 0,
        "{}: `codex exec` failed ({}):\n{}\n{}",
        c.label,
        out.code,
        out.stdout,
        out.stderr
    );
    out.stderr
}

#[test]
fn codex_runs_the_agent_loop_on_the_board() {
    let Some(c) = client("@openai/codex", "codex", "Codex") else {
        return;
    };
    let p = Project::new();
    let first = p.board.task("Fix the parser", &[]);
    let second = p.board.task("Write the docs", &[]);
    let untouched = project_files(&p);
    configure(&p);
    let setup = p.tavern(&["setup", "codex", "--mcp"]);
    setup.ok();
    assert!(
        setup.stdout.contains("Hooks need review"),
        "tavern setup codex does not tell the user to review the hooks:\n{}",
        setup.stdout
    );
    // tavern's own check reads Codex's records: not trusted yet, then trusted.
    let before = p.tavern(&["setup", "--check", "codex"]);
    before.code(6).stdout_has("codex: needs attention\n");
    before.stdout_has("FIX  folder trusted: Codex does not trust");
    before.stdout_has(
        "FIX  hooks trusted: Codex has not trusted SessionStart, PreToolUse, PostToolUse, SessionEnd",
    );
    review(&p, &c);
    let after = p.tavern(&["setup", "--check", "codex"]);
    after.ok().stdout_has("codex: ready\n");
    after.stdout_has(
        "ok   reachable: a login shell (`bash -lc`, as Codex runs commands) finds tavern at",
    );

    // A session: the MCP claim, `tavern start` in the shell (Codex's shell does not carry
    // TAVERN_AGENT: the name comes from the context, as `--as`), then a context so full
    // that Codex compacts it before the next turn.
    let model = StandIn::start(json!([
        {"tool": "claim", "namespace": "mcp__tavern", "input": {"id": first}},
        {"tool": "exec_command", "input": {"cmd": format!("tavern start {first} --as {{agent}}")}, "tokens": 990_000},
        {"when": "CONTEXT CHECKPOINT COMPACTION", "text": "Claimed and started the task."},
        {"text": "Working on it."}
    ]));
    let said = run(&p, &c, &model, "Work on the board.", false);
    let log = p.log();
    let agents = registered(&log, "codex");
    let [agent] = &agents[..] else {
        panic!(
            "{}: expected one agent registered by the session, got {agents:?} (did Codex run the hooks?):\n{said}\n{}",
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
        "{}: the MCP claim did not claim {first} as `{agent}`:\n{said}\n{}",
        c.label,
        show(&log)
    );
    let starts = entries(&log, "start", &first);
    assert!(
        starts.len() == 1 && starts[0]["actor"] == *agent,
        "{}: `tavern start --as NAME` in the shell tool did not act as `{agent}`:\n{said}\n{}",
        c.label,
        show(&log)
    );
    let compacted = requests
        .iter()
        .position(|r| r["turn"]["when"] == "CONTEXT CHECKPOINT COMPACTION")
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

    // The session resumed: a new process, a new agent, and the model told so.
    let model = StandIn::start(json!([
        {"tool": "exec_command", "input": {"cmd": format!("tavern claim {second} --as {{agent}}")}},
        {"text": "Claimed."}
    ]));
    run(&p, &c, &model, "Carry on.", true);
    let log = p.log();
    let agents = registered(&log, "codex");
    let [_, resumed] = &agents[..] else {
        panic!(
            "{}: expected the resumed session to register a second agent, got {agents:?}",
            c.label
        );
    };
    assert!(
        model
            .scripted()
            .first()
            .and_then(last_agent)
            .is_some_and(|a| a == *resumed),
        "{}: the resumed session was not told its new name `{resumed}` last",
        c.label
    );
    let claims = entries(&log, "claim", &second);
    assert!(
        claims.len() == 1 && claims[0]["actor"] == *resumed,
        "{}: `tavern claim --as NAME` in the resumed session did not act as `{resumed}`:\n{}",
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
    removed(&p, "codex", &untouched, &c.label);
}
