//! `summary`: the after-a-context-reset digest.

use crate::util::TestBoard;

#[test]
fn summary_lists_agents_findings_tasks_questions_and_what_is_stuck() {
    let b = TestBoard::new();
    let old = "updated_at=2026-01-01T00:00:00Z";
    b.run(&[
        "agent",
        "register",
        "--name",
        "coder-1",
        "--pid",
        &std::process::id().to_string(),
    ])
    .ok();
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
