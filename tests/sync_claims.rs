//! Claims across machines: clones of one project connected to a local bare repository as
//! their remote, real `tavern` processes claiming and moving tasks in each. The remote's
//! claim refs (`refs/tavern/claims/<id>`) are the compare-and-swap; these tests read them
//! with plain git.

#![cfg(unix)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};

use crate::concurrency::{Rng, field, frontmatter};
use crate::util::{Out, output};

/// A bare remote and clones of a project whose committed board holds some tasks.
pub struct Net {
    dir: tempfile::TempDir,
}

/// Git with the tests' fixed environment (no user or system configuration).
pub use crate::util::git::git;

impl Net {
    /// A project with `tasks` tasks (`t00`, `t01`, …) committed and pushed to a bare
    /// remote, and `clones` clones of it, each connected (`tavern.remote = origin`).
    pub fn new(tasks: usize, clones: usize) -> Net {
        let net = Net {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        let seed = net.path("seed");
        std::fs::create_dir_all(&seed).unwrap();
        git(&seed, &["init", "-q", "-b", "main"]);
        net.tavern_in(&seed, &["init"]).ok();
        for i in 0..tasks {
            net.tavern_in(
                &seed,
                &[
                    "new",
                    "task",
                    "--title",
                    &format!("task {i}"),
                    "--id",
                    &Net::task(i),
                ],
            )
            .ok();
        }
        git(&seed, &["add", "-A"]);
        git(
            &seed,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@x",
                "commit",
                "-q",
                "-m",
                "board",
            ],
        );
        git(
            net.dir.path(),
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        );
        git(&seed, &["remote", "add", "origin", "../remote.git"]);
        git(&seed, &["push", "-q", "origin", "main"]);
        for c in 0..clones {
            git(
                net.dir.path(),
                &["clone", "-q", "remote.git", &format!("c{c}")],
            );
            // Until `tavern sync init` exists, connecting is this one config key.
            git(&net.clone_dir(c), &["config", "tavern.remote", "origin"]);
            // Until a clone recreates the board's empty directories by itself.
            for dir in ["observations", "questions", "solutions"] {
                std::fs::create_dir_all(net.clone_dir(c).join(".tavern").join(dir)).unwrap();
            }
        }
        net
    }

    pub fn task(i: usize) -> String {
        format!("t{i:02}")
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn remote(&self) -> PathBuf {
        self.path("remote.git")
    }

    pub fn clone_dir(&self, c: usize) -> PathBuf {
        self.path(&format!("c{c}"))
    }

    /// `tavern ARGS` in `dir` with the tests' environment, git's included (see
    /// [`crate::util::git::tavern_cmd`]), so that no machine configuration leaks in.
    pub fn cmd_in(&self, dir: &Path, args: &[&str]) -> Command {
        crate::util::git::tavern_cmd(dir, args, None)
    }

    pub fn tavern_in(&self, dir: &Path, args: &[&str]) -> Out {
        output(self.cmd_in(dir, args))
    }

    /// `tavern ARGS` in clone `c`.
    pub fn run(&self, c: usize, args: &[&str]) -> Out {
        self.tavern_in(&self.clone_dir(c), args)
    }

    /// A file of clone `c`'s board, as text.
    pub fn read(&self, c: usize, rel: &str) -> String {
        std::fs::read_to_string(self.clone_dir(c).join(".tavern").join(rel))
            .unwrap_or_else(|e| panic!("read {rel} in c{c}: {e}"))
    }

    /// Every claim record on the remote: task -> (agent, state, epoch).
    pub fn records(&self) -> BTreeMap<String, (String, String, u64)> {
        let out = git(
            &self.remote(),
            &[
                "for-each-ref",
                "--format=%(refname:lstrip=3)%00%(contents)%00",
                "refs/tavern/claims/",
            ],
        );
        let mut map = BTreeMap::new();
        let mut parts = out.split('\0');
        while let (Some(name), Some(msg)) = (parts.next(), parts.next()) {
            let get = |k: &str| {
                msg.lines()
                    .find_map(|l| {
                        l.strip_prefix(&format!("{k}: "))
                            .or(l.strip_prefix(&format!("{k}:")))
                    })
                    .unwrap_or_else(|| panic!("record {name} lacks {k}:\n{msg}"))
                    .to_string()
            };
            map.insert(
                name.trim().to_string(),
                (get("agent"), get("state"), get("epoch").parse().unwrap()),
            );
        }
        map
    }

    /// The status and claimant of task `id` in clone `c`.
    pub fn task_state(&self, c: usize, id: &str) -> (String, Option<String>) {
        let fm = frontmatter(&self.read(c, &format!("tasks/{id}.md")));
        (
            field(&fm, "status").unwrap().to_string(),
            field(&fm, "claimed_by").map(str::to_string),
        )
    }

    /// Clone `c`'s local copy of a claim ref, if it has one.
    pub fn local_ref(&self, c: usize, id: &str) -> Option<String> {
        let out = git(
            &self.clone_dir(c),
            &[
                "for-each-ref",
                "--format=%(objectname)",
                &format!("refs/tavern/claims/{id}"),
            ],
        );
        (!out.is_empty()).then_some(out)
    }
}

/// Three clones, four agents each, every agent trying to claim every one of 60 tasks in
/// its own order: each task is claimed exactly once across all clones, every other
/// attempt exits 3 naming the winner, and every clone's copy of every task ends up naming
/// the winner the remote's claim ref names.
#[test]
fn three_clones_of_four_agents_race_over_sixty_tasks() {
    const TASKS: usize = 60;
    let net = Arc::new(Net::new(TASKS, 3));
    let barrier = Arc::new(Barrier::new(12));
    let mut workers = Vec::new();
    for c in 0..3 {
        for a in 0..4 {
            let (net, barrier) = (Arc::clone(&net), Arc::clone(&barrier));
            workers.push(std::thread::spawn(move || {
                let agent = format!("c{c}-a{a}");
                let mut order: Vec<usize> = (0..TASKS).collect();
                Rng::new(7 + (c * 4 + a) as u64).shuffle(&mut order);
                barrier.wait();
                order
                    .into_iter()
                    .map(|i| {
                        let id = Net::task(i);
                        let out = net.run(c, &["claim", &id, "--as", &agent]);
                        (id, agent.clone(), out)
                    })
                    .collect::<Vec<_>>()
            }));
        }
    }
    let attempts: Vec<(String, String, Out)> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert_eq!(attempts.len(), TASKS * 12);
    let mut winners: BTreeMap<String, String> = BTreeMap::new();
    for (id, agent, out) in &attempts {
        if out.code == 0 {
            assert_eq!(out.stdout, format!("claimed {id} (rev 2, claimed)\n"));
            if let Some(other) = winners.insert(id.clone(), agent.clone()) {
                panic!("{id} claimed twice: by {other} and {agent}");
            }
        }
    }
    assert_eq!(winners.len(), TASKS, "every task has a winner");
    let records = net.records();
    for (id, agent, out) in &attempts {
        let winner = &winners[id];
        if agent == winner {
            continue;
        }
        assert_eq!(out.code, 3, "{agent} on {id}: {out:?}");
        assert!(
            out.stderr.starts_with(&format!(
                "error: tasks/{id}.md: already claimed by {winner} (status claimed"
            )),
            "{agent} on {id} is told the winner {winner}: {}",
            out.stderr
        );
    }
    for (id, winner) in &winners {
        assert_eq!(
            records.get(id),
            Some(&(winner.clone(), "claimed".to_string(), 1)),
            "the remote's record of {id}"
        );
        for c in 0..3 {
            assert_eq!(
                net.task_state(c, id),
                ("claimed".to_string(), Some(winner.clone())),
                "clone c{c}'s copy of {id}"
            );
        }
    }
    // Each clone's log: one claim entry per task it won, one remote-claim entry per task
    // another clone won (its copy followed the remote), nothing else.
    for c in 0..3 {
        let log = net.read(c, "log.yaml");
        let entries: Vec<serde_json::Value> = serde_saphyr::from_str(&log).unwrap();
        let mut by_doc: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for e in &entries {
            let doc = e["doc"].as_str().unwrap().to_string();
            by_doc
                .entry(doc)
                .or_default()
                .push(e["op"].as_str().unwrap().to_string());
        }
        for (id, winner) in &winners {
            let ops = by_doc
                .get(&format!("tasks/{id}.md"))
                .cloned()
                .unwrap_or_default();
            let want = if winner.starts_with(&format!("c{c}-")) {
                "claim"
            } else {
                "remote-claim"
            };
            assert_eq!(ops, ["create", want], "c{c}'s log of {id}");
        }
    }
}

/// `claim --next` in three clones at once: a lost race moves on to the next candidate, and
/// the tasks the agents report are each claimed exactly once, all of them.
#[test]
fn claim_next_across_clones_moves_on_after_a_lost_race() {
    const TASKS: usize = 24;
    let net = Arc::new(Net::new(TASKS, 3));
    let barrier = Arc::new(Barrier::new(6));
    let mut workers = Vec::new();
    for c in 0..3 {
        for a in 0..2 {
            let (net, barrier) = (Arc::clone(&net), Arc::clone(&barrier));
            workers.push(std::thread::spawn(move || {
                let agent = format!("c{c}-a{a}");
                barrier.wait();
                let mut got = Vec::new();
                loop {
                    let out = net.run(c, &["claim", "--next", "--as", &agent, "--json"]);
                    match out.code {
                        0 => got.push((
                            out.json()["id"].as_str().unwrap().to_string(),
                            agent.clone(),
                        )),
                        4 => break,
                        _ => panic!("{agent}: {out:?}"),
                    }
                }
                got
            }));
        }
    }
    let mut winners = BTreeMap::new();
    for (id, agent) in workers.into_iter().flat_map(|w| w.join().unwrap()) {
        if let Some(other) = winners.insert(id.clone(), agent.clone()) {
            panic!("{id} claimed by {other} and {agent}");
        }
    }
    assert_eq!(winners.len(), TASKS);
    let records = net.records();
    for (id, agent) in &winners {
        assert_eq!(records[id], (agent.clone(), "claimed".to_string(), 1));
    }
}

/// A receive-pack for the remote that moves the remote away on its `n`th run, so a push
/// finds nothing (the fetch before it still worked).
fn vanish_on_push(net: &Net, c: usize, n: u32) {
    let script = net.path(&format!("vanish-{c}.sh"));
    let remote = net.remote();
    let count = net.path(&format!("vanish-{c}.count"));
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nn=$(cat '{count}' 2>/dev/null || echo 0); n=$((n+1)); echo $n > '{count}'\n\
             if [ $n -ge {n} ]; then mv '{remote}' '{remote}.gone'; fi\nexec git-receive-pack \"$@\"\n",
            count = count.display(),
            remote = remote.display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(
        &net.clone_dir(c),
        &[
            "config",
            "remote.origin.receivepack",
            &script.display().to_string(),
        ],
    );
}

fn bring_back(net: &Net, c: usize) {
    std::fs::rename(net.path("remote.git.gone"), net.remote()).unwrap();
    std::fs::remove_file(net.path(&format!("vanish-{c}.count"))).unwrap();
    git(
        &net.clone_dir(c),
        &["config", "--unset", "remote.origin.receivepack"],
    );
}

/// The remote moves away between the fetch that learned the task was free again and the
/// push that would claim it: exit 7, and no half-claim anywhere: the task file, the log,
/// this clone's copy of the ref and the remote's ref are all as before. The same for a
/// move of a held task.
#[test]
fn a_remote_that_vanishes_mid_claim_leaves_no_half_claim() {
    let net = Net::new(2, 2);
    // t00 was claimed and released from c1: its record on the remote is "free".
    net.run(1, &["claim", "t00", "--as", "b"]).ok();
    net.run(1, &["release", "t00", "--as", "b"]).ok();
    let before_doc = net.read(0, "tasks/t00.md");
    let before_log = net.read(0, "log.yaml");
    let before_records = net.records();
    // c0 knows nothing of it: its first push (lease: absent) is refused as stale, it
    // fetches the free record, and its second push finds the remote gone.
    vanish_on_push(&net, 0, 2);
    let out = net.run(0, &["claim", "t00", "--as", "a"]);
    out.code(7);
    assert!(
        // The remote is named by its URL, never by this clone's path.
        out.stderr.starts_with(&format!(
            "error: cannot confirm the claim of t00 with the remote 'origin' at {}: ",
            net.remote().display()
        )) && out
            .stderr
            .contains("; nothing was changed\nhint: retry when the remote 'origin' is reachable"),
        "{}",
        out.stderr
    );
    assert!(
        !net.remote().exists(),
        "the remote moved away during the claim"
    );
    assert_eq!(net.read(0, "tasks/t00.md"), before_doc);
    assert_eq!(net.read(0, "log.yaml"), before_log);
    assert!(
        !net.clone_dir(0).join(".tavern/.state/intents").exists()
            || std::fs::read_dir(net.clone_dir(0).join(".tavern/.state/intents"))
                .unwrap()
                .next()
                .is_none(),
        "no intent left behind"
    );
    bring_back(&net, 0);
    assert_eq!(
        net.records(),
        before_records,
        "the remote's refs are as before"
    );
    // The claim goes through once the remote is back.
    net.run(0, &["claim", "t00", "--as", "a"]).ok();
    assert_eq!(net.records()["t00"], ("a".into(), "claimed".into(), 2));

    // A move of a held task: the remote vanishes on the push itself.
    let held_ref = net.local_ref(0, "t00");
    let before_doc = net.read(0, "tasks/t00.md");
    let before_log = net.read(0, "log.yaml");
    vanish_on_push(&net, 0, 1);
    let out = net.run(0, &["start", "t00", "--as", "a"]);
    out.code(7);
    out.stderr_has("error: cannot confirm moving t00 to working with the remote 'origin'");
    assert_eq!(net.read(0, "tasks/t00.md"), before_doc);
    assert_eq!(net.read(0, "log.yaml"), before_log);
    assert_eq!(net.local_ref(0, "t00"), held_ref);
    bring_back(&net, 0);
    assert_eq!(net.records()["t00"], ("a".into(), "claimed".into(), 2));
    net.run(0, &["start", "t00", "--as", "a"]).ok();
    assert_eq!(net.records()["t00"], ("a".into(), "working".into(), 2));
}

pub fn set_lease(net: &Net, c: usize, lease: &str) {
    let path = net.clone_dir(c).join(".tavern/board.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out = String::new();
    let mut found = false;
    for line in text.lines() {
        if line.starts_with("lease:") {
            out.push_str(&format!("lease: {lease}\n"));
            found = true;
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(found, "board.yaml has a lease line:\n{text}");
    std::fs::write(path, out).unwrap();
}

/// A live claim made on another machine is not taken; once its record is older than the
/// lease it is, through the same compare-and-swap (epoch 2), and the old claimant's next
/// move exits 3 naming the new holder while its copy follows the remote.
#[test]
fn an_expired_claim_is_taken_over_from_another_clone_and_the_old_claimant_is_fenced() {
    let net = Net::new(1, 2);
    net.run(0, &["claim", "t00", "--as", "x"]).ok();
    net.run(0, &["start", "t00", "--as", "x"]).ok();
    // c1's copy still says pending; the remote says x holds it, live (the lease is 5m).
    let out = net.run(1, &["claim", "t00", "--as", "y"]);
    out.code(3);
    out.stderr_has("error: tasks/t00.md: already claimed by x (status working; confirmed by the remote 'origin': working from ");
    assert_eq!(
        net.task_state(1, "t00"),
        ("working".into(), Some("x".into()))
    );
    // Still live: c1's copy now names x, and the remote decides again.
    net.run(1, &["claim", "t00", "--as", "y"])
        .code(3)
        .stderr_has("already claimed by x (status working");
    // x's heartbeat renews its record once it is a quarter of the lease old (c0's lease
    // is 4s for this): a new record, same holder and epoch.
    net.run(0, &["agent", "register", "--name", "x"]).ok();
    set_lease(&net, 0, "4s");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let sha = net.local_ref(0, "t00").unwrap();
    let beat = net.run(0, &["agent", "heartbeat", "--as", "x", "--json"]);
    beat.ok();
    assert_eq!(beat.json()["renewed"], serde_json::json!(["t00"]));
    assert_ne!(net.local_ref(0, "t00").unwrap(), sha);
    assert_eq!(net.records()["t00"], ("x".into(), "working".into(), 1));
    // On c1 the lease is now 1s, and x has not been heard of for longer than that.
    set_lease(&net, 1, "1s");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let out = net.run(1, &["claim", "t00", "--as", "y"]);
    out.ok().stdout_is("claimed t00 (rev 3, claimed)\n");
    assert_eq!(net.records()["t00"], ("y".into(), "claimed".into(), 2));
    let log = net.read(1, "log.yaml");
    assert!(
        log.contains(
            "note: \"took over from x: lease expired on the remote 'origin' (last renewed "
        ),
        "{log}"
    );
    // x is fenced: its start on c0 is refused, naming y, and c0's copy follows.
    let out = net.run(0, &["submit", "t00", "--as", "x"]);
    out.code(3);
    out.stderr_has("error: tasks/t00.md: cannot submit: it is held by y (claimed), not as this clone's copy said (working; confirmed by the remote 'origin': claimed from ");
    assert_eq!(
        net.task_state(0, "t00"),
        ("claimed".into(), Some("y".into()))
    );
    assert!(net.read(0, "log.yaml").contains("op: \"remote-claim\""));
    // x's renewal now reports the claim lost, and changes nothing on the remote.
    let beat = net.run(0, &["agent", "heartbeat", "--as", "x", "--json"]);
    assert_eq!(beat.json()["renewed"], serde_json::json!([]));
    assert_eq!(net.records()["t00"], ("y".into(), "claimed".into(), 2));
    // y moves on as the holder.
    net.run(1, &["start", "t00", "--as", "y"]).ok();
    assert_eq!(net.records()["t00"], ("y".into(), "working".into(), 2));
}

/// Offline: a claim exits 7 and changes nothing; `--local` claims on this clone alone and
/// says what it risks; everything else keeps working; back online, the next move of the
/// locally claimed task records the claim on the remote.
#[test]
fn offline_claims_exit_7_unless_local() {
    let net = Net::new(2, 1);
    git(
        &net.clone_dir(0),
        &[
            "remote",
            "set-url",
            "origin",
            &net.path("nowhere.git").display().to_string(),
        ],
    );
    let before = net.read(0, "tasks/t00.md");
    let out = net.run(0, &["claim", "t00", "--as", "a"]);
    out.code(7);
    out.stderr_has("error: cannot confirm the claim of t00 with the remote 'origin'");
    out.stderr_has("nothing was changed\nhint: retry when the remote 'origin' is reachable (`git ls-remote origin` tells); or act on this clone alone with --local, at the risk that another machine claims t00 too");
    assert_eq!(net.read(0, "tasks/t00.md"), before);
    let out = net.run(0, &["claim", "t00", "--as", "a", "--json"]);
    out.code(7);
    let err: serde_json::Value = serde_json::from_str(out.stderr.trim()).unwrap();
    assert_eq!(err["error"]["kind"], "unconfirmed");
    assert_eq!(err["error"]["code"], 7);
    net.run(0, &["claim", "--next", "--as", "a"]).code(7);
    // Non-exclusive changes keep working.
    net.run(
        0,
        &["new", "task", "--title", "offline work", "--id", "t99"],
    )
    .ok();
    net.run(
        0,
        &[
            "post",
            "--topic",
            "t00",
            "--severity",
            "low",
            "seen offline",
        ],
    )
    .ok();
    // --local: claimed here, with a warning and a note in the log.
    let out = net.run(0, &["claim", "t00", "--as", "a", "--local"]);
    out.ok().stdout_is("claimed t00 (rev 2, claimed)\n").stderr_is(
        "warning: t00: changed on this clone only; the remote 'origin' was not asked, so another machine may claim it too (the remote hears of it at its next confirmed move)\n",
    );
    assert!(
        net.read(0, "log.yaml")
            .contains("note: \"local only: not confirmed by the remote 'origin'\"")
    );
    assert_eq!(net.local_ref(0, "t00"), None);
    // Back online: the next move of that task is confirmed and creates its record.
    git(
        &net.clone_dir(0),
        &["remote", "set-url", "origin", "../remote.git"],
    );
    net.run(0, &["start", "t00", "--as", "a"]).ok();
    assert_eq!(net.records()["t00"], ("a".into(), "working".into(), 1));
}

/// What `tavern sync` runs after fetching: every clone's copy of every task follows the
/// remote's claim records, so a clone that never tried a task agrees with the winner; a
/// task moved here after its record (a `--local` move) keeps its local state.
#[test]
fn reconcile_makes_a_clone_agree_with_the_remote_records() {
    let net = Net::new(3, 2);
    net.run(0, &["claim", "t00", "--as", "a"]).ok();
    net.run(0, &["start", "t00", "--as", "a"]).ok();
    net.run(0, &["claim", "t01", "--as", "a"]).ok();
    net.run(0, &["release", "t01", "--as", "a"]).ok();
    // c1 claimed t01 alone (before the release above was fetched) and t02 is untouched.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    net.run(1, &["claim", "t01", "--as", "b", "--local"]).ok();
    let records: Vec<_> = net
        .records()
        .into_iter()
        .map(|(task, (agent, state, _))| (task, agent, state))
        .collect();
    assert_eq!(
        records,
        [
            ("t00".into(), "a".into(), "working".into()),
            ("t01".into(), String::new(), "pending".into())
        ]
    );
    let board = tavern::api::Board::open(&net.clone_dir(1).join(".tavern")).unwrap();
    assert_eq!(
        tavern::testing::follow_remote_claims(&board).unwrap(),
        ["t00"]
    );
    assert_eq!(
        net.task_state(1, "t00"),
        ("working".into(), Some("a".into()))
    );
    assert_eq!(
        net.task_state(1, "t01"),
        ("claimed".into(), Some("b".into()))
    );
    assert_eq!(net.task_state(1, "t02"), ("pending".into(), None));
    let log = net.read(1, "log.yaml");
    assert!(
        log.contains("actor: \"tavern-sync\", op: \"remote-claim\", doc: \"tasks/t00.md\""),
        "{log}"
    );
    // A second run changes nothing.
    assert!(
        tavern::testing::follow_remote_claims(&board)
            .unwrap()
            .is_empty()
    );
    // t01 is held here by b, and the remote never heard of it: unconfirmed.
    assert_eq!(
        tavern::testing::unconfirmed_claims(&board).unwrap(),
        [("t01".to_string(), "b".to_string())]
    );
}

/// An agent's deregistration releases its claims on the remote too, so another clone can
/// claim them at once; a sweep releases a stale agent's claim on the remote only when the
/// remote's record of it expired as well, and never a claim its holder renewed there.
#[test]
fn deregister_and_sweeps_release_claims_on_the_remote() {
    let net = Net::new(3, 2);
    net.run(0, &["agent", "register", "--name", "x"]).ok();
    net.run(0, &["claim", "t00", "--as", "x"]).ok();
    let out = net.run(0, &["agent", "deregister", "--as", "x"]);
    out.ok();
    assert_eq!(net.records()["t00"], (String::new(), "pending".into(), 1));
    net.run(1, &["claim", "t00", "--as", "y"]).ok();
    assert_eq!(net.records()["t00"], ("y".into(), "claimed".into(), 2));

    // z runs on this machine under a pid that is gone; its claims are leases of 10s on c1
    // (long enough that the renewal below is still fresh at the sweep on a loaded machine).
    let dead = {
        let mut c = Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid.to_string()
    };
    for c in 0..2 {
        set_lease(&net, c, "10s");
    }
    net.run(0, &["agent", "register", "--name", "z", "--pid", &dead])
        .ok();
    net.run(0, &["claim", "t01", "--as", "z"]).ok();
    net.run(0, &["claim", "t02", "--as", "z"]).ok();
    // c1 learns of the claims (its copies follow the remote) and of z's card.
    net.run(1, &["claim", "t01", "--as", "y"]).code(3);
    net.run(1, &["claim", "t02", "--as", "y"]).code(3);
    std::fs::create_dir_all(net.clone_dir(1).join(".tavern/control/agents")).unwrap();
    std::fs::copy(
        net.clone_dir(0).join(".tavern/control/agents/z.md"),
        net.clone_dir(1).join(".tavern/control/agents/z.md"),
    )
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(10_200));
    // z renews t02 on the remote from c0 (a heartbeat renews every record it holds, so
    // move t01's record out of the way first: c0 forgets it and the renewal skips it).
    git(
        &net.clone_dir(0),
        &["update-ref", "-d", "refs/tavern/claims/t01"],
    );
    let beat = net.run(0, &["agent", "heartbeat", "--as", "z", "--json"]);
    assert_eq!(beat.json()["renewed"], serde_json::json!(["t02"]));
    // On c1, z is stale (no heartbeat seen there, its pid gone): the sweep releases t01,
    // whose record expired, and keeps t02, whose record was just renewed.
    let out = net.run(1, &["sweep", "--json"]);
    out.ok();
    let released: Vec<String> = out.json()["released"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["task"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(released, ["t01"]);
    assert_eq!(net.records()["t01"], (String::new(), "pending".into(), 1));
    assert_eq!(net.records()["t02"], ("z".into(), "claimed".into(), 1));
    assert_eq!(net.task_state(1, "t01"), ("pending".into(), None));
    assert_eq!(
        net.task_state(1, "t02"),
        ("claimed".into(), Some("z".into()))
    );
}

/// A finished task's record stays, so a clone that has not heard of it cannot claim it
/// again; reopening it frees the record, and then any clone can.
#[test]
fn a_finished_task_stays_finished_on_the_remote_until_reopened() {
    let net = Net::new(1, 2);
    net.run(0, &["claim", "t00", "--as", "a"]).ok();
    net.run(0, &["start", "t00", "--as", "a"]).ok();
    net.run(0, &["done", "t00", "--as", "a"]).ok();
    assert_eq!(net.records()["t00"], ("a".into(), "done".into(), 1));
    let out = net.run(1, &["claim", "t00", "--as", "b"]);
    out.code(3);
    out.stderr_has(
        "error: tasks/t00.md: already finished by a (status done; confirmed by the remote 'origin'",
    );
    assert_eq!(net.task_state(1, "t00"), ("done".into(), Some("a".into())));
    net.run(1, &["reopen", "t00", "--as", "b"]).ok();
    assert_eq!(net.records()["t00"], (String::new(), "pending".into(), 1));
    // c0 still says done until it hears of the reopen (what `tavern sync` does).
    net.run(0, &["claim", "t00", "--as", "c"]).code(3);
    let board = tavern::api::Board::open(&net.clone_dir(0).join(".tavern")).unwrap();
    assert_eq!(
        tavern::testing::follow_remote_claims(&board).unwrap(),
        ["t00"]
    );
    net.run(0, &["claim", "t00", "--as", "c"]).ok();
    assert_eq!(net.records()["t00"], ("c".into(), "claimed".into(), 2));
}

/// Ids the board accepts that are no valid ref name (`..` inside, a `.lock` or `.` end)
/// get an encoded ref (`%2E` for each dot): the claim is confirmed, the loser on another
/// clone is told the winner, and the record names the id itself.
#[test]
fn ids_that_are_no_valid_ref_name_are_claimed_through_an_encoded_ref() {
    let net = Net::new(0, 2);
    let ids = ["a..b", "x.lock", "v1.", "plain.id"];
    for c in 0..2 {
        for id in ids {
            net.run(c, &["new", "task", "--title", id, "--id", id]).ok();
        }
    }
    for id in ids {
        net.run(0, &["claim", id, "--as", "a"]).ok();
        let out = net.run(1, &["claim", id, "--as", "b"]);
        out.code(3);
        out.stderr_has("already claimed by a (status claimed; confirmed by the remote 'origin'");
        assert_eq!(
            net.task_state(1, id),
            ("claimed".to_string(), Some("a".to_string()))
        );
    }
    let records = net.records();
    assert_eq!(
        records.keys().map(String::as_str).collect::<Vec<_>>(),
        ["a%2E%2Eb", "plain.id", "v1%2E", "x%2Elock"]
    );
    assert!(
        records
            .values()
            .all(|r| *r == ("a".to_string(), "claimed".to_string(), 1))
    );
    let msg = git(
        &net.remote(),
        &["log", "-1", "--format=%B", "refs/tavern/claims/a%2E%2Eb"],
    );
    assert!(msg.contains("\ntask: a..b\n"), "{msg}");
    // A move of the claimed task goes through the same ref.
    net.run(0, &["start", "x.lock", "--as", "a"]).ok();
    assert_eq!(
        net.records()["x%2Elock"],
        ("a".to_string(), "working".to_string(), 1)
    );
}
