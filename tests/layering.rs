//! The line between the library and its front-ends (README, "The code"). The library is
//! src/lib.rs and every module it declares: it never prints, has no clap and names no
//! command-line flag, so that the MCP server and the web dashboard can use every call as
//! the CLI does. The front-ends are the binary's modules (src/main.rs, src/cli/, src/mcp/,
//! src/web/, src/setup/): they parse, call `api` and render.
//!
//! That the front-ends reach the library only through `api` is the compiler's to hold:
//! every other library module is `pub(crate)`. What it cannot hold is checked here: that
//! src/lib.rs keeps it so (no other public module or re-export), that no front-end uses the
//! tests' hooks (`tavern::testing`), and what the library's text says.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The binary and its front-end trees: the only places allowed to print and parse flags.
const FRONT_ENDS: [&str; 5] = [
    "src/main.rs",
    "src/cli/",
    "src/mcp/",
    "src/web/",
    "src/setup/",
];

/// Offenders known while they are being removed: (file, what it does). The list may only
/// shrink: an entry that no longer offends fails the test too, so remove it with the fix.
const KNOWN: &[(&str, &str)] = &[
    ("src/check.rs", "tavern sweep"),
    ("src/watch/event_loop.rs", "tavern watch"),
    ("src/watch/lock.rs", "tavern watch"),
];

/// Text that names a command but is no hint to type it: what tavern writes on disk says
/// which command wrote it (a file's header, a log note, a claim record's commit message).
const FORMATS: &[(&str, &str)] = &[
    ("src/layout.rs", "tavern watch"),
    ("src/sync/claims/record.rs", "tavern claim"),
    ("src/sync/exchange.rs", "tavern sync"),
    ("src/sync/mod.rs", "tavern sync"),
    ("src/watch/activations.rs", "tavern watch"),
    ("src/watch/reconcile/written.rs", "tavern watch"),
    ("src/watch/report.rs", "tavern resume"),
    ("src/watch/report.rs", "tavern watch"),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/…` with forward slashes, as FRONT_ENDS and KNOWN spell it.
fn rel(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap()
        .to_string_lossy()
        .replace('\\', "/")
}

fn is_front_end(rel: &str) -> bool {
    FRONT_ENDS.iter().any(|f| {
        if f.ends_with('/') {
            rel.starts_with(f)
        } else {
            rel == *f
        }
    })
}

/// A source file split into its code (comments and literals blanked) and the contents of
/// its string literals. Unit tests at the end (`#[cfg(test)]`) are left out: they may
/// quote what a front-end would type.
struct Lexed {
    code: String,
    strings: Vec<String>,
}

fn lex(text: &str) -> Lexed {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(at) => &text[..at],
        None => text,
    };
    let c: Vec<char> = text.chars().collect();
    let mut code = String::new();
    let mut strings = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (next == Some('"') || next == Some('#'))
            && !ident(c.get(i.wrapping_sub(1)))
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                code.push(c[i]);
                i += 1;
                continue;
            }
            let start = j + 1;
            let mut k = start;
            loop {
                if k >= c.len() {
                    break;
                }
                if c[k] == '"' && (1..=hashes).all(|h| c.get(k + h) == Some(&'#')) {
                    break;
                }
                k += 1;
            }
            strings.push(c[start..k.min(c.len())].iter().collect());
            code.push_str("\"\"");
            i = k + 1 + hashes;
        } else if c[i] == '"' {
            let mut s = String::new();
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    s.push(c[i]);
                    i += 1;
                }
                if i < c.len() {
                    s.push(c[i]);
                }
                i += 1;
            }
            i += 1;
            strings.push(s);
            code.push_str("\"\"");
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\'') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                i = j + 1;
                code.push_str("' '");
            } else if c.get(i + 2) == Some(&'\'') {
                i += 3;
                code.push_str("' '");
            } else {
                code.push(c[i]);
                i += 1;
            }
        } else {
            code.push(c[i]);
            i += 1;
        }
    }
    Lexed { code, strings }
}

fn ident(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Whether `code` uses `word` as a whole token (not as the tail of a longer name).
fn uses(code: &str, word: &str) -> bool {
    code.match_indices(word).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + word.len()..].chars().next();
        // `clap` must not be the tail of a longer name; `print!` ends in its own `!`.
        let whole_after = !word.ends_with(|l: char| l.is_alphanumeric()) || !ident(after.as_ref());
        !ident(before.as_ref()) && whole_after
    })
}

/// Every long flag the CLI defines, read from its clap attributes (`#[arg(long …)]` on a
/// field, or `long = "name"`), plus clap's own.
fn cli_flags() -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&root().join("src/cli"), &mut files);
    let mut flags: BTreeSet<String> = ["help", "version"].map(String::from).into();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (at, _) in text.match_indices("#[arg(") {
            let attr_end = at + text[at..].find(")]").unwrap();
            let attr = &text[at..attr_end];
            let Some(long) = attr.find("long") else {
                continue;
            };
            let rest = attr[long + 4..].trim_start();
            if let Some(named) = rest.strip_prefix('=') {
                let named = named.trim_start().trim_start_matches('"');
                flags.insert(named[..named.find('"').unwrap()].to_string());
            } else {
                // The field below the attributes names the flag: `pub if_rev: …` is --if-rev.
                let field = text[attr_end..]
                    .lines()
                    .map(str::trim)
                    .find(|l| {
                        !l.is_empty()
                            && !l.starts_with("#[")
                            && !l.starts_with("///")
                            && !l.starts_with(')')
                    })
                    .unwrap();
                let name = field.trim_start_matches("pub ").split(':').next().unwrap();
                flags.insert(name.trim().replace('_', "-"));
            }
        }
    }
    flags
}

/// Flags tavern's own CLI shares with a program the library runs: `--quiet` is also git's,
/// on the git command lines `sync` builds.
const OTHER_PROGRAMS: &[&str] = &["quiet"];

/// The flags a string names: `--name` not part of a longer dash run or word.
fn flags_in(s: &str, flags: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in s.match_indices("--") {
        if s[..at].ends_with('-') {
            continue;
        }
        let name: String = s[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if flags.contains(&name) && !OTHER_PROGRAMS.contains(&name.as_str()) {
            found.push(format!("--{name}"));
        }
    }
    found
}

/// The commands the CLI defines: the variants of `enum Command` in src/cli/mod.rs, in
/// the kebab case clap gives them.
fn cli_commands() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("src/cli/mod.rs")).unwrap();
    let start = text.find("pub enum Command {").unwrap();
    let body = &text[start..start + text[start..].find("\n}").unwrap()];
    body.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(|c: char| c.is_ascii_uppercase()))
        .map(|l| {
            let name: String = l
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            let mut kebab = String::new();
            for (i, c) in name.chars().enumerate() {
                if c.is_ascii_uppercase() && i > 0 {
                    kebab.push('-');
                }
                kebab.push(c.to_ascii_lowercase());
            }
            kebab
        })
        .filter(|n| n != "custom")
        .collect()
}

/// The commands a string tells the reader to run: `tavern NAME` with NAME a command.
fn commands_in(s: &str, commands: &BTreeSet<String>) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in s.match_indices("tavern ") {
        if s[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-') {
            continue;
        }
        let name: String = s[at + 7..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if commands.contains(&name) {
            found.push(format!("tavern {name}"));
        }
    }
    found
}

/// What each library file does that only a front-end may: (file, what) pairs.
fn offences() -> BTreeSet<(String, String)> {
    let flags = cli_flags();
    assert!(
        ["if-rev", "force", "set", "as", "json", "board"]
            .iter()
            .all(|f| flags.contains(*f)),
        "the flag reader missed flags the CLI has: {flags:?}"
    );
    let commands = cli_commands();
    assert!(
        ["list", "agent", "init", "answer", "watch", "sweep"]
            .iter()
            .all(|c| commands.contains(*c)),
        "the command reader missed commands the CLI has: {commands:?}"
    );
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut out = BTreeSet::new();
    for f in files {
        let rel = rel(&f);
        if is_front_end(&rel) {
            continue;
        }
        let lexed = lex(&std::fs::read_to_string(&f).unwrap());
        for word in [
            "print!",
            "println!",
            "eprint!",
            "eprintln!",
            "dbg!",
            "clap",
            "stdout()",
            "stderr()",
        ] {
            if uses(&lexed.code, word) {
                out.insert((rel.clone(), word.to_string()));
            }
        }
        for s in &lexed.strings {
            for flag in flags_in(s, &flags) {
                out.insert((rel.clone(), flag));
            }
            for command in commands_in(s, &commands) {
                out.insert((rel.clone(), command));
            }
        }
    }
    out
}

#[test]
fn the_library_never_prints_and_names_no_flag() {
    let formats: BTreeSet<(String, String)> = FORMATS
        .iter()
        .map(|(f, w)| (f.to_string(), w.to_string()))
        .collect();
    let found: BTreeSet<_> = offences().difference(&formats).cloned().collect();
    let known: BTreeSet<(String, String)> = KNOWN
        .iter()
        .map(|(f, w)| (f.to_string(), w.to_string()))
        .collect();
    let new: Vec<_> = found.difference(&known).collect();
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        new.is_empty(),
        "library files that print, use clap, name a CLI flag or tell to run a command (move \
         it to a front-end: return typed data, error::Input or error::Command, and let \
         src/cli/ render it): {new:?}"
    );
    assert!(
        gone.is_empty(),
        "fixed, so remove from KNOWN in tests/layering.rs: {gone:?}"
    );
}

#[test]
fn the_lexer_tells_code_from_strings_and_comments() {
    let l = lex(concat!(
        "// println!(\"--force\")\n",
        "let a = \"say --if-rev\"; let r = r#\"a \"--set\" b\"#; let c = '\"';\n",
        "fn f<'a>(x: &'a str) { eprintln!(\"{x}\") }\n",
        "#[cfg(test)]\nmod tests { fn t() { println!(\"--as\") } }\n"
    ));
    assert_eq!(l.strings, ["say --if-rev", "a \"--set\" b", "{x}"]);
    assert!(uses(&l.code, "eprintln!") && !uses(&l.code, "println!"));
    let flags: BTreeSet<String> = ["if-rev", "set", "as"].map(String::from).into();
    assert_eq!(
        flags_in("use --if-rev N, not ---, --setx or --as", &flags),
        ["--if-rev", "--as"]
    );
    let commands: BTreeSet<String> = ["list", "agent"].map(String::from).into();
    assert_eq!(
        commands_in(
            "`tavern list tasks`, tavern agent list; not tavern listing, mytavern list, tavern manages",
            &commands
        ),
        ["tavern list", "tavern agent"]
    );
}

/// The library's public items, as src/lib.rs declares them: `api`, and the hidden hooks
/// tavern's own tests use. Anything else made public would be a second door.
#[test]
fn api_is_the_only_public_module() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let code = lex(&lib).code;
    // Items at the top level (not indented), public to the world (`pub`, not `pub(crate)`).
    let public: Vec<&str> = code.lines().filter(|l| l.starts_with("pub ")).collect();
    assert_eq!(
        public,
        ["pub mod api;", "pub mod testing {"],
        "src/lib.rs: only `api` is public (and the tests' hooks); make the rest pub(crate) and \
         re-export what front-ends need from api"
    );
}

/// The tests' hooks are for tests/: no front-end takes that way round `api`.
#[test]
fn no_front_end_uses_the_tests_hooks() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let users: Vec<String> = files
        .iter()
        .map(|f| rel(f))
        .filter(|r| is_front_end(r))
        .filter(|r| {
            let text = std::fs::read_to_string(root().join(r)).unwrap();
            uses(&lex(&text).code, "tavern::testing")
        })
        .collect();
    assert!(
        users.is_empty(),
        "front-ends using tavern::testing: {users:?}"
    );
}

/// The front-ends stand side by side: only the command line, which starts the others
/// (`tavern mcp`, `tavern serve`, `tavern setup`, `tavern hook`), names them. What two
/// of them share is a use case, and belongs in `api`.
#[test]
fn front_ends_do_not_reach_into_each_other() {
    let mut found = Vec::new();
    for own in ["mcp", "web", "setup"] {
        let mut files = Vec::new();
        rust_files(&root().join("src").join(own), &mut files);
        for f in files {
            let code = lex(&std::fs::read_to_string(&f).unwrap()).code;
            for other in ["cli", "mcp", "web", "setup"] {
                if other != own && uses(&code, &format!("crate::{other}::")) {
                    found.push(format!("{} uses crate::{other}", rel(&f)));
                }
            }
        }
    }
    assert!(found.is_empty(), "{found:?}");
}

/// Who is acting is found in one place (`api::named_actor`, `api::named_agent`): no other
/// file reads the variables that name the actor, so every front-end finds the same one.
#[test]
fn only_api_reads_who_is_acting_from_the_environment() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut found = Vec::new();
    for f in &files {
        let r = rel(f);
        if r == "src/api/mod.rs" {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        for var in ["TAVERN_AGENT", "USER", "LOGNAME"] {
            for read in ["var(", "var_os("] {
                if text.contains(&format!("{read}\"{var}\")")) {
                    found.push(format!("{r} reads {var}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "find who acts through tavern::api::named_actor or named_agent: {found:?}"
    );
}
