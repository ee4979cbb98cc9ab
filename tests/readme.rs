//! The README's shell snippets, run as shown: every ```sh block runs under `set -euo
//! pipefail` in a fresh project (a new board, a copy of the example board beside it, the
//! demo scripts, a home directory of its own) with this build's `tavern` on PATH, so the
//! README cannot drift from the commands.
//!
//! A line `<!-- snippet-test setup: SHELL -->` right above a block runs SHELL first, in the
//! same shell (what the snippet takes for granted, such as a task to claim). A line
//! `<!-- snippet-test skip: REASON -->` says why a block cannot run here (it starts a
//! server that runs until stopped, or installs tavern); each `tavern …` line of such a
//! block still has its flags checked, by running it with `--help` appended.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::{BIN, Out, TestBoard, output};

const README: &str = include_str!("../README.md");
const MARK: &str = "<!-- snippet-test ";

#[derive(Debug)]
struct Snippet {
    /// The README line of the opening fence.
    line: usize,
    code: String,
    setup: Option<String>,
    skip: Option<String>,
}

/// Every ```sh block of the README (not indented ones inside lists: there are none), with
/// the setup or skip line above it.
fn snippets(readme: &str) -> Vec<Snippet> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i] != "```sh" {
            i += 1;
            continue;
        }
        let start = i;
        let mut code = String::new();
        i += 1;
        while i < lines.len() && lines[i] != "```" {
            code.push_str(lines[i]);
            code.push('\n');
            i += 1;
        }
        let mark = start
            .checked_sub(1)
            .map(|k| lines[k])
            .and_then(|l| l.strip_prefix(MARK))
            .and_then(|l| l.strip_suffix(" -->"));
        let (setup, skip) = match mark {
            Some(m) if m.starts_with("setup: ") => (Some(m["setup: ".len()..].to_string()), None),
            Some(m) if m.starts_with("skip: ") => (None, Some(m["skip: ".len()..].to_string())),
            Some(m) => panic!("README line {start}: unknown snippet-test mark {m:?}"),
            None => (None, None),
        };
        out.push(Snippet {
            line: start + 1,
            code,
            setup,
            skip,
        });
        i += 1;
    }
    out
}

/// A project as a reader of the README has one: a board made by `tavern init`, the
/// example board and the scripts beside it, and a home directory of its own (setup writes
/// to the user's configuration with `--user`).
fn project() -> TestBoard {
    let b = TestBoard::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    copy_dir(
        &repo.join(".tavern-example"),
        &b.root().join(".tavern-example"),
    );
    copy_dir(&repo.join("scripts"), &b.root().join("scripts"));
    std::fs::create_dir(b.root().join("home")).unwrap();
    b
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// `bash` running `script` under `set -euo pipefail` in the project, with the README
/// reader's environment.
fn bash(b: &TestBoard, script: &str) -> Out {
    bash_with(b, "set -euo pipefail", script)
}

/// `bash` running `script` after the shell options `set` (`set -e`).
fn bash_with(b: &TestBoard, set: &str, script: &str) -> Out {
    let bin_dir: PathBuf = Path::new(BIN).parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("bash");
    c.arg("-c")
        .arg(format!("{set}\n{script}"))
        .current_dir(b.root())
        .env("PATH", path)
        .env("HOME", b.root().join("home"))
        .env("USER", "tester")
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env_remove("TAVERN_MCP_TOOLS")
        .env_remove("CODEX_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CLAUDE_ENV_FILE")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    output(c)
}

fn run(s: &Snippet) -> (TestBoard, Out) {
    let b = project();
    let setup = s.setup.as_deref().unwrap_or("");
    let out = bash(&b, &format!("{setup}\n{}", s.code));
    (b, out)
}

/// A `tavern …` line of a snippet without its trailing comment.
fn command_of(line: &str) -> Option<&str> {
    let line = line.trim();
    if !line.starts_with("tavern ") {
        return None;
    }
    Some(line.split("  #").next().unwrap_or(line).trim_end())
}

#[test]
fn every_readme_snippet_runs_as_shown() {
    let all = snippets(README);
    assert!(all.len() >= 10, "found only {} snippets", all.len());
    let mut failures = Vec::new();
    for s in &all {
        if let Some(reason) = &s.skip {
            assert!(
                !reason.trim().is_empty(),
                "README line {}: a skip needs its reason",
                s.line
            );
            eprintln!(
                "README line {}: not run ({reason}); its tavern lines are checked with --help",
                s.line
            );
            let b = project();
            for cmd in s.code.lines().filter_map(command_of) {
                let out = bash(&b, &format!("{cmd} --help >/dev/null"));
                if out.code != 0 {
                    failures.push(format!(
                        "README line {}: `{cmd} --help` exited {}:\n{}",
                        s.line, out.code, out.stderr
                    ));
                }
            }
            continue;
        }
        let (_b, out) = run(s);
        if out.code != 0 {
            failures.push(format!(
                "README line {}: exit {}\n--- snippet\n{}--- stdout\n{}--- stderr\n{}",
                s.line, out.code, s.code, out.stdout, out.stderr
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn agent_loop() -> Snippet {
    snippets(README)
        .into_iter()
        .find(|s| s.code.contains("claim --next"))
        .expect("the README has the agent loop")
}

/// The loop as an agent copies it: it claims the parser task, starts it, posts a finding
/// about it and submits it; the board and the log say so.
#[test]
fn the_readme_agent_loop_claims_works_and_submits() {
    let s = agent_loop();
    let (b, out) = run(&s);
    out.ok();
    let tasks = b.run(&["list", "tasks", "--json"]).json();
    let task = &tasks["documents"][0]["fields"];
    assert_eq!(task["status"], "review", "{tasks}");
    assert_eq!(task["claimed_by"], "coder-1");
    let id = task["id"].as_str().unwrap();
    let obs = b.run(&["list", "observations", "--json"]).json();
    let finding = &obs["documents"][0]["fields"];
    assert_eq!(finding["title"], "Parser accepts tabs in keys");
    assert_eq!(finding["about"], serde_json::json!([id]));
    assert_eq!(finding["created_by"], "coder-1");
    let ops: Vec<String> = b
        .log()
        .iter()
        .filter(|e| e["actor"] == "coder-1")
        .map(|e| e["op"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        ops,
        ["agent", "claim", "transition", "create", "transition"]
    );
}

/// Regression: with nothing to claim the loop, run under plain `set -e` as an agent's
/// script would, stops with tavern's exit code (4), not with `jq`'s 0 and an empty id that
/// the next command called invalid.
#[test]
fn the_readme_agent_loop_stops_with_exit_4_when_nothing_is_claimable() {
    let s = agent_loop();
    let b = project();
    let out = bash_with(&b, "set -e", &s.code);
    out.code(4);
    assert!(
        out.stderr
            .contains("no claimable task matches 'tag:parser'"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("invalid id"), "{}", out.stderr);
    assert!(
        !b.log().iter().any(|e| e["op"] == "transition"),
        "nothing was started"
    );
}

/// `claim --quiet` prints the id and nothing else, and keeps the exit codes: 4 with nothing
/// to claim, 5 when paused.
#[test]
fn claim_quiet_prints_only_the_id_and_keeps_the_exit_code() {
    let b = TestBoard::new();
    b.run(&["claim", "--next", "-q"]).code(4).stdout_is("");
    let id = b.task("Parse", &[]);
    b.run(&["claim", "--next", "--quiet"])
        .ok()
        .stdout_is(&format!("{id}\n"));
    // Claiming what you hold again is still the id.
    b.run(&["claim", &id, "-q"])
        .ok()
        .stdout_is(&format!("{id}\n"));
    let other = b.task("Other", &[]);
    b.run(&["pause", "lunch"]).ok();
    b.run(&["claim", &other, "--quiet"]).code(5).stdout_is("");
    b.run(&["--json", "claim", "--next", "-q"])
        .code(2)
        .stderr_has("--quiet prints only the id");
}

/// Every command `tavern --help` lists is in the README's table of commands.
#[test]
fn every_command_is_in_the_readme_table() {
    let help = TestBoard::empty().run(&["--help"]);
    help.ok();
    let table: String = README
        .lines()
        .skip_while(|l| *l != "## Commands")
        .take_while(|l| *l != "### Queries")
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.split(" | ").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut missing = Vec::new();
    for line in help
        .stdout
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
    {
        let Some(name) = line
            .strip_prefix("  ")
            .and_then(|l| l.split_whitespace().next())
        else {
            continue;
        };
        if line.starts_with("   ") || name == "help" {
            continue;
        }
        if !table.contains(&format!("`{name}")) {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "not in the README's command table: {missing:?}\n{table}"
    );
}
