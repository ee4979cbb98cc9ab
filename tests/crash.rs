//! Crash safety: streams of mutations killed with SIGKILL at random points, round after
//! round. After every kill each document parses and is a whole version (every field of a
//! mutation landed, or none did), `tavern check` passes, log.yaml parses (but for a torn
//! last entry, which the next append cuts off) and never records a change that did not
//! land, and any temp file left behind is a dot file that readers skip.

#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::concurrency::{Rng, assert_seqs_increase, body, field, frontmatter};
use crate::util::{BIN, TestBoard};

const STREAMS: usize = 3;
const ROUNDS: usize = 20;

/// A stream of mutations as an agent's shell would run them, in its own process group so
/// that one kill takes the shell and the `tavern` it is running. Tags, notes and ids carry
/// the round and the stream, so every version they produce is unique.
fn mutation_stream(b: &TestBoard, round: usize, w: usize) -> Child {
    let tag = format!("r{round}s{w}");
    let script = format!(
        r#"i=0
while :; do
  i=$((i+1))
  "$T" edit shared --add "tags={tag}-$i" --set "note={tag}-$i" --extra-field note --body "body {tag}-$i" --as s{w}
  "$T" claim cycle-{w} --as s{w}
  "$T" start cycle-{w} --as s{w}
  "$T" release cycle-{w} --as s{w}
  "$T" new observation --id "o-{tag}-$i" --title "seen {tag}-$i" --as s{w}
done"#
    );
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(b.root())
        .env_remove("TAVERN_BOARD")
        .env_remove("TAVERN_AGENT")
        .env("T", BIN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .expect("spawn a mutation stream")
}

/// Is any process of group `pgid` still running (not a zombie)? Where there is no /proc,
/// says no after a pause long enough for a killed process to die.
fn group_alive(pgid: u32) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        std::thread::sleep(Duration::from_millis(50));
        return false;
    };
    procs.flatten().any(|p| {
        let Ok(stat) = std::fs::read_to_string(p.path().join("stat")) else {
            return false;
        };
        // pid (comm) state ppid pgrp …; comm may hold spaces and parens.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        f.len() > 2 && f[2] == pgid.to_string() && !matches!(f[0], "Z" | "X")
    })
}

/// SIGKILL to the whole process group, then waits until every process of it is gone, so
/// nothing still writes while the board is inspected.
pub fn kill_group(child: &mut Child) {
    let pgid = child.id();
    let status = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -KILL -{pgid} failed");
    child.wait().unwrap();
    let start = Instant::now();
    while group_alive(pgid) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "process group {pgid} survived SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// `r3s1-7` → (3, 1, 7).
fn parse_tag(tag: &str) -> (usize, usize, usize) {
    let (rs, i) = tag.split_once('-').unwrap();
    let (r, s) = rs[1..].split_once('s').unwrap();
    (r.parse().unwrap(), s.parse().unwrap(), i.parse().unwrap())
}

/// Every document of the board, parsed independently: (region/id) -> (text, frontmatter).
/// Also checks that any other file in a region is a dot file, which readers skip.
fn documents(b: &TestBoard) -> BTreeMap<String, (String, Map<String, Value>)> {
    let mut docs = BTreeMap::new();
    for region in ["tasks", "observations", "questions"] {
        let Ok(entries) = std::fs::read_dir(b.board().join(region)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().into_string().unwrap();
            let Some(id) = name.strip_suffix(".md").filter(|_| !name.starts_with('.')) else {
                assert!(
                    name.starts_with('.') && name.ends_with(".tmp"),
                    "{region}/{name}: a file readers would not skip"
                );
                continue;
            };
            let text = std::fs::read_to_string(e.path()).unwrap();
            let fm = frontmatter(&text);
            assert_eq!(field(&fm, "id"), Some(id), "{region}/{name}");
            assert!(
                fm["rev"].as_u64().is_some(),
                "{region}/{name}: rev is not an integer"
            );
            docs.insert(format!("{region}/{id}"), (text, fm));
        }
    }
    docs
}

/// The whole-version invariants of the documents the streams write.
fn check_documents(docs: &BTreeMap<String, (String, Map<String, Value>)>) {
    // `shared`: every edit adds one new tag and sets note and body to match it.
    let (text, fm) = &docs["tasks/shared"];
    let tags: Vec<&str> = fm["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        fm["rev"].as_u64(),
        Some(1 + tags.len() as u64),
        "shared: one rev per landed edit\n{text}"
    );
    let mut runs: BTreeMap<(usize, usize), Vec<usize>> = BTreeMap::new();
    for t in &tags {
        let (r, s, i) = parse_tag(t);
        runs.entry((r, s)).or_default().push(i);
    }
    for ((r, s), is) in &runs {
        assert_eq!(
            *is,
            (1..=is.len()).collect::<Vec<_>>(),
            "shared: stream {s} of round {r} lost or reordered an edit\n{text}"
        );
    }
    match field(fm, "note") {
        None => assert!(tags.is_empty(), "shared: tags without a note\n{text}"),
        Some(note) => {
            // The last edit that landed set the note: the latest round, the last of its run.
            let (r, s, i) = parse_tag(note);
            assert_eq!(
                runs.get(&(r, s)).map(Vec::len),
                Some(i),
                "shared: note {note}\n{text}"
            );
            assert_eq!(
                Some(r),
                runs.keys().map(|k| k.0).max(),
                "shared: note {note}\n{text}"
            );
            assert_eq!(
                body(text),
                format!("\nbody {note}\n"),
                "shared: body and note disagree"
            );
        }
    }
    // `cycle-W`: claim, start, release; status and claim fields change together.
    for w in 0..STREAMS {
        let (text, fm) = &docs[&format!("tasks/cycle-{w}")];
        let status = field(fm, "status").unwrap();
        let owner = field(fm, "claimed_by");
        match status {
            "pending" => assert!(owner.is_none() && !fm.contains_key("claimed_at"), "{text}"),
            "claimed" | "working" => {
                assert_eq!(owner, Some(format!("s{w}").as_str()), "{text}");
                assert!(fm.contains_key("claimed_at"), "{text}");
            }
            other => panic!("cycle-{w}: status {other}\n{text}"),
        }
    }
    // Observations appear whole or not at all.
    for (key, (text, fm)) in docs {
        if let Some(tag) = key
            .strip_prefix("observations/o-")
            .filter(|t| *t != "final")
        {
            let (_, s, _) = parse_tag(tag);
            assert_eq!(
                field(fm, "title"),
                Some(format!("seen {tag}").as_str()),
                "{text}"
            );
            assert_eq!(field(fm, "created_by"), Some(format!("s{s}").as_str()));
            assert_eq!(fm["rev"], 1, "{text}");
        }
    }
}

/// Parses log.yaml independently. A crash in the middle of an append may leave a torn last
/// entry (the next append cuts it off); everything before it must parse. Returns the
/// entries and whether the last one was torn.
fn log_after_crash(b: &TestBoard) -> (Vec<Value>, bool) {
    let text = b.read("log.yaml");
    let parse = |t: &str| match serde_saphyr::from_str::<Value>(t) {
        Ok(Value::Array(items)) => Some(items),
        Ok(Value::Null) if t.trim().is_empty() => Some(Vec::new()),
        _ => None,
    };
    if let Some(items) = parse(&text)
        && (text.is_empty() || text.ends_with('\n'))
    {
        return (items, false);
    }
    let cut = text.rfind("\n- ").map_or(0, |i| i + 1);
    let items = parse(&text[..cut])
        .unwrap_or_else(|| panic!("log.yaml does not parse, even without its last entry:\n{text}"));
    (items, true)
}

/// The log tells every change that landed, once: a document at rev R has log entries for
/// revs 1..R-1, and for R unless the write that made R was killed before logging it (its
/// entry is then logged by the next write of that document, from its write-ahead intent).
/// The log names no change that did not land. Returns how many documents' latest change
/// is not logged yet.
fn unlogged(log: &[Value], docs: &BTreeMap<String, (String, Map<String, Value>)>) -> usize {
    let mut logged: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    for e in log {
        let doc = e["doc"].as_str().unwrap();
        let rev = e["rev"].as_u64().unwrap();
        let key = doc.strip_suffix(".md").unwrap();
        assert!(
            docs.contains_key(key),
            "the log names {doc}, which does not exist"
        );
        assert!(
            logged.entry(key).or_default().insert(rev),
            "{doc} rev {rev} logged twice"
        );
    }
    let mut latest_missing = 0;
    for (key, (text, fm)) in docs {
        let rev = fm["rev"].as_u64().unwrap();
        let revs = logged.remove(key.as_str()).unwrap_or_default();
        let all: BTreeSet<u64> = (1..=rev).collect();
        let all_but_last: BTreeSet<u64> = (1..rev).collect();
        if revs == all_but_last {
            latest_missing += 1;
        } else {
            assert_eq!(revs, all, "{key}.md at rev {rev}: logged revs\n{text}");
        }
    }
    latest_missing
}

#[test]
fn sigkill_at_random_points_leaves_every_document_whole() {
    let b = TestBoard::new();
    b.task(
        "Edited by every stream",
        &["--id", "shared", "--as", "planner"],
    );
    for w in 0..STREAMS {
        b.task(
            "Claimed, started, released",
            &["--id", &format!("cycle-{w}"), "--as", "planner"],
        );
    }
    let mut rng = Rng::new(0x5EED_C2A5);
    let mut torn = 0;
    for round in 1..=ROUNDS {
        let mut streams: Vec<Child> = (0..STREAMS)
            .map(|w| mutation_stream(&b, round, w))
            .collect();
        // From "killed before the first write" to "several mutations in".
        std::thread::sleep(Duration::from_millis(5 + rng.below(250)));
        for s in &mut streams {
            kill_group(s);
        }

        let docs = documents(&b);
        check_documents(&docs);
        let (log, was_torn) = log_after_crash(&b);
        torn += usize::from(was_torn);
        assert_seqs_increase(&log);
        // Each kill interrupts at most one mutation per stream, whose entry may be missing.
        let lost = unlogged(&log, &docs);
        assert!(
            lost <= STREAMS,
            "round {round}: {lost} changes landed without a log entry"
        );
        // Any command completes what the kills interrupted: every change is then logged,
        // and no temp file is left.
        b.run(&["list", "--json"]).ok();
        let docs = documents(&b);
        check_documents(&docs);
        let log = b.log();
        assert_seqs_increase(&log);
        assert_eq!(
            unlogged(&log, &docs),
            0,
            "round {round}: changes not logged"
        );
        assert_eq!(
            leftover_temps(&b.board()),
            0,
            "round {round}: temp files left"
        );
        let check = b.run(&["check"]);
        assert_eq!(
            check.code, 0,
            "check after round {round}:\n{}{}",
            check.stdout, check.stderr
        );
    }

    // The next append repairs a torn tail; then the log parses as a whole.
    b.run(&[
        "new",
        "observation",
        "--id",
        "o-final",
        "--title",
        "after the crashes",
    ])
    .ok();
    let log = b.log();
    assert_seqs_increase(&log);
    let docs = documents(&b);
    check_documents(&docs);
    let lost = unlogged(&log, &docs);
    let mutations = log.len() - 2 - STREAMS;
    assert!(
        mutations > ROUNDS,
        "the streams made progress: {mutations} logged mutations ({lost} unlogged, {torn} torn log tails)"
    );

    // tavern reads every document as the file is, and lists exactly the .md files.
    for (key, (text, _)) in &docs {
        b.run(&["show", key]).ok().stdout_is(text);
    }
    let listed = b.run(&["list", "--json"]);
    assert_eq!(
        listed.ok().json()["documents"].as_array().unwrap().len(),
        docs.len()
    );
    assert_eq!(listed.stderr, "", "no file was skipped");
    let temps = leftover_temps(&b.board());
    eprintln!(
        "{ROUNDS} rounds: {} log entries, {lost} mutations unlogged, {torn} torn log tails, {temps} temp files left",
        log.len()
    );
    b.run(&["check"]).ok();
}

fn leftover_temps(board: &Path) -> usize {
    ["tasks", "observations"]
        .iter()
        .flat_map(|r| std::fs::read_dir(board.join(r)).unwrap().flatten())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .count()
}
