//! Claims across machines at their seams: a reviewer's move and an answer on a connected
//! board, `tavern sync` beside agents that claim and finish (nothing moves back), clones
//! that converge, pushes whose answer is lost (a remote hook that sleeps, a killed push,
//! a push that says yes and exits 1), stale locks on either side, heartbeats' cost, and
//! the claimant a sweep released. Real processes, real git, a local bare remote.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::concurrency::{field, frontmatter};
use crate::util::git::{self, git};
use crate::util::{BIN, Out, output, procs};

/// A bare remote and clones of a project whose board lives on the board branch, each
/// connected by `tavern sync init`, with tasks `t00`, `t01`, … made in the first.
struct Net {
    tmp: tempfile::TempDir,
    clones: usize,
}

impl Net {
    fn new(tasks: usize, clones: usize) -> Net {
        let tmp = tempfile::tempdir().unwrap();
        let seed = tmp.path().join("seed");
        git::init_repo(&seed);
        let remote = git::bare(&tmp.path().join("remote.git"));
        git(&seed, &["push", "-q", remote.to_str().unwrap(), "main"]);
        let net = Net { tmp, clones };
        for c in 0..clones {
            git(
                net.tmp.path(),
                &["clone", "-q", remote.to_str().unwrap(), &format!("c{c}")],
            );
            if c == 0 {
                net.run(0, &["init"]).ok();
                for i in 0..tasks {
                    net.run(
                        0,
                        &[
                            "new",
                            "task",
                            "--title",
                            &format!("task {i}"),
                            "--id",
                            &task(i),
                        ],
                    )
                    .ok();
                }
            }
            net.run(c, &["sync", "init"]).ok();
            net.run(c, &["sync"]).ok();
        }
        net
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.tmp.path().join(rel)
    }

    fn remote(&self) -> PathBuf {
        self.path("remote.git")
    }

    fn dir(&self, c: usize) -> PathBuf {
        self.path(&format!("c{c}"))
    }

    fn cmd(&self, c: usize, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(self.dir(c))
            .env_remove("TAVERN_BOARD")
            .env_remove("TAVERN_AGENT")
            .env("USER", "tester")
            .stdin(Stdio::null());
        git::env(&mut cmd);
        cmd
    }

    fn run(&self, c: usize, args: &[&str]) -> Out {
        output(self.cmd(c, args))
    }

    fn read(&self, c: usize, rel: &str) -> String {
        std::fs::read_to_string(self.dir(c).join(".tavern").join(rel))
            .unwrap_or_else(|e| panic!("read {rel} in c{c}: {e}"))
    }

    /// Status and claimant of a task in clone `c`.
    fn state(&self, c: usize, id: &str) -> (String, Option<String>) {
        let fm = frontmatter(&self.read(c, &format!("tasks/{id}.md")));
        (
            field(&fm, "status").unwrap().to_string(),
            field(&fm, "claimed_by").map(str::to_string),
        )
    }

    /// The remote's record of a task: (agent, state), if it has one.
    fn record(&self, id: &str) -> Option<(String, String)> {
        let out = Command::new("git")
            .arg("-C")
            .arg(self.remote())
            .args([
                "log",
                "-1",
                "--format=%B",
                &format!("refs/tavern/claims/{id}"),
            ])
            .output()
            .unwrap();
        if !out.status.success() {
            return None;
        }
        let msg = String::from_utf8_lossy(&out.stdout).to_string();
        let get = |k: &str| {
            msg.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}:")))
                .unwrap_or("")
                .trim()
                .to_string()
        };
        Some((get("agent"), get("state")))
    }

    /// The log's entries of clone `c`, parsed.
    fn log(&self, c: usize) -> Vec<serde_json::Value> {
        self.run(c, &["--json", "log"])
            .ok()
            .stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// `tavern sync` in every clone, round after round, until a round changes nothing.
    fn converge(&self) {
        for _ in 0..6 {
            let mut quiet = true;
            for c in 0..self.clones {
                let x = self.run(c, &["sync", "--json"]).ok().json();
                quiet &= x["outcome"] == "up-to-date"
                    && x["claims_followed"].as_array().is_some_and(Vec::is_empty);
            }
            if quiet {
                return;
            }
        }
        panic!("the clones did not converge in 6 rounds of tavern sync");
    }
}

fn task(i: usize) -> String {
    format!("t{i:02}")
}

/// A `tavern sync` loop in clone `c` until `stop`; returns each run's exit code, and the
/// stderr of those that failed.
fn sync_loop(
    net: &Arc<Net>,
    c: usize,
    stop: &Arc<AtomicBool>,
) -> std::thread::JoinHandle<Vec<(i32, String)>> {
    let (net, stop) = (Arc::clone(net), Arc::clone(stop));
    std::thread::spawn(move || {
        let mut codes = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let out = net.run(c, &["sync"]);
            codes.push((
                out.code,
                if out.code == 0 {
                    String::new()
                } else {
                    out.stderr
                },
            ));
        }
        codes
    })
}

/// A reviewer approves and rejects another agent's task on a connected board, and an
/// answer unblocks the asker's task: each confirmed by the remote, which keeps the
/// claimant as the holder; the claimant still cannot review its own task.
#[test]
fn review_and_answers_work_on_a_connected_board() {
    let net = Net::new(2, 1);
    for step in ["claim", "start", "submit"] {
        net.run(0, &[step, "t00", "--as", "coder"]).ok();
    }
    net.run(0, &["approve", "t00", "--as", "coder"]).code(3);
    net.run(
        0,
        &["reject", "t00", "--as", "reviewer", "--note", "no tests"],
    )
    .ok()
    .stderr_is("");
    assert_eq!(net.record("t00"), Some(("coder".into(), "working".into())));
    net.run(0, &["submit", "t00", "--as", "coder"]).ok();
    net.run(0, &["approve", "t00", "--as", "reviewer"])
        .ok()
        .stdout_is("approved t00 (rev 7, done)\n");
    assert_eq!(net.record("t00"), Some(("coder".into(), "done".into())));
    assert_eq!(net.state(0, "t00"), ("done".into(), Some("coder".into())));

    // An answer unblocks the asker's task, confirmed as its own moves are.
    for step in ["claim", "start"] {
        net.run(0, &[step, "t01", "--as", "coder"]).ok();
    }
    net.run(
        0,
        &[
            "ask",
            "Which db?",
            "--blocks",
            "t01",
            "--id",
            "q-1",
            "--as",
            "coder",
        ],
    )
    .ok();
    assert_eq!(net.record("t01"), Some(("coder".into(), "blocked".into())));
    net.run(0, &["answer", "q-1", "postgres", "--as", "alice"])
        .ok()
        .stderr_is("");
    assert_eq!(
        net.state(0, "t01"),
        ("working".into(), Some("coder".into()))
    );
    assert_eq!(net.record("t01"), Some(("coder".into(), "working".into())));
    net.run(0, &["check"]).ok();
}

/// `claim`, `start --local` and `sync` within a second: the local move stays.
#[test]
fn sync_keeps_a_local_move_made_just_after_a_confirmed_claim() {
    let net = Net::new(6, 1);
    for i in 0..6 {
        let id = task(i);
        net.run(0, &["claim", &id, "--as", "a"]).ok();
        net.run(0, &["start", &id, "--as", "a", "--local"]).ok();
        net.run(0, &["sync"]).ok();
        assert_eq!(
            net.state(0, &id),
            ("working".into(), Some("a".into())),
            "{id}"
        );
    }
    let back: Vec<_> = net
        .log(0)
        .into_iter()
        .filter(|e| e["op"] == "remote-claim")
        .collect();
    assert!(back.is_empty(), "sync moved tasks: {back:?}");
}

/// An agent claims, starts and finishes tasks while a `tavern sync` loop runs beside it
/// (what `sync --watch` does): no move is refused, none is undone, and the remote's
/// records and the tasks agree at the end.
#[test]
fn a_sync_loop_beside_an_agent_never_moves_a_task_back() {
    const TASKS: usize = 24;
    let net = Arc::new(Net::new(TASKS, 1));
    let stop = Arc::new(AtomicBool::new(false));
    // Two loops, as a connected `tavern watch` beside `sync --watch` would run.
    let syncs = [sync_loop(&net, 0, &stop), sync_loop(&net, 0, &stop)];
    let mut refused = Vec::new();
    for i in 0..TASKS {
        let id = task(i);
        for step in ["claim", "start", "done"] {
            let out = net.run(0, &[step, &id, "--as", "a"]);
            if out.code != 0 {
                refused.push(format!("{step} {id}: {} {}", out.code, out.stderr));
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let codes: Vec<(i32, String)> = syncs.into_iter().flat_map(|s| s.join().unwrap()).collect();
    assert!(refused.is_empty(), "refused: {refused:#?}");
    assert!(codes.iter().all(|(c, _)| *c == 0), "sync exits: {codes:#?}");
    let back: Vec<String> = net
        .log(0)
        .into_iter()
        .filter(|e| e["op"] == "remote-claim")
        .map(|e| e.to_string())
        .collect();
    assert!(back.is_empty(), "sync moved tasks: {back:#?}");
    for i in 0..TASKS {
        let id = task(i);
        assert_eq!(net.state(0, &id), ("done".into(), Some("a".into())));
        assert_eq!(net.record(&id), Some(("a".into(), "done".into())));
    }
    net.run(0, &["check"]).ok();
}

/// Two clones, an agent and a sync loop in each, over the same tasks: after they
/// converge, every task agrees with its record everywhere, and `check` passes.
#[test]
fn two_busy_clones_converge_and_every_task_agrees_with_its_record() {
    const TASKS: usize = 10;
    let net = Arc::new(Net::new(TASKS, 2));
    let stop = Arc::new(AtomicBool::new(false));
    let syncs: Vec<_> = (0..2).map(|c| sync_loop(&net, c, &stop)).collect();
    let agents: Vec<_> = (0..2)
        .map(|c| {
            let net = Arc::clone(&net);
            std::thread::spawn(move || {
                let agent = format!("agent-{c}");
                let mut codes = Vec::new();
                for i in 0..TASKS {
                    let id = task(if c == 0 { i } else { TASKS - 1 - i });
                    if net.run(c, &["claim", &id, "--as", &agent]).code != 0 {
                        continue;
                    }
                    for step in ["start", "done"] {
                        codes.push((step, net.run(c, &[step, &id, "--as", &agent]).code));
                    }
                }
                codes
            })
        })
        .collect();
    let mut moves = Vec::new();
    for a in agents {
        moves.extend(a.join().unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    for s in syncs {
        // Two clones syncing without pause may lose five pushes in a row to each other
        // (exit 3, documented); nothing else.
        let codes = s.join().unwrap();
        assert!(
            codes.iter().all(|(c, _)| *c == 0 || *c == 3),
            "sync exits: {codes:#?}"
        );
    }
    assert!(
        moves.iter().all(|(_, code)| *code == 0),
        "a holder's own move was refused: {moves:?}"
    );
    net.converge();
    for c in 0..2 {
        for i in 0..TASKS {
            let id = task(i);
            let (status, holder) = net.state(c, &id);
            let (agent, state) = net.record(&id).expect("every task was claimed");
            assert_eq!(
                (status.as_str(), holder.as_deref()),
                ("done", Some(agent.as_str())),
                "c{c} {id}"
            );
            assert_eq!(state, "done");
        }
        net.run(c, &["check"]).ok();
    }
}

/// Six clones, each with a change of its own, run `tavern sync` at the same moment, twice:
/// every one of them gets its change through (a clone can lose a race to each of the
/// other five at most, and each lost race is tried again after a random wait), and after
/// they converge every clone and the remote hold the same branch, with every change.
#[test]
fn clones_syncing_at_once_all_get_through() {
    const CLONES: usize = 6;
    let net = Net::new(0, CLONES);
    for round in 0..2 {
        for c in 0..CLONES {
            net.run(
                c,
                &[
                    "new",
                    "task",
                    "--title",
                    &format!("from c{c}, round {round}"),
                    "--id",
                    &format!("c{c}-r{round}"),
                    "--as",
                    "tester",
                ],
            )
            .ok();
        }
        let syncs: Vec<_> = (0..CLONES)
            .map(|c| {
                let mut cmd = net.cmd(c, &["sync", "--json"]);
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
                cmd.spawn().unwrap()
            })
            .collect();
        for (c, s) in syncs.into_iter().enumerate() {
            let out = s.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: sync in c{c} exited {:?}: {}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            );
            let x: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(
                ["pushed", "merged"].contains(&x["outcome"].as_str().unwrap()),
                "round {round}, c{c}: {x}"
            );
        }
    }
    net.converge();
    let remote = git(&net.remote(), &["rev-parse", "refs/heads/tavern"]);
    for c in 0..CLONES {
        assert_eq!(
            git(&net.dir(c), &["rev-parse", "refs/heads/tavern"]),
            remote,
            "c{c}"
        );
        for t in 0..CLONES {
            for round in 0..2 {
                assert!(
                    net.dir(c)
                        .join(format!(".tavern/tasks/c{t}-r{round}.md"))
                        .is_file(),
                    "c{c} lacks c{t}-r{round}"
                );
            }
        }
        net.run(c, &["check"]).ok();
    }
}

/// A post-receive hook on the remote that writes `marker` and sleeps: the remote has
/// taken the ref, and the client waits for an answer that a kill cuts off.
fn sleepy_remote(net: &Net, marker: &Path) {
    let hook = net.remote().join("hooks/post-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ncat >/dev/null\nexec >/dev/null 2>&1\ntouch '{}'\nsleep 30\n",
            marker.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Runs `args` in clone 0 while the remote's hook sleeps after taking the ref; once it
/// has, `meanwhile` runs (to take the remote away, or not) and the client's push is
/// killed. Returns what the command said.
fn lose_the_answer(net: &Net, args: &[&str], meanwhile: impl FnOnce()) -> Out {
    let marker = net.path("taken");
    let _ = std::fs::remove_file(&marker);
    sleepy_remote(net, &marker);
    let child = net
        .cmd(0, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while !marker.exists() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The connection drops: the client's push and the remote's receive-pack die (the ref
    // is taken: post-receive runs after the update).
    let pushes = procs::pushes(&net.remote(), "--force-with-lease=refs/tavern/claims/");
    assert!(!pushes.is_empty(), "no git push to kill");
    std::fs::remove_file(net.remote().join("hooks/post-receive")).unwrap();
    meanwhile();
    for pid in pushes {
        // One may be gone already (a shell that started another): no check.
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

/// The push of a claim reaches the remote and its answer is lost (the push is killed
/// while the remote's hook runs): tavern asks the remote, finds its own record, and the
/// claim succeeds. The same for `done`.
#[test]
fn a_lost_acknowledgement_is_found_out_from_the_remote() {
    let net = Net::new(1, 1);
    lose_the_answer(&net, &["claim", "t00", "--as", "a"], || {})
        .ok()
        .stdout_is("claimed t00 (rev 2, claimed)\n");
    assert_eq!(net.record("t00"), Some(("a".into(), "claimed".into())));
    assert_eq!(net.state(0, "t00"), ("claimed".into(), Some("a".into())));
    net.run(0, &["start", "t00", "--as", "a"]).ok();
    lose_the_answer(&net, &["done", "t00", "--as", "a"], || {})
        .ok()
        .stdout_is("done t00 (rev 4, done)\n");
    assert_eq!(net.record("t00"), Some(("a".into(), "done".into())));
    assert_eq!(net.state(0, "t00"), ("done".into(), Some("a".into())));
    net.run(0, &["check"]).ok();
}

/// The answer is lost and the remote cannot be asked afterwards: exit 8, "unknown", and
/// nothing written here; once the remote is back, the same command finds out and
/// finishes.
#[test]
fn an_outcome_that_cannot_be_known_is_said_so_and_the_next_command_resolves_it() {
    let net = Net::new(1, 1);
    let before = net.read(0, "tasks/t00.md");
    let gone = net.path("remote.gone");
    let out = lose_the_answer(&net, &["claim", "t00", "--as", "a"], || {
        std::fs::rename(net.remote(), &gone).unwrap();
    });
    out.code(8);
    assert!(
        out.stderr.starts_with(&format!(
            "error: the remote 'origin' at {} may have taken the claim of t00 (",
            net.remote().display()
        )) && !out.stderr.contains(&net.dir(0).display().to_string())
            && out.stderr.contains("the outcome is unknown"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("nothing was changed"),
        "{}",
        out.stderr
    );
    assert_eq!(net.read(0, "tasks/t00.md"), before);
    let json: serde_json::Value = {
        let o = net.run(0, &["claim", "t00", "--as", "a", "--json"]);
        o.code(7);
        serde_json::from_str(&o.stderr).unwrap()
    };
    assert_eq!(json["error"]["kind"], "unconfirmed");
    std::fs::rename(&gone, net.remote()).unwrap();
    assert_eq!(net.record("t00"), Some(("a".into(), "claimed".into())));
    net.run(0, &["claim", "t00", "--as", "a"])
        .ok()
        .stdout_is("claimed t00 (rev 2, claimed)\n");
    assert_eq!(net.state(0, "t00"), ("claimed".into(), Some("a".into())));
    // Another agent of this clone is told the truth too.
    net.run(0, &["claim", "t00", "--as", "b"])
        .code(3)
        .stderr_has("already claimed by a");
}

/// A `git` that runs the real one and then, for a push, exits 1 whatever happened: the
/// per-ref status says accepted, the exit code says failed.
fn lying_git(net: &Net) -> PathBuf {
    let dir = net.path("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    let script = dir.join("git");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do if [ \"$a\" = push ]; then '{real}' \"$@\"; echo 'error: injected failure' >&2; exit 1; fi; done\nexec '{real}' \"$@\"\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[test]
fn a_push_accepted_per_ref_but_failed_as_a_whole_is_checked_with_the_remote() {
    let net = Net::new(1, 1);
    let bin = lying_git(&net);
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = output({
        let mut c = net.cmd(0, &["claim", "t00", "--as", "a"]);
        c.env("PATH", &path);
        c
    });
    out.ok().stdout_is("claimed t00 (rev 2, claimed)\n");
    assert_eq!(net.record("t00"), Some(("a".into(), "claimed".into())));
    assert_eq!(net.state(0, "t00"), ("claimed".into(), Some("a".into())));
}

/// A lock file of a record left on the remote (a receive-pack killed there): the claim
/// names it as a stale lock and says what to do, exit 7, nothing changed; without it the
/// claim goes through.
#[test]
fn a_stale_lock_on_the_remote_is_named_as_such() {
    let net = Net::new(1, 2);
    net.run(1, &["claim", "t00", "--as", "b"]).ok();
    net.run(1, &["release", "t00", "--as", "b"]).ok();
    let lock = net.remote().join("refs/tavern/claims/t00.lock");
    std::fs::write(&lock, "").unwrap();
    let before = net.read(0, "tasks/t00.md");
    let out = net.run(0, &["claim", "t00", "--as", "a"]);
    out.code(7);
    assert!(
        out.stderr.contains("t00.lock exists")
            && out
                .stderr
                .contains("a git killed on the remote left the lock behind (stale)")
            && out
                .stderr
                .contains("remove that file there; nothing was changed")
            && !out.stderr.contains("lost to other clones"),
        "{}",
        out.stderr
    );
    assert_eq!(net.read(0, "tasks/t00.md"), before);
    std::fs::remove_file(&lock).unwrap();
    net.run(0, &["claim", "t00", "--as", "a"]).ok();
}

/// A stale lock of this clone's copy of a record (a git killed while it updated it) is
/// removed by the claim that holds the task's lock; a fresh one (a live update) is waited
/// for and then named, never said to be the remote's fault.
#[test]
fn a_stale_local_ref_lock_is_removed_by_whoever_holds_the_tasks_lock() {
    let net = Net::new(2, 2);
    // The remote has records this clone has not fetched: its claims must fetch them.
    for id in ["t00", "t01"] {
        net.run(1, &["claim", id, "--as", "b"]).ok();
        net.run(1, &["release", id, "--as", "b"]).ok();
    }
    let refs = net.dir(0).join(".git/refs/tavern/claims");
    std::fs::create_dir_all(&refs).unwrap();
    let stale = refs.join("t00.lock");
    std::fs::write(&stale, "").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .unwrap()
        .set_modified(old)
        .unwrap();
    net.run(0, &["claim", "t00", "--as", "a"]).ok();
    assert!(!stale.exists(), "the stale lock stayed");
    let fresh = refs.join("t01.lock");
    std::fs::write(&fresh, "").unwrap();
    let out = net.run(0, &["claim", "t01", "--as", "a"]);
    out.code(1);
    assert!(
        out.stderr
            .contains("t01.lock is held by another git process")
            && !out.stderr.contains("reachable"),
        "{}",
        out.stderr
    );
    std::fs::remove_file(&fresh).unwrap();
    net.run(0, &["claim", "t01", "--as", "a"]).ok();
}

/// Four agents of one clone claim and finish twenty tasks while `tavern sync` runs in a
/// loop: their git commands race for this clone's refs, and no race is ever reported as
/// the remote being unreachable (exit 7).
#[test]
fn races_between_tavern_processes_over_local_refs_are_retried() {
    const TASKS: usize = 16;
    let net = Arc::new(Net::new(TASKS, 1));
    let stop = Arc::new(AtomicBool::new(false));
    let syncs = sync_loop(&net, 0, &stop);
    let agents: Vec<_> = (0..4)
        .map(|a| {
            let net = Arc::clone(&net);
            std::thread::spawn(move || {
                let agent = format!("a{a}");
                let mut outs = Vec::new();
                loop {
                    let out = net.run(0, &["claim", "--next", "--quiet", "--as", &agent]);
                    if out.code == 4 {
                        return outs;
                    }
                    if out.code != 0 {
                        outs.push(out);
                        continue;
                    }
                    let id = out.stdout.trim().to_string();
                    for step in ["start", "done"] {
                        outs.push(net.run(0, &[step, &id, "--as", &agent]));
                    }
                }
            })
        })
        .collect();
    let mut bad = Vec::new();
    for a in agents {
        bad.extend(a.join().unwrap().into_iter().filter(|o| o.code != 0));
    }
    stop.store(true, Ordering::Relaxed);
    let codes = syncs.join().unwrap();
    assert!(bad.is_empty(), "{bad:#?}");
    assert!(codes.iter().all(|(c, _)| *c == 0), "sync exits: {codes:#?}");
    for i in 0..TASKS {
        assert_eq!(net.state(0, &task(i)).0, "done");
    }
}

/// A receive-pack for the remote that counts its runs: the pushes clone 0 makes.
fn count_pushes(net: &Net) -> PathBuf {
    let count = net.path("pushes");
    let script = net.path("count-pushes.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho x >> '{}'\nexec git-receive-pack \"$@\"\n",
            count.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(
        &net.dir(0),
        &[
            "config",
            "remote.origin.receivepack",
            script.to_str().unwrap(),
        ],
    );
    count
}

fn pushes(count: &Path) -> usize {
    std::fs::read_to_string(count).map_or(0, |t| t.lines().count())
}

/// Heartbeats on a connected board: none while the agent's records are fresh, then one
/// push for all of them once they are due (a quarter of the lease old; ten seconds here).
#[test]
fn a_heartbeat_costs_one_push_at_most() {
    let net = Net::new(3, 1);
    // Records are due a quarter of the lease after they were pushed: 10s here.
    let yaml = net.read(0, "board.yaml").replace("lease: 5m", "lease: 40s");
    std::fs::write(net.dir(0).join(".tavern/board.yaml"), yaml).unwrap();
    net.run(0, &["agent", "register", "--name", "a"]).ok();
    for i in 0..3 {
        net.run(0, &["claim", &task(i), "--as", "a"]).ok();
    }
    let count = count_pushes(&net);
    let fresh = net
        .run(0, &["agent", "heartbeat", "--as", "a", "--json"])
        .ok()
        .json();
    assert_eq!(fresh["renewed"], serde_json::json!([]));
    assert_eq!(pushes(&count), 0, "a heartbeat pushed fresh records");
    std::thread::sleep(std::time::Duration::from_millis(10_500));
    let due = net
        .run(0, &["agent", "heartbeat", "--as", "a", "--json"])
        .ok()
        .json();
    assert_eq!(due["renewed"], serde_json::json!(["t00", "t01", "t02"]));
    assert_eq!(due["lost"], serde_json::json!([]));
    assert_eq!(pushes(&count), 1, "one push for every due record");
    // The renewed records are the agent's own: its next move builds on them in one push.
    net.run(0, &["start", "t00", "--as", "a"]).ok();
    assert_eq!(pushes(&count), 2);
}

/// The sweep released a silent agent's claim: when it comes back, its move is refused
/// with when and why, not just "not allowed: pending".
#[test]
fn a_swept_claimant_is_told_why() {
    let b = crate::util::TestBoard::new();
    b.write(
        "board.yaml",
        b.read("board.yaml").replace("lease: 5m", "lease: 1s"),
    );
    b.task("Slow", &["--id", "t-s"]);
    let mut agent = Command::new("sleep").arg("30").spawn().unwrap();
    let pid = agent.id().to_string();
    b.run(&["agent", "register", "--name", "coder-1", "--pid", &pid])
        .ok();
    b.run(&["claim", "t-s", "--as", "coder-1"]).ok();
    agent.kill().unwrap();
    agent.wait().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1300));
    b.run(&["sweep"]).ok();
    let release = b.log().into_iter().find(|e| e["op"] == "release").unwrap();
    let out = b.run(&["start", "t-s", "--as", "coder-1"]);
    out.code(3).stderr_is(&format!(
        "error: tasks/t-s.md: transition 'start' is not allowed: the task's status is pending; allowed from pending: claim, fail, cancel; coder-1's claim was released by the sweep at {} ({}): claim it again if it is still to be done\n",
        release["at"].as_str().unwrap(),
        release["note"].as_str().unwrap()
    ));
    // Someone else's refusal says nothing of it.
    b.run(&["start", "t-s", "--as", "coder-2"])
        .code(3)
        .stderr_is("error: tasks/t-s.md: transition 'start' is not allowed: the task's status is pending; allowed from pending: claim, fail, cancel\n");
}

/// A directory holding a `git` that first runs `before` (shell, with the real git as
/// `$real`, its arguments as `"$@"`), then the real one: put first on `PATH` (the value
/// returned) to inject a fault into tavern's own git.
fn git_wrapper(net: &Net, name: &str, before: &str) -> String {
    let dir = net.path(name);
    std::fs::create_dir_all(&dir).unwrap();
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .to_string();
    // Written by a child process: a file this test process held open for writing could be
    // inherited by a process another test thread forks meanwhile, and executing it would
    // then fail ("Text file busy").
    let script = dir.join("git");
    let mut sh = Command::new("sh")
        .args(["-c", "cat >\"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(&script)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write as _;
        let mut stdin = sh.stdin.take().unwrap();
        write!(
            stdin,
            "#!/bin/sh\nreal='{real}'\n{before}\nexec \"$real\" \"$@\"\n"
        )
        .unwrap();
    }
    assert!(sh.wait().unwrap().success());
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap())
}

/// Runs `args` in clone `c` with `path` as `PATH`.
fn run_with_path(net: &Net, c: usize, args: &[&str], path: &str) -> Out {
    let mut cmd = net.cmd(c, args);
    cmd.env("PATH", path);
    output(cmd)
}

/// The remote took the claim's record and this clone's write of the task failed: if the
/// task file was not written, the record is given back (exit 1 naming the failure, and
/// another agent can claim the task); if giving it back fails too, exit 8 says the remote
/// holds it, and the same claim again finishes it. If the task file was written (the log's
/// append failed after it), the claim stands: exit 0, a warning, and the next command logs
/// it. Either way, whoever the remote says won exits 0 at last.
#[test]
fn a_claim_whose_local_write_fails_is_given_back_only_if_the_task_was_not_written() {
    let net = Net::new(3, 1);
    let tasks = net.dir(0).join(".tavern/tasks");

    // Not written: the task's temp file cannot be made (a directory is in its way).
    std::fs::create_dir(tasks.join(".t00.md.tmp")).unwrap();
    let out = net.run(0, &["claim", "t00", "--as", "a"]);
    out.code(1).stderr_is(&format!(
        "error: cannot write {}: Is a directory (os error 21); the remote's record of t00 was given back: nothing was changed\n",
        tasks.join(".t00.md.tmp").display()
    ));
    assert_eq!(net.record("t00"), None);
    assert_eq!(net.state(0, "t00"), ("pending".into(), None));
    std::fs::remove_dir(tasks.join(".t00.md.tmp")).unwrap();
    net.run(0, &["claim", "t00", "--as", "b"])
        .ok()
        .stdout_is("claimed t00 (rev 2, claimed)\n");
    assert_eq!(net.record("t00"), Some(("b".into(), "claimed".into())));

    // Not written, and giving the record back fails (every push after the first is
    // refused): exit 8, the remote holds a's claim; the same claim again finishes it.
    std::fs::create_dir(tasks.join(".t02.md.tmp")).unwrap();
    let marker = net.path("pushed-once");
    let path = git_wrapper(
        &net,
        "bin-push-once",
        &format!(
            "for a in \"$@\"; do if [ \"$a\" = push ]; then if [ -e '{m}' ]; then echo \"fatal: unable to access 'origin': injected\" >&2; exit 128; fi; touch '{m}'; fi; done",
            m = marker.display()
        ),
    );
    let out = run_with_path(&net, 0, &["claim", "t02", "--as", "a"], &path);
    out.code(8);
    assert!(
        out.stderr.starts_with(&format!(
            "error: cannot write {}: Is a directory (os error 21); the remote 'origin' holds the record of this change (giving it back failed: fatal: unable to access 'origin': injected), and this clone's copy is as it was: the same command run again finishes it\n",
            tasks.join(".t02.md.tmp").display()
        )),
        "{}",
        out.stderr
    );
    assert_eq!(net.record("t02"), Some(("a".into(), "claimed".into())));
    assert_eq!(net.state(0, "t02"), ("pending".into(), None));
    std::fs::remove_dir(tasks.join(".t02.md.tmp")).unwrap();
    net.run(0, &["claim", "t02", "--as", "a"])
        .ok()
        .stdout_is("claimed t02 (rev 2, claimed)\n");
    assert_eq!(net.state(0, "t02"), ("claimed".into(), Some("a".into())));
    net.run(0, &["claim", "t02", "--as", "b"])
        .code(3)
        .stderr_has("already claimed by a");

    // Written: the task file holds the claim and the log's append fails (a directory is
    // where the log should be). The claim stands, here and on the remote.
    let log = net.dir(0).join(".tavern/log.yaml");
    let kept = net.path("log.kept");
    std::fs::rename(&log, &kept).unwrap();
    std::fs::create_dir(&log).unwrap();
    let out = net.run(0, &["claim", "t01", "--as", "a"]);
    out.ok()
        .stdout_is("claimed t01 (rev 2, claimed)\n")
        .stderr_is(&format!(
            "warning: tasks/t01.md: the change stands, but its log entry was not appended (cannot open {}: Is a directory (os error 21)); the next command that touches the board appends it\n",
            log.display()
        ));
    assert_eq!(net.record("t01"), Some(("a".into(), "claimed".into())));
    assert_eq!(net.state(0, "t01"), ("claimed".into(), Some("a".into())));
    std::fs::remove_dir(&log).unwrap();
    std::fs::rename(&kept, &log).unwrap();
    // Until a command completes it, `check` names the unlogged change.
    net.run(0, &["check"]).code(6).stderr_has(
        "an interrupted write of tasks/t01.md is on disk but may be missing from the log",
    );
    net.run(0, &["list"]).ok();
    net.run(0, &["check"]).ok();
    let claims: Vec<_> = net
        .log(0)
        .into_iter()
        .filter(|e| e["doc"] == "tasks/t01.md" && e["op"] == "claim")
        .collect();
    assert_eq!(claims.len(), 1, "{claims:?}");
    assert_eq!(claims[0]["actor"], "a");
    assert!(
        claims[0]["note"]
            .as_str()
            .is_some_and(|n| n.contains("logged late")),
        "{claims:?}"
    );
    net.run(0, &["claim", "t01", "--as", "b"])
        .code(3)
        .stderr_has("already claimed by a");
}

/// Noting what this clone's copy of a task took into account (`.state/claims-seen`) fails
/// after the remote confirmed the claim and the task file holds it: the claim is won (exit
/// 0) with a warning, and the next sync notes it again without moving anything.
#[test]
fn a_claim_stands_when_noting_what_was_taken_into_account_fails() {
    let net = Net::new(1, 1);
    let seen = net.dir(0).join(".tavern/.state/claims-seen");
    let _ = std::fs::remove_dir_all(&seen);
    std::fs::write(&seen, "in the way\n").unwrap();
    let out = net.run(0, &["claim", "t00", "--as", "a"]);
    out.ok().stdout_is("claimed t00 (rev 2, claimed)\n");
    assert!(
        out.stderr.starts_with(
            "warning: tasks/t00.md: the change stands, but noting which record of the remote's this clone's copy took into account failed ("
        ) && out
            .stderr
            .ends_with("); the next sync or move of t00 notes it again\n"),
        "{}",
        out.stderr
    );
    assert_eq!(net.record("t00"), Some(("a".into(), "claimed".into())));
    assert_eq!(net.state(0, "t00"), ("claimed".into(), Some("a".into())));
    std::fs::remove_file(&seen).unwrap();
    net.run(0, &["sync"]).ok();
    let sha = git(&net.dir(0), &["rev-parse", "refs/tavern/claims/t00"]);
    assert_eq!(
        std::fs::read_to_string(seen.join("t00")).unwrap().trim(),
        sha.trim()
    );
    assert_eq!(net.state(0, "t00"), ("claimed".into(), Some("a".into())));
    assert!(
        !net.log(0).iter().any(|e| e["op"] == "remote-claim"),
        "nothing followed"
    );
    net.run(0, &["check"]).ok();
    net.run(0, &["start", "t00", "--as", "a"]).ok();
}

/// A sweep releases a dead agent's claim and the push's answer is lost while the remote
/// cannot be asked: the claim is kept here (the outcome unknown), and no marker says
/// this silence was dealt with, so the next sweep, with the remote back, finds out and the
/// task goes back to the pool.
#[test]
fn a_sweep_whose_release_outcome_is_unknown_looks_again() {
    let net = Net::new(1, 1);
    let board = net.dir(0).join(".tavern/board.yaml");
    let text = std::fs::read_to_string(&board).unwrap();
    assert!(text.contains("lease: 5m"), "{text}");
    std::fs::write(&board, text.replace("lease: 5m", "lease: 2s")).unwrap();
    let dead = {
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid.to_string()
    };
    net.run(0, &["agent", "register", "--name", "z", "--pid", &dead])
        .ok();
    net.run(0, &["claim", "t00", "--as", "z"]).ok();
    // Past the lease: z's card and its record are stale.
    std::thread::sleep(std::time::Duration::from_millis(2300));
    let gone = net.path("remote.gone");
    let out = lose_the_answer(&net, &["sweep", "--json"], || {
        std::fs::rename(net.remote(), &gone).unwrap();
    });
    out.ok();
    assert_eq!(out.json()["released"], serde_json::json!([]));
    assert_eq!(net.state(0, "t00"), ("claimed".into(), Some("z".into())));
    std::fs::rename(&gone, net.remote()).unwrap();
    // The remote took the release before the answer was lost.
    assert_eq!(net.record("t00"), Some((String::new(), "pending".into())));
    net.run(0, &["sweep"]).ok();
    assert_eq!(net.state(0, "t00"), ("pending".into(), None));
    net.run(0, &["check"]).ok();
    net.run(0, &["claim", "t00", "--as", "y"]).ok();
}

/// Whether process `pid` waits for a file lock (a blocked request in /proc/locks).
fn waits_for_a_lock(pid: u32) -> bool {
    std::fs::read_to_string("/proc/locks")
        .unwrap_or_default()
        .lines()
        .any(|l| l.contains("->") && l.split_whitespace().any(|w| w == pid.to_string()))
}

/// `tavern sync` replaces a task another clone changed the way git does (it removes the
/// file, then writes the new one) while it holds the board's log lock. A `submit` that
/// looks for the task in that moment used to exit 4 ("document 't00' not found"); it waits
/// for the sync and finds the task. The sync is played by `flock` holding the log lock
/// with the task file away; it puts it back only once `submit` waits (or has ended).
#[test]
fn a_task_that_sync_is_replacing_is_found_once_the_sync_is_over() {
    let net = Net::new(1, 1);
    net.run(0, &["claim", "t00", "--as", "a"]).ok();
    net.run(0, &["start", "t00", "--as", "a"]).ok();
    let board = net.dir(0).join(".tavern");
    let task = board.join("tasks/t00.md");
    let away = net.path("t00.away");
    let (held, go) = (net.path("held"), net.path("go"));
    let mut sync = Command::new("flock")
        .arg(board.join(".state/locks/log.lock"))
        .args([
            "sh",
            "-c",
            &format!(
                "mv '{t}' '{a}' && touch '{h}' && while [ ! -e '{g}' ]; do sleep 0.02; done; mv '{a}' '{t}'",
                t = task.display(),
                a = away.display(),
                h = held.display(),
                g = go.display()
            ),
        ])
        .spawn()
        .unwrap();
    while !held.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let mut submit = net
        .cmd(0, &["submit", "t00", "--as", "a"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while !waits_for_a_lock(submit.id()) && submit.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::fs::write(&go, "").unwrap();
    assert!(sync.wait().unwrap().success());
    let o = submit.wait_with_output().unwrap();
    let out = Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    };
    out.ok();
    assert_eq!(net.state(0, "t00"), ("review".into(), Some("a".into())));
    assert_eq!(net.record("t00"), Some(("a".into(), "review".into())));
}

/// A `git` that SIGKILLs itself when its arguments include any of `subcommands`.
fn killing_git(net: &Net, name: &str, subcommands: &[&str]) -> String {
    let tests: Vec<String> = subcommands
        .iter()
        .map(|s| format!("[ \"$a\" = {s} ]"))
        .collect();
    git_wrapper(
        net,
        name,
        &format!(
            "for a in \"$@\"; do if {}; then kill -KILL $$; fi; done",
            tests.join(" || ")
        ),
    )
}

/// tavern's own git is killed in a claim or a move: the error names the command and the
/// signal, says whether anything changed and what to do; exit 7 when nothing was sent (the
/// record's commit, the read of the record), and when the push died but the remote could
/// be asked (it holds what it had); exit 8 when the push died and the remote cannot be
/// asked either. Each time the same command, run again, goes through.
#[test]
fn a_claim_whose_own_git_is_killed_names_it_and_uses_the_documented_exit_code() {
    let net = Net::new(3, 1);
    let unchanged = |id: &str| {
        assert_eq!(net.record(id), None, "{id}");
        assert_eq!(net.state(0, id), ("pending".into(), None), "{id}");
    };

    let path = killing_git(&net, "bin-kill-commit", &["commit-tree"]);
    let out = run_with_path(&net, 0, &["claim", "t00", "--as", "a"], &path);
    out.code(7).stderr_is(
        "error: cannot confirm the claim of t00: this clone's `git commit-tree` failed before anything was sent to the remote (killed by signal 9 (SIGKILL)); nothing was changed: run the same command again\n",
    );
    unchanged("t00");
    net.run(0, &["claim", "t00", "--as", "a"]).ok();

    // The record exists now: a move reads it with git first.
    let path = killing_git(&net, "bin-kill-read", &["for-each-ref"]);
    let out = run_with_path(&net, 0, &["start", "t00", "--as", "a"], &path);
    out.code(7).stderr_is(
        "error: cannot confirm moving t00 to working: this clone's `git for-each-ref` failed before anything was sent to the remote (killed by signal 9 (SIGKILL)); nothing was changed: run the same command again\n",
    );
    assert_eq!(net.record("t00"), Some(("a".into(), "claimed".into())));
    assert_eq!(net.state(0, "t00"), ("claimed".into(), Some("a".into())));
    net.run(0, &["start", "t00", "--as", "a"]).ok();

    // `claim --next` reads this clone's copies of the records before it tries any.
    let path = killing_git(&net, "bin-kill-survey", &["for-each-ref"]);
    let out = run_with_path(&net, 0, &["claim", "--next", "--as", "b"], &path);
    out.code(7);
    assert!(
        out.stderr.contains("this clone's `git for-each-ref` failed before anything was sent (killed by signal 9 (SIGKILL)); nothing was claimed"),
        "{}",
        out.stderr
    );
    unchanged("t01");
    unchanged("t02");

    // The push dies before it reaches the remote; the remote, asked, holds what it had.
    let path = killing_git(&net, "bin-kill-push", &["push"]);
    let out = run_with_path(&net, 0, &["claim", "t01", "--as", "a"], &path);
    out.code(7);
    assert!(
        out.stderr.starts_with(&format!(
            "error: cannot confirm the claim of t01 with the remote 'origin' at {}: git push was killed",
            net.remote().display()
        ))
            && out.stderr.contains(": git push was killed by signal 9 (SIGKILL) before the remote's answer; the remote still holds the record it had; nothing was changed\n"),
        "{}",
        out.stderr
    );
    unchanged("t01");
    net.run(0, &["claim", "t01", "--as", "a"]).ok();

    // The push dies and so does every `git ls-remote` that would ask the remote: unknown.
    let path = killing_git(&net, "bin-kill-ask", &["push", "ls-remote"]);
    let out = run_with_path(&net, 0, &["claim", "t02", "--as", "a"], &path);
    out.code(8);
    assert!(
        out.stderr.contains(&format!("the remote 'origin' at {} may have taken the claim of t02", net.remote().display()))
            && out.stderr.contains(" may have taken the claim of t02 (git push was killed by signal 9 (SIGKILL) before the remote's answer), and it cannot be asked now (git ls-remote: killed by signal 9 (SIGKILL)): the outcome is unknown"),
        "{}",
        out.stderr
    );
    unchanged("t02");
    net.run(0, &["claim", "t02", "--as", "a"]).ok();
    assert_eq!(net.record("t02"), Some(("a".into(), "claimed".into())));
    net.run(0, &["check"]).ok();
}
