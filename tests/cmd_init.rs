//! `tavern init`, board discovery (walking up, --board, TAVERN_BOARD), and what every
//! command says outside a board or on a broken board.yaml.

use crate::util::{TestBoard, output, snapshot};

const NO_BOARD_HINT: &str =
    "hint: create one with `tavern init`, or point at one with --board DIR or TAVERN_BOARD\n";

const CREATED: [&str; 16] = [
    "tasks/",
    "solutions/",
    "observations/",
    "questions/",
    "control/",
    "control/sources/",
    "control/agents/",
    "templates/",
    "archive/",
    "board.yaml",
    ".gitignore",
    ".gitattributes",
    "log.yaml",
    "templates/task.md",
    "templates/observation.md",
    "templates/question.md",
];

#[test]
fn init_lays_out_the_board() {
    let b = TestBoard::empty();
    let out = b.run(&["init"]);
    let mut expected = format!("initialised board at {}\n", b.board().display());
    for c in CREATED {
        expected.push_str(&format!("  created {c}\n"));
    }
    out.ok().stdout_is(&expected).stderr_is("");

    for dir in [
        "tasks",
        "solutions",
        "observations",
        "questions",
        "control/sources",
        "control/agents",
        "templates",
        "archive",
        ".state/locks",
    ] {
        assert!(b.board().join(dir).is_dir(), "{dir} missing");
    }
    assert_eq!(
        b.read("board.yaml"),
        include_str!("../templates/board.yaml")
    );
    assert_eq!(
        b.read(".gitignore"),
        "# Runtime state and files rewritten by `tavern watch`: never tracked.\n.state/\ncontrol/schedule.md\ncontrol/metrics.md\n# Temp files of writes in progress (or interrupted: the next tavern command removes them).\n.*.tmp\n"
    );
    let attrs = b.read(".gitattributes");
    assert_eq!(
        attrs
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>(),
        ["log.yaml merge=union"]
    );
    for (kind, text) in [
        ("task", include_str!("../templates/task.md")),
        ("observation", include_str!("../templates/observation.md")),
        ("question", include_str!("../templates/question.md")),
    ] {
        assert_eq!(b.read(&format!("templates/{kind}.md")), text, "{kind}");
    }
    assert_eq!(b.read("log.yaml"), "");
    assert!(b.log().is_empty());
    // A fresh board is clean.
    b.run(&["check"])
        .ok()
        .stdout_is("ok: 0 documents and 0 log entries checked, no problems\n");
}

#[test]
fn init_json_lists_what_it_created() {
    let b = TestBoard::empty();
    let v = b.run(&["init", "--json"]).ok().json();
    assert_eq!(v["board"], b.board().display().to_string());
    assert_eq!(v["created"], serde_json::json!(CREATED));
    let v = b.run(&["init", "--json"]).ok().json();
    assert_eq!(v["created"], serde_json::json!([]));
}

#[test]
fn a_second_init_changes_nothing() {
    let b = TestBoard::new();
    b.task("Keep me", &["--id", "t-keep"]);
    let before = snapshot(&b);
    b.run(&["init"])
        .ok()
        .stdout_is(&format!(
            "board already initialised at {}; nothing changed\n",
            b.board().display()
        ))
        .stderr_is("");
    assert_eq!(snapshot(&b), before);
}

#[test]
fn init_never_overwrites_user_edits() {
    let b = TestBoard::new();
    let board_yaml = b
        .read("board.yaml")
        .replace("lease: 5m", "lease: 15m # ours");
    b.write("board.yaml", &board_yaml);
    b.write(
        "templates/task.md",
        "---\nid: x\ntitle: t\nstatus: pending\n---\nour template\n",
    );
    b.write(".gitignore", "custom\n");
    std::fs::remove_file(b.board().join("templates/observation.md")).unwrap();
    std::fs::remove_dir(b.board().join("archive")).unwrap();
    b.run(&["init"]).ok().stdout_is(&format!(
        "initialised board at {}\n  created archive/\n  created templates/observation.md\n",
        b.board().display()
    ));
    assert_eq!(b.read("board.yaml"), board_yaml);
    assert_eq!(
        b.read("templates/task.md"),
        "---\nid: x\ntitle: t\nstatus: pending\n---\nour template\n"
    );
    assert_eq!(b.read(".gitignore"), "custom\n");
    assert_eq!(
        b.read("templates/observation.md"),
        include_str!("../templates/observation.md")
    );
}

#[test]
fn init_in_a_given_directory() {
    let b = TestBoard::empty();
    std::fs::create_dir(b.root().join("proj")).unwrap();
    b.run(&["init", "proj"]).ok().stdout_has(&format!(
        "initialised board at {}\n",
        b.root().join("proj/.tavern").display()
    ));
    assert!(b.root().join("proj/.tavern/board.yaml").is_file());
    assert!(!b.board().exists());

    // --board naming the .tavern directory itself creates it there, not inside it.
    std::fs::create_dir(b.root().join("other")).unwrap();
    b.run(&["--board", "other/.tavern", "init"]).ok();
    assert!(b.root().join("other/.tavern/board.yaml").is_file());
    assert!(!b.root().join("other/.tavern/.tavern").exists());

    b.run(&["init", "missing"])
        .code(4)
        .stdout_is("")
        .stderr_is(&format!(
            "error: directory {} not found\nhint: create it first\n",
            b.root().join("missing").display()
        ));
    assert!(!b.root().join("missing").exists());
}

#[test]
fn every_command_outside_a_board_exits_4_with_the_hint() {
    let b = TestBoard::empty();
    let expected = format!(
        "error: no tavern board found in {} or any parent directory\n{NO_BOARD_HINT}",
        b.root().display()
    );
    for args in [
        &["list"][..],
        &["show", "t1"],
        &["new", "task", "--title", "x"],
        &["edit", "t1", "--set", "a=1"],
        &["claim", "t1"],
        &["claim", "--next"],
        &["start", "t1"],
        &["move", "t1", "done"],
        &["log"],
        &["diff", "t1"],
        &["check"],
    ] {
        b.run(args).code(4).stdout_is("").stderr_is(&expected);
    }
    let out = b.run(&["list", "--json"]);
    out.code(4).stdout_is("");
    let err: serde_json::Value = serde_json::from_str(&out.stderr).unwrap();
    assert_eq!(err["error"]["kind"], "not-found");
    assert_eq!(err["error"]["code"], 4);
    assert!(!b.board().exists(), "a failed command created a board");
}

#[test]
fn discovery_walks_up_from_a_subdirectory() {
    let b = TestBoard::new();
    b.task("Found", &["--id", "t-found"]);
    let sub = b.root().join("src/a/b");
    std::fs::create_dir_all(&sub).unwrap();
    let mut c = b.cmd(&["new", "task", "--title", "From below", "--id", "t-below"]);
    c.current_dir(&sub);
    output(c).ok().stdout_is("t-below\n");
    assert!(b.board().join("tasks/t-below.md").is_file());
    assert!(!sub.join(".tavern").exists());
    let mut c = b.cmd(&["list", "tasks"]);
    c.current_dir(&sub);
    assert_eq!(output(c).ok().stdout.lines().count(), 3);
}

#[test]
fn board_flag_and_env_override_discovery() {
    let here = TestBoard::new();
    here.task("Here", &["--id", "t-here"]);
    let there = TestBoard::new();
    there.task("There", &["--id", "t-there"]);
    let there_root = there.root().to_str().unwrap();
    let there_board = there.board();

    // The flag wins over the board found from the working directory.
    for target in [there_root.to_string(), there_board.display().to_string()] {
        here.run(&["--board", &target, "show", "t-there"])
            .ok()
            .stdout_is(&there.read("tasks/t-there.md"));
        here.run(&["show", "t-there", "--board", &target]).ok();
        here.run(&["--board", &target, "show", "t-here"]).code(4);
        let mut c = here.cmd(&["show", "t-there"]);
        c.env("TAVERN_BOARD", &target);
        output(c).ok();
    }
    // The flag wins over the environment.
    let mut c = here.cmd(&["--board", here.root().to_str().unwrap(), "show", "t-here"]);
    c.env("TAVERN_BOARD", there_root);
    output(c).ok();
    // A relative --board is relative to the working directory.
    let parent = here.root().parent().unwrap();
    let rel = there.root().file_name().unwrap().to_str().unwrap();
    let mut c = here.cmd(&["--board", rel, "show", "t-there"]);
    c.current_dir(parent);
    output(c).ok();

    // Writes go to the board named, not to the one around the working directory.
    here.run(&[
        "--board", there_root, "new", "task", "--title", "Sent", "--id", "t-sent",
    ])
    .ok();
    assert!(there.board().join("tasks/t-sent.md").is_file());
    assert!(!here.board().join("tasks/t-sent.md").exists());
    assert_eq!(there.log().len(), 2);
    assert_eq!(here.log().len(), 1);

    // A directory that does not exist is not "a directory without board.yaml".
    let nowhere = here.root().join("nowhere");
    here.run(&["--board", nowhere.to_str().unwrap(), "list"])
        .code(4)
        .stderr_is(&format!(
            "error: the board directory {} does not exist\nhint: check the path given with --board or TAVERN_BOARD\n",
            nowhere.display()
        ));
    let mut c = here.cmd(&["list"]);
    c.env("TAVERN_BOARD", &nowhere);
    output(c).code(4).stderr_has("does not exist");
    let plain = here.root().join("plain");
    std::fs::create_dir(&plain).unwrap();
    here.run(&["--board", plain.to_str().unwrap(), "list"])
        .code(4)
        .stderr_is(&format!(
            "error: {} is not a tavern board (no board.yaml inside)\n",
            plain.display()
        ));
}

#[test]
fn init_inside_a_boards_project_refuses_to_nest_unless_asked() {
    let b = TestBoard::new();
    let sub = b.root().join("crates/core");
    std::fs::create_dir_all(&sub).unwrap();
    let mut c = b.cmd(&["init"]);
    c.current_dir(&sub);
    output(c).code(3).stdout_is("").stderr_is(&format!(
        "error: {}: {} is inside the project of this board; a board there would hide it from every command run below it\nhint: use the existing board (tavern finds it from there), or pass --nested to create a separate one\n",
        b.board().display(),
        sub.display()
    ));
    assert!(!sub.join(".tavern").exists());
    b.run(&["init", "crates/core"]).code(3);
    assert!(!sub.join(".tavern").exists());
    // Asked for: a separate board.
    b.run(&["init", "crates/core", "--nested"]).ok();
    assert!(sub.join(".tavern/board.yaml").is_file());
    // Running init again in the project of the board itself still says nothing changed.
    b.run(&["init"]).ok().stdout_has("nothing changed");
}

#[test]
fn a_broken_board_yaml_is_reported_with_its_line() {
    let b = TestBoard::new();
    let good = b.read("board.yaml");
    let path = b.board().join("board.yaml");
    for (text, problem) in [
        (
            "schema: [1\n".to_string(),
            "line 1: unclosed bracket '[' (a value starting with [ { * & ! | > ' \" % @ or ` is read as YAML syntax: quote it, as in schema: \"[1\")",
        ),
        (good.replace("lease: 5m\n", ""), "missing field `lease`"),
        (
            good.replace("lease: 5m", "lease: soon"),
            "lease 'soon' is not a duration like 5m or 1h",
        ),
        (
            good.replace("keep_runs: 7d", "keep_runs: forever"),
            "watch.keep_runs 'forever' is not a duration like 7d or 12h",
        ),
        (
            good.replace("rate_window: 10m", "rate_window: 0s"),
            "watch.rate_window '0s' is not a duration like 10m or 1h",
        ),
        (
            good.replace("to: review", "to: reviewing"),
            "transition 'submit' leads to 'reviewing', which is not in workflow.states",
        ),
    ] {
        b.write("board.yaml", &text);
        let before = snapshot(&b);
        for args in [&["list"][..], &["new", "task", "--title", "x"], &["check"]] {
            b.run(args)
                .code(6)
                .stdout_is("")
                .stderr_is(&format!("error: {}: {problem}\n", path.display()));
        }
        assert_eq!(snapshot(&b), before);
    }
}
