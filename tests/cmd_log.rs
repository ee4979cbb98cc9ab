//! `tavern log`: the compact line format, its filters, --patch, --json and --follow.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use crate::util::{TestBoard, redact_times};

/// create, create, claim, edit, forced start with a note, create an observation.
fn story() -> TestBoard {
    let b = TestBoard::new();
    b.task("Logged", &["--id", "t-log", "--as", "planner"]);
    b.task("Other", &["--id", "t-other", "--as", "planner"]);
    b.run(&["claim", "t-log", "--as", "coder-1"]).ok();
    b.run(&["edit", "t-other", "--set", "priority=0", "--as", "planner"])
        .ok();
    b.run(&[
        "start",
        "t-log",
        "--as",
        "lead",
        "--force",
        "--note",
        "line\nbreak",
    ])
    .ok();
    b.run(&[
        "new",
        "observation",
        "--title",
        "Seen",
        "--id",
        "o-1",
        "--as",
        "coder-1",
    ])
    .ok();
    b
}

const ALL: [&str; 6] = [
    "1 <TIME> planner create tasks/t-log.md rev 1",
    "2 <TIME> planner create tasks/t-other.md rev 1",
    "3 <TIME> coder-1 claim tasks/t-log.md pending -> claimed rev 2",
    "4 <TIME> planner edit tasks/t-other.md rev 2",
    "5 <TIME> lead transition tasks/t-log.md start claimed -> working rev 3 (forced) — forced over coder-1: line break",
    "6 <TIME> coder-1 create observations/o-1.md rev 1",
];

fn lines(b: &TestBoard, args: &[&str]) -> Vec<String> {
    let out = b.run(&[&["log"], args].concat());
    out.ok().stderr_is("");
    redact_times(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn pick(seqs: &[usize]) -> Vec<String> {
    seqs.iter().map(|s| ALL[s - 1].to_string()).collect()
}

#[test]
fn one_compact_line_per_entry() {
    let b = story();
    assert_eq!(lines(&b, &[]), ALL);
    // A transition by the claimant: no "(forced)", no note.
    b.run(&["submit", "t-log", "--as", "coder-1"]).ok();
    assert_eq!(
        lines(&b, &["--since", "6"]),
        ["7 <TIME> coder-1 transition tasks/t-log.md submit working -> review rev 4"]
    );
    let empty = TestBoard::new();
    empty.run(&["log"]).ok().stdout_is("").stderr_is("");
}

#[test]
fn since_a_seq_or_a_time() {
    let b = story();
    assert_eq!(lines(&b, &["--since", "0"]), ALL);
    assert_eq!(lines(&b, &["--since", "4"]), pick(&[5, 6]));
    assert_eq!(lines(&b, &["--since", "6"]), pick(&[]));
    assert_eq!(lines(&b, &["--since", "99"]), pick(&[]));
    assert_eq!(lines(&b, &["--since", "-1h"]), ALL);
    assert_eq!(lines(&b, &["--since", "2000-01-01"]), ALL);
    assert_eq!(lines(&b, &["--since", "2999-01-01"]), pick(&[]));
    assert_eq!(lines(&b, &["--since", "+1h"]), pick(&[]));
    // An RFC 3339 time: entries at or after it.
    let at = b.log()[3]["at"].as_str().unwrap().to_string();
    assert_eq!(lines(&b, &["--since", &at]), pick(&[4, 5, 6]));
    for bad in ["yesterday", "-5", "4x", "2026-13-01"] {
        b.run(&["log", "--since", bad])
            .code(2)
            .stdout_is("")
            .stderr_is(&format!("error: --since '{bad}': expected a seq number, ORIGIN:SEQ marks (k3f9q2ab:42,7hq2mm0c:17), an RFC 3339 time, a date, or a relative time like -2h\n"));
    }
}

#[test]
fn filters_by_document_and_actor() {
    let b = story();
    for r in ["t-log", "t-l", "tasks/t-log", "tasks/t-log.md"] {
        assert_eq!(lines(&b, &["--doc", r]), pick(&[1, 3, 5]), "--doc {r}");
    }
    assert_eq!(lines(&b, &["--doc", "o-1"]), pick(&[6]));
    assert_eq!(lines(&b, &["--actor", "planner"]), pick(&[1, 2, 4]));
    assert_eq!(lines(&b, &["--actor", "nobody"]), pick(&[]));
    assert_eq!(
        lines(
            &b,
            &["--actor", "planner", "--doc", "t-other", "--since", "2"]
        ),
        pick(&[4])
    );
    b.run(&["log", "--doc", "t-"]).code(2).stderr_is(
        "error: id prefix 't-' is ambiguous; it matches:\n  tasks/t-log.md\n  tasks/t-other.md\n",
    );
    // A deleted document keeps its history.
    std::fs::remove_file(b.board().join("tasks/t-other.md")).unwrap();
    assert_eq!(lines(&b, &["--doc", "t-other"]), pick(&[2, 4]));
    b.run(&["log", "--doc", "t-none"]).code(4).stderr_is(
        "error: document 't-none' not found\nhint: the log has no entry about it either\n",
    );
    b.run(&["log", "--doc", "../etc/passwd"])
        .code(6)
        .stderr_has("invalid id");
}

#[test]
fn patch_shows_each_diff_indented() {
    let b = story();
    let out = b.run(&["log", "--since", "2", "--doc", "t-log", "--patch"]);
    out.ok();
    let log = b.log();
    let indent = |seq: usize| -> String {
        log[seq - 1]["diff"]
            .as_str()
            .unwrap()
            .lines()
            .map(|l| format!("    {l}\n"))
            .collect()
    };
    assert_eq!(
        redact_times(&out.stdout),
        redact_times(&format!(
            "{}\n{}{}\n{}",
            ALL[2],
            indent(3),
            ALL[4],
            indent(5)
        ))
    );
    assert!(
        out.stdout
            .contains("\n    -status: pending\n    +status: claimed\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn json_is_one_object_per_line_matching_the_file() {
    let b = story();
    let out = b.run(&["log", "--json", "--patch"]);
    out.ok().stderr_is("");
    let parsed: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(parsed, b.log(), "--json --patch differs from log.yaml");
    // Without --patch, the same entries without their diffs.
    let plain: Vec<serde_json::Value> = b
        .run(&["log", "--json"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut without = b.log();
    for e in &mut without {
        e.as_object_mut().unwrap().remove("diff");
    }
    assert_eq!(plain, without);
    assert!(parsed.iter().any(|e| e.get("diff").is_some()));
    assert_eq!(parsed[4]["force"], true);
    assert_eq!(parsed[4]["note"], "forced over coder-1: line\nbreak");
    let out = b.run(&["log", "--json", "--since", "5"]);
    assert_eq!(out.ok().stdout.lines().count(), 1);
    assert_eq!(out.json()["seq"], 6);
}

#[test]
fn unreadable_entries_are_skipped_with_a_warning() {
    let b = story();
    let text = b.read("log.yaml");
    let at = text.find("- {seq: 3, ").unwrap();
    let line = text[..at].matches('\n').count() + 1;
    b.write(
        "log.yaml",
        format!("{}- seq: [oops\n  at: x\n{}", &text[..at], &text[at..]),
    );
    let out = b.run(&["log"]);
    out.ok().stderr_is(&format!(
        "warning: skipped log.yaml line {line}: entry cannot be parsed\n"
    ));
    assert_eq!(redact_times(&out.stdout).lines().collect::<Vec<_>>(), ALL);
    b.run(&["check"])
        .code(6)
        .stderr_has(&format!("log.yaml: line {line}: entry cannot be parsed\n"));
    // New entries still get the next seq.
    b.run(&[
        "edit",
        "t-log",
        "--set",
        "x=1",
        "--extra-field",
        "x",
        "--as",
        "coder-1",
    ])
    .ok();
    assert_eq!(
        b.run(&["log", "--since", "6", "--json"]).ok().json()["seq"],
        7
    );
}

#[test]
fn follow_prints_entries_appended_by_others() {
    let b = story();
    let (mut child, rx) = lines_of_output(b.cmd(&["log", "--follow", "--since", "5"]));
    // What is already there and matches comes first.
    let first = rx.recv_timeout(Duration::from_secs(10));
    let first = first.expect("no output from log --follow");
    assert_eq!(redact_times(&first), format!("{}\n", ALL[5]));
    b.run(&[
        "edit",
        "t-other",
        "--set",
        "x=1",
        "--extra-field",
        "x",
        "--as",
        "coder-2",
    ])
    .ok();
    let next = rx.recv_timeout(Duration::from_secs(10));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        redact_times(&next.expect("log --follow did not print the new entry")),
        "7 <TIME> coder-2 edit tasks/t-other.md rev 3\n"
    );
}

#[test]
fn follow_applies_the_filters_to_new_entries() {
    let b = story();
    let mut child = b
        .cmd(&[
            "log", "--follow", "--since", "6", "--actor", "coder-2", "--json",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) > 0 {
            let _ = tx.send(line);
        }
    });
    b.run(&[
        "edit",
        "t-other",
        "--set",
        "x=1",
        "--extra-field",
        "x",
        "--as",
        "coder-1",
    ])
    .ok();
    b.run(&[
        "edit",
        "t-other",
        "--set",
        "x=2",
        "--extra-field",
        "x",
        "--as",
        "coder-2",
    ])
    .ok();
    let line = rx.recv_timeout(Duration::from_secs(10));
    child.kill().unwrap();
    child.wait().unwrap();
    let v: serde_json::Value = serde_json::from_str(&line.expect("nothing followed")).unwrap();
    assert_eq!(v["seq"], 8);
    assert_eq!(v["actor"], "coder-2");
}

/// Entries 1..=600 of a big log (~750 KB, so `--since` and `events` seek in it rather than
/// read it all): about t-a (which exists), t-b and t-c (which do not) by ann, bob and cy,
/// each with a long note and every tenth with a diff larger than a read buffer. They are a
/// minute apart, but out of order by up to two minutes within each group of four (as
/// writers waiting for the lock make them); every 47th was logged late, with the oldest
/// time. An unreadable chunk follows entry 300; entry 601 is torn, still being written.
fn big_log() -> (TestBoard, String) {
    let b = TestBoard::new();
    b.task("A", &["--id", "t-a", "--as", "planner"]);
    let mut text = String::new();
    for seq in 1..=600u64 {
        let late = seq.is_multiple_of(47);
        let at = if late {
            "2026-01-01T00:00:10.000Z".to_string()
        } else {
            big_log_time(seq)
        };
        let actor = ["ann", "bob", "cy"][seq as usize % 3];
        let doc = ["t-a", "t-b", "t-c"][seq as usize % 5 % 3];
        text.push_str(&format!(
            "- seq: {seq}\n  at: {at}\n  actor: {actor}\n  op: edit\n  doc: tasks/{doc}.md\n  rev: {seq}\n"
        ));
        if late {
            text.push_str("  note: \"fixed (logged late: the write that made this change was interrupted before logging it)\"\n");
        } else {
            text.push_str(&format!(
                "  note: note {seq}{}\n",
                " and more words".repeat(8)
            ));
        }
        text.push_str("  diff: |\n    @@ -1 +1 @@\n    -old\n    +new\n");
        if seq.is_multiple_of(10) {
            for i in 0..600 {
                text.push_str(&format!(
                    "    +- seq: {i} a line that looks like an entry\n"
                ));
            }
        }
        if seq == 300 {
            text.push_str("- seq: [oops\n  at: x\n");
        }
    }
    text.push_str("- seq: 601\n  at: 2026-01-01T10:01:00.000Z\n  actor: ann\n  op: ed");
    assert!(text.len() > 700_000, "{}", text.len());
    b.write("log.yaml", &text);
    (b, text)
}

/// The time of entry `seq` of `big_log` (unless it was logged late).
fn big_log_time(seq: u64) -> String {
    let secs = 600 + seq * 60 - seq % 4 * 100;
    format!(
        "2026-01-01T{:02}:{:02}:{:02}.000Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The warning `log` gives for the unreadable chunk of `big_log`.
fn big_log_warning(text: &str) -> String {
    let at = text.find("- seq: [oops").unwrap();
    let line = text[..at].matches('\n').count() + 1;
    format!("warning: skipped log.yaml line {line}: entry cannot be parsed\n")
}

/// Every entry of a full read of the log (what `log` alone shows): its compact line and
/// its fields.
fn full_read(b: &TestBoard) -> Vec<(String, serde_json::Value)> {
    let lines = b.run(&["log"]);
    let json = b.run(&["log", "--json", "--patch"]);
    let entries: Vec<(String, serde_json::Value)> = lines
        .ok()
        .stdout
        .lines()
        .map(str::to_string)
        .zip(
            json.ok()
                .stdout
                .lines()
                .map(|l| serde_json::from_str(l).unwrap()),
        )
        .collect();
    assert_eq!(entries.len(), 600);
    entries
}

fn shown(
    entries: &[(String, serde_json::Value)],
    keep: impl Fn(&serde_json::Value) -> bool,
) -> String {
    entries
        .iter()
        .filter(|(_, e)| keep(e))
        .map(|(l, _)| format!("{l}\n"))
        .collect()
}

#[test]
fn since_seeks_in_a_big_log_and_shows_what_a_full_read_shows() {
    let (b, text) = big_log();
    let all = full_read(&b);
    let warning = big_log_warning(&text);
    for n in [
        0, 1, 2, 150, 299, 300, 301, 399, 400, 401, 555, 599, 600, 601, 10_000,
    ] {
        let out = b.run(&["log", "--since", &n.to_string()]);
        out.ok()
            .stdout_is(&shown(&all, |e| e["seq"].as_u64().unwrap() > n))
            // The unreadable chunk after entry 300 is reported, with its line in the file,
            // when reading starts before it (at the first entry with a higher seq).
            .stderr_is(if n < 300 { &warning } else { "" });
    }
    // Times as the log writes them, so that strings compare as times: each entry's own
    // time (the others of its group are up to two minutes older) and a few more.
    let mut times: Vec<String> = (1..=600).step_by(7).map(big_log_time).collect();
    times.extend(
        [
            "2025-12-31T00:00:00.000Z",
            "2026-01-01T00:00:05.000Z",
            "2026-01-01T00:00:30.000Z",
            "2026-01-01T10:00:01.000Z",
        ]
        .map(String::from),
    );
    for t in &times {
        b.run(&["log", "--since", t])
            .ok()
            .stdout_is(&shown(&all, |e| e["at"].as_str().unwrap() >= t.as_str()));
    }
    b.run(&["log", "--since", "2026-01-02"]).ok().stdout_is("");
    // The entries logged late have the oldest time: only the earliest times show them.
    let late = "\n470 2026-01-01T00:00:10.000Z ";
    b.run(&["log", "--since", "2026-01-01T00:00:05Z"])
        .stdout_has(late);
    assert!(
        !b.run(&["log", "--since", "2026-01-01T00:00:30Z"])
            .stdout
            .contains(late)
    );
}

#[test]
fn doc_actor_and_diff_in_a_big_log() {
    let (b, text) = big_log();
    let all = full_read(&b);
    let warning = big_log_warning(&text);
    // t-a exists; t-b does not, so the log says where it was.
    for doc in ["t-a", "t-b"] {
        let path = format!("tasks/{doc}.md");
        b.run(&["log", "--doc", doc])
            .ok()
            .stdout_is(&shown(&all, |e| e["doc"] == path.as_str()));
        b.run(&["log", "--doc", doc, "--since", "450"])
            .ok()
            .stdout_is(&shown(&all, |e| {
                e["doc"] == path.as_str() && e["seq"].as_u64().unwrap() > 450
            }));
        let v = b.run(&["diff", doc, "--json"]).ok().json();
        let want: Vec<&serde_json::Value> = all
            .iter()
            .map(|(_, e)| e)
            .filter(|e| e["doc"] == path.as_str())
            .collect();
        assert_eq!(
            v["entries"].as_array().unwrap().iter().collect::<Vec<_>>(),
            want
        );
    }
    let out = b.run(&["log", "--actor", "bob"]);
    out.ok().stdout_is(&shown(&all, |e| e["actor"] == "bob"));
    // A filter the YAML text might not show verbatim parses everything.
    b.run(&["log", "--actor", "bob smith"])
        .ok()
        .stdout_is("")
        .stderr_is(&warning);
}

#[test]
fn events_seek_from_the_cursor_in_a_big_log() {
    let (b, _) = big_log();
    let all = full_read(&b);
    b.write(".state/cursors/cy", "450\n");
    b.run(&["events", "--as", "cy", "--all"])
        .ok()
        .stdout_is(&shown(&all, |e| e["seq"].as_u64().unwrap() > 450));
    // The old single-seq cursor stays as the mark of unknown origins; the entries shown
    // (written before origins: `-`) have their own mark now.
    assert_eq!(b.read(".state/cursors/cy"), "450\n- 600\n");
    b.run(&["events", "--as", "cy"]).ok().stdout_is("");
    b.run(&[
        "events",
        "--as",
        "cy",
        "--since",
        "2026-01-01T06:40:00Z",
        "--all",
    ])
    .ok()
    .stdout_is(&shown(&all, |e| {
        e["at"].as_str().unwrap() >= "2026-01-01T06:40:00.000Z"
    }));
    b.run(&["events", "--as", "ann", "--all"])
        .ok()
        .stdout_is(&shown(&all, |_| true));
    // By default, 50 at a time from the cursor: twelve calls read the 600 entries, once.
    let mut paged = String::new();
    for _ in 0..12 {
        let out = b.run(&["events", "--as", "dee"]);
        assert_eq!(out.ok().stdout.lines().count(), 50);
        paged.push_str(&out.stdout);
    }
    assert_eq!(paged, shown(&all, |_| true));
    b.run(&["events", "--as", "dee"]).ok().stdout_is("");
}

/// Starts `cmd`; each line it prints arrives on the receiver.
fn lines_of_output(
    mut cmd: std::process::Command,
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

#[test]
fn follow_from_a_seek_waits_for_a_torn_last_entry() {
    let (b, _) = big_log();
    // Entry 601 does not name its document yet: it must still be read again.
    let (mut child, rx) =
        lines_of_output(b.cmd(&["log", "--follow", "--since", "600", "--doc", "t-a"]));
    std::thread::sleep(Duration::from_millis(500));
    // The writer finishes entry 601.
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(b.board().join("log.yaml"))
        .unwrap();
    std::io::Write::write_all(&mut log, b"it\n  doc: tasks/t-a.md\n  rev: 601\n").unwrap();
    let line = rx.recv_timeout(Duration::from_secs(10));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        line.expect("log --follow did not print the completed entry"),
        "601 2026-01-01T10:01:00.000Z ann edit tasks/t-a.md rev 601\n"
    );
}

#[test]
fn follow_from_a_seek_survives_the_cut_of_a_torn_entry() {
    let (b, text) = big_log();
    // A long torn entry, left by a crash: the next append cuts it and writes a shorter one.
    let torn = format!(
        "{text}it\n  doc: tasks/t-a.md\n  rev: 601\n  diff: |\n{}    +a line cut sh",
        "    +a line of a diff that was never finished\n".repeat(100)
    );
    b.write("log.yaml", torn);
    let (mut child, rx) = lines_of_output(b.cmd(&["log", "--follow", "--since", "601"]));
    std::thread::sleep(Duration::from_millis(500));
    b.run(&[
        "edit",
        "t-a",
        "--set",
        "x=1",
        "--extra-field",
        "x",
        "--as",
        "coder-1",
    ]);
    b.run(&[
        "edit",
        "t-a",
        "--set",
        "x=2",
        "--extra-field",
        "x",
        "--as",
        "coder-2",
    ])
    .ok();
    let line = rx.recv_timeout(Duration::from_secs(10));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        redact_times(&line.expect("log --follow did not print entry 602")),
        "602 <TIME> coder-2 edit tasks/t-a.md rev 3\n"
    );
}

/// Colour and the pager are for a person at a terminal: a pipe gets plain text, NO_COLOR
/// turns colour off, PAGER is honoured (and `cat` or empty means none).
#[test]
fn colour_and_pager_only_at_a_terminal() {
    let b = TestBoard::new();
    b.task("Coloured", &["--id", "t-c"]);
    b.run(&["claim", "t-c", "--as", "coder"]).ok();
    let mut piped = b.cmd(&["log", "--patch"]);
    piped.env("PAGER", "sed s/^/PAGED:/").env("TERM", "xterm");
    let out = crate::util::output(piped);
    out.ok();
    assert!(
        !out.stdout.contains('\x1b') && !out.stdout.contains("PAGED:"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("\n    +status: claimed\n"),
        "{}",
        out.stdout
    );

    let Some(out) = crate::util::at_terminal(&b, "log --patch", &[("PAGER", "cat")]) else {
        return;
    };
    out.ok();
    assert!(
        out.stdout.contains("    \x1b[32m+status: claimed\x1b[0m")
            && out.stdout.contains("    \x1b[31m-status: pending\x1b[0m"),
        "{:?}",
        out.stdout
    );
    let out = crate::util::at_terminal(&b, "diff t-c", &[("PAGER", "cat")]).unwrap();
    assert!(out.stdout.contains("\x1b[32m+"), "{:?}", out.stdout);
    let out =
        crate::util::at_terminal(&b, "log --patch", &[("NO_COLOR", "1"), ("PAGER", "")]).unwrap();
    assert!(!out.stdout.contains('\x1b'), "{:?}", out.stdout);
    assert!(out.stdout.contains("    +status: claimed"));
    // The pager gets log --patch at a terminal, not a plain log, nor JSON.
    let pager = [("PAGER", "sed s/^/PAGED:/"), ("NO_COLOR", "1")];
    let out = crate::util::at_terminal(&b, "log --patch", &pager).unwrap();
    out.ok();
    assert!(
        out.stdout.contains("PAGED:    +status: claimed"),
        "{:?}",
        out.stdout
    );
    let out = crate::util::at_terminal(&b, "log", &pager).unwrap();
    assert!(!out.stdout.contains("PAGED:"), "{:?}", out.stdout);
    let out = crate::util::at_terminal(&b, "log --patch --json", &pager).unwrap();
    assert!(!out.stdout.contains("PAGED:"), "{:?}", out.stdout);
}
