//! Links the `tavern` binary statically, at a fixed address, on Linux with glibc.
//!
//! Every tavern call is a process start, and the hooks run one at every edit and tool
//! use, so what happens before `main` counts (README, "Enforced where agents edit"):
//!
//! - A position-independent executable makes the dynamic loader apply about 27,000
//!   relative relocations (and copy the pages they land on) before `main`: linked at a
//!   fixed address (`-no-pie`), there are none.
//! - A dynamically linked one then has the loader find, map and bind libc, libm and
//!   libgcc_s (about a fifth of an empty Rust program's start): linked statically, there
//!   is no loader at all.
//!
//! Rust's own way to link statically, `-C target-feature=+crt-static`, cannot be given to
//! one binary: in `RUSTFLAGS` or `.cargo/config.toml` it reaches the proc-macros too,
//! which then fail to build ("cannot produce proc-macro … does not support these crate
//! types") unless every build names `--target`. So the binary's link is given `-static`
//! and, first on its library path, small linker scripts named as the shared libraries
//! rustc asks for (`libc.so`, `libm.so`, `libgcc_s.so`, …), each naming the static
//! archive instead (`libc.a`, `libgcc_eh.a`, …): the link `crt-static` would make, with
//! every dependency built as before (no build takes longer) and `cargo install` doing
//! the same. Only the binary's link changes: the library and the tests link as before.
//! When a static archive is missing (a system without glibc's static libraries), or with
//! `TAVERN_LINK=dynamic` in the build's environment, it is linked dynamically, still at
//! a fixed address.
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=TAVERN_LINK");
    println!("cargo::rerun-if-env-changed=CC");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os != "linux" || env != "gnu" {
        return;
    }
    println!("cargo::rustc-link-arg-bins=-no-pie");
    let dynamic = std::env::var("TAVERN_LINK").is_ok_and(|v| v == "dynamic");
    let native = std::env::var("HOST") == std::env::var("TARGET");
    if dynamic || !native {
        return;
    }
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return;
    };
    if let Some(dir) = static_scripts(&out.join("static-libs")) {
        println!("cargo::rustc-link-arg-bins=-static");
        println!("cargo::rustc-link-arg-bins=-L{}", dir.display());
    }
}

/// Where the C compiler (rustc's linker driver) finds `name`, if it does.
fn archive(cc: &str, name: &str) -> Option<String> {
    let out = Command::new(cc)
        .arg(format!("-print-file-name={name}"))
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
    // Not found, it prints the name back.
    (out.status.success() && Path::new(&path).is_absolute() && Path::new(&path).exists())
        .then_some(path)
}

/// Writes a linker script for each shared library rustc names on a glibc target, naming
/// its static archives; the directory, or None when one is missing (then nothing is used).
fn static_scripts(dir: &Path) -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let a = |name: &str| archive(&cc, name);
    let (c, gcc, gcc_eh) = (a("libc.a")?, a("libgcc.a")?, a("libgcc_eh.a")?);
    let mut scripts = vec![
        // libc and the compiler's runtime depend on each other: one group.
        (
            "libc.so".to_string(),
            format!("GROUP ( \"{c}\" \"{gcc}\" \"{gcc_eh}\" )\n"),
        ),
        // What libgcc_s gives a dynamic binary (unwinding), from the static archives.
        (
            "libgcc_s.so".to_string(),
            format!("GROUP ( \"{gcc_eh}\" \"{gcc}\" )\n"),
        ),
    ];
    for lib in ["m", "util", "rt", "pthread", "dl"] {
        let path = a(&format!("lib{lib}.a"))?;
        scripts.push((format!("lib{lib}.so"), format!("INPUT ( \"{path}\" )\n")));
    }
    std::fs::create_dir_all(dir).ok()?;
    for (name, text) in scripts {
        std::fs::write(dir.join(name), text).ok()?;
    }
    Some(dir.to_path_buf())
}
