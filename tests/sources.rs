//! Knowledge sources: `tavern sources list` (what each source reacts to and when it last
//! ran, from the log), `tavern sources check` (every problem of every file, exit 6), and
//! the same problems in `tavern check`.

use crate::util::{TestBoard, problems_report, snapshot};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/.tavern-example");

const ARCHITECT: &str = "---
name: architect
watch: [tasks, solutions/*/design.md]   # regions, or globs under the board
on: [created, changed, transition:pending]
when: status=pending no:design
run: ./agents/architect.sh {id}
priority: 10
cooldown: 30s
max_parallel: 1
timeout: 15m
description: Writes a design for every new task
---
Write the design.
";

const NOTIFY: &str = "---\nrun: notify-send {path}\n---\n";

/// Two activations of the architect (the second still running) and one of notify, among
/// other entries, as watch mode writes them.
const LOG: &str = "- seq: 1
  at: 2026-11-23T10:00:00.000Z
  actor: architect
  op: activation
  doc: tasks/task-csv1.md
  to: started
  event: created
  cause: 0
- seq: 2
  at: 2026-11-23T10:00:01.123Z
  actor: architect
  op: activation
  doc: tasks/task-csv1.md
  to: ok
  exit: 0
  duration_ms: 1123
- seq: 3
  at: 2026-11-23T10:05:00.000Z
  actor: notify
  op: activation
  doc: observations/obs-1.md
  to: failed
  exit: 2
  duration_ms: 40
- seq: 4
  at: 2026-11-23T10:06:00.000Z
  actor: architect
  op: activation
  doc: tasks/task-csv2.md
  to: started
  event: transition:pending
  cause: 3
- seq: 5
  at: 2026-11-23T10:07:00.000Z
  actor: notify
  op: create
  doc: tasks/task-x.md
  rev: 1
";

const KNOWN: &str =
    "name, watch, on, when, run, priority, cooldown, max_parallel, timeout, description";

fn with_sources() -> TestBoard {
    let b = TestBoard::new();
    // The architect waits for a field of the board's own, which the board declares.
    b.declare_fields("tasks", &["design"]);
    b.write("control/sources/architect.md", ARCHITECT);
    b.write("control/sources/notify.md", NOTIFY);
    b
}

#[test]
fn list_shows_each_source_and_its_last_activation() {
    let b = with_sources();
    b.write("log.yaml", LOG);
    b.run(&["sources", "list"]).ok().stderr_is("").stdout_is(
        "NAME       ON                                  WATCH                         PRIORITY  LAST\n\
         architect  created,changed,transition:pending  tasks,solutions/*/design.md   10        2026-11-23T10:06:00.000Z started tasks/task-csv2.md\n\
         notify     created,changed                     tasks,observations,questions  0         2026-11-23T10:05:00.000Z failed observations/obs-1.md\n",
    );
}

#[test]
fn list_without_activations_shows_a_dash() {
    let b = with_sources();
    b.run(&["sources", "list"]).ok().stderr_is("").stdout_is(
        "NAME       ON                                  WATCH                         PRIORITY  LAST\n\
         architect  created,changed,transition:pending  tasks,solutions/*/design.md   10        -\n\
         notify     created,changed                     tasks,observations,questions  0         -\n",
    );
}

#[test]
fn list_json() {
    let b = with_sources();
    b.write("control/sources/broken.md", "---\nrun: x {title}\n---\n");
    b.write("log.yaml", LOG);
    let v = b.run(&["sources", "list", "--json"]).ok().json();
    assert_eq!(
        v,
        serde_json::json!({
            "sources": [
                {
                    "name": "architect",
                    "path": "control/sources/architect.md",
                    "watch": ["tasks", "solutions/*/design.md"],
                    "on": ["created", "changed", "transition:pending"],
                    "when": "status=pending no:design",
                    "run": "./agents/architect.sh {id}",
                    "priority": 10,
                    "cooldown": "30s",
                    "max_parallel": 1,
                    "timeout": "15m",
                    "description": "Writes a design for every new task",
                    "last": {
                        "seq": 4,
                        "at": "2026-11-23T10:06:00.000Z",
                        "actor": "architect",
                        "op": "activation",
                        "doc": "tasks/task-csv2.md",
                        "to": "started",
                        "event": "transition:pending",
                        "cause": 3
                    }
                },
                {
                    "name": "notify",
                    "path": "control/sources/notify.md",
                    "watch": ["tasks", "observations", "questions"],
                    "on": ["created", "changed"],
                    "when": null,
                    "run": "notify-send {path}",
                    "priority": 0,
                    "cooldown": "0s",
                    "max_parallel": 1,
                    "timeout": "30m",
                    "description": null,
                    "last": {
                        "seq": 3,
                        "at": "2026-11-23T10:05:00.000Z",
                        "actor": "notify",
                        "op": "activation",
                        "doc": "observations/obs-1.md",
                        "to": "failed",
                        "exit": 2,
                        "duration_ms": 40
                    }
                }
            ],
            "skipped": [{
                "path": "control/sources/broken.md",
                "problem": "run: {title} is not substituted: only {id} {path} {region} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin"
            }]
        })
    );
}

#[test]
fn a_torn_or_unreadable_log_entry_does_not_hide_the_others() {
    let b = with_sources();
    // A garbled entry in the middle and a torn last one (no final newline).
    let log = format!(
        "{LOG}- seq: [oops\n  op: activation\n- seq: 9\n  at: 2026-11-23T11:00:00.000Z\n  actor: notify\n  op: activation\n  doc: tasks/t.md\n  to: ok"
    );
    b.write("log.yaml", log);
    let v = b.run(&["sources", "list", "--json"]).ok().json();
    assert_eq!(v["sources"][0]["last"]["seq"], 4);
    assert_eq!(v["sources"][1]["last"]["seq"], 3);
}

#[test]
fn list_skips_invalid_sources_with_a_warning_after_the_table() {
    let b = with_sources();
    b.write(
        "control/sources/bad.md",
        "---\nname: other\nmax-parallel: 2\nrun: echo {title}\n---\n",
    );
    b.run(&["sources", "list"])
        .ok()
        .stdout_is(
            "NAME       ON                                  WATCH                         PRIORITY  LAST\n\
             architect  created,changed,transition:pending  tasks,solutions/*/design.md   10        -\n\
             notify     created,changed                     tasks,observations,questions  0         -\n",
        )
        .stderr_is(&format!(
            "warning: skipped control/sources/bad.md: unknown field 'max-parallel'; known fields: {KNOWN}\n\
             warning: skipped control/sources/bad.md: name: 'other' does not match the file name; expected 'bad' (or leave name out)\n\
             warning: skipped control/sources/bad.md: run: {{title}} is not substituted: only {{id}} {{path}} {{region}} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin\n"
        ));
}

#[test]
fn control_characters_never_reach_the_table() {
    let b = TestBoard::new();
    b.write(
        "control/sources/x.md",
        "---\nrun: x\nwatch: \"tasks/\\e[31m*\"\n---\n",
    );
    b.run(&["sources", "list"]).ok().stdout_is(
        "NAME  ON               WATCH         PRIORITY  LAST\n\
         x     created,changed  tasks/ [31m*  0         -\n",
    );
}

#[test]
fn check_on_a_clean_board() {
    let b = with_sources();
    b.run(&["sources", "check"])
        .ok()
        .stderr_is("")
        .stdout_is("ok: 2 sources checked, no problems\n");
    assert_eq!(
        b.run(&["sources", "check", "--json"]).ok().json(),
        serde_json::json!({"ok": true, "sources": 2, "problems": []})
    );
    let empty = TestBoard::new();
    empty
        .run(&["sources", "check"])
        .ok()
        .stdout_is("ok: 0 sources checked, no problems\n");
    empty
        .run(&["sources", "list"])
        .ok()
        .stdout_is("")
        .stderr_is("");
}

#[test]
fn no_sources_directory_is_no_sources() {
    let b = TestBoard::new();
    std::fs::remove_dir(b.board().join("control/sources")).unwrap();
    b.run(&["sources", "check"])
        .ok()
        .stdout_is("ok: 0 sources checked, no problems\n");
    b.run(&["sources", "list"]).ok().stdout_is("").stderr_is("");
    b.run(&["check"]).ok();
}

#[test]
fn only_md_files_that_are_not_dot_files_are_sources() {
    let b = with_sources();
    b.write("control/sources/.architect.md.swp", "junk");
    b.write("control/sources/.hidden.md", "junk");
    b.write("control/sources/README.txt", "junk");
    b.run(&["sources", "check"])
        .ok()
        .stdout_is("ok: 2 sources checked, no problems\n");
}

/// One file per kind of problem `sources check` knows.
const BROKEN: &[(&str, &str)] = &[
    ("empty.md", ""),
    (
        "fields.md",
        "---
name: fields
watch: [archive/tasks, /tasks, tasks/../log.yaml, 'a\\b', solutions/**]
on: [created, modified, transition:reviewing]
when: status= tag:x
run: ./x.sh {title} {id} \"{path}\"
priority: high
cooldown: 5 minutes
max_parallel: 0
timeout: 0s
description: [not, text]
typo: 1
---
",
    ),
    (
        "norun.md",
        "---\ndescription: forgot the command\n---\nprompt\n",
    ),
    ("notclosed.md", "---\nrun: x\n"),
    ("typo.md", "---\nwhen: stauts=review\nrun: x\n---\n"),
    ("yaml.md", "---\nrun: [unclosed\n---\n"),
    ("list.md", "---\n- run: x\n---\n"),
    ("Upper.md", "---\nrun: x\n---\n"),
];

const STATES: &str = "pending, claimed, working, review, blocked, done, failed, cancelled";

fn broken_problems() -> Vec<(String, String)> {
    let area = "is not under a watched area; watch tasks, observations, questions, solutions, control/sources, control/agents, or control/PAUSE, or paths and globs under them";
    let p = |file: &str, problem: String| (format!("control/sources/{file}"), problem);
    vec![
        p(
            "Upper.md",
            "file name is not a valid id ([a-z0-9][a-z0-9._-]{0,63}.md)".into(),
        ),
        p(
            "empty.md",
            "line 1: no frontmatter: the first line must be exactly `---`".into(),
        ),
        p(
            "fields.md",
            format!("unknown field 'typo'; known fields: {KNOWN}"),
        ),
        p("fields.md", format!("watch: 'archive/tasks' {area}")),
        p(
            "fields.md",
            "watch: '/tasks' must be relative to the board (no leading /)".into(),
        ),
        p(
            "fields.md",
            "watch: 'tasks/../log.yaml' must stay inside the board (no .. components)".into(),
        ),
        p(
            "fields.md",
            "watch: 'a\\b' must separate components with / (no backslash)".into(),
        ),
        p(
            "fields.md",
            "on: 'modified' is not an event; expected created, changed, deleted or transition:STATE".into(),
        ),
        p(
            "fields.md",
            format!("on: 'transition:reviewing': 'reviewing' is not a state of the workflow ({STATES})"),
        ),
        p(
            "fields.md",
            "when: malformed query term 'status=': expected a value after the operator".into(),
        ),
        p(
            "fields.md",
            "run: {title} is not substituted: only {id} {path} {region} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin".into(),
        ),
        p(
            "fields.md",
            "run: {path} is inside \"…\", where quoting cannot keep its value one word; write it outside any quotes: tavern quotes the value itself".into(),
        ),
        p(
            "fields.md",
            "priority: expected an integer (higher runs first), found 'high'".into(),
        ),
        p(
            "fields.md",
            "cooldown: expected a duration like 30s, 5m or 2h, found '5 minutes'".into(),
        ),
        p(
            "fields.md",
            "max_parallel: expected an integer >= 1 (how many runs of this source at once), found 0".into(),
        ),
        p(
            "fields.md",
            "timeout: expected a duration above zero like 15m, found '0s'".into(),
        ),
        p(
            "fields.md",
            "description: expected a string, found a list".into(),
        ),
        p(
            "list.md",
            "line 2: frontmatter must be a mapping of fields, found a list".into(),
        ),
        p(
            "norun.md",
            "run: missing; expected the command to start (run with sh -c in the project root), e.g. run: ./agents/x.sh {id}".into(),
        ),
        p(
            "notclosed.md",
            "line 1: frontmatter is not closed: no line is exactly `---` after the first".into(),
        ),
        p(
            "typo.md",
            "when: unknown field 'stauts' in query term 'stauts=review'; did you mean 'status'?"
                .into(),
        ),
        p(
            "yaml.md",
            "line 2: unclosed bracket '[' (a value starting with [ { * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in run: \"[unclosed\")".into(),
        ),
    ]
}

fn broken_board() -> TestBoard {
    let b = with_sources();
    for (name, text) in BROKEN {
        b.write(&format!("control/sources/{name}"), text);
    }
    b
}

#[test]
fn check_lists_every_problem_of_every_file_and_exits_6() {
    let b = broken_board();
    let before = snapshot(&b);
    let problems = broken_problems();
    let expected = problems_report(&problems, &b.board().join("control/sources"));
    b.run(&["sources", "check"])
        .code(6)
        .stdout_is("")
        .stderr_is(&expected);

    let v = b.run(&["sources", "check", "--json"]).code(6).json();
    let listed: Vec<serde_json::Value> = problems
        .iter()
        .map(|(path, problem)| serde_json::json!({"path": path, "problem": problem}))
        .collect();
    assert_eq!(
        v,
        serde_json::json!({"ok": false, "sources": 10, "problems": listed})
    );
    assert_eq!(snapshot(&b), before, "sources check changed the board");
}

#[test]
fn tavern_check_reports_source_problems_too() {
    let b = broken_board();
    // `tavern check` sorts the problems of one file by their text.
    let mut problems = broken_problems();
    problems.sort();
    let expected = problems_report(&problems, &b.board());
    b.run(&["check"]).code(6).stdout_is("").stderr_is(&expected);
    let v = b.run(&["check", "--json"]).code(6).json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["problems"].as_array().unwrap().len(), problems.len());

    // Fixing the last broken file makes both clean again.
    for (name, _) in BROKEN {
        std::fs::remove_file(b.board().join("control/sources").join(name)).unwrap();
    }
    b.run(&["check"])
        .ok()
        .stdout_is("ok: 0 documents and 0 log entries checked, no problems\n");
}

#[cfg(unix)]
#[test]
fn hostile_source_files_are_problems_never_hangs_or_crashes() {
    let b = with_sources();
    let dir = b.board().join("control/sources");
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.md");
    std::fs::write(&secret, "---\nrun: cat ~/.ssh/id_rsa\n---\n").unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("link.md")).unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("fifo.md"))
        .status()
        .expect("mkfifo");
    assert!(status.success());
    std::fs::create_dir(dir.join("dir.md")).unwrap();
    b.write(
        "control/sources/bin.md",
        b"---\nrun: caf\xe9\n---\n".as_slice(),
    );
    b.write(
        "control/sources/deep.md",
        format!(
            "---\nrun: x\nwatch: {}{}\n---\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        ),
    );
    let bomb = "---\nrun: x\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n---\n";
    b.write("control/sources/bomb.md", bomb);
    let big = format!("---\nrun: x\n---\n{}", "x".repeat(1024 * 1024));
    b.write("control/sources/big.md", &big);
    let out = b.run(&["sources", "check"]);
    out.code(6).stdout_is("");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines[..7],
        [
            format!(
                "control/sources/big.md: is {} bytes, over the limit of 1048576 (limits.max_doc_bytes in board.yaml); skipped",
                big.len()
            )
            .as_str(),
            "control/sources/bin.md: is not valid UTF-8 (invalid byte at offset 12)",
            lines[2],
            "control/sources/deep.md: line 3: recursion limit exceeded",
            "control/sources/dir.md: is not a regular file",
            "control/sources/fifo.md: is not a regular file",
            "control/sources/link.md: is a symbolic link; documents must be regular files inside the board (not followed)",
        ]
    );
    assert!(
        lines[2].starts_with("control/sources/bomb.md: line "),
        "{}",
        lines[2]
    );
    assert_eq!(
        lines[7],
        format!("7 problems in {}", dir.display()),
        "{}",
        out.stderr
    );
    // The valid sources are still listed.
    let v = b.run(&["sources", "list", "--json"]).ok().json();
    assert_eq!(v["sources"].as_array().unwrap().len(), 2);
    assert_eq!(v["skipped"].as_array().unwrap().len(), 7);
}

#[test]
fn the_example_board_passes_and_lists_its_reviewer() {
    let b = TestBoard::empty();
    b.run(&["--board", EXAMPLE, "sources", "check"])
        .ok()
        .stderr_is("")
        .stdout_is("ok: 1 source checked, no problems\n");
    let out = b.run(&["--board", EXAMPLE, "check"]);
    out.ok().stderr_is("");
    assert!(out.stdout.starts_with("ok: "), "{}", out.stdout);
    b.run(&["--board", EXAMPLE, "sources", "list"])
        .ok()
        .stderr_is("")
        .stdout_is(
            "NAME      ON                 WATCH  PRIORITY  LAST\n\
             reviewer  transition:review  tasks  10        -\n",
        );
}

/// The example board is as tavern writes a board today: its log has one line per entry
/// (the form `git pull`'s union merge keeps whole; scripts grep it as `op: "activation"`),
/// and the README's first command, `tavern --board .tavern-example list`, lists it with
/// nothing skipped.
#[test]
fn the_example_boards_log_is_one_line_per_entry_and_it_lists() {
    let log = std::fs::read_to_string(format!("{EXAMPLE}/log.yaml")).unwrap();
    assert!(log.lines().count() > 10, "{log}");
    for (n, line) in log.lines().enumerate() {
        assert!(
            line.starts_with("- {seq: ") && line.ends_with('}') && line.contains(" op: \""),
            "log.yaml line {}: {line}",
            n + 1
        );
    }
    let b = TestBoard::empty();
    let out = b.run(&["--board", EXAMPLE, "list"]);
    out.ok().stderr_is("");
    assert!(out.stdout.contains("task-csv1"), "{}", out.stdout);
}

#[test]
fn outside_a_board_is_not_found() {
    let b = TestBoard::empty();
    b.run(&["sources", "list"]).code(4);
    b.run(&["sources", "check"]).code(4);
}
