//! A damaged log.yaml: a torn last entry, bytes that are not UTF-8, lines added by hand.
//! `check` reports the unreadable end with its line, the next write cuts exactly that end
//! (with a warning) and appends after the last whole entry, and readers see every entry.

use crate::util::TestBoard;

#[test]
fn a_torn_log_entry_is_cut_and_reported() {
    let b = TestBoard::new();
    b.task("One", &["--id", "t-1"]);
    let mut log = b.read("log.yaml");
    log.push_str("- seq: 2\n  at: 2026-11-22T10:00:00.000Z\n  actor: \"half");
    b.write("log.yaml", &log);
    b.run(&["log"]).ok();
    b.run(&["check"]).code(6).stderr_is(&format!(
        "log.yaml: line {}: the end of the log cannot be read (a torn entry, or lines added by hand); the next tavern write cuts it\n1 problem in {}\n",
        log.lines().count() - 2,
        b.board().display()
    ));
    let out = b.run(&["claim", "t-1", "--as", "a"]);
    out.ok().stderr_is(CUT);
    let entries = b.log();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["seq"], 2);
    assert_eq!(entries[1]["op"], "claim");
    b.run(&["check"]).ok();
}

#[test]
fn bytes_in_the_log_that_are_not_utf8_do_not_move_where_it_is_cut_or_read() {
    let b = TestBoard::new();
    b.task("One", &["--id", "t-1"]);
    b.run(&["edit", "t-1", "--set", "priority=1", "--as", "b"])
        .ok();
    let path = b.board().join("log.yaml");
    let text = b.read("log.yaml");
    // A hand edit left Latin-1 bytes in a comment of the first entry (each is one byte
    // on disk but three once read as U+FFFD), and a crash left a torn last entry.
    let first_line = text.find('\n').unwrap() + 1;
    let mut kept = text.as_bytes()[..first_line].to_vec();
    kept.extend_from_slice(b"  # caf\xe9 \xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\n");
    kept.extend_from_slice(&text.as_bytes()[first_line..]);
    let mut torn = kept.clone();
    torn.extend_from_slice(b"- seq: 3\n  at: 2026-11-22T10:00:00.000Z\n  actor: \"half");
    std::fs::write(&path, &torn).unwrap();

    b.run(&["claim", "t-1", "--as", "a"]).ok().stderr_is(CUT);
    let after = std::fs::read(&path).unwrap();
    assert_eq!(
        &after[..kept.len()],
        &kept[..],
        "only the torn entry was cut"
    );
    let appended = String::from_utf8(after[kept.len()..].to_vec()).unwrap();
    assert!(appended.starts_with("- {seq: 3, origin: \""), "{appended}");
    assert!(appended.contains(", op: \"claim\", "), "{appended}");
    b.run(&["check"]).ok();
    let seqs = |args: &[&str]| -> Vec<u64> {
        b.run(args)
            .ok()
            .stderr_is("")
            .stdout
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(seqs(&["log", "--json"]), [1, 2, 3]);
    assert_eq!(seqs(&["log", "--json", "--since", "1"]), [2, 3]);
    assert_eq!(seqs(&["log", "--json", "--doc", "t-1"]), [1, 2, 3]);
}

const CUT: &str = "warning: log.yaml: cut an unreadable end (a torn entry left by an interrupted write, or lines added by hand)\n";

#[test]
fn lines_added_to_the_log_by_hand_are_cut_but_the_entry_before_them_stays() {
    let b = TestBoard::new();
    b.task("One", &["--id", "t-1"]);
    b.run(&["edit", "t-1", "--set", "priority=1", "--as", "b"])
        .ok();
    let before = b.read("log.yaml");
    b.write("log.yaml", format!("{before}junk line : [\n"));
    // Until the next write, the last entry and the junk are one unreadable end.
    let last_entry_line = before
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("- {seq:"))
        .last()
        .unwrap()
        .0
        + 1;
    b.run(&["check"]).code(6).stderr_has(&format!(
        "log.yaml: line {last_entry_line}: the end of the log cannot be read"
    ));
    b.run(&["edit", "t-1", "--set", "priority=3", "--as", "c"])
        .ok()
        .stderr_is(CUT);
    let log = b.log();
    let who: Vec<(u64, &str, u64)> = log
        .iter()
        .map(|e| {
            (
                e["seq"].as_u64().unwrap(),
                e["actor"].as_str().unwrap(),
                e["rev"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(who, vec![(1, "tester", 1), (2, "b", 2), (3, "c", 3)]);
    assert!(b.read("log.yaml").starts_with(&before));
    assert!(!b.read("log.yaml").contains("junk"));
    b.run(&["check"]).ok();

    // Lines that look like a list item of their own are not tavern's either: everything
    // after the last entry tavern wrote goes, and that entry stays whole.
    let before = b.read("log.yaml");
    b.write(
        "log.yaml",
        format!("{before}notes by hand\n- todo: x\n- another: [\n"),
    );
    b.run(&["edit", "t-1", "--set", "priority=4", "--as", "d"])
        .ok()
        .stderr_is(CUT);
    let after = b.read("log.yaml");
    assert!(after.starts_with(&before), "{after}");
    assert!(after[before.len()..].starts_with("- {seq: 4, "), "{after}");
    let seqs: Vec<u64> = b.log().iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    b.run(&["check"]).ok();
}
