//! `tavern setup CLIENT` on sample configurations of each client that already hold the
//! user's own hooks and servers, and `tavern hook`, which the installed hooks run.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::util::{BIN, Out, TestBoard, output};

/// `tavern ARGS` in the project with HOME in a temp dir.
fn setup(b: &TestBoard, home: &Path, args: &[&str]) -> Out {
    let mut c = b.cmd(args);
    c.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_STATE_HOME")
        .env_remove("CODEX_HOME");
    output(c)
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(root.join(rel)).ok()
}

fn json_of(root: &Path, rel: &str) -> Value {
    serde_json::from_str(&read(root, rel).unwrap()).unwrap()
}

/// Every command in a settings file's hooks, as `EVENT: command`.
fn hook_commands(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for (event, groups) in v["hooks"].as_object().into_iter().flatten() {
        for g in groups.as_array().unwrap() {
            for h in g["hooks"].as_array().unwrap() {
                out.push(format!("{event}: {}", h["command"].as_str().unwrap()));
            }
        }
    }
    out
}

/// The user's files of each client: (path, content).
fn samples(client: &str) -> Vec<(&'static str, &'static str)> {
    match client {
        "claude" => vec![
            (
                ".claude/settings.json",
                "{\n  \"permissions\": {\"allow\": [\"Bash(cargo test:*)\"]},\n  \"hooks\": {\n    \"PostToolUse\": [{\"matcher\": \"Edit|Write\", \"hooks\": [{\"type\": \"command\", \"command\": \"cargo fmt\"}]}],\n    \"SessionStart\": [{\"matcher\": \"startup\", \"hooks\": [{\"type\": \"command\", \"command\": \"echo hello\"}]}]\n  }\n}\n",
            ),
            (
                ".mcp.json",
                "{\"mcpServers\": {\"github\": {\"command\": \"gh-mcp\", \"args\": [\"--stdio\"]}}}",
            ),
            (
                "CLAUDE.md",
                "# House rules\n\nRun the tests before you commit.\n",
            ),
        ],
        "codex" => vec![
            (
                ".codex/hooks.json",
                "{\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\", \"timeout\": 5}]}]}}\n",
            ),
            (
                ".codex/config.toml",
                "model = \"gpt-5\"\n\n[mcp_servers.github]\ncommand = \"gh-mcp\"\nargs = [\"--stdio\"]",
            ),
            ("AGENTS.md", "# Agents\n\nNo force pushes."),
        ],
        "opencode" => vec![
            (
                "opencode.json",
                "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"plugin\": [\"opencode-wakatime\"],\n  \"mcp\": {\"github\": {\"type\": \"local\", \"command\": [\"gh-mcp\"], \"enabled\": true}}\n}\n",
            ),
            ("AGENTS.md", "# Agents\n\nNo force pushes.\n"),
        ],
        _ => unreachable!(),
    }
}

/// Every file under the project but the board, with its bytes.
fn files(root: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    for e in walkdir(root) {
        let rel = e.strip_prefix(root).unwrap().to_string_lossy().to_string();
        if !rel.starts_with(".tavern") && !rel.starts_with("home") {
            out.insert(rel, std::fs::read(&e).unwrap());
        }
    }
    out
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn setup_merges_into_each_clients_files_is_idempotent_and_removes_to_the_original_bytes() {
    for client in ["claude", "codex", "opencode"] {
        let b = TestBoard::new();
        let home = b.root().join("home");
        std::fs::create_dir_all(&home).unwrap();
        for (rel, text) in samples(client) {
            write(b.root(), rel, text);
        }
        let original = files(b.root());

        // --dry-run shows the change as diffs and changes nothing.
        let dry = setup(&b, &home, &["setup", client, "--mcp", "--dry-run"]);
        dry.ok().stdout_has("+++ ").stdout_has("tavern hook ");
        assert_eq!(files(b.root()), original, "{client}: dry run wrote");

        setup(&b, &home, &["setup", client, "--mcp"]).ok();
        let after = files(b.root());
        match client {
            "claude" => {
                let s = json_of(b.root(), ".claude/settings.json");
                assert_eq!(s["permissions"], json!({"allow": ["Bash(cargo test:*)"]}));
                assert_eq!(
                    hook_commands(&s),
                    [
                        "PostToolUse: cargo fmt",
                        "PostToolUse: tavern hook claude heartbeat",
                        "SessionStart: echo hello",
                        "SessionStart: tavern hook claude session-start",
                        "SessionEnd: tavern hook claude session-end",
                    ]
                );
                let m = json_of(b.root(), ".mcp.json");
                assert_eq!(
                    m["mcpServers"]["github"],
                    json!({"command": "gh-mcp", "args": ["--stdio"]})
                );
                assert_eq!(
                    m["mcpServers"]["tavern"]["args"],
                    json!(["mcp", "--client", "claude"])
                );
                let notes = read(b.root(), "CLAUDE.md").unwrap();
                assert!(notes.starts_with(
                    "# House rules\n\nRun the tests before you commit.\n\n<!-- tavern:begin"
                ));
            }
            "codex" => {
                let h = json_of(b.root(), ".codex/hooks.json");
                assert_eq!(
                    hook_commands(&h),
                    [
                        "Stop: notify-send done",
                        "SessionStart: tavern hook codex session-start",
                        "PostToolUse: tavern hook codex heartbeat",
                        "PostCompact: tavern hook codex compact",
                    ]
                );
                assert_eq!(h["hooks"]["Stop"][0]["hooks"][0]["timeout"], json!(5));
                let toml = read(b.root(), ".codex/config.toml").unwrap();
                assert!(toml.starts_with("model = \"gpt-5\"\n\n[mcp_servers.github]\ncommand = \"gh-mcp\"\nargs = [\"--stdio\"]\n\n# tavern:begin"), "{toml}");
                assert!(toml.contains("[mcp_servers.tavern]\ncommand = \"tavern\"\nargs = [\"mcp\", \"--client\", \"codex\"]\n"));
                assert!(
                    read(b.root(), "AGENTS.md")
                        .unwrap()
                        .starts_with("# Agents\n\nNo force pushes.\n\n<!-- tavern:begin")
                );
            }
            _ => {
                let o = json_of(b.root(), "opencode.json");
                assert_eq!(o["$schema"], json!("https://opencode.ai/config.json"));
                assert_eq!(o["plugin"], json!(["opencode-wakatime"]));
                assert_eq!(o["mcp"]["github"]["command"], json!(["gh-mcp"]));
                assert_eq!(
                    o["mcp"]["tavern"]["command"],
                    json!(["tavern", "mcp", "--client", "opencode"])
                );
                let plugin = read(b.root(), ".opencode/plugins/tavern.js").unwrap();
                for needle in [
                    "session-start",
                    "heartbeat",
                    "compact",
                    "session-end",
                    "process.pid",
                ] {
                    assert!(plugin.contains(needle), "{needle}");
                }
            }
        }

        // A second run changes nothing at all.
        let again = setup(&b, &home, &["setup", client, "--mcp"]);
        again.ok();
        assert!(
            again.stdout.lines().all(|l| l.starts_with("unchanged ")),
            "{}",
            again.stdout
        );
        assert_eq!(files(b.root()), after);
        setup(&b, &home, &["setup", client, "--mcp", "--dry-run"])
            .ok()
            .stdout_is("nothing would change\n");

        // --remove gives back the very bytes, and takes away what setup created.
        setup(&b, &home, &["setup", client, "--remove"])
            .ok()
            .stdout_has("restored ");
        assert_eq!(files(b.root()), original, "{client}");
    }
}

#[test]
fn remove_after_a_hand_edit_keeps_the_edit_and_takes_only_tavern_out() {
    let b = TestBoard::new();
    let home = b.root().join("home");
    for (rel, text) in samples("claude") {
        write(b.root(), rel, text);
    }
    setup(&b, &home, &["setup", "claude"]).ok();
    let mut s = json_of(b.root(), ".claude/settings.json");
    s["permissions"]["allow"] = json!(["Bash(cargo test:*)", "Bash(ls)"]);
    write(b.root(), ".claude/settings.json", &s.to_string());
    setup(&b, &home, &["setup", "claude", "--remove"])
        .ok()
        .stdout_has("removed .claude/settings.json");
    let s = json_of(b.root(), ".claude/settings.json");
    assert_eq!(
        s["permissions"]["allow"],
        json!(["Bash(cargo test:*)", "Bash(ls)"])
    );
    assert_eq!(
        hook_commands(&s),
        ["PostToolUse: cargo fmt", "SessionStart: echo hello"]
    );
    assert_eq!(read(b.root(), "CLAUDE.md").unwrap(), samples("claude")[2].1);
}

#[test]
fn user_scope_writes_the_home_configuration_and_needs_no_board() {
    let b = TestBoard::empty();
    let home = b.root().join("home");
    write(
        &home,
        ".claude.json",
        "{\"numStartups\": 12, \"mcpServers\": {}}\n",
    );
    let out = setup(&b, &home, &["--json", "setup", "claude", "--user", "--mcp"]);
    out.ok();
    let report = out.json();
    assert_eq!(report["scope"], json!("user"));
    let paths: Vec<&str> = report["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "~/.claude/settings.json",
            "~/.claude.json",
            "~/.claude/CLAUDE.md"
        ]
    );
    let c = json_of(&home, ".claude.json");
    assert_eq!(c["numStartups"], json!(12));
    assert_eq!(c["mcpServers"]["tavern"]["command"], json!("tavern"));
    assert!(!b.root().join(".claude").exists());
    setup(&b, &home, &["setup", "claude", "--user", "--remove"]).ok();
    assert_eq!(
        read(&home, ".claude.json").unwrap(),
        "{\"numStartups\": 12, \"mcpServers\": {}}\n"
    );
    assert!(!home.join(".claude/settings.json").exists());
}

#[test]
fn setup_refuses_to_replace_a_server_or_plugin_that_is_not_tavern_s() {
    let b = TestBoard::new();
    let home = b.root().join("home");
    let theirs = "{\"mcpServers\": {\"tavern\": {\"command\": \"pub-crawler\"}}}\n";
    write(b.root(), ".mcp.json", theirs);
    setup(&b, &home, &["setup", "claude", "--mcp"])
        .code(3)
        .stderr_has("not tavern's");
    assert_eq!(read(b.root(), ".mcp.json").unwrap(), theirs);
    write(
        b.root(),
        ".codex/config.toml",
        "[mcp_servers.tavern]\ncommand = \"other\"\n",
    );
    setup(&b, &home, &["setup", "codex", "--mcp"])
        .code(3)
        .stderr_has("[mcp_servers.tavern]");
    write(b.root(), ".mcp.json", "{ not json");
    setup(&b, &home, &["setup", "claude", "--mcp"])
        .code(6)
        .stderr_has("not valid JSON");
    setup(&b, &home, &["setup", "vim"]).code(2);
}

/// Runs `tavern hook ARGS` through `sh -c`, as a client runs a hook command, with the
/// event on stdin: this test process plays the client.
fn hook(b: &TestBoard, args: &str, stdin: &str, env: &[(&str, &str)]) -> Out {
    use std::io::Write;
    let mut c = Command::new("sh");
    c.args(["-c", &format!("'{BIN}' hook {args}")])
        .current_dir(b.root())
        .env_remove("TAVERN_AGENT")
        .env_remove("TAVERN_BOARD")
        .env_remove("CLAUDE_ENV_FILE")
        .env("USER", "tester")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

#[test]
fn hooks_register_the_session_with_the_client_as_holder_and_deregister_it() {
    let b = TestBoard::new();
    b.run(&["new", "task", "--title", "Open work", "--id", "task-h"])
        .ok();
    let me = std::process::id();
    let name = format!("claude-{me}");
    let env_file = b.root().join("claude.env");
    let env_file_s = env_file.to_str().unwrap();
    let start = hook(
        &b,
        "claude session-start",
        r#"{"session_id":"s-1","hook_event_name":"SessionStart","source":"startup"}"#,
        &[("CLAUDE_ENV_FILE", env_file_s)],
    );
    start.ok();
    let v: Value = serde_json::from_str(&start.stdout).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["hookEventName"],
        json!("SessionStart")
    );
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains(&format!("registered as agent `{name}`")),
        "{context}"
    );
    assert!(context.contains("task-h Open work"), "{context}");
    // The holder is this process (the client), not the shell that ran the hook.
    let card = b.read(&format!("control/agents/{name}.md"));
    assert!(card.contains(&format!("pid: {me}\n")), "{card}");
    assert_eq!(
        std::fs::read_to_string(&env_file).unwrap(),
        format!("export TAVERN_AGENT={name}\n")
    );

    // Work happens as that agent; a tool use is a heartbeat; a compaction gives the summary
    // again and logs nothing.
    b.run(&["--as", &name, "claim", "task-h"]).ok();
    let beat = b.board().join(format!(".state/heartbeats/{name}"));
    std::fs::remove_file(&beat).unwrap();
    hook(
        &b,
        "claude heartbeat",
        r#"{"hook_event_name":"PostToolUse"}"#,
        &[],
    )
    .ok()
    .stdout_is("");
    assert!(beat.exists());
    let entries = b.log().len();
    let compact = hook(&b, "claude session-start", r#"{"source":"compact"}"#, &[]);
    compact
        .ok()
        .stdout_has("The context was compacted")
        .stdout_has("task-h");
    assert_eq!(b.log().len(), entries);
    hook(&b, "codex compact", "", &[])
        .ok()
        .stdout_has("The context was compacted");

    // The session ends: its claim goes back and the agent is gone.
    hook(&b, "claude session-end", r#"{"reason":"exit"}"#, &[]).ok();
    assert!(b.read("tasks/task-h.md").contains("status: pending"));
    assert!(
        b.read(&format!("control/agents/{name}.md"))
            .contains("status: gone")
    );
    let last = b.log().pop().unwrap();
    assert_eq!(
        (last["op"].as_str(), last["note"].as_str()),
        (Some("agent"), Some("deregistered"))
    );

    // TAVERN_AGENT names the agent when set; without a board a hook does nothing.
    hook(
        &b,
        "codex session-start",
        "{}",
        &[("TAVERN_AGENT", "coder-7")],
    )
    .ok();
    assert!(
        b.read("control/agents/coder-7.md")
            .contains(&format!("pid: {me}\n"))
    );
    let nowhere = TestBoard::empty();
    hook(&nowhere, "claude session-start", "{}", &[])
        .ok()
        .stdout_is("")
        .stderr_is("");
}
