//! `summary`: the after-a-context-reset digest.

use crate::util::TestBoard;

#[test]
fn summary_lists_agents_findings_tasks_questions_and_what_is_stuck() {
    let b = TestBoard::new();
    let old = "updated_at=2026-01-01T00:00:00Z";
    register_live(&b, "coder-1");
    b.task(
        "Parser",
        &["--id", "t-parse", "-p", "1", "--context", "parser"],
    );
    b.task("Docs", &["--id", "t-docs", "-p", "2", "--context", "docs"]);
    b.run(&["claim", "t-parse", "--as", "coder-1"]).ok();
    // Make the claim look old: a hand edit of updated_at.
    b.write(
        "tasks/t-parse.md",
        b.read("tasks/t-parse.md").replace(
            &format!("updated_at: {}", field(&b, "t-parse", "updated_at")),
            &old.replace('=', ": "),
        ),
    );
    b.run(&[
        "new",
        "observation",
        "--title",
        "Tabs break keys",
        "--id",
        "obs-tab",
        "--set",
        "severity=high",
        "--set",
        "about=[t-parse]",
        "--context",
        "parser",
        "--set",
        "created_at=2026-01-01T00:00:00Z",
    ])
    .ok();
    b.run(&[
        "new",
        "observation",
        "--title",
        "Fine print",
        "--id",
        "obs-info",
        "--context",
        "docs",
    ])
    .ok();
    b.run(&[
        "new",
        "question",
        "--title",
        "Tabs or spaces?",
        "--id",
        "q-tabs",
        "--set",
        "blocks=[t-parse]",
        "--as",
        "coder-1",
        "--context",
        "parser",
    ])
    .ok();
    b.run(&["summary", "--context", "parser"]).ok().stdout_is(
        "# Board summary: context parser\n\n## Agents\n\n- coder-1 (active): holds t-parse [claimed]\n\n## Open findings\n\nhigh:\n- obs-tab Tabs break keys — about t-parse\n\n## Tasks\n\nclaimed (1):\n- t-parse Parser (coder-1)\n\n## Open questions\n\n- q-tabs Tabs or spaces? — asked by coder-1, blocks t-parse\n\n## Looks stuck\n\n- obs-tab: finding not acknowledged since 2026-01-01T00:00:00Z\n- t-parse: claimed by coder-1 with no change since 2026-01-01T00:00:00Z\n",
    );
    let v = b.run(&["summary", "--json"]).ok().json();
    assert_eq!(v["tasks"]["pending"][0]["id"], "t-docs");
    assert_eq!(v["findings"]["info"][0]["id"], "obs-info");
    b.run(&["summary", "--stuck-after", "soon"]).code(2);
}

/// Registers `name` as an agent whose process (this test's) is alive.
fn register_live(b: &TestBoard, name: &str) {
    let pid = std::process::id().to_string();
    b.run(&["agent", "register", "--name", name, "--pid", &pid])
        .ok();
}

fn field(b: &TestBoard, id: &str, key: &str) -> String {
    b.read(&format!("tasks/{id}.md"))
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{key}: ")).map(str::to_string))
        .unwrap()
}

#[test]
fn summary_says_the_board_is_paused() {
    let b = TestBoard::new();
    let v = b.run(&["summary", "--json"]).ok().json();
    assert_eq!(v["paused"], serde_json::Value::Null);
    b.run(&["pause", "release freeze"]).ok();
    b.run(&["summary"]).ok().stdout_is(
        "# Board summary\n\n**The board is paused**: release freeze. No task can be claimed and no knowledge source starts until it is resumed.\n\n## Agents\n\nNo registered agents.\n\n## Open findings\n\nNone.\n\n## Tasks\n\nNone.\n\n## Open questions\n\nNone.\n\n## Looks stuck\n\nNothing.\n",
    );
    assert_eq!(
        b.run(&["summary", "--json"]).ok().json()["paused"],
        "release freeze"
    );
}

/// Each list of the summary shows at most `--limit` items (the best first), says how many
/// more there are and which command lists them; those commands list exactly the rest, and
/// `--all` shows every item.
#[test]
fn summary_cuts_each_list_at_the_limit_and_names_the_command_for_the_rest() {
    let b = TestBoard::new();
    register_live(&b, "coder-1");
    for (i, id) in ["t-a", "t-b", "t-c", "t-d", "t-e"].iter().enumerate() {
        b.task(&format!("Task {id}"), &["--id", id, "-p", &i.to_string()]);
    }
    for id in ["t-c", "t-d", "t-e"] {
        b.run(&["claim", id, "--as", "coder-1"]).ok();
    }
    for i in 1..=3 {
        b.run(&[
            "new",
            "observation",
            "--title",
            &format!("Finding {i}"),
            "--id",
            &format!("obs-{i}"),
            "--set",
            "severity=high",
            "--set",
            &format!("created_at=2026-01-01T00:00:0{i}Z"),
        ])
        .ok();
        b.run(&[
            "new",
            "question",
            "--title",
            &format!("Question {i}"),
            "--id",
            &format!("q-{i}"),
            "--as",
            "coder-1",
            "--set",
            &format!("created_at=2026-01-01T00:00:0{i}Z"),
        ])
        .ok();
    }
    b.run(&["summary", "--limit", "2"]).ok().stdout_is(
        "# Board summary\n\n## Agents\n\n\
         - coder-1 (active): holds t-c [claimed], t-d [claimed] and 1 more: `tavern list tasks claimed_by=coder-1`\n\n\
         ## Open findings\n\nhigh (3):\n- obs-1 Finding 1\n- obs-2 Finding 2\n\
         - … and 1 more: `tavern list observations severity=high status=open,acknowledged`\n\n\
         ## Tasks\n\npending (2):\n- t-a Task t-a\n- t-b Task t-b\n\
         claimed (3):\n- t-c Task t-c (coder-1)\n- t-d Task t-d (coder-1)\n\
         - … and 1 more: `tavern list tasks status=claimed`\n\n\
         ## Open questions\n\n- q-1 Question 1 — asked by coder-1\n- q-2 Question 2 — asked by coder-1\n\
         - … and 1 more: `tavern questions`\n\n\
         ## Looks stuck\n\n\
         - obs-1: finding not acknowledged since 2026-01-01T00:00:01Z\n\
         - obs-2: finding not acknowledged since 2026-01-01T00:00:02Z\n\
         - … and 1 more\n",
    );
    // The commands named list the whole of each list, the items shown first among them.
    let ids = |args: &[&str]| -> Vec<String> {
        let v = b.run(args).ok().json();
        v["documents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        ids(&["list", "tasks", "status=claimed", "--json"]),
        ["t-c", "t-d", "t-e"]
    );
    assert_eq!(
        ids(&["list", "tasks", "claimed_by=coder-1", "--json"]),
        ["t-c", "t-d", "t-e"]
    );
    assert_eq!(
        ids(&[
            "list",
            "observations",
            "severity=high",
            "status=open,acknowledged",
            "--json"
        ]),
        ["obs-1", "obs-2", "obs-3"]
    );

    let v = b.run(&["summary", "--limit", "2", "--json"]).ok().json();
    assert_eq!(v["limit"], 2);
    assert_eq!(v["tasks"]["claimed"].as_array().unwrap().len(), 2);
    assert_eq!(v["agents"][0]["holds"].as_array().unwrap().len(), 2);
    assert_eq!(v["findings"]["high"].as_array().unwrap().len(), 2);
    assert_eq!(v["questions"].as_array().unwrap().len(), 2);
    assert_eq!(v["stuck"].as_array().unwrap().len(), 2);
    assert_eq!(
        v["totals"],
        serde_json::json!({
            "holds": {"coder-1": 3},
            "findings": {"high": 3},
            "tasks": {"pending": 2, "claimed": 3},
            "questions": 3,
            "stuck": 3,
        })
    );

    // `--all` shows every item, and no line says there are more.
    let all = b.run(&["summary", "--all"]).ok().text();
    assert!(!all.contains("more"), "{all}");
    for id in ["t-e", "obs-3", "q-3"] {
        assert!(all.contains(&format!("- {id} ")), "{id} in {all}");
    }
    assert!(all.contains("holds t-c [claimed], t-d [claimed], t-e [claimed]\n"));
    let v = b.run(&["summary", "--all", "--json"]).ok().json();
    assert_eq!(v["limit"], serde_json::Value::Null);
    assert_eq!(v["tasks"]["claimed"].as_array().unwrap().len(), 3);
    // By default each list shows 20; the two flags do not go together.
    assert_eq!(b.run(&["summary", "--json"]).ok().json()["limit"], 20);
    b.run(&["summary", "--limit", "2", "--all"]).code(2);
}

/// A finished task is counted from the read index's head and parsed only while it may be
/// among its state's first: the first ones stay right when most are passed over, and after
/// a task is edited in place behind the index's back.
#[test]
fn summary_finds_the_first_finished_tasks_among_many_passed_over() {
    let b = TestBoard::new();
    let task = |n: usize, priority: usize| {
        format!(
            "---\nid: t-{n:03}\ntitle: Task {n}\nstatus: done\npriority: {priority}\n\
             created_at: 2026-01-01T00:{:02}:{:02}Z\n---\n",
            n / 60,
            n % 60
        )
    };
    // 200 done tasks: the best are the priority-1 ones (every tenth), oldest first.
    for n in 0..200 {
        b.write(
            &format!("tasks/t-{n:03}.md"),
            task(n, if n % 10 == 7 { 1 } else { 3 }),
        );
    }
    let first = |b: &TestBoard| -> (Vec<String>, serde_json::Value) {
        let v = b.run(&["summary", "--limit", "3", "--json"]).ok().json();
        let ids = v["tasks"]["done"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect();
        (ids, v["totals"]["tasks"].clone())
    };
    // The first read builds the index (every task parsed), the second reads its heads.
    for _ in 0..2 {
        assert_eq!(
            first(&b),
            (
                vec!["t-007".into(), "t-017".into(), "t-027".into()],
                serde_json::json!({"done": 200})
            )
        );
    }
    // Edited in place, same size: t-150 becomes the most urgent of all.
    b.write("tasks/t-150.md", task(150, 0));
    assert_eq!(
        first(&b),
        (
            vec!["t-150".into(), "t-007".into(), "t-017".into()],
            serde_json::json!({"done": 200})
        )
    );
    // Its state changed: it leaves the finished ones, which are one fewer.
    b.write(
        "tasks/t-150.md",
        task(150, 0).replace("status: done", "status: pending"),
    );
    let v = b.run(&["summary", "--limit", "3", "--json"]).ok().json();
    assert_eq!(
        v["totals"]["tasks"],
        serde_json::json!({"pending": 1, "done": 199})
    );
    assert_eq!(v["tasks"]["pending"][0]["id"], "t-150");
    assert_eq!(v["tasks"]["done"][0]["id"], "t-007");
}
