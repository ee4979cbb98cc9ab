//! The one integration test binary: every module runs real `tavern` processes on temp
//! boards. A test at the bottom fails if a test file in tests/ is not listed here.

mod util;

mod actor;
mod agents;
mod archive;
mod bad_input;
mod claims_seams;
mod clients;
mod clones;
mod cmd_basics;
mod cmd_check;
mod cmd_claim;
mod cmd_diff;
mod cmd_edit;
mod cmd_init;
mod cmd_list;
mod cmd_log;
mod cmd_new;
mod cmd_show;
mod cmd_transitions;
mod completion;
mod concurrency;
mod crash;
mod crash_points;
mod damaged_log;
mod decisions;
mod delivery;
mod events;
mod graph;
mod holds;
mod holds_remote;
mod hostile_input;
mod index;
mod json_shapes;
mod keeper;
mod layering;
mod log_identity;
mod log_merge;
mod mcp;
mod observations;
mod questions;
mod readme;
mod review;
mod roundtrip;
mod search;
mod setup;
mod sources;
mod summary;
mod sync_branch;
mod sync_claims;
mod sync_races;
mod sync_scale;
mod sync_seams;
mod teamwork;
mod unknown_fields;
mod watch_alerts;
mod watch_changes;
mod watch_feed;
mod watch_lifecycle;
mod watch_pause;
mod watch_restart;
mod watch_runs;
mod watch_schedule;
mod web;
mod web_cache;
mod worktrees;

#[test]
fn every_test_file_is_included() {
    let listed = include_str!("tests.rs");
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/tests")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(stem) = name.strip_suffix(".rs")
            && stem != "tests"
        {
            assert!(
                listed.contains(&format!("mod {stem};")),
                "tests/{name} is not included in tests/tests.rs"
            );
        }
    }
}
