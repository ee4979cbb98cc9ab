//! Agents, heartbeats, leases and sweeps, with real agent processes that die.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::{TestBoard, redact_times};

/// A board whose lease is one second, so a test can outlive it.
fn short_lease_board() -> TestBoard {
    let b = TestBoard::new();
    b.write(
        "board.yaml",
        b.read("board.yaml").replace("lease: 5m", "lease: 1s"),
    );
    b
}

#[test]
fn register_list_heartbeat_deregister() {
    let b = TestBoard::new();
    let me = std::process::id().to_string();
    b.run(&[
        "agent",
        "register",
        "--name",
        "coder-1",
        "--capabilities",
        "rust,parser",
        "--pid",
        &me,
    ])
    .ok()
    .stdout_is(&format!("registered coder-1 (pid {me}, lease 5m)\n"));
    let card = b.read("control/agents/coder-1.md");
    assert!(
        card.contains("\ncapabilities: [rust, parser]\nstatus: active\n")
            && card.contains(&format!("\npid: {me}\n")),
        "{card}"
    );
    b.task("Work", &["--id", "t-w"]);
    b.run(&["claim", "t-w", "--as", "coder-1"]).ok();
    b.run(&["agent", "register", "--name", "idler", "--pid", &me])
        .ok();
    let out = b.run(&["agent", "list"]);
    out.ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["AGENT", "STATUS", "SEEN", "HOLDS", "CAPABILITIES"]
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["coder-1", "active", "0s", "ago", "t-w", "rust,parser"]
    );
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["idler", "idle", "0s", "ago", "-", "-"]
    );
    b.run(&["agent", "heartbeat", "--as", "coder-1"])
        .ok()
        .stdout_is("")
        .stderr_is("heartbeat recorded for coder-1; its lease runs 5m from now\n");
    b.run(&["agent", "heartbeat", "--as", "coder-1", "--json"])
        .ok()
        .stderr_is("");
    b.run(&["agent", "heartbeat", "--as", "nobody"])
        .code(4)
        .stderr_has("register it with `tavern agent register --as nobody`");
    b.run(&["agent", "deregister", "--as", "coder-1"])
        .ok()
        .stdout_is("deregistered coder-1; released t-w\n");
    assert!(b.read("tasks/t-w.md").contains("\nstatus: pending\n"));
    let v = b.run(&["agent", "list", "--json"]).ok().json();
    assert_eq!(v["agents"][0]["status"], "gone");
    let notes: Vec<String> = b
        .log()
        .iter()
        .filter(|e| e["op"] == "agent")
        .map(|e| e["note"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(notes, ["registered", "registered", "deregistered"]);
}

#[test]
fn a_killed_agents_task_returns_after_the_lease_and_its_late_submit_is_refused() {
    let b = short_lease_board();
    b.task("Crashy", &["--id", "t-crash"]);
    // The "agent": a real process whose pid the card records.
    let mut agent = Command::new("sleep")
        .arg("30")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = agent.id().to_string();
    b.run(&["agent", "register", "--name", "coder-1", "--pid", &pid])
        .ok();
    b.run(&[
        "agent",
        "register",
        "--name",
        "coder-2",
        "--pid",
        &std::process::id().to_string(),
    ])
    .ok();
    b.run(&["claim", "t-crash", "--as", "coder-1"]).ok();
    b.run(&["start", "t-crash", "--as", "coder-1"]).ok();

    // Within the lease, or while its process lives, nothing is released.
    std::thread::sleep(Duration::from_millis(1300));
    b.run(&["sweep"]).ok().stdout_is("");
    b.run(&["claim", "--next", "--as", "coder-2"]).code(4);

    agent.kill().unwrap();
    agent.wait().unwrap();
    let out = b.run(&["claim", "--next", "--as", "coder-2"]);
    out.ok().stdout_is("claimed t-crash (rev 5, claimed)\n");
    let log = b.log();
    let release = log.iter().find(|e| e["op"] == "release").unwrap();
    assert_eq!(release["actor"], "tavern-sweep");
    assert_eq!(release["from"], "working");
    assert_eq!(release["to"], "pending");
    let note = redact_times(release["note"].as_str().unwrap());
    assert!(
        note.starts_with("lease expired: coder-1 not seen since <TIME> (lease 1s) and its pid ")
            && note.ends_with(" is gone"),
        "{note}"
    );

    // Fencing: the first agent comes back and submits late.
    // ... and is told who holds it now, and that the sweep took its claim, when and why.
    let late = b.run(&["submit", "t-crash", "--as", "coder-1"]);
    late.code(3);
    assert_eq!(
        late.stderr,
        format!(
            "error: tasks/t-crash.md: transition 'submit' is not allowed: the task's status is claimed; allowed from claimed: release, start, fail, cancel; it is held by coder-2, not you; coder-1's claim was released by the sweep at {} ({}): claim it again if it is still to be done\n",
            release["at"].as_str().unwrap(),
            release["note"].as_str().unwrap()
        )
    );
    b.run(&[
        "edit",
        "t-crash",
        "--set",
        "note=late",
        "--extra-field",
        "note",
        "--as",
        "coder-1",
    ])
    .ok();
    assert!(b.read("tasks/t-crash.md").contains("claimed_by: coder-2\n"));
    // A second sweep for the same silence releases nothing more, and says so.
    b.run(&["sweep"]).ok().stdout_is("").stderr_is(
        "nothing to sweep: no stale claims, no expired session findings, no run outputs older than 7d\n",
    );
    assert_eq!(
        b.run(&["sweep", "--json"]).ok().stderr_is("").json(),
        serde_json::json!({"released": [], "expired": [], "runs_removed": 0, "temps_removed": []})
    );
}

#[test]
fn claim_next_respects_capabilities_and_ready_lists_claimable_tasks() {
    const SAME_AGE: &str = "created_at=2026-01-01T00:00:00Z";
    let b = TestBoard::new();
    b.task(
        "Needs rust",
        &[
            "--id",
            "t-rust",
            "-p",
            "0",
            "--set",
            "needs=[rust]",
            "--set",
            SAME_AGE,
        ],
    );
    // Equal priority and age: `ready` orders these two by id.
    b.task(
        "Needs js",
        &[
            "--id",
            "t-js",
            "-p",
            "0",
            "--set",
            "needs=[js]",
            "--set",
            SAME_AGE,
        ],
    );
    b.task("Anyone", &["--id", "t-any", "-p", "1"]);
    b.task("Waits", &["--id", "t-wait", "--depends-on", "t-any"]);
    let ids = |out: &crate::util::Out| {
        out.stdout
            .lines()
            .skip(1)
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(b.run(&["ready"]).ok()), ["t-js", "t-rust", "t-any"]);
    assert_eq!(ids(b.run(&["ready", "priority>0"]).ok()), ["t-any"]);
    b.run(&[
        "agent",
        "register",
        "--name",
        "rustacean",
        "--capabilities",
        "rust",
        "--pid",
        &std::process::id().to_string(),
    ])
    .ok();
    b.run(&["claim", "--next", "--as", "rustacean"])
        .ok()
        .stdout_is("claimed t-rust (rev 2, claimed)\n");
    b.run(&["claim", "--next", "--as", "rustacean"])
        .ok()
        .stdout_is("claimed t-any (rev 2, claimed)\n");
    b.run(&["claim", "--next", "--as", "rustacean"]).code(4);
    // An unregistered actor is not filtered.
    b.run(&["claim", "--next", "--as", "human"])
        .ok()
        .stdout_is("claimed t-js (rev 2, claimed)\n");
}

/// `ready` answers "what could I claim now?" by the rule `claim` applies: a registered
/// agent sees only the tasks whose `needs` its capabilities cover, is told how many others
/// are ready, `--all` lists them, and `claim --next` takes exactly what `ready` listed
/// first. An actor that never registered sees every ready task.
#[test]
fn ready_shows_a_registered_agent_what_it_may_claim() {
    let b = TestBoard::new();
    b.task(
        "Needs rust",
        &["--id", "t-rust", "-p", "2", "--needs", "rust"],
    );
    b.task("Needs js", &["--id", "t-js", "-p", "0", "--needs", "js"]);
    b.task(
        "Needs both",
        &["--id", "t-both", "-p", "1", "--needs", "rust,sql"],
    );
    b.task("Anyone", &["--id", "t-any", "-p", "3"]);
    let ids = |out: &crate::util::Out| {
        out.stdout
            .lines()
            .skip(1)
            .map(|l| l.split(' ').next().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    let pid = std::process::id().to_string();
    b.run(&[
        "agent",
        "register",
        "--as",
        "rustacean",
        "--capabilities",
        "rust",
        "--pid",
        &pid,
    ])
    .ok();
    let mine = b.run(&["ready", "--as", "rustacean"]);
    mine.ok().stderr_is(
        "2 more ready tasks need capabilities rustacean lacks (`tavern ready --all` lists them)\n",
    );
    assert_eq!(ids(&mine), ["t-rust", "t-any"]);
    let all = b.run(&["ready", "--as", "rustacean", "--all"]);
    all.ok().stderr_is("");
    assert_eq!(ids(&all), ["t-js", "t-both", "t-rust", "t-any"]);
    // One note for one task, with a query narrowing what is ready.
    b.run(&["ready", "--as", "rustacean", "priority<=1"])
        .ok()
        .stdout_is("")
        .stderr_is(
            "2 more ready tasks need capabilities rustacean lacks (`tavern ready --all` lists them)\n",
        );
    b.run(&["ready", "--as", "rustacean", "t-js"])
        .ok()
        .stderr_is(
            "1 more ready task needs capabilities rustacean lacks (`tavern ready --all` lists it)\n",
        );
    let json = b.run(&["ready", "--as", "rustacean", "--json"]);
    let v = json.ok().stderr_is("").json();
    assert_eq!(v["lacking"], 2);
    let listed: Vec<&str> = v["documents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["t-rust", "t-any"]);
    assert_eq!(
        b.run(&["ready", "--as", "rustacean", "--all", "--json"])
            .ok()
            .json()["lacking"],
        0
    );
    // Never registered: not held to capabilities, so everything ready is its to claim.
    let human = b.run(&["ready", "--as", "someone"]);
    human.ok().stderr_is("");
    assert_eq!(ids(&human), ["t-js", "t-both", "t-rust", "t-any"]);
    // claim --next takes what ready listed first, then the next, then there is none.
    b.run(&["claim", "--next", "--as", "rustacean"])
        .ok()
        .stdout_is("claimed t-rust (rev 2, claimed)\n");
    b.run(&["claim", "--next", "--as", "rustacean"])
        .ok()
        .stdout_is("claimed t-any (rev 2, claimed)\n");
    b.run(&["ready", "--as", "rustacean"])
        .ok()
        .stdout_is("")
        .stderr_is(
            "2 more ready tasks need capabilities rustacean lacks (`tavern ready --all` lists them)\n",
        );
    b.run(&["claim", "--next", "--as", "rustacean"]).code(4);
    // And claim by id refuses what ready left out, with the same rule's words.
    b.run(&["claim", "t-both", "--as", "rustacean"])
        .code(3)
        .stderr_is("error: tasks/t-both.md: needs sql, which rustacean does not have (its capabilities: rust)\n");
    let claims: Vec<String> = b
        .log()
        .iter()
        .filter(|e| e["op"] == "claim")
        .map(|e| {
            format!(
                "{} {}",
                e["actor"].as_str().unwrap(),
                e["doc"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        claims,
        ["rustacean tasks/t-rust.md", "rustacean tasks/t-any.md"]
    );
}

/// The agent is named by --as, as on heartbeat and deregister; --name still works.
#[test]
fn register_names_the_agent_with_as() {
    let b = TestBoard::new();
    let pid = std::process::id().to_string();
    b.run(&["agent", "register", "--as", "coder-9", "--pid", &pid])
        .ok()
        .stdout_is(&format!("registered coder-9 (pid {pid}, lease 5m)\n"));
    assert!(b.board().join("control/agents/coder-9.md").is_file());
    let mut c = b.cmd(&["agent", "register", "--pid", &pid]);
    c.env("TAVERN_AGENT", "coder-8");
    crate::util::output(c).ok();
    assert!(b.board().join("control/agents/coder-8.md").is_file());
    b.run(&["agent", "register", "--name", "coder-7", "--pid", &pid])
        .ok();
    b.run(&["agent", "heartbeat", "--as", "coder-7"]).ok();
    let log = b.log();
    assert_eq!(log.last().unwrap()["actor"], "coder-7");
}

/// Every column of `agent list` lines up, however many tasks an agent holds.
#[test]
fn agent_list_columns_line_up_with_three_held_tasks() {
    let b = TestBoard::new();
    let pid = std::process::id().to_string();
    for (name, caps) in [("coder-with-a-long-name", "rust"), ("c2", "go,sql")] {
        b.run(&[
            "agent",
            "register",
            "--as",
            name,
            "--capabilities",
            caps,
            "--pid",
            &pid,
        ])
        .ok();
    }
    for id in ["task-aaaa1", "task-bbbb2", "task-cccc3"] {
        b.task("Held", &["--id", id]);
        b.run(&["claim", id, "--as", "coder-with-a-long-name"]).ok();
    }
    let out = b.run(&["agent", "list"]);
    out.ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    let column = |l: &str, word: &str| l.find(word).unwrap_or_else(|| panic!("{word} in {l}"));
    let (short, long) = (lines[1], lines[2]);
    assert!(short.starts_with("c2 ") && long.starts_with("coder-with-a-long-name "));
    let caps = column(lines[0], "CAPABILITIES");
    assert_eq!(column(long, "rust"), caps, "\n{}", out.stdout);
    assert_eq!(column(short, "go,sql"), caps, "\n{}", out.stdout);
    let holds = column(lines[0], "HOLDS");
    assert_eq!(column(long, "task-aaaa1,task-bbbb2,task-cccc3"), holds);
    assert_eq!(column(short, "- "), holds, "\n{}", out.stdout);
}

/// The sweep archives the cards of agents gone for longer than the board's
/// `archive_agents_after` (deregistered, or stale: lease over and process gone), after
/// giving a stale one's claims back; the living stay, and `agent list` shows only them.
#[test]
fn the_sweep_archives_the_cards_of_agents_long_gone() {
    let b = TestBoard::new();
    b.write(
        "board.yaml",
        b.read("board.yaml")
            .replace("lease: 5m", "lease: 1s")
            .replace("archive_agents_after: 1d", "archive_agents_after: 2s"),
    );
    b.task("Held", &["--id", "t-held"]);
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id().to_string();
    dead.wait().unwrap();
    let me = std::process::id().to_string();
    for (name, pid) in [("coder-1", &dead_pid), ("coder-2", &me), ("coder-3", &me)] {
        b.run(&["agent", "register", "--name", name, "--pid", pid])
            .ok();
    }
    b.run(&["claim", "t-held", "--as", "coder-1"]).ok();
    b.run(&["agent", "deregister", "--as", "coder-2"]).ok();
    // Not yet: gone for less than two seconds.
    b.run(&["sweep"]).ok();
    assert!(b.board().join("control/agents/coder-2.md").exists());

    std::thread::sleep(Duration::from_millis(2500));
    b.run(&["agent", "heartbeat", "--as", "coder-3"]).ok();
    let card = b.read("control/agents/coder-1.md");
    b.run(&["sweep"]).ok();
    for gone in ["coder-1", "coder-2"] {
        assert!(!b.board().join(format!("control/agents/{gone}.md")).exists());
        assert!(
            b.board()
                .join(format!("archive/control/agents/{gone}.md"))
                .exists()
        );
    }
    assert_eq!(b.read("archive/control/agents/coder-1.md"), card);
    assert!(b.read("tasks/t-held.md").contains("status: pending"));
    let log = b.log();
    let moves: Vec<String> = log
        .iter()
        .filter(|e| e["op"] == "move" && e["actor"] == "tavern-sweep")
        .map(|e| redact_times(e["note"].as_str().unwrap()))
        .collect();
    assert_eq!(
        moves,
        [
            "archived: coder-1 gone since <TIME>: moved to archive/control/agents/coder-1.md",
            "archived: coder-2 gone since <TIME>: moved to archive/control/agents/coder-2.md",
        ]
    );
    let list = b.run(&["agent", "list"]);
    list.ok();
    assert!(list.stdout.contains("coder-3"), "{}", list.stdout);
    assert!(!list.stdout.contains("coder-1") && !list.stdout.contains("coder-2"));
    // A second sweep moves nothing more.
    b.run(&["sweep"]).ok();
    assert_eq!(b.log().len(), log.len());
}

/// The clock set back: an agent last seen an hour "ahead" would keep its lease for an
/// hour. Its age cannot be judged, so its recorded process decides: one whose process on
/// this host is gone is stale, and the sweep gives its claim back; a living one keeps
/// its claim.
#[test]
fn an_agent_seen_ahead_of_the_clock_is_stale_once_its_process_is_gone() {
    let b = TestBoard::new();
    b.task("Dead's", &["--id", "t-dead"]);
    b.task("Living's", &["--id", "t-live"]);
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id().to_string();
    dead.wait().unwrap();
    let me = std::process::id().to_string();
    for (name, pid, task) in [("coder-1", &dead_pid, "t-dead"), ("coder-2", &me, "t-live")] {
        b.run(&["agent", "register", "--name", name, "--pid", pid])
            .ok();
        b.run(&["claim", task, "--as", name]).ok();
        b.run(&["agent", "heartbeat", "--as", name]).ok();
        let beat = b.board().join(".state/heartbeats").join(name);
        std::fs::File::options()
            .write(true)
            .open(&beat)
            .unwrap()
            .set_modified(std::time::SystemTime::now() + Duration::from_secs(3600))
            .unwrap();
    }
    b.run(&["sweep"]).ok();
    assert!(b.read("tasks/t-dead.md").contains("status: pending"));
    let live = b.read("tasks/t-live.md");
    assert!(live.contains("claimed_by: coder-2"), "{live}");
    let list = b.run(&["agent", "list"]);
    list.ok();
    let line = |name: &str| {
        list.stdout
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} in {}", list.stdout))
            .to_string()
    };
    assert!(line("coder-1").contains("stale"), "{}", list.stdout);
    assert!(!line("coder-2").contains("stale"), "{}", list.stdout);
}
