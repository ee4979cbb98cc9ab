//! Holds across clones: clones of one project connected to a local bare repository as their
//! remote, real `tavern` processes holding and releasing in each. The remote's hold refs
//! (`refs/tavern/holds/…`, sharded by a pattern's first segment) are the compare-and-swap.

#![cfg(unix)]

use std::process::Stdio;
use std::sync::{Arc, Barrier};

use crate::sync_claims::{Net, git};
use crate::util::{Out, procs};

/// The hold refs on the remote, by name (`paths/src`, `globs`, `named/db%3Atest`).
fn shards(net: &Net) -> Vec<String> {
    git(
        &net.remote(),
        &[
            "for-each-ref",
            "--format=%(refname:lstrip=3)",
            "refs/tavern/holds/",
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// The (agent, resource) of every hold a shard's record on the remote keeps.
fn shard_holds(net: &Net, shard: &str) -> Vec<(String, String)> {
    let msg = git(
        &net.remote(),
        &[
            "log",
            "-1",
            "--format=%B",
            &format!("refs/tavern/holds/{shard}"),
        ],
    );
    let body = msg.split_once("\n\n").unwrap().1;
    let rec: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    rec["holds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["agent"].as_str().unwrap().to_string(),
                h["resource"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn hold(net: &Net, c: usize, agent: &str, args: &[&str]) -> Out {
    let mut all = vec!["hold", "--as", agent];
    all.extend_from_slice(args);
    net.run(c, &all)
}

/// Exclusive against exclusive across clones: the same path, a directory against a file
/// under it, a glob against a path, a glob-first pattern against a path in any shard, and
/// a path in a shard created after a glob hold; refused with exit 3 naming the holder, its
/// clone, reason and expiry. What does not overlap is granted, and a release lets the
/// other clone take it.
#[test]
fn exclusive_holds_are_exclusive_across_clones() {
    let net = Net::new(0, 2);
    hold(&net, 0, "a", &["src/a.rs", "--reason", "new grammar"]).ok();
    assert_eq!(shards(&net), vec!["globs", "paths/src"]);
    assert_eq!(
        shard_holds(&net, "paths/src"),
        vec![("a".to_string(), "src/a.rs".to_string())]
    );
    for wanted in ["src/a.rs", "src/", "src/*.rs", "**/*.rs", "*/a.rs", "."] {
        let out = hold(&net, 1, "b", &[wanted]);
        out.code(3);
        out.stderr_has(": a holds src/a.rs (exclusive, h-1 on ");
        out.stderr_has(", reason: \"new grammar\")");
        out.stderr_has(", until 20");
    }
    // The refusal names the clone the hold was made on.
    hold(&net, 1, "b", &["src/a.rs"]).stderr_has(&format!(
        "h-1 on {}:{}",
        hostname(),
        net.clone_dir(0).display()
    ));
    // `holds` on c1 lists a's hold (fetched from the remote), saying where it was made.
    let listed = net.run(1, &["holds", "--json"]);
    listed.ok();
    assert_eq!(listed.json()["holds"][0]["agent"], "a");
    assert_eq!(
        listed.json()["holds"][0]["id"],
        format!("h-1 on {}:{}", hostname(), net.clone_dir(0).display())
    );
    // No overlap: granted, in the same shard or another.
    hold(&net, 1, "b", &["src/b.rs", "docs/x.md"]).ok();
    assert_eq!(shards(&net), vec!["globs", "paths/docs", "paths/src"]);
    // A glob-first hold meets b's docs/x.md (in the docs shard).
    hold(&net, 0, "a", &["**/*.md"])
        .code(3)
        .stderr_has(": b holds docs/x.md (exclusive");
    // One that meets nothing is written into every shard, and a shard created later
    // starts with it.
    hold(&net, 0, "a", &["**/*.txt"]).ok();
    for shard in ["globs", "paths/docs", "paths/src"] {
        assert!(
            shard_holds(&net, shard).contains(&("a".into(), "**/*.txt".into())),
            "{shard}"
        );
    }
    hold(&net, 1, "b", &["notes/n.txt"])
        .code(3)
        .stderr_has(": a holds **/*.txt (exclusive");
    hold(&net, 1, "b", &["notes/n.md"]).ok();
    assert!(
        shard_holds(&net, "paths/notes").contains(&("a".into(), "**/*.txt".into())),
        "a new shard copies the glob holds"
    );
    // Releasing a glob hold drops it from every shard.
    net.run(0, &["release-hold", "**/*.txt", "--as", "a"]).ok();
    for shard in ["globs", "paths/docs", "paths/notes", "paths/src"] {
        assert!(
            !shard_holds(&net, shard).contains(&("a".into(), "**/*.txt".into())),
            "{shard}"
        );
    }
    hold(&net, 1, "b", &["notes/n.txt"]).ok();
    // Released on c0: c1 takes it.
    net.run(0, &["release-hold", "src/a.rs", "--as", "a"]).ok();
    assert!(!shard_holds(&net, "paths/src").contains(&("a".into(), "src/a.rs".into())));
    hold(&net, 1, "b", &["src/"]).ok();
    hold(&net, 0, "a", &["src/a.rs"])
        .code(3)
        .stderr_has(": b holds src/** (exclusive");
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Shared holds coexist across clones; an exclusive one against them is refused, naming
/// every shared holder; named resources meet only by equal names.
#[test]
fn shared_holds_coexist_across_clones_and_exclusive_ones_are_refused() {
    let net = Net::new(0, 3);
    hold(&net, 0, "a", &["--resource", "db:test", "--shared"]).ok();
    hold(&net, 1, "b", &["--resource", "db:test", "--shared"]).ok();
    // Asked on a third clone, the refusal names both (the remote's records).
    let out = hold(&net, 2, "c", &["--resource", "db:test"]);
    out.code(3);
    out.stderr_has("resource db:test: a holds resource db:test (shared");
    out.stderr_has("resource db:test: b holds resource db:test (shared");
    hold(&net, 0, "c", &["--resource", "db:prod"]).ok();
    hold(&net, 0, "a", &["lib/", "--shared"]).ok();
    hold(&net, 1, "b", &["lib/x.rs", "--shared"]).ok();
    hold(&net, 2, "c", &["lib/x.rs"])
        .code(3)
        .stderr_has("lib/x.rs: a holds lib/** (shared");
    // Shared against an exclusive one is refused too.
    hold(&net, 1, "d", &["--resource", "db:prod", "--shared"])
        .code(3)
        .stderr_has("c holds resource db:prod (exclusive");
    let mut names = shards(&net);
    names.sort();
    assert_eq!(
        names,
        vec!["globs", "named/db%3Aprod", "named/db%3Atest", "paths/lib"]
    );
}

/// Six agents on three clones race for overlapping spellings of one path (a file, its
/// directory, globs): exactly one is granted, every other exits 3 naming the winner.
#[test]
fn agents_on_three_clones_racing_for_one_path_get_exactly_one_grant() {
    let net = Arc::new(Net::new(0, 3));
    let wants = [
        "src/main.rs",
        "src/",
        "**/main.rs",
        "src/*.rs",
        "*/main.rs",
        "src/m*.rs",
    ];
    let barrier = Arc::new(Barrier::new(wants.len()));
    let handles: Vec<_> = wants
        .iter()
        .enumerate()
        .map(|(i, want)| {
            let net = Arc::clone(&net);
            let barrier = Arc::clone(&barrier);
            let want = want.to_string();
            std::thread::spawn(move || {
                let agent = format!("agent-{i}");
                let mut cmd = net.cmd_in(&net.clone_dir(i % 3), &["hold", &want, "--as", &agent]);
                cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
                barrier.wait();
                let o = cmd.output().unwrap();
                (
                    agent,
                    o.status.code(),
                    String::from_utf8_lossy(&o.stderr).to_string(),
                )
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let winners: Vec<_> = results.iter().filter(|r| r.1 == Some(0)).collect();
    assert_eq!(winners.len(), 1, "{results:#?}");
    let winner = &winners[0].0;
    for (agent, code, stderr) in &results {
        if agent != winner {
            assert_eq!(*code, Some(3), "{agent}: {stderr}");
            assert!(
                stderr.contains(&format!(": {winner} holds ")),
                "{agent}: {stderr}"
            );
        }
    }
    // The remote keeps exactly the winner's hold.
    let mut held: Vec<(String, String)> = Vec::new();
    for shard in shards(&net) {
        for h in shard_holds(&net, &shard) {
            if !held.contains(&h) {
                held.push(h);
            }
        }
    }
    assert_eq!(held.len(), 1, "{held:?}");
    assert_eq!(&held[0].0, winner);
}

/// Offline: a hold exits 7 and changes nothing (no registry entry, no log entry); with
/// --local it is held on this clone alone, with a warning and a log note; back online, a
/// release is confirmed.
#[test]
fn offline_holds_exit_7_unless_local() {
    let net = Net::new(0, 2);
    git(
        &net.clone_dir(0),
        &[
            "remote",
            "set-url",
            "origin",
            &net.path("nowhere.git").display().to_string(),
        ],
    );
    let log_before = net.read(0, "log.yaml");
    let out = hold(&net, 0, "a", &["src/a.rs"]);
    out.code(7);
    out.stderr_has(&format!(
        "error: cannot confirm holding src/a.rs with the remote 'origin' ({}): ",
        net.clone_dir(0).display()
    ));
    out.stderr_has("; nothing was changed\nhint: retry when the remote 'origin' is reachable (`git ls-remote origin` tells); or act on this clone alone with --local, at the risk that an agent of another machine holds the same resources meanwhile\n");
    assert_eq!(net.read(0, "log.yaml"), log_before);
    let holds = net.run(0, &["holds", "--json"]);
    holds
        .ok()
        .stderr_has("warning: fetching the hold records failed: ");
    holds.stderr_has(": other clones' holds are shown as this clone last saw them");
    assert_eq!(holds.json()["holds"], serde_json::json!([]));
    let out = hold(&net, 0, "a", &["src/a.rs", "--local"]);
    out.ok()
        .stderr_has("warning: held on this clone only; the remote 'origin' was not asked");
    assert!(
        net.read(0, "log.yaml")
            .contains("(local only: not confirmed by the remote 'origin')")
    );
    // The other clone does not know of it.
    hold(&net, 1, "b", &["src/a.rs"]).ok();
    // A release offline is refused the same way and keeps the hold.
    net.run(0, &["release-hold", "src/a.rs", "--as", "a"])
        .code(7);
    assert_eq!(
        net.run(0, &["holds", "--json"]).json()["holds"][0]["agent"],
        "a"
    );
    git(
        &net.clone_dir(0),
        &["remote", "set-url", "origin", "../remote.git"],
    );
    net.run(0, &["release-hold", "src/a.rs", "--as", "a"]).ok();
    // b's hold on the remote is untouched by a's release.
    assert_eq!(
        shard_holds(&net, "paths/src"),
        vec![("b".to_string(), "src/a.rs".to_string())]
    );
}

/// A hold expired on the remote is taken from another clone; until it expires every try
/// is refused naming its holder, and the grant comes only after its `until`.
#[test]
fn a_hold_expired_on_the_remote_is_taken_from_another_clone() {
    let net = Net::new(0, 2);
    let out = hold(&net, 0, "a", &["src/a.rs", "--for", "2s", "--json"]);
    out.ok();
    let until = out.json()["holds"][0]["until"]
        .as_str()
        .unwrap()
        .to_string();
    let until = chrono::DateTime::parse_from_rfc3339(&until).unwrap();
    crate::util::eventually("b gets src/ once a's hold expired", || {
        let out = hold(&net, 1, "b", &["src/"]);
        if out.code == 0 {
            return true;
        }
        out.code(3).stderr_has(": a holds src/a.rs (exclusive");
        false
    });
    assert!(
        chrono::Utc::now() >= until,
        "granted before a's hold expired"
    );
    // The expired hold is gone from the shard b wrote.
    assert_eq!(
        shard_holds(&net, "paths/src"),
        vec![("b".to_string(), "src/**".to_string())]
    );
    // a, back, is refused naming b.
    hold(&net, 0, "a", &["src/a.rs"])
        .code(3)
        .stderr_has(": b holds src/** (exclusive");
}

/// `agent deregister` releases the agent's holds on the remote, and so does the sweep of
/// a stale agent (its lease over, its process gone).
#[test]
fn deregister_and_sweep_release_holds_on_the_remote() {
    let net = Net::new(0, 2);
    net.run(0, &["agent", "register", "--name", "x"]).ok();
    hold(&net, 0, "x", &["src/", "--resource", "db:test"]).ok();
    hold(&net, 1, "y", &["src/a.rs"]).code(3);
    net.run(0, &["agent", "deregister", "--as", "x"]).ok();
    assert_eq!(shard_holds(&net, "paths/src"), vec![]);
    assert_eq!(shard_holds(&net, "named/db%3Atest"), vec![]);
    hold(&net, 1, "y", &["src/a.rs", "--resource", "db:test"]).ok();
    net.run(1, &["release-hold", "--all", "--as", "y"]).ok();

    // z runs under a pid that is gone, with a lease of 1s on c0.
    let dead = {
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        pid.to_string()
    };
    crate::sync_claims::set_lease(&net, 0, "1s");
    net.run(0, &["agent", "register", "--name", "z", "--pid", &dead])
        .ok();
    hold(&net, 0, "z", &["docs/", "--for", "1h"]).ok();
    assert_eq!(
        shard_holds(&net, "paths/docs"),
        vec![("z".to_string(), "docs/**".to_string())]
    );
    crate::util::eventually("the sweep releases z's hold", || {
        net.run(0, &["sweep"]).ok();
        shard_holds(&net, "paths/docs").is_empty()
    });
    let holds = net.run(0, &["holds", "--json"]).json();
    assert_eq!(holds["holds"], serde_json::json!([]));
    assert!(net.read(0, "log.yaml").contains("op: \"hold-released\""));
    hold(&net, 1, "y", &["docs/x.md"]).ok();
}

/// A post-receive hook on the remote that writes `marker` and sleeps: the remote has
/// taken the refs, and the client waits for an answer that a kill cuts off.
fn sleepy_remote(net: &Net, marker: &std::path::Path) {
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

/// Runs `args` in clone 0 while the remote's hook sleeps after taking the refs; once it
/// has, `meanwhile` runs and the push is killed. Returns what the command said.
fn lose_the_answer(net: &Net, args: &[&str], meanwhile: impl FnOnce()) -> Out {
    let marker = net.path("taken");
    let _ = std::fs::remove_file(&marker);
    sleepy_remote(net, &marker);
    let child = net
        .cmd_in(&net.clone_dir(0), args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::eventually("the remote took the push", || marker.exists());
    let pushes = procs::pushes(&net.remote(), "--force-with-lease=refs/tavern/holds/");
    assert!(!pushes.is_empty(), "no git push to kill");
    std::fs::remove_file(net.remote().join("hooks/post-receive")).unwrap();
    meanwhile();
    for pid in pushes {
        let _ = std::process::Command::new("kill")
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

/// A hold's push reaches the remote and its answer is lost: tavern asks the remote (fetches
/// the records), finds its own, and the hold is granted; the other clone is refused. When
/// the remote cannot be asked afterwards: exit 8, unknown, nothing written here; once it
/// is back, the same command finds out and finishes.
#[test]
fn a_lost_answer_to_a_hold_is_found_out_from_the_remote() {
    let net = Net::new(0, 2);
    lose_the_answer(&net, &["hold", "src/a.rs", "--as", "a"], || {}).ok();
    assert_eq!(
        shard_holds(&net, "paths/src"),
        vec![("a".to_string(), "src/a.rs".to_string())]
    );
    assert_eq!(
        net.run(0, &["holds", "--json"]).json()["holds"][0]["agent"],
        "a"
    );
    hold(&net, 1, "b", &["src/"])
        .code(3)
        .stderr_has(": a holds src/a.rs (exclusive");

    let gone = net.path("remote.gone");
    let log_before = net.read(0, "log.yaml");
    let out = lose_the_answer(&net, &["hold", "docs/", "--as", "a"], || {
        std::fs::rename(net.remote(), &gone).unwrap();
    });
    out.code(8);
    out.stderr_has(") may have taken holding docs/** (");
    out.stderr_has("the outcome is unknown, and this clone's holds are as they were");
    assert!(
        !out.stderr.contains("nothing was changed"),
        "{}",
        out.stderr
    );
    assert_eq!(net.read(0, "log.yaml"), log_before);
    std::fs::rename(&gone, net.remote()).unwrap();
    // The remote took it.
    assert_eq!(
        shard_holds(&net, "paths/docs"),
        vec![("a".to_string(), "docs/**".to_string())]
    );
    // The same command again: a's own hold is no conflict; it is renewed and recorded.
    hold(&net, 0, "a", &["docs/"]).ok();
    assert_eq!(
        net.run(0, &["holds", "--json"]).json()["holds"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    hold(&net, 1, "b", &["docs/x.md"])
        .code(3)
        .stderr_has(": a holds docs/** (exclusive");
}

/// `--wait` across clones: the waiter on one clone is granted once the holder on another
/// releases (no timing: the release comes once the waiter is in line).
#[test]
fn a_waiter_on_one_clone_gets_what_another_clone_releases() {
    let net = Net::new(0, 2);
    hold(&net, 0, "a", &["src/"]).ok();
    let waiter = net
        .cmd_in(
            &net.clone_dir(1),
            &["hold", "src/a.rs", "--wait", "10m", "--as", "b", "--json"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::util::eventually("b waits in line on c1", || {
        std::fs::read_to_string(net.clone_dir(1).join(".tavern/.state/holds.json"))
            .is_ok_and(|t| t.contains("\"ticket\""))
    });
    net.run(0, &["release-hold", "src/", "--as", "a"]).ok();
    let o = waiter.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let granted: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(granted["holds"][0]["agent"], "b");
    assert_eq!(
        shard_holds(&net, "paths/src"),
        vec![("b".to_string(), "src/a.rs".to_string())]
    );
    hold(&net, 0, "a", &["src/a.rs"])
        .code(3)
        .stderr_has(": b holds src/a.rs (exclusive");
}

/// Eight agents in two clones, each clone with a linked worktree (four working trees, two
/// agents in each), every agent trying the twelve overlapping requests of the one-clone
/// race (files, directories, globs, shared and exclusive named resources) in its own
/// order: no two agents hold overlapping requests (shared with shared aside), and every
/// refusal met another agent's conflicting hold, which it still has.
#[test]
fn eight_agents_in_two_clones_and_four_worktrees_get_exactly_the_allowed_holds() {
    use crate::holds::{REQUESTS, conflict};
    let net = Net::new(0, 2);
    let mut dirs = Vec::new();
    for c in 0..2 {
        let wt = net.path(&format!("wt{c}"));
        git(
            &net.clone_dir(c),
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("feature-{c}"),
                wt.to_str().unwrap(),
            ],
        );
        dirs.push(net.clone_dir(c));
        dirs.push(wt);
    }
    let mut rng = crate::concurrency::Rng::new(2222);
    let mut children = Vec::new();
    let mut files = Vec::new();
    for w in 0..8 {
        let mut order: Vec<usize> = (0..REQUESTS.len()).collect();
        rng.shuffle(&mut order);
        let script = order
            .iter()
            .map(|&i| {
                let args: Vec<String> = REQUESTS[i].iter().map(|a| format!("'{a}'")).collect();
                format!(
                    "\"$T\" hold {} --as w{w} --for 1h >/dev/null 2>>\"$R.err\"; echo \"{i} $?\" >>\"$R\"",
                    args.join(" ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        let results = net.path(&format!("results-{w}"));
        let mut c = std::process::Command::new("sh");
        c.arg("-c")
            .arg(format!("read go || exit 99\n{script}"))
            .current_dir(&dirs[w % 4])
            .env_remove("TAVERN_BOARD")
            .env_remove("TAVERN_AGENT")
            .env("USER", "tester")
            .env("T", crate::util::BIN)
            .env("R", &results)
            .stdin(Stdio::piped());
        children.push(c.spawn().unwrap());
        files.push(results);
    }
    for c in &mut children {
        use std::io::Write;
        c.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let results: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap_or_default())
        .collect();
    let mut granted: Vec<(usize, usize)> = Vec::new();
    let mut refused: Vec<(usize, usize)> = Vec::new();
    for (w, text) in results.iter().enumerate() {
        assert_eq!(text.lines().count(), REQUESTS.len(), "w{w}: {text}");
        for l in text.lines() {
            let (i, code) = l.split_once(' ').unwrap();
            let i: usize = i.parse().unwrap();
            match code {
                "0" => granted.push((w, i)),
                "3" => refused.push((w, i)),
                other => panic!(
                    "w{w} request {i}: exit {other}: {}",
                    std::fs::read_to_string(net.path(&format!("results-{w}.err")))
                        .unwrap_or_default()
                ),
            }
        }
    }
    // Holding db:test again changes the mode of the one hold: an agent's last grant of it
    // is what it holds.
    let mut held = granted.clone();
    held.retain(|&(w, i)| {
        !(i == 8 || i == 9)
            || results[w]
                .lines()
                .filter(|l| l.ends_with(" 0"))
                .filter_map(|l| l.split_once(' ').map(|(i, _)| i.parse::<usize>().unwrap()))
                .rfind(|j| *j == 8 || *j == 9)
                == Some(i)
    });
    for &(w, i) in &held {
        for &(v, j) in &held {
            assert!(w == v || !conflict(i, j), "w{w} {i} and w{v} {j} both held");
        }
    }
    for &(w, i) in &refused {
        assert!(
            held.iter().any(|&(v, j)| v != w && conflict(i, j))
                || (i == 8 || i == 9) && granted.iter().any(|&(v, j)| v != w && conflict(i, j)),
            "w{w} was refused request {i} with nothing in its way"
        );
    }
    // Both clones list the same holds (made anywhere) once the records are fetched.
    let agents = |c: usize| {
        let mut v: Vec<(String, String)> = net.run(c, &["holds", "--json"]).json()["holds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["agent"].as_str().unwrap().to_string(),
                    h["resource"]["name"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(agents(0), agents(1));
    assert!(!agents(0).is_empty());
}

/// `tavern hook claude pre-edit` in clone `c` as Claude Code runs it (the tool call as JSON
/// on stdin), with `fresh` as TAVERN_HOLDS_FRESH when given.
fn pre_edit(net: &Net, c: usize, agent: &str, file: &str, fresh: Option<&str>) -> Out {
    let dir = net.clone_dir(c);
    let event = serde_json::json!({"session_id": "s1", "cwd": dir.to_str().unwrap(),
        "hook_event_name": "PreToolUse", "tool_name": "Edit",
        "tool_input": {"file_path": dir.join(file).to_str().unwrap()}});
    let mut cmd = net.cmd_in(&dir, &["hook", "claude", "pre-edit", "--as", agent]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match fresh {
        Some(f) => cmd.env("TAVERN_HOLDS_FRESH", f),
        None => cmd.env_remove("TAVERN_HOLDS_FRESH"),
    };
    let mut child = cmd.spawn().unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        event.to_string().as_bytes(),
    )
    .unwrap();
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

/// The reason a pre-edit hook refused with (Claude Code's deny), or None when it allowed.
#[track_caller]
fn refused_edit(out: &Out) -> Option<String> {
    out.ok();
    if out.stdout.trim().is_empty() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    Some(
        v["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

/// `git commit` of `file` in clone `c` by `agent`, through the installed pre-commit hook.
fn commit(net: &Net, c: usize, agent: &str, file: &str, fresh: Option<&str>) -> (bool, String) {
    let dir = net.clone_dir(c);
    std::fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
    std::fs::write(dir.join(file), format!("by {agent}\n")).unwrap();
    git(&dir, &["add", file]);
    let mut cmd = crate::util::git::cmd(&dir, &["commit", "-q", "-m", "work"]);
    let bin_dir = std::path::Path::new(crate::util::BIN).parent().unwrap();
    cmd.env(
        "PATH",
        format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    )
    .env("TAVERN_AGENT", agent)
    .env_remove("TAVERN_BOARD");
    match fresh {
        Some(f) => cmd.env("TAVERN_HOLDS_FRESH", f),
        None => cmd.env_remove("TAVERN_HOLDS_FRESH"),
    };
    let o = cmd.output().unwrap();
    if !o.status.success() {
        git(&dir, &["reset", "-q"]);
    }
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

/// The hooks see other clones' holds: agent a holds src/x.rs in clone 0; b's pre-edit hook
/// (driven as Claude Code runs it) and pre-commit hook in clone 1 refuse src/x.rs, naming
/// a, a's clone, the reason and the expiry, from clone 1's copy of the records (fetched
/// again when older than the bound: 0 here, so every run fetches); after a releases, both
/// allow it. A remote that cannot be asked leaves the last copy, and the refusal says so.
#[test]
fn the_hooks_refuse_an_edit_of_a_path_another_clone_holds() {
    let net = Net::new(0, 2);
    let c1 = net.clone_dir(1);
    net.run(1, &["setup", "--pre-commit"]).ok();
    // Clone 1 fetched the records once (none): its copy exists and lists nothing.
    net.run(1, &["holds"]).ok();
    assert_eq!(
        std::fs::metadata(c1.join(".tavern/.state/holds-elsewhere.json"))
            .unwrap()
            .len(),
        0
    );
    assert_eq!(
        refused_edit(&pre_edit(&net, 1, "b", "src/x.rs", None)),
        None
    );
    hold(&net, 0, "a", &["src/x.rs", "--reason", "new parser"]).ok();
    let where_ = format!("h-1 on {}:{}", hostname(), net.clone_dir(0).display());
    let check = |why: &str| {
        assert!(
            why.contains("src/x.rs is held: a holds src/x.rs (exclusive, "),
            "{why}"
        );
        assert!(why.contains(&where_), "{why}");
        assert!(why.contains(", until 20"), "{why}");
        assert!(why.contains("reason: \"new parser\""), "{why}");
    };
    let why = refused_edit(&pre_edit(&net, 1, "b", "src/x.rs", Some("0"))).expect("refused");
    check(&why);
    assert!(!why.contains("last fetched"), "{why}");
    // Within the bound (the default), the copy just fetched answers: refused again.
    check(&refused_edit(&pre_edit(&net, 1, "b", "src/x.rs", None)).expect("refused"));
    // A free path, and a's own edit, go through.
    assert_eq!(
        refused_edit(&pre_edit(&net, 1, "b", "src/y.rs", Some("0"))),
        None
    );
    assert_eq!(
        refused_edit(&pre_edit(&net, 1, "a", "src/x.rs", Some("0"))),
        None
    );
    // The pre-commit hook: the same refusal, nothing committed.
    let before = git(&c1, &["rev-parse", "HEAD"]);
    let (done, err) = commit(&net, 1, "b", "src/x.rs", Some("0"));
    assert!(!done, "{err}");
    assert!(err.contains("refused to commit as b"), "{err}");
    check(&err);
    assert_eq!(git(&c1, &["rev-parse", "HEAD"]), before);

    // The remote cannot be asked: the last copy answers, and says so.
    std::fs::rename(net.remote(), net.path("away.git")).unwrap();
    let out = pre_edit(&net, 1, "b", "src/x.rs", Some("0"));
    let why = refused_edit(&out).expect("refused on the last copy");
    check(&why);
    assert!(
        why.contains("holds of other clones as this clone last fetched them at 20"),
        "{why}"
    );
    assert!(why.contains("the remote 'origin'"), "{why}");
    let out = pre_edit(&net, 1, "b", "src/y.rs", Some("0"));
    assert_eq!(refused_edit(&out), None);
    assert!(
        out.stderr.contains("as this clone last fetched them"),
        "{}",
        out.stderr
    );
    std::fs::rename(net.path("away.git"), net.remote()).unwrap();

    // Released on clone 0: both hooks of clone 1 allow it once they fetch again.
    net.run(0, &["release-hold", "src/x.rs", "--as", "a"]).ok();
    assert_eq!(
        refused_edit(&pre_edit(&net, 1, "b", "src/x.rs", Some("0"))),
        None
    );
    let (done, err) = commit(&net, 1, "b", "src/x.rs", None);
    assert!(done, "{err}");
}

/// Holds made before a board was connected: `sync init` pushes them (another clone is then
/// refused them), and the first `sync` of a board connected by hand pushes them too; one
/// the remote already has an overlapping hold for is refused (exit 3, naming the holder
/// and its clone), released here and logged, while the others are pushed.
#[test]
fn holds_made_before_connecting_are_pushed_or_refused() {
    use crate::util::git::{self as g, git as run_git};
    use crate::worktrees::tavern;
    let tmp = tempfile::tempdir().unwrap();
    let seed = tmp.path().join("seed");
    g::init_repo(&seed);
    let remote = g::bare(&tmp.path().join("remote.git"));
    let url = remote.to_str().unwrap();
    run_git(&seed, &["push", "-q", url, "main"]);
    let clone = |name: &str| {
        let dir = tmp.path().join(name);
        run_git(tmp.path(), &["clone", "-q", url, dir.to_str().unwrap()]);
        tavern(&dir, &["init"]).ok();
        dir
    };
    let on_remote = || -> String {
        run_git(
            &remote,
            &[
                "log",
                "--format=%B",
                "--all",
                "--glob=refs/tavern/holds/*",
                "-n",
                "50",
            ],
        )
    };
    // a: not connected; a hold of src/x.rs stays here.
    let a = clone("a");
    tavern(
        &a,
        &["hold", "--as", "ann", "src/x.rs", "--reason", "early"],
    )
    .ok();
    assert!(!on_remote().contains("\"ann\""));
    tavern(&a, &["sync", "init"]).ok().stdout_has("connected ");
    assert!(on_remote().contains("\"agent\":\"ann\""), "{}", on_remote());
    // b: another clone; its hold of src/x.rs is refused, naming ann and a's clone.
    let b = clone("b");
    tavern(&b, &["sync", "init"]).ok();
    let out = tavern(&b, &["hold", "--as", "bob", "src/"]);
    out.code(3)
        .stderr_has("ann holds src/x.rs (exclusive, h-1 on ")
        .stderr_has(&format!(":{} since", a.display()));

    // c: holds src/x.rs and docs/d.md before connecting; connecting refuses src/x.rs
    // (ann holds it there), releases it here, and pushes docs/d.md.
    let c = clone("c");
    tavern(&c, &["hold", "--as", "cat", "src/x.rs", "docs/d.md"]).ok();
    let out = tavern(&c, &["sync", "init"]);
    out.code(3)
        .stderr_has("has holds in the way of holds made here before the board was connected")
        .stderr_has("src/x.rs: ann holds src/x.rs (exclusive, h-1 on ")
        .stderr_has("reason: \"early\"");
    let held = tavern(&c, &["holds", "--json"]).ok().json();
    let mine: Vec<String> = held["holds"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|h| h["agent"] == "cat")
        .map(|h| h["resource"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(mine, vec!["docs/d.md".to_string()]);
    let log = tavern(&c, &["--json", "log"]).ok().stdout.clone();
    let released: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"op\":\"hold-released\""))
        .collect();
    assert_eq!(released.len(), 1, "{log}");
    assert!(released[0].contains("\"doc\":\"holds/h-1\""), "{log}");
    assert!(
        released[0].contains("refused it when the board was connected"),
        "{log}"
    );
    tavern(&b, &["hold", "--as", "bob", "docs/"])
        .code(3)
        .stderr_has("cat holds docs/d.md (exclusive");

    // d: connected by hand (the config key), its first sync pushes what it held before.
    let d = clone("d");
    tavern(&d, &["hold", "--as", "dan", "notes/n.md"]).ok();
    run_git(&d, &["config", "tavern.remote", "origin"]);
    tavern(&d, &["sync"]).ok();
    tavern(&b, &["hold", "--as", "bob", "notes/"])
        .code(3)
        .stderr_has("dan holds notes/n.md (exclusive");
}

/// The agents waiting in line in a shard's record on the remote, first first.
fn shard_queue(net: &Net, shard: &str) -> Vec<String> {
    let name = format!("refs/tavern/holds/{shard}");
    let o = std::process::Command::new("git")
        .arg("-C")
        .arg(net.remote())
        .args(["log", "-1", "--format=%B", &name])
        .output()
        .unwrap();
    if !o.status.success() {
        return Vec::new();
    }
    let msg = String::from_utf8_lossy(&o.stdout).to_string();
    let Some((_, body)) = msg.split_once("\n\n") else {
        return Vec::new();
    };
    let rec: serde_json::Value = serde_json::from_str(body.trim()).unwrap();
    rec["queue"]
        .as_array()
        .map(|q| {
            q.iter()
                .map(|w| w["agent"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `--wait` is first come, first served across clones: the remote keeps the line. Three
/// agents in two clones wait for a path held in one of them, each starting once the one
/// before is in the line (polled on the remote's record); released, the path goes to them
/// in the order they came, each taking it only once the one before released it. A
/// newcomer does not jump the line.
#[test]
fn waiters_in_two_clones_are_served_in_the_order_they_came() {
    let net = Net::new(0, 3);
    hold(&net, 0, "holder", &["src/x.rs", "--reason", "first"]).ok();
    let order = [("w1", 1), ("w2", 0), ("w3", 1)];
    let mut waiting = Vec::new();
    for (i, (agent, c)) in order.iter().enumerate() {
        let child = net
            .cmd_in(
                &net.clone_dir(*c),
                &["hold", "--as", agent, "src/x.rs", "--wait", "5m"],
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while shard_queue(&net, "paths/src").len() < i + 1 {
            assert!(
                std::time::Instant::now() < deadline,
                "{agent} never joined the line"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        waiting.push((agent.to_string(), *c, child));
    }
    assert_eq!(shard_queue(&net, "paths/src"), vec!["w1", "w2", "w3"]);
    // A newcomer in a third clone (no waiter there) is refused by the remote's line.
    hold(&net, 2, "late", &["src/"])
        .code(3)
        .stderr_has("holder holds src/x.rs")
        .stderr_has("w1 waits for it");
    net.run(0, &["release-hold", "src/x.rs", "--as", "holder"])
        .ok();
    let mut served = Vec::new();
    while !waiting.is_empty() {
        // Whoever finishes first among those still waiting.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
        let done = loop {
            let mut finished = None;
            for (i, (_, _, child)) in waiting.iter_mut().enumerate() {
                if child.try_wait().unwrap().is_some() {
                    finished = Some(i);
                    break;
                }
            }
            if let Some(i) = finished {
                break i;
            }
            assert!(std::time::Instant::now() < deadline, "nobody was served");
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let (agent, c, child) = waiting.remove(done);
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{agent}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        served.push(agent.clone());
        assert_eq!(
            shard_holds(&net, "paths/src"),
            vec![(agent.clone(), "src/x.rs".to_string())]
        );
        net.run(c, &["release-hold", "src/x.rs", "--as", &agent])
            .ok();
    }
    assert_eq!(served, vec!["w1", "w2", "w3"]);
    assert!(shard_queue(&net, "paths/src").is_empty());
}

/// Waits (a generous deadline, never a timing assertion) for `child` to end; kills it and
/// panics naming `what` if it never does.
fn finish(mut child: std::process::Child, what: &str) -> std::process::Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(240);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("{what}: {}", String::from_utf8_lossy(&o.stderr));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// The agents this clone's `holds --json` lists as waiting.
fn waiting(net: &Net, c: usize) -> Vec<String> {
    net.run(c, &["holds", "--json"]).ok().json()["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["clone"].is_null())
        .map(|w| w["agent"].as_str().unwrap().to_string())
        .collect()
}

/// A waiter killed with SIGKILL never leaves the line itself: on a connected board its
/// place in the remote's line ends with its lease (here 10 s, from
/// `TAVERN_HOLDS_WAIT_LEASE`), and then it stops blocking the waiters behind it, in its own
/// clone (whose own line drops it at once: its process is gone) and in another. w1 and w2
/// wait in clone 1, w3 in clone 2, in that order; w1 is killed -9; the path released, w2
/// is served, then w3, and w1 never. No timing is asserted: every step polls.
#[test]
fn a_waiter_killed_in_line_stops_blocking_once_its_lease_ends() {
    let net = Net::new(0, 3);
    hold(&net, 0, "holder", &["src/x.rs"]).ok();
    let spawn = |c: usize, agent: &str, lease: Option<&str>| {
        let mut cmd = net.cmd_in(
            &net.clone_dir(c),
            &["hold", "--as", agent, "src/x.rs", "--wait", "5m", "--json"],
        );
        match lease {
            Some(l) => cmd.env("TAVERN_HOLDS_WAIT_LEASE", l),
            None => cmd.env_remove("TAVERN_HOLDS_WAIT_LEASE"),
        };
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut w1 = spawn(1, "w1", Some("10"));
    crate::util::eventually("w1 in the remote's line", || {
        shard_queue(&net, "paths/src").contains(&"w1".to_string())
    });
    let w2 = spawn(1, "w2", None);
    crate::util::eventually("w2 in the remote's line", || {
        shard_queue(&net, "paths/src").contains(&"w2".to_string())
    });
    let w3 = spawn(2, "w3", None);
    crate::util::eventually("w3 in the remote's line", || {
        shard_queue(&net, "paths/src").contains(&"w3".to_string())
    });
    assert_eq!(shard_queue(&net, "paths/src"), vec!["w1", "w2", "w3"]);
    assert_eq!(waiting(&net, 1), vec!["w1", "w2"]);

    // Killed: it never leaves the line, nor renews its place.
    w1.kill().unwrap();
    w1.wait().unwrap();
    // Clone 1's own line drops it at once (its process is gone).
    assert_eq!(waiting(&net, 1), vec!["w2"]);
    net.run(0, &["release-hold", "src/x.rs", "--as", "holder"])
        .ok();

    // w2 (behind w1 in the same clone) is served once w1's place has lapsed.
    let o = finish(w2, "w2 was never served");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let granted: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(granted["holds"][0]["agent"], "w2");
    assert_eq!(
        shard_holds(&net, "paths/src"),
        vec![("w2".to_string(), "src/x.rs".to_string())]
    );
    // The grant's push dropped the lapsed place: only w3 is left in line.
    assert_eq!(shard_queue(&net, "paths/src"), vec!["w3"]);
    net.run(1, &["release-hold", "src/x.rs", "--as", "w2"]).ok();

    // w3, on another clone, is next.
    let o = finish(w3, "w3 was never served");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        shard_holds(&net, "paths/src"),
        vec![("w3".to_string(), "src/x.rs".to_string())]
    );
    assert!(shard_queue(&net, "paths/src").is_empty());

    // The logs: w1 waited and was never granted; w2's grant in clone 1, w3's in clone 2.
    let grants = |c: usize| -> Vec<String> {
        net.run(c, &["--json", "log"])
            .ok()
            .stdout
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|e| e["op"] == "hold")
            .map(|e| e["actor"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(grants(1), vec!["w2"]);
    assert_eq!(grants(2), vec!["w3"]);
    let log1 = net.run(1, &["--json", "log"]).ok().stdout.clone();
    assert!(
        log1.lines()
            .any(|l| l.contains("\"op\":\"hold-wait\"") && l.contains("\"actor\":\"w1\"")),
        "{log1}"
    );
}

/// `tools/call holds` over `tavern mcp --profile full` in clone `c`: the tool's answer.
fn mcp_holds(net: &Net, c: usize) -> serde_json::Value {
    use std::io::Write;
    let mut child = net
        .cmd_in(
            &net.clone_dir(c),
            &["mcp", "--as", "overseer", "--profile", "full"],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = [
        serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "holds", "arguments": {}}}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let reply = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["id"] == serde_json::json!(1))
        .unwrap();
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}

/// `tavern holds` (text and `--json`), the MCP `holds` tool and the dashboard's holds list
/// show the waiters of other clones too, from the remote's line as this clone last fetched
/// it, after this clone's own, each marked with the clone it waits on (and who it waits
/// on); this clone's own waiters carry no clone.
#[test]
fn holds_lists_the_waiters_of_other_clones_marked_with_their_clone() {
    let net = Net::new(0, 2);
    hold(&net, 0, "holder", &["src/x.rs", "--reason", "busy"]).ok();
    let spawn = |c: usize, agent: &str| {
        net.cmd_in(
            &net.clone_dir(c),
            &["hold", "--as", agent, "src/x.rs", "--wait", "10m"],
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
    };
    let mut near = spawn(0, "near");
    crate::util::eventually("near in the remote's line", || {
        shard_queue(&net, "paths/src") == ["near"]
    });
    let mut far = spawn(1, "far");
    crate::util::eventually("far in the remote's line", || {
        shard_queue(&net, "paths/src") == ["near", "far"]
    });
    let origin = |c: usize| format!("{}:{}", hostname(), net.clone_dir(c).display());

    // Clone 0 (`holds` fetches the records first): its own waiter, then clone 1's.
    let list = net.run(0, &["holds", "--json"]).ok().json();
    let waiting = list["waiting"].as_array().unwrap();
    assert_eq!(waiting.len(), 2, "{list}");
    assert_eq!(waiting[0]["agent"], "near");
    assert!(waiting[0]["clone"].is_null(), "{list}");
    assert!(waiting[0]["pid"].as_u64().is_some(), "{list}");
    assert_eq!(waiting[1]["agent"], "far");
    assert_eq!(waiting[1]["clone"], origin(1).as_str());
    assert_eq!(waiting[1]["host"], hostname().as_str());
    assert!(waiting[1].get("pid").is_none(), "{list}");
    assert_eq!(
        waiting[1]["resources"],
        serde_json::json!([{"kind": "path", "name": "src/x.rs"}])
    );
    assert!(
        list["waits_on"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["waiter"] == "far" && w["holder"] == "holder"),
        "{list}"
    );
    let text = net.run(0, &["holds"]).ok().stdout.clone();
    let far_line = text
        .lines()
        .find(|l| l.starts_with("waiting  far waits for src/x.rs"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        far_line.contains(&format!(" on {}, in line until ", origin(1))),
        "{text}"
    );
    assert!(text.contains("far waits on holder (src/x.rs)"), "{text}");

    // The MCP tool and the dashboard give the same line, as last fetched (no network).
    let tool = mcp_holds(&net, 0);
    assert_eq!(tool["waiting"], list["waiting"], "{tool}");
    assert_eq!(tool["waits_on"], list["waits_on"], "{tool}");
    let server = crate::web::serve_cmd(net.cmd_in(
        &net.clone_dir(0),
        &["serve", "--port", "0", "--as", "overseer"],
    ));
    let page = server.get("/api/holds").json();
    assert_eq!(page["waiting"], list["waiting"], "{page}");
    assert_eq!(page["waits_on"], list["waits_on"], "{page}");
    drop(server);

    // Clone 1 sees it the other way round.
    let list = net.run(1, &["holds", "--json"]).ok().json();
    let seen: Vec<(String, Option<String>)> = list["waiting"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["agent"].as_str().unwrap().to_string(),
                w["clone"].as_str().map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("far".to_string(), None),
            ("near".to_string(), Some(origin(0)))
        ]
    );
    near.kill().unwrap();
    far.kill().unwrap();
    near.wait().unwrap();
    far.wait().unwrap();
}
