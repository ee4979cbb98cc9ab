//! `tavern init` and finding the board.

use crate::util::{TestBoard, redact_times};

#[test]
fn init_creates_the_board_and_says_what_it_made() {
    let b = TestBoard::empty();
    let out = b.run(&["init"]);
    out.ok();
    let root = b.board().display().to_string();
    assert_eq!(
        out.stdout,
        format!(
            "initialised board at {root}\n  created tasks/\n  created solutions/\n  created observations/\n  created questions/\n  created control/\n  created control/sources/\n  created control/agents/\n  created templates/\n  created archive/\n  created board.yaml\n  created .gitignore\n  created .gitattributes\n  created log.yaml\n  created templates/task.md\n  created templates/observation.md\n  created templates/question.md\n"
        )
    );
    assert_eq!(
        b.read(".gitignore"),
        "# Runtime state and files rewritten by `tavern watch`: never tracked.\n.state/\ncontrol/schedule.md\ncontrol/metrics.md\n"
    );
    assert!(
        b.read(".gitattributes")
            .lines()
            .any(|l| l == "log.yaml merge=union")
    );
    assert_eq!(
        b.read("board.yaml"),
        include_str!("../templates/board.yaml")
    );
    assert_eq!(
        b.read("templates/task.md"),
        include_str!("../templates/task.md")
    );
    assert_eq!(b.read("log.yaml"), "");
}

#[test]
fn init_twice_changes_nothing_and_keeps_user_edits() {
    let b = TestBoard::new();
    let edited = b.read("board.yaml").replace("lease: 5m", "lease: 10m");
    b.write("board.yaml", &edited);
    std::fs::remove_file(b.board().join("templates/question.md")).unwrap();
    let before = crate::util::snapshot(&b);
    b.run(&["init"]).ok().stdout_is(&format!(
        "initialised board at {}\n  created templates/question.md\n",
        b.board().display()
    ));
    b.run(&["init"]).ok().stdout_is(&format!(
        "board already initialised at {}; nothing changed\n",
        b.board().display()
    ));
    let after = crate::util::snapshot(&b);
    assert_eq!(b.read("board.yaml"), edited);
    assert_eq!(before.len() + 1, after.len());
}

#[test]
fn commands_outside_a_board_say_how_to_make_one() {
    let b = TestBoard::empty();
    let out = b.run(&["list"]);
    out.code(4);
    assert_eq!(
        out.stderr,
        format!(
            "error: no tavern board found in {} or any parent directory\nhint: create one with `tavern init`, or point at one with --board DIR or TAVERN_BOARD\n",
            b.root().display()
        )
    );
    b.run(&["--board", "elsewhere", "list"])
        .code(4)
        .stderr_has("is not a tavern board");
}

#[test]
fn the_board_is_found_from_a_subdirectory_and_by_flag_or_env() {
    let b = TestBoard::new();
    let id = b.task("Found", &[]);
    let sub = b.root().join("src/deep/er");
    std::fs::create_dir_all(&sub).unwrap();
    let mut c = b.cmd(&["show", &id]);
    c.current_dir(&sub);
    crate::util::output(c).ok().stdout_has("title: Found\n");

    let other = TestBoard::empty();
    // --board may name the project or the .tavern directory itself.
    for board in [b.root().to_path_buf(), b.board()] {
        other
            .run(&["--board", board.to_str().unwrap(), "show", &id])
            .ok();
        let mut c = other.cmd(&["show", &id]);
        c.env("TAVERN_BOARD", &board);
        crate::util::output(c).ok();
    }
    let json = b.run(&["--json", "show", &id]).json();
    assert_eq!(
        redact_times(json["fields"]["created_at"].as_str().unwrap()),
        "<TIME>"
    );
}
