//! The smallest end-to-end path: init, new, claim, and the log they leave.

use crate::util::TestBoard;

#[test]
fn new_claim_and_log() {
    let b = TestBoard::new();
    let id = b.task("Parse frontmatter", &["--as", "planner", "-p", "1"]);
    assert!(id.starts_with("task-") && id.len() == 9, "{id}");
    b.run(&["claim", &id, "--as", "coder-1"])
        .ok()
        .stdout_is(&format!("claimed {id} (rev 2, claimed)\n"));
    b.run(&["claim", &id, "--as", "coder-2"])
        .code(3)
        .stderr_is(&format!(
            "error: tasks/{id}.md: already claimed by coder-1 (status claimed)\n"
        ));
    let doc = b.read(&format!("tasks/{id}.md"));
    assert!(
        doc.contains("\nstatus: claimed\n") && doc.contains("\nclaimed_by: coder-1\n"),
        "{doc}"
    );
    let log = b.log();
    assert_eq!(log.len(), 2);
    assert_eq!(log[1]["op"], "claim");
    assert_eq!(log[1]["actor"], "coder-1");
    assert_eq!(log[1]["from"], "pending");
    assert_eq!(log[1]["to"], "claimed");
}

#[test]
fn a_commands_help_shows_its_own_flags_before_the_global_ones() {
    let b = TestBoard::empty();
    for (args, own) in [
        (&["claim", "--help"][..], "--next"),
        (&["new", "--help"], "--depends-on"),
        (&["help", "log"], "--patch"),
    ] {
        let out = b.run(args);
        out.ok();
        // Positions after the command's own "Options:" heading (the description and the
        // arguments may name a flag too).
        let start = out.stdout.find("\nOptions:").unwrap();
        let at = |s: &str| {
            start
                + out.stdout[start..]
                    .find(s)
                    .unwrap_or_else(|| panic!("{args:?} lacks {s}:\n{}", out.stdout))
        };
        assert!(
            at(own) < at("Global options:")
                && at("Global options:") < at("--board <DIR>")
                && at("Global options:") < at("--json"),
            "{args:?}:\n{}",
            out.stdout
        );
    }
}
