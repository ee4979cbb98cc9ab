//! A test that cannot run here for want of a tool (python's MCP client, node, `script`, a
//! released agent client). Every test that returns early for that goes through [`missing`]:
//!
//! - under CI (`CI=true`) a missing tool fails the test: CI installs every tool, so nothing
//!   there passes without running;
//! - elsewhere the test is skipped, visibly: one line on the process's real stderr (the
//!   harness captures `eprintln!`, not a write to `std::io::stderr()`) naming the test, the
//!   tool and how to install it, with the number of tests skipped so far in this run; and
//!   one line appended to `target/skipped-tests.txt` (`PID TEST: TOOL`), so a run's skips
//!   can be counted after it (`grep -c "^PID "`).

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Tests skipped so far in this run (all integration tests are one process).
static SKIPPED: AtomicUsize = AtomicUsize::new(0);

/// Whether this run is CI's, where every tool must be there.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// The running test's name: libtest runs each test on a thread named after it.
fn test_name() -> String {
    std::thread::current()
        .name()
        .unwrap_or("an unnamed test")
        .to_string()
}

/// `tool` is missing (`how` says how to get it): fails the test under CI, else reports the
/// skip. The caller returns at once after it.
#[track_caller]
pub fn missing(tool: &str, how: &str) {
    let test = test_name();
    if under_ci() {
        panic!("{test}: {tool} is missing, and CI must run every test: {how}");
    }
    let n = SKIPPED.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: {tool} is missing ({how}); {n} test{} skipped so far in this run, listed in target/skipped-tests.txt",
        if n == 1 { "" } else { "s" }
    );
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/skipped-tests.txt");
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .and_then(|mut f| writeln!(f, "{} {test}: {tool}", std::process::id()));
}
