//! Races inside one clone: `tavern sync` and `tavern claim` processes of one clone (and of
//! two worktrees sharing its git directory) at once, a git left running by a killed sync,
//! and a race for a local ref that never ends. A race lost here is made again; what cannot
//! be resolved says so with its own exit code, never 7 (the remote unreachable). Real git,
//! real processes, a local bare repository as the remote.

#![cfg(unix)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::sync_branch::two_clones;
use crate::util::eventually;
use crate::util::git::{fake_git, finish, git, spawn};
use crate::worktrees::tavern;

const REMOTE_REF: &str = "refs/tavern/remote/tavern";

/// A directory holding a `git` that runs the real one, except for a fetch whose
/// arguments contain `matches`: there it plays the other git process of the clone that
/// won a race for the ref being fetched into. `once`: the first such fetch runs the real
/// fetch (the winner's update of the ref: the remote's branch taken into the copy), then
/// fails with git's own words for the loser (`cannot lock ref …: is at NEW but expected
/// OLD`); a file `raced` beside it says it did. Otherwise every such fetch fails so, the
/// ref left as it is (a race that never ends).
fn racing_git(tmp: &Path, matches: &str, once: bool) -> PathBuf {
    let script = format!(
        r#"case " $* " in
  *" fetch "*'{matches}'*)
    if [ {once} = 0 ] || [ ! -e "$dir/raced" ]; then
      : > "$dir/raced"
      old=$("$real" rev-parse -q --verify '{remote_ref}' || echo 0000000000000000000000000000000000000000)
      if [ {once} = 1 ]; then "$real" "$@" || exit $?; fi
      new=$("$real" rev-parse -q --verify '{remote_ref}' || echo 1111111111111111111111111111111111111111)
      echo "error: cannot lock ref '{remote_ref}': is at $new but expected $old" >&2
      exit 1
    fi;;
esac"#,
        once = u8::from(once),
        remote_ref = if matches.contains("claims") {
            "refs/tavern/claims/x"
        } else if matches.contains("holds") {
            "refs/tavern/holds/paths/x"
        } else {
            REMOTE_REF
        },
    );
    let dir = tmp.join(format!("racing-git-{}", matches.replace(['/', '*'], "_")));
    fake_git(&dir, &script)
}

/// The files of the board branch at `rev` in `dir`.
fn branch_files(dir: &Path, rev: &str) -> BTreeSet<String> {
    git(dir, &["ls-tree", "-r", "--name-only", rev])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The task files on disk in a clone's board.
fn task_files(clone: &Path) -> BTreeSet<String> {
    std::fs::read_dir(clone.join(".tavern/tasks"))
        .unwrap()
        .flatten()
        .map(|e| format!("tasks/{}", e.file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".md"))
        .collect()
}

fn log_of(dir: &Path) -> Vec<serde_json::Value> {
    tavern(dir, &["log", "--json"])
        .ok()
        .text()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn new_task(dir: &Path, title: &str) -> String {
    tavern(dir, &["new", "task", "--title", title]).ok().text()
}

/// The race the soak met, made certain: while this clone's sync fetches the remote's
/// branch, another git process of the clone (a fetch left running by a killed sync) takes
/// it into the copy first, and the sync's fetch fails with `cannot lock ref
/// 'refs/tavern/remote/tavern': is at X but expected Y`. That was exit 7, "cannot fetch
/// the board branch from the remote". The fetch is made again, and the sync finishes.
#[test]
fn a_fetch_that_loses_a_race_in_this_clone_is_made_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    let id = new_task(&b, "from b");
    tavern(&b, &["sync"]).ok();
    let path = racing_git(tmp.path(), REMOTE_REF, true);
    let out = finish(spawn(&a, &["--json", "sync"], Some(&path)));
    assert!(
        path.join("raced").exists(),
        "the fetch met the other git process"
    );
    let x = out.ok().json();
    assert_eq!(x["outcome"], "fast-forwarded", "{x}");
    assert!(a.join(format!(".tavern/tasks/{id}.md")).is_file());
    let theirs = git(&remote, &["rev-parse", "tavern"]);
    assert_eq!(git(&a, &["rev-parse", "tavern"]), theirs);
    assert_eq!(git(&a, &["rev-parse", REMOTE_REF]), theirs);
    assert!(
        log_of(&a)
            .iter()
            .any(|e| e["op"] == "create" && e["doc"] == format!("tasks/{id}.md")),
        "b's entry arrived with its task"
    );
}

/// A race in this clone that never ends (here: a git that always says another process
/// moved the copy) is bounded, and said for what it is: exit 3 naming this clone and
/// the ref, not exit 7; the board and the branch here are intact, nothing is sent. Once
/// it ends, the next sync sends everything. The same for the claim records: a sync says
/// so with exit 3, `claim --next` with exit 1 (as a lock of one record's copy that stays
/// in the way), neither with 7.
#[test]
fn a_race_in_this_clone_that_never_ends_is_not_called_an_unreachable_remote() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    let id = new_task(&a, "waits for the race to end");
    let before = git(&remote, &["rev-parse", "tavern"]);

    let path = racing_git(tmp.path(), REMOTE_REF, false);
    let out = finish(spawn(&a, &["sync"], Some(&path)));
    for said in [
        "in this clone",
        REMOTE_REF,
        "is at",
        "the remote is not at fault",
    ] {
        out.code(3).stderr_has(said);
    }
    assert!(!out.stderr.contains("cannot fetch"), "{}", out.stderr);
    assert_eq!(
        git(&remote, &["rev-parse", "tavern"]),
        before,
        "nothing sent"
    );
    assert!(
        branch_files(&a, "tavern").contains(&format!("tasks/{id}.md")),
        "recorded here"
    );

    let path = racing_git(tmp.path(), "refs/tavern/claims/*", false);
    let out = finish(spawn(&a, &["sync"], Some(&path)));
    out.code(3).stderr_has("another git process of this clone");
    assert_eq!(
        git(&remote, &["rev-parse", "tavern"]),
        before,
        "nothing sent"
    );
    tavern(&a, &["sync"]).ok();
    assert!(branch_files(&remote, "tavern").contains(&format!("tasks/{id}.md")));

    // `claim --next` fetches the records when every candidate's changed on the remote:
    // another clone claimed and released the only one since this clone looked.
    tavern(&b, &["sync"]).ok();
    tavern(&b, &["claim", &id, "--as", "other"]).ok();
    tavern(&b, &["release", &id, "--as", "other"]).ok();
    let out = finish(spawn(
        &a,
        &["claim", "--next", "--as", "coder"],
        Some(&path),
    ));
    out.code(1)
        .stderr_has("the remote is not at fault")
        .stderr_has("claim records");
    assert!(
        !log_of(&a)
            .iter()
            .any(|e| e["op"] == "claim" && e["actor"] == "coder"),
        "nothing claimed"
    );
    tavern(&a, &["claim", "--next", "--as", "coder"]).ok();
    tavern(&a, &["check"]).ok();
}

/// Many `tavern sync` and `tavern claim --next` processes at once in one clone and in a
/// linked worktree of it (one git directory), while another clone keeps changing the
/// remote: every one exits 0, no task is claimed twice, no document is lost or moved back,
/// every claim is logged once and recorded on the remote, and the clones agree after.
#[test]
fn syncs_and_claims_at_once_in_one_clone_and_its_worktree_all_succeed() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    let aw = tmp.path().join("aw");
    git(
        &a,
        &["worktree", "add", "-q", aw.to_str().unwrap(), "-b", "aw"],
    );
    let mut tasks = BTreeSet::new();
    for i in 0..24 {
        tasks.insert(format!("tasks/{}.md", new_task(&a, &format!("seed {i}"))));
    }
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    let mut claimed: BTreeMap<String, String> = BTreeMap::new();
    for round in 0..3 {
        tasks.insert(format!("tasks/{}.md", new_task(&b, &format!("b {round}"))));
        tavern(&b, &["sync"]).ok();
        tasks.insert(format!(
            "tasks/{}.md",
            new_task(&aw, &format!("aw {round}"))
        ));
        let mut running = Vec::new();
        for (k, dir) in [&a, &aw, &a, &aw].into_iter().enumerate() {
            running.push((format!("sync {k}"), spawn(dir, &["--json", "sync"], None)));
        }
        for (k, dir) in [&a, &aw, &a, &aw, &a, &aw].into_iter().enumerate() {
            let agent = format!("agent-{round}-{k}");
            let args = ["--json", "claim", "--next", "--as", agent.as_str()];
            running.push((agent.clone(), spawn(dir, &args, None)));
        }
        for (who, child) in running {
            let out = finish(child);
            assert_eq!(out.code, 0, "round {round}, {who}: {}", out.stderr);
            if who.starts_with("agent-") {
                let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
                let path = v["path"].as_str().unwrap().to_string();
                if let Some(other) = claimed.insert(path.clone(), who.clone()) {
                    panic!("{path} claimed by {other} and {who}");
                }
            }
        }
    }
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    tavern(&a, &["sync"]).ok();
    let theirs = git(&remote, &["rev-parse", "tavern"]);
    assert_eq!(git(&a, &["rev-parse", "tavern"]), theirs);
    assert_eq!(git(&b, &["rev-parse", "tavern"]), theirs);
    let on_remote = branch_files(&remote, "tavern");
    for t in &tasks {
        assert!(on_remote.contains(t), "{t} lost on the remote");
    }
    assert_eq!(task_files(&a), task_files(&b));
    assert!(tasks.is_subset(&task_files(&a)), "no task lost on disk");
    let log = log_of(&a);
    for (path, agent) in &claimed {
        let claims: Vec<_> = log
            .iter()
            .filter(|e| e["op"] == "claim" && e["doc"] == path.as_str())
            .collect();
        assert_eq!(claims.len(), 1, "{path}: {claims:?}");
        assert_eq!(claims[0]["actor"], agent.as_str());
        // Never moved back: each clone's copy still says who claimed it.
        for dir in [&a, &b] {
            let text = std::fs::read_to_string(dir.join(".tavern").join(path)).unwrap();
            assert!(text.contains("status: claimed"), "{path} in {dir:?}");
            assert!(text.contains(&format!("claimed_by: {agent}")), "{path}");
        }
        let id = path.trim_start_matches("tasks/").trim_end_matches(".md");
        let record = git(
            &remote,
            &[
                "log",
                "-1",
                "--format=%B",
                &format!("refs/tavern/claims/{id}"),
            ],
        );
        assert!(record.contains(&format!("agent: {agent}")), "{record}");
    }
    assert_eq!(claimed.len(), 18);
    tavern(&a, &["check"]).ok();
    tavern(&b, &["check"]).ok();
}

/// A sync killed while its git fetches the remote's branch leaves that git running (the
/// exchange lock went with the process), and the next sync of the clone races it for
/// this clone's copy of the remote's branch: the soak's final syncs. Round after round,
/// whenever the race comes, the next sync finishes (exit 0) and nothing is lost.
#[cfg(target_os = "linux")]
#[test]
fn a_git_left_running_by_a_killed_sync_does_not_fail_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, remote) = two_clones(tmp.path());
    let solved = new_task(&b, "carries a large solution");
    let mut tasks = BTreeSet::new();
    let mut killed = 0;
    // Eight rounds, and more until one sync was killed while it fetched.
    let mut round = 0u32;
    while round < 8 || (killed == 0 && round < 40) {
        round += 1;
        // Something to fetch, large enough that the fetch takes a while.
        tasks.insert(format!("tasks/{}.md", new_task(&b, &format!("b {round}"))));
        let dir = b.join(format!(".tavern/solutions/{solved}"));
        std::fs::create_dir_all(&dir).unwrap();
        let bytes: Vec<u8> = (0..600_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761).wrapping_add(round) >> 13) as u8)
            .collect();
        std::fs::write(dir.join(format!("data-{round}.bin")), bytes).unwrap();
        tavern(&b, &["sync"]).ok();
        tasks.insert(format!("tasks/{}.md", new_task(&a, &format!("a {round}"))));
        let mut victim = spawn(&a, &["sync"], None);
        // Killed (the process alone, as an agent's command is) once its fetch runs.
        let end = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while std::time::Instant::now() < end && victim.try_wait().unwrap().is_none() {
            if fetching_child(victim.id()) {
                victim.kill().unwrap();
                killed += 1;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let _ = victim.wait();
        let out = finish(spawn(&a, &["--json", "sync"], None));
        assert_eq!(out.code, 0, "round {round}: {}", out.stderr);
    }
    assert!(killed > 0, "no sync was killed while it fetched");
    // The clones converge.
    tavern(&a, &["sync"]).ok();
    tavern(&b, &["sync"]).ok();
    tavern(&a, &["sync"]).ok();
    let theirs = git(&remote, &["rev-parse", "tavern"]);
    assert_eq!(git(&a, &["rev-parse", "tavern"]), theirs);
    assert_eq!(git(&b, &["rev-parse", "tavern"]), theirs);
    let on_remote = branch_files(&remote, "tavern");
    for t in &tasks {
        assert!(on_remote.contains(t), "{t} lost");
    }
    assert_eq!(task_files(&a), task_files(&b));
    tavern(&a, &["check"]).ok();
}

/// A `git fetch` child of `pid` that fetches into the copy of the remote's branch.
#[cfg(target_os = "linux")]
fn fetching_child(pid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|e| {
        let p = e.path();
        let parent = std::fs::read_to_string(p.join("stat")).ok().and_then(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
        });
        parent == Some(pid)
            && std::fs::read(p.join("cmdline")).is_ok_and(|c| {
                let c = String::from_utf8_lossy(&c);
                c.contains("fetch") && c.contains(REMOTE_REF)
            })
    })
}

/// The same for the hold records: a release that must fetch them (what to drop is decided
/// on the remote's records) and loses every attempt to another git process of this clone
/// exits 1 saying so, not 7, and changes nothing; once the race ends it goes through.
#[test]
fn a_hold_whose_records_race_in_this_clone_is_not_called_unconfirmed() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    tavern(&a, &["hold", "src/parser.rs", "--as", "coder-1"]).ok();
    let held = git(&remote, &["for-each-ref", "refs/tavern/holds/"]);
    assert!(!held.is_empty(), "the hold is on the remote");
    let path = racing_git(tmp.path(), "refs/tavern/holds/*", false);
    let out = finish(spawn(
        &a,
        &["release-hold", "src/parser.rs", "--as", "coder-1"],
        Some(&path),
    ));
    assert!(path.join("raced").exists(), "the fetch met the race");
    out.code(1)
        .stderr_has("the remote is not at fault")
        .stderr_has("hold records");
    assert_eq!(
        git(&remote, &["for-each-ref", "refs/tavern/holds/"]),
        held,
        "nothing changed on the remote"
    );
    tavern(&a, &["holds"]).ok().stdout_has("src/parser.rs");
    tavern(&a, &["release-hold", "src/parser.rs", "--as", "coder-1"]).ok();
    assert!(
        !tavern(&a, &["holds"]).ok().text().contains("src/parser.rs"),
        "released once the race ended"
    );
}

/// `sync --watch` stopped by SIGTERM (or SIGINT) ends the exchange under way and exits 0,
/// so no git of it is left running to race the clone's next exchange; before, the signal
/// killed it on the spot, whatever its git was doing.
#[test]
fn sync_watch_stops_on_sigterm_after_its_exchange() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    let id = new_task(&a, "sent by the loop");
    let watch = spawn(&a, &["sync", "--watch", "--interval", "1s"], None);
    eventually("the loop to push", || {
        branch_files(&remote, "tavern").contains(&format!("tasks/{id}.md"))
    });
    crate::util::watcher::signal(watch.id(), "TERM");
    let out = finish(watch);
    out.ok().stdout_has("origin: pushed");
    tavern(&a, &["sync"]).ok();
}

/// A directory holding a `git` that runs the real one, except a `push` while a file
/// `gate` is beside it: that one says so (a file `pushing`) and waits for a file `go`
/// before it runs.
fn gated_git(tmp: &Path) -> PathBuf {
    let script = r#"case " $* " in
  *" push "*)
    if [ -e "$dir/gate" ]; then
      : > "$dir/pushing"
      while [ ! -e "$dir/go" ]; do sleep 0.05; done
    fi;;
esac"#;
    fake_git(&tmp.join("gated-git"), script)
}

/// A connected `tavern watch` stopped by SIGTERM while its exchange thread pushes: the
/// watcher stops (no new activations, its state saved, `stopped`), then waits for that
/// exchange to end before it exits 0, so that the push's answer is taken (the clone's
/// copy of the remote's branch moved to it, the exchange reported) and no git of it is
/// left running. Before, the process ended with the watch loop, whatever its exchange
/// thread's git was doing.
#[test]
fn a_connected_watch_stops_after_its_exchange() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, _b, remote) = two_clones(tmp.path());
    let id = new_task(&a, "sent while the watcher stops");
    let gated = gated_git(tmp.path());
    std::fs::write(gated.join("gate"), "").unwrap();
    let mut watch = spawn(
        &a,
        &["watch", "--json", "--sync-interval", "1h"],
        Some(&gated),
    );
    let (tx, lines) = std::sync::mpsc::channel::<String>();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let patience = std::time::Duration::from_secs(120);
    let mut seen: Vec<serde_json::Value> = Vec::new();
    let wait_line = |what: &str, seen: &mut Vec<serde_json::Value>| {
        let line = lines
            .recv_timeout(patience)
            .unwrap_or_else(|_| panic!("waited for {what}; printed: {seen:?}"));
        seen.push(serde_json::from_str(&line).unwrap());
    };
    while !seen.iter().any(|v| v["event"] == "watching") {
        wait_line("the watcher to start", &mut seen);
    }
    eventually("the exchange to push", || gated.join("pushing").exists());
    crate::util::watcher::signal(watch.id(), "TERM");
    while !seen.iter().any(|v| v["event"] == "stopped") {
        wait_line("the watcher to stop", &mut seen);
    }
    // The watch loop has ended; its exchange is still pushing. Let the push go.
    std::fs::write(gated.join("go"), "").unwrap();
    let out = finish(watch);
    while let Ok(line) = lines.recv_timeout(std::time::Duration::from_secs(5)) {
        seen.push(serde_json::from_str(&line).unwrap());
    }
    out.ok();
    let stopped = seen.iter().position(|v| v["event"] == "stopped").unwrap();
    assert!(
        seen[stopped..]
            .iter()
            .any(|v| v["outcome"] == "pushed" && v["remote"] == "origin"),
        "the exchange under way was reported after the watcher stopped: {seen:?}"
    );
    assert!(branch_files(&remote, "tavern").contains(&format!("tasks/{id}.md")));
    assert_eq!(
        git(&a, &["rev-parse", REMOTE_REF]),
        git(&remote, &["rev-parse", "tavern"]),
        "the copy of the remote's branch took the push's answer"
    );
    tavern(&a, &["sync", "--json"]).ok();
}
