//! The task graph: cycles refused on write, `deps` and `tree`.

use crate::util::{TestBoard, snapshot};

fn chain() -> TestBoard {
    let b = TestBoard::new();
    b.task("Base", &["--id", "a"]);
    b.task("Middle", &["--id", "b", "--depends-on", "a"]);
    b.task(
        "Top",
        &["--id", "c", "--depends-on", "b", "--depends-on", "a"],
    );
    b
}

#[test]
fn a_cycle_is_refused_when_it_would_be_written() {
    let b = chain();
    let before = snapshot(&b);
    b.run(&["edit", "a", "--add", "depends_on=c"]).code(6).stderr_is("error: tasks/a.md: depends_on would make a dependency cycle: a -> c -> b -> a; nothing written\n");
    b.run(&["edit", "a", "--set", "depends_on=[b]"])
        .code(6)
        .stderr_has("a -> b -> a");
    b.run(&["edit", "a", "--set", "depends_on=a"])
        .code(6)
        .stderr_has("a -> a");
    assert_eq!(snapshot(&b), before);
    // A dangling reference that a new task would close is caught too.
    b.write(
        "tasks/d.md",
        "---\nid: d\ntitle: D\nstatus: pending\ndepends_on: [e]\n---\n",
    );
    b.run(&[
        "new",
        "task",
        "--title",
        "E",
        "--id",
        "e",
        "--depends-on",
        "d",
    ])
    .code(6)
    .stderr_has("e -> d -> e");
    assert!(!b.board().join("tasks/e.md").exists());
    // Edges that make no cycle are fine.
    b.run(&["edit", "c", "--remove", "depends_on=a"]).ok();
    b.run(&["check"])
        .code(6)
        .stderr_has("depends_on names 'e', which is not a task on this board");
}

#[test]
fn deps_shows_both_directions() {
    let b = chain();
    b.run(&["deps", "b"]).ok().stdout_is(
        "b [pending] Middle\nwaits for:\n  a [pending] Base\nwaited on by:\n  c [pending] Top\n",
    );
    b.run(&["deps", "a"]).ok().stdout_is("a [pending] Base\nwaits for: nothing\nwaited on by:\n  b [pending] Middle\n    c [pending] Top\n  c [pending] Top (see above)\n");
    let v = b.run(&["deps", "c", "--json"]).ok().json();
    assert_eq!(v["waits_for"][0]["id"], "b");
    assert_eq!(v["waits_for"][0]["children"][0]["id"], "a");
    assert_eq!(v["waited_on_by"], serde_json::json!([]));
    b.run(&["deps", "zzz"]).code(4);
}

#[test]
fn tree_shows_subtasks() {
    let b = TestBoard::new();
    b.task("Epic", &["--id", "epic"]);
    b.task("Part one", &["--id", "p1", "--set", "parent=epic"]);
    b.task("Part two", &["--id", "p2", "--set", "parent=epic"]);
    b.task("Detail", &["--id", "p1a", "--set", "parent=p1"]);
    b.run(&["start", "p1"]).code(3);
    b.run(&["tree", "epic"]).ok().stdout_is("epic [pending] Epic\n  p1 [pending] Part one\n    p1a [pending] Detail\n  p2 [pending] Part two\n");
    let v = b.run(&["tree", "epic", "--json"]).ok().json();
    assert_eq!(v["children"].as_array().unwrap().len(), 2);
}

#[test]
fn a_new_dependency_must_exist() {
    let b = chain();
    b.run(&["edit", "a", "--add", "depends_on=ghost"]).code(4).stderr_is(
        "error: task 'ghost' (named in depends_on of tasks/a.md) not found\nhint: `tavern list tasks` shows the tasks on the board\n",
    );
    b.run(&["edit", "a", "--add", "depends_on=../x"]).code(6);
    b.task("Other", &["--id", "o"]);
    b.run(&["edit", "a", "--add", "depends_on=o"]).ok();
}

#[test]
fn archived_tasks_count_in_the_graph_and_a_task_on_the_board_wins_over_an_archived_one() {
    let b = TestBoard::new();
    b.task("Epic", &["--id", "epic"]);
    b.task("Base", &["--id", "a"]);
    // x was archived with edges, and a new x on the board has none: the board's wins.
    b.write(
        "archive/tasks/x.md",
        "---\nid: x\ntitle: Old x\nstatus: done\ndepends_on: [a]\nparent: epic\n---\n",
    );
    b.write(
        "tasks/x.md",
        "---\nid: x\ntitle: New x\nstatus: pending\n---\n",
    );
    b.write(
        "archive/tasks/y.md",
        "---\nid: y\ntitle: Old y\nstatus: done\ndepends_on: [a, bad]\nparent: epic\n---\n",
    );
    // A task file that does not parse is no task: named, it shows as missing.
    b.write(
        "tasks/bad.md",
        "---\nid: bad\ntitle: [broken\nstatus: pending\n---\n",
    );
    b.write(
        "tasks/z.md",
        "---\nid: z\ntitle: Zed\nstatus: pending\ndepends_on: [y]\nparent: y\n---\n",
    );
    // Twice: from the files, then from the index's heads.
    for _ in 0..2 {
        b.run(&["deps", "a"]).ok().stdout_is("a [pending] Base\nwaits for: nothing\nwaited on by:\n  y [done] Old y (archived)\n    z [pending] Zed\n");
        b.run(&["deps", "x"])
            .ok()
            .stdout_is("x [pending] New x\nwaits for: nothing\nwaited on by: nothing\n");
        b.run(&["tree", "epic"])
            .ok()
            .stdout_is("epic [pending] Epic\n  y [done] Old y (archived)\n    z [pending] Zed\n");
        b.run(&["deps", "z", "--json"]).ok().stdout_is(concat!(
            r#"{"id":"z","title":"Zed","status":"pending","waits_for":[{"id":"y","title":"Old y","status":"done","archived":true,"children":[{"id":"a","title":"Base","status":"pending","children":[]},{"id":"bad","title":null,"status":null,"missing":true,"children":[]}]}],"waited_on_by":[]}"#,
            "\n"
        ));
    }
}
