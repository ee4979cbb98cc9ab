//! The smallest end-to-end path: init, new, claim, and the log they leave.

use crate::util::TestBoard;

#[test]
fn new_claim_and_log() {
    let b = TestBoard::new();
    let id = b.task("Parse frontmatter", &["--as", "planner", "-p", "1"]);
    assert!(id.starts_with("task-") && id.len() == 9, "{id}");
    b.run(&["claim", &id, "--as", "coder-1"])
        .ok()
        .stdout_is(&format!("claimed {id} (rev 2, claimed)\n"));
    b.run(&["claim", &id, "--as", "coder-2"])
        .code(3)
        .stderr_is(&format!(
            "error: tasks/{id}.md: already claimed by coder-1 (status claimed)\n"
        ));
    let doc = b.read(&format!("tasks/{id}.md"));
    assert!(
        doc.contains("\nstatus: claimed\n") && doc.contains("\nclaimed_by: coder-1\n"),
        "{doc}"
    );
    let log = b.log();
    assert_eq!(log.len(), 2);
    assert_eq!(log[1]["op"], "claim");
    assert_eq!(log[1]["actor"], "coder-1");
    assert_eq!(log[1]["from"], "pending");
    assert_eq!(log[1]["to"], "claimed");
}
