//! Real processes racing on a real board. Every worker is one child process (a shell loop
//! calling `tavern` over and over, the way an agent's tool shell does); all workers are
//! released at the same instant, and each records every exit code and output in its own
//! directory. Afterwards the files, the outputs and log.yaml must tell one consistent story.

#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::util::{BIN, TestBoard};

/// A small seeded PRNG (splitmix64): reproducible orders without a rand crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Fisher-Yates.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// The frontmatter of a document, parsed independently of tavern: the text between the
/// first line `---` and the next line `---` must be a YAML mapping.
#[track_caller]
pub fn frontmatter(text: &str) -> serde_json::Map<String, Value> {
    let rest = text
        .strip_prefix("---\n")
        .unwrap_or_else(|| panic!("document does not start with ---:\n{text}"));
    let end = rest
        .find("\n---\n")
        .unwrap_or_else(|| panic!("document has no closing ---:\n{text}"));
    match serde_saphyr::from_str::<Value>(&rest[..=end]) {
        Ok(Value::Object(map)) => map,
        other => panic!("frontmatter is not a YAML mapping: {other:?}\n{text}"),
    }
}

/// The body of a document: everything after the closing `---` line.
pub fn body(text: &str) -> &str {
    let rest = &text[4..];
    let end = rest.find("\n---\n").expect("closing ---");
    &rest[end + 5..]
}

/// A string field of a frontmatter.
pub fn field<'a>(fm: &'a serde_json::Map<String, Value>, key: &str) -> Option<&'a str> {
    fm.get(key).and_then(Value::as_str)
}

/// Seqs of a parsed log, checked to be unique and strictly increasing.
#[track_caller]
pub fn assert_seqs_increase(log: &[Value]) {
    let seqs: Vec<u64> = log
        .iter()
        .map(|e| e["seq"].as_u64().expect("every entry has an integer seq"))
        .collect();
    for w in seqs.windows(2) {
        assert!(w[0] < w[1], "seqs must be unique and increasing: {seqs:?}");
    }
}

/// Creates tasks with the given ids (through `tavern new`, so the log holds their create
/// entries), two creators at a time.
fn create_tasks(b: &TestBoard, ids: &[String]) {
    std::thread::scope(|s| {
        for part in ids.chunks(ids.len().div_ceil(2)) {
            s.spawn(move || {
                for id in part {
                    b.task(&format!("Task {id}"), &["--id", id, "--as", "planner"]);
                }
            });
        }
    });
}

/// Runs one shell process per script, all released at the same moment, and waits for all.
/// In a script, `$T` is the tavern binary and `$D` the worker's own directory for results
/// (returned in order). Each shell blocks on its stdin until every worker is spawned.
fn race(b: &TestBoard, scripts: &[String]) -> Vec<PathBuf> {
    let dirs: Vec<PathBuf> = (0..scripts.len())
        .map(|w| {
            let d = b.root().join(format!("results-{w}"));
            std::fs::create_dir_all(&d).unwrap();
            d
        })
        .collect();
    let mut children: Vec<_> = scripts
        .iter()
        .zip(&dirs)
        .map(|(script, dir)| {
            Command::new("sh")
                .arg("-c")
                .arg(format!("read go || exit 99\n{script}"))
                .current_dir(b.root())
                .env_remove("TAVERN_BOARD")
                .env_remove("TAVERN_AGENT")
                .env("USER", "tester")
                .env("T", BIN)
                .env("D", dir)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn sh")
        })
        .collect();
    for c in &mut children {
        let mut stdin = c.stdin.take().unwrap();
        stdin.write_all(b"go\n").unwrap();
    }
    for (w, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "worker {w}: {:?}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dirs
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// `(id, exit code)` lines a worker appended to `$D/codes`.
fn codes(dir: &Path) -> Vec<(String, i32)> {
    read(&dir.join("codes"))
        .lines()
        .map(|l| {
            let (id, code) = l.rsplit_once(' ').unwrap();
            (id.to_string(), code.parse().unwrap())
        })
        .collect()
}

#[test]
fn eight_processes_race_to_claim_the_same_hundred_tasks() {
    let b = TestBoard::new();
    let ids: Vec<String> = (0..100).map(|i| format!("t{i:03}")).collect();
    create_tasks(&b, &ids);

    let workers = 8;
    let scripts: Vec<String> = (0..workers)
        .map(|w| {
            // A random order of its own, shuffled within blocks of four so that all eight
            // are busy with the same few tasks at any moment: the races are real.
            let mut order = ids.clone();
            let mut rng = Rng::new(0xC1A1_0000 + w as u64);
            for block in order.chunks_mut(4) {
                rng.shuffle(block);
            }
            format!(
                r#"for id in {}; do
  "$T" claim "$id" --as worker-{w} >"$D/$id.out" 2>"$D/$id.err"
  echo "$id $?" >>"$D/codes"
done"#,
                order.join(" ")
            )
        })
        .collect();
    let dirs = race(&b, &scripts);

    // id -> the workers told they won it.
    let mut winners: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (w, dir) in dirs.iter().enumerate() {
        let me = format!("worker-{w}");
        let results = codes(dir);
        assert_eq!(results.len(), 100, "{me} tried every task once");
        for (id, code) in results {
            let stdout = read(&dir.join(format!("{id}.out")));
            let stderr = read(&dir.join(format!("{id}.err")));
            match code {
                0 => {
                    assert_eq!(stdout, format!("claimed {id} (rev 2, claimed)\n"), "{me}");
                    assert_eq!(stderr, "", "{me} {id}");
                    winners.entry(id).or_default().push(me.clone());
                }
                3 => assert_eq!(stdout, "", "{me} {id}: a loser prints nothing on stdout"),
                other => panic!("{me} claiming {id}: exit {other}\n{stdout}{stderr}"),
            }
        }
    }
    assert_eq!(winners.len(), 100, "every task was won by someone");
    for (id, ws) in &winners {
        assert_eq!(ws.len(), 1, "{id} was won by {ws:?}");
        let winner = &ws[0];
        let doc = b.read(&format!("tasks/{id}.md"));
        let fm = frontmatter(&doc);
        assert_eq!(field(&fm, "status"), Some("claimed"), "{id}");
        assert_eq!(field(&fm, "claimed_by"), Some(winner.as_str()), "{id}");
        assert_eq!(fm["rev"], 2, "{id}");
        // Every loser was told who won.
        for (w, dir) in dirs.iter().enumerate() {
            if format!("worker-{w}") != *winner {
                assert_eq!(
                    read(&dir.join(format!("{id}.err"))),
                    format!("error: tasks/{id}.md: already claimed by {winner} (status claimed)\n"),
                    "worker-{w} losing {id}"
                );
            }
        }
    }
    let losses: usize = dirs
        .iter()
        .map(|d| codes(d).iter().filter(|(_, c)| *c == 3).count())
        .sum();
    assert_eq!(losses, 700, "every other attempt lost with exit 3");

    let log = b.log();
    assert_seqs_increase(&log);
    assert_eq!(log.len(), 200, "100 creates and 100 claims");
    assert_eq!(log.iter().filter(|e| e["op"] == "create").count(), 100);
    let claims: Vec<&Value> = log.iter().filter(|e| e["op"] == "claim").collect();
    assert_eq!(claims.len(), 100);
    let mut claimed = BTreeSet::new();
    for c in claims {
        let id = c["doc"]
            .as_str()
            .unwrap()
            .strip_prefix("tasks/")
            .and_then(|d| d.strip_suffix(".md"))
            .unwrap();
        assert!(claimed.insert(id.to_string()), "{id} logged twice");
        assert_eq!(c["actor"].as_str(), Some(winners[id][0].as_str()), "{id}");
        assert_eq!(
            (&c["from"], &c["to"], &c["rev"]),
            (&"pending".into(), &"claimed".into(), &2.into())
        );
    }
    b.run(&["check"]).ok();
}

#[test]
fn eight_processes_adding_tags_to_one_task_lose_no_update() {
    let b = TestBoard::new();
    let id = b.task("Collect tags", &["--id", "tags", "--as", "planner"]);
    let scripts: Vec<String> = (0..8)
        .map(|w| {
            format!(
                r#"k=1
while [ $k -le 25 ]; do
  "$T" edit {id} --add "tags=w{w}-$k" --as w{w} >>"$D/out" 2>>"$D/err"
  echo "w{w}-$k $?" >>"$D/codes"
  k=$((k+1))
done"#
            )
        })
        .collect();
    let dirs = race(&b, &scripts);

    // Every edit succeeded and was based on the version before it: the revs the 200 edits
    // reported are 2..=201, each once.
    let mut revs = Vec::new();
    for dir in &dirs {
        for (tag, code) in codes(dir) {
            assert_eq!(code, 0, "adding {tag}: {}", read(&dir.join("err")));
        }
        for line in read(&dir.join("out")).lines() {
            let rev = line
                .strip_prefix(&format!("edited {id} (rev "))
                .and_then(|r| r.strip_suffix(", pending)"))
                .unwrap_or_else(|| panic!("unexpected output {line:?}"));
            revs.push(rev.parse::<u64>().unwrap());
        }
    }
    revs.sort();
    assert_eq!(revs, (2..=201).collect::<Vec<u64>>());

    let fm = frontmatter(&b.read(&format!("tasks/{id}.md")));
    let tags: Vec<&str> = fm["tags"]
        .as_array()
        .expect("tags is a list")
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    let unique: BTreeSet<&str> = tags.iter().copied().collect();
    assert_eq!(unique.len(), tags.len(), "no tag twice");
    let expected: BTreeSet<String> = (0..8)
        .flat_map(|w| (1..=25).map(move |k| format!("w{w}-{k}")))
        .collect();
    assert_eq!(
        unique,
        expected.iter().map(String::as_str).collect(),
        "all 200 tags arrived"
    );
    // Each worker's own tags arrived in the order it added them.
    for w in 0..8 {
        let mine: Vec<&str> = tags
            .iter()
            .copied()
            .filter(|t| t.starts_with(&format!("w{w}-")))
            .collect();
        let want: Vec<String> = (1..=25).map(|k| format!("w{w}-{k}")).collect();
        assert_eq!(mine, want);
    }
    assert_eq!(fm["rev"], 201);

    let log = b.log();
    assert_seqs_increase(&log);
    let mut edit_revs: Vec<u64> = log
        .iter()
        .filter(|e| e["op"] == "edit")
        .map(|e| e["rev"].as_u64().unwrap())
        .collect();
    assert_eq!(edit_revs.len(), 200, "200 edit entries");
    edit_revs.sort();
    assert_eq!(edit_revs, (2..=201).collect::<Vec<u64>>());
    b.run(&["check"]).ok();
}

#[test]
fn six_processes_racing_claim_next_take_each_task_once() {
    let b = TestBoard::new();
    let ids: Vec<String> = (0..30).map(|i| format!("n{i:02}")).collect();
    create_tasks(&b, &ids);
    let scripts: Vec<String> = (0..6)
        .map(|w| {
            format!(
                r#"while :; do
  out=$("$T" claim --next --as w{w} 2>>"$D/err")
  c=$?
  echo "$c $out" >>"$D/results"
  [ $c -eq 0 ] || break
done"#
            )
        })
        .collect();
    let dirs = race(&b, &scripts);

    let mut got: BTreeMap<String, String> = BTreeMap::new();
    for (w, dir) in dirs.iter().enumerate() {
        let results = read(&dir.join("results"));
        let lines: Vec<&str> = results.lines().collect();
        let (last, wins) = lines.split_last().unwrap();
        assert_eq!(
            *last, "4 ",
            "w{w} stopped at exit 4 (nothing left to claim)"
        );
        for line in wins {
            let id = line
                .strip_prefix("0 claimed ")
                .and_then(|l| l.strip_suffix(" (rev 2, claimed)"))
                .unwrap_or_else(|| panic!("w{w}: unexpected result {line:?}"));
            if let Some(other) = got.insert(id.to_string(), format!("w{w}")) {
                panic!("{id} handed out to both {other} and w{w}");
            }
        }
        let err = read(&dir.join("err"));
        assert_eq!(
            err.matches("error: no claimable task\n").count(),
            1,
            "w{w} stderr:\n{err}"
        );
    }
    assert_eq!(got.len(), 30, "30 successes in all");
    assert_eq!(
        got.keys().cloned().collect::<Vec<_>>(),
        ids,
        "every task claimed exactly once"
    );
    for (id, w) in &got {
        let fm = frontmatter(&b.read(&format!("tasks/{id}.md")));
        assert_eq!(field(&fm, "status"), Some("claimed"));
        assert_eq!(field(&fm, "claimed_by"), Some(w.as_str()), "{id}");
    }
    let log = b.log();
    assert_seqs_increase(&log);
    let claims: Vec<&Value> = log.iter().filter(|e| e["op"] == "claim").collect();
    assert_eq!(claims.len(), 30);
    for c in claims {
        let id = c["doc"]
            .as_str()
            .and_then(|d| d.strip_prefix("tasks/"))
            .and_then(|d| d.strip_suffix(".md"))
            .unwrap();
        assert_eq!(c["actor"].as_str(), Some(got[id].as_str()));
    }
}
