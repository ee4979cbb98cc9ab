//! The one integration test binary: every module runs real `tavern` processes on temp
//! boards. A test at the bottom fails if a test file in tests/ is not listed here.

mod util;

mod bad_input;
mod cli_docs;
mod cli_init;
mod cli_log;
mod cli_workflow;
mod cmd_basics;
mod contention;
mod kill;
mod roundtrip;

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
