//! The order activations start in, and what `watch --once` says about how it went.

#![cfg(unix)]

use crate::util::TestBoard;
use crate::util::watcher::{lines_of, once, ops};

#[test]
fn changes_of_one_batch_start_in_the_order_they_were_made() {
    let b = TestBoard::new();
    b.write(
        "control/sources/rec.md",
        "---\nname: rec\nwatch: [tasks]\non: [created]\nrun: echo \"$TAVERN_SEQ $TAVERN_ID\" >> ran.txt\n---\n",
    );
    once(&b, &[]).0.ok();
    // Made in an order that is not the order of their paths; handled in one batch.
    for id in ["task-c", "task-a", "task-b"] {
        b.task(id, &["--id", id]);
    }
    once(&b, &["--jobs", "1"]).0.ok();
    let seq = |id: &str| {
        ops(&b.log(), "create")
            .iter()
            .find(|e| e["doc"] == format!("tasks/{id}.md"))
            .unwrap()["seq"]
            .clone()
    };
    assert_eq!(
        lines_of(&b, "ran.txt"),
        ["task-c", "task-a", "task-b"]
            .iter()
            .map(|id| format!("{} {id}", seq(id)))
            .collect::<Vec<_>>()
    );
}
