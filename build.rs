//! Links the `tavern` binary as a position-dependent executable on Linux.
//!
//! Every tavern call is a process start, and the hooks run one at every edit and tool
//! use. A position-independent executable makes the dynamic loader apply about 27,000
//! relative relocations (and copy the pages they land on) before `main`; linked at a
//! fixed address, there are none. Only the final link changes: the objects (and every
//! dependency) are built as before, so this costs no build time.
fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
