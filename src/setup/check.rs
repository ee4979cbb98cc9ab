//! `tavern setup --check [CLIENT]`: per client, whether tavern's hooks, plugin, MCP server
//! and notes are installed, whether the client trusts them (read from the client's own
//! records where it keeps them: Codex's config.toml), and whether the `tavern` they run is
//! on the PATH the client gives them. Changes nothing.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::{Value, json};

use super::clients::{self, CLIENTS};
use super::merge::HOOK_MARK;
use tavern::api::Result;

/// One finding: what was checked, whether it is fine, and what to do if not.
struct Item {
    what: &'static str,
    ok: bool,
    detail: String,
}

pub fn run(
    client: Option<&str>,
    user: bool,
    base: &Path,
    home: &Path,
    json_out: bool,
) -> Result<ExitCode> {
    let chosen: Vec<&str> = match client {
        Some(c) => vec![c],
        None => CLIENTS.to_vec(),
    };
    let mut reports = Vec::new();
    let mut all_ok = true;
    for c in chosen {
        let plans = clients::plans(c, user, base, home, true)?;
        let set_up = plans.first().is_some_and(clients::installed);
        let items = if set_up || client.is_some() {
            items(c, user, base, home, &plans)
        } else {
            Vec::new()
        };
        let ok = items.iter().all(|i| i.ok);
        all_ok &= ok;
        reports.push((c, set_up, ok, items));
    }
    if json_out {
        let clients: Vec<Value> = reports
            .iter()
            .map(|(c, set_up, ok, items)| {
                json!({"client": c, "set_up": set_up, "ok": ok, "checks": items.iter().map(|i| json!({"what": i.what, "ok": i.ok, "detail": i.detail})).collect::<Vec<_>>()})
            })
            .collect();
        let v =
            json!({"scope": if user {"user"} else {"project"}, "ok": all_ok, "clients": clients});
        super::out(&format!("{v}\n"))?;
    } else {
        let mut text = String::new();
        for (c, set_up, ok, items) in &reports {
            let state = match (set_up, ok) {
                (false, true) => "not set up",
                (_, true) => "ready",
                _ => "needs attention",
            };
            text.push_str(&format!("{c}: {state}\n"));
            for i in items {
                let mark = if i.ok { "ok  " } else { "FIX " };
                text.push_str(&format!("  {mark} {}: {}\n", i.what, i.detail));
            }
        }
        super::out(&text)?;
    }
    // As `tavern check`: every problem listed, exit 6.
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(6)
    })
}

fn items(client: &str, user: bool, base: &Path, home: &Path, plans: &[super::Plan]) -> Vec<Item> {
    let mut out = Vec::new();
    for plan in plans {
        let shown = super::display(&plan.path, base, home, user);
        let optional = plan.what == "MCP server";
        let here = clients::installed(plan);
        out.push(Item {
            what: plan.what,
            ok: here || optional,
            detail: match (here, optional) {
                (true, _) => format!("installed in {shown}"),
                (false, true) => {
                    format!("not installed in {shown} (`tavern setup {client} --mcp` adds it)")
                }
                (false, false) => format!("missing from {shown}: run `tavern setup {client}`"),
            },
        });
    }
    if client == "codex" {
        out.extend(codex_trust(user, base, home, &plans[0].path));
    }
    out.push(on_path(client));
    out
}

/// What Codex has recorded: the project trusted, and each of tavern's hooks reviewed
/// (`[hooks.state."FILE:EVENT:GROUP:HANDLER"] trusted_hash`).
fn codex_trust(user: bool, base: &Path, home: &Path, hooks_file: &Path) -> Vec<Item> {
    let codex_home = std::env::var_os("CODEX_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| home.join(".codex"));
    let config_path = codex_home.join("config.toml");
    let review = "start `codex` here, trust the folder, and at \"Hooks need review\" choose \"Trust all and continue\"";
    let config: toml::Table = match std::fs::read_to_string(&config_path) {
        Ok(t) => match toml::from_str(&t) {
            Ok(c) => c,
            Err(e) => {
                return vec![Item {
                    what: "trust",
                    ok: false,
                    detail: format!("{} is not valid TOML ({e})", config_path.display()),
                }];
            }
        },
        Err(_) => toml::Table::new(),
    };
    let mut out = Vec::new();
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    if !user {
        let root = canonical(base);
        let trusted = config
            .get("projects")
            .and_then(|p| p.get(root.to_string_lossy().as_ref()))
            .and_then(|p| p.get("trust_level"))
            .and_then(|t| t.as_str())
            == Some("trusted");
        out.push(Item {
            what: "folder trusted",
            ok: trusted,
            detail: if trusted {
                format!("Codex trusts {}", root.display())
            } else {
                format!(
                    "Codex does not trust {} and so reads none of its .codex/: {review}",
                    root.display()
                )
            },
        });
    }
    let hooks: Value = std::fs::read_to_string(hooks_file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    let file = canonical(hooks_file);
    let state = config.get("hooks").and_then(|h| h.get("state"));
    let mut untrusted = Vec::new();
    for (event, groups) in hooks["hooks"].as_object().into_iter().flatten() {
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            for (h, hook) in group["hooks"].as_array().into_iter().flatten().enumerate() {
                let ours = hook["command"]
                    .as_str()
                    .is_some_and(|c| c.starts_with(HOOK_MARK));
                if !ours {
                    continue;
                }
                let key = format!("{}:{}:{g}:{h}", file.display(), snake(event));
                let recorded = state
                    .and_then(|s| s.get(&key))
                    .and_then(|k| k.get("trusted_hash"))
                    .is_some();
                if !recorded {
                    untrusted.push(event.clone());
                }
            }
        }
    }
    out.push(Item {
        what: "hooks trusted",
        ok: untrusted.is_empty(),
        detail: if untrusted.is_empty() {
            format!(
                "Codex has recorded its trust in each of tavern's hooks ({}; it asks again when one changes)",
                config_path.display()
            )
        } else {
            format!(
                "Codex has not trusted {} and skips them without a word: {review}",
                untrusted.join(", ")
            )
        },
    });
    out
}

/// `SessionStart` as Codex names it in its trust records: `session_start`.
fn snake(event: &str) -> String {
    let mut out = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// Whether `tavern`, which the hooks and the MCP server entry run by name, is found: on
/// this PATH, and for Codex, whose shell tool runs `bash -lc`, on a login shell's.
fn on_path(client: &str) -> Item {
    if client == "codex" {
        let found = std::process::Command::new("bash")
            .args(["-lc", "command -v tavern"])
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
        return Item {
            what: "reachable",
            ok: found.is_some(),
            detail: match found {
                Some(p) => format!("a login shell (`bash -lc`, as Codex runs commands) finds tavern at {p}"),
                None => "a login shell (`bash -lc`, as Codex runs commands) finds no tavern: put its directory on the PATH your shell profile sets".into(),
            },
        };
    }
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("tavern"))
            .find(|p| p.is_file())
    });
    Item {
        what: "reachable",
        ok: found.is_some(),
        detail: match found {
            Some(p) => format!("tavern is on PATH at {}", p.display()),
            None => "tavern is not on PATH, where the client looks for the hooks' and the MCP server's command".into(),
        },
    }
}
