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

/// Each command's help text starts with the line `tavern --help` lists for it: the parser
/// builds a command's flags only when that command is given, and a flags type's own doc
/// comment must not take the command's place then.
#[test]
fn each_command_s_help_starts_with_its_line_in_the_command_list() {
    let b = TestBoard::empty();
    let out = b.run(&["--help"]);
    out.ok();
    let list = out.stdout.split("\nCommands:\n").nth(1).unwrap();
    let list = list.split("\n\n").next().unwrap();
    // Each entry: two spaces, the name, its text (wrapped lines indented further).
    let mut entries: Vec<(String, String)> = Vec::new();
    for line in list.lines() {
        let rest = line.strip_prefix("  ").unwrap();
        if rest.starts_with(' ') {
            let (_, text) = entries.last_mut().unwrap();
            text.push(' ');
            text.push_str(rest.trim());
        } else {
            let (name, text) = rest.split_once(' ').unwrap();
            entries.push((name.to_string(), text.trim().to_string()));
        }
    }
    assert!(entries.len() > 40, "{list}");
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    for (name, text) in entries.iter().filter(|(n, _)| n != "help") {
        let own = b.run(&[name, "-h"]);
        own.ok();
        let first = own.stdout.split("\n\nUsage:").next().unwrap();
        assert_eq!(
            words(first),
            words(text),
            "`tavern {name} -h`:\n{}",
            own.stdout
        );
    }
}

/// `--as` names who acts; it is not `log --actor`, which filters by who acted.
#[test]
fn the_global_as_does_not_filter_the_log() {
    let b = TestBoard::new();
    let id = b.task("Parse frontmatter", &["--as", "planner"]);
    b.run(&["claim", &id, "--as", "coder-1"]).ok();
    let all = b.run(&["log"]);
    all.ok();
    assert_eq!(all.stdout.lines().count(), 2, "{}", all.stdout);
    b.run(&["--as", "someone-else", "log"])
        .ok()
        .stdout_is(&all.stdout);
    b.run(&["log", "--as", "someone-else"])
        .ok()
        .stdout_is(&all.stdout);
    let by = b.run(&["log", "--actor", "coder-1"]);
    by.ok();
    assert_eq!(by.stdout.lines().count(), 1, "{}", by.stdout);
    assert!(by.stdout.contains(" coder-1 claim "), "{}", by.stdout);
}

/// Every shell's completion script names every command and each one's own flags.
#[test]
fn completion_scripts_name_every_command_and_its_flags() {
    let b = TestBoard::empty();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = b.run(&["completions", shell]);
        out.ok();
        for needle in [
            "claim",
            "depends-on",
            "stuck-after",
            "if-rev",
            "register",
            "board",
        ] {
            assert!(
                out.stdout.contains(needle),
                "{shell} lacks {needle}:\n{}",
                out.stdout
            );
        }
    }
}
