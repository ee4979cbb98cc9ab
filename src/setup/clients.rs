//! What `tavern setup` writes for each client, and where: project scope in the project,
//! user scope in the user's configuration directory.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::Plan;
use super::merge::{self, Hook};
use tavern::api::{Error, Result};

/// The agent-loop section for AGENTS.md / CLAUDE.md.
const NOTES: &str =
    "<!-- tavern:begin (added by `tavern setup`; `tavern setup CLIENT --remove` takes it out) -->
## Working on the tavern board

This project coordinates agents on a tavern board (`.tavern/`). Your session is registered
as an agent when it starts, and told its name then. Give that name to every tavern command
as `--as NAME`: Claude Code and OpenCode also set `TAVERN_AGENT` in their shell, Codex's
shell does not. The loop:

1. `tavern summary` and `tavern events`: where things stand, what changed since you looked.
2. `tavern claim --next [QUERY]`: exit 4 means nothing to claim, 5 a human paused the
   board, 3 another agent won (claim again).
3. `tavern start ID`, do the work, keep notes under `.tavern/solutions/ID/`.
4. `tavern post \"TITLE\" --topic T --severity S` for findings; `tavern ask \"…\" --blocks ID`
   when a human must decide.
5. `tavern submit ID` (or `tavern block ID` / `tavern release ID`). Review means someone
   else: another agent or a human approves or rejects it, never you.

With the MCP server (`tavern mcp`) the same loop is the tools status, claim, move, observe
and ask. Only humans decide permission requests.
<!-- tavern:end -->
";

fn hooks_of(client: &str, events: &[(&'static str, Option<&'static str>, &str)]) -> Vec<Hook> {
    events
        .iter()
        .map(|(event, matcher, what)| Hook {
            event,
            matcher: *matcher,
            command: format!("{}{client} {what}", merge::HOOK_MARK),
        })
        .collect()
}

fn json_hooks(path: PathBuf, hooks: Vec<Hook>) -> Plan {
    let name = path.display().to_string();
    Plan {
        path,
        what: "hooks",
        merge: Box::new(move |text, add| merge::hooks(&name, text, add.then_some(&hooks[..]))),
        notes: false,
    }
}

fn json_entry(path: PathBuf, outer: &'static str, value: serde_json::Value) -> Plan {
    let name = path.display().to_string();
    Plan {
        path,
        what: "MCP server",
        merge: Box::new(move |text, add| {
            merge::entry(&name, text, outer, "tavern", add.then(|| value.clone()))
        }),
        notes: false,
    }
}

fn notes(path: PathBuf) -> Plan {
    Plan {
        path,
        what: "agent loop notes",
        merge: Box::new(|text, add| Ok(merge::block(text, add.then_some(NOTES)))),
        notes: true,
    }
}

fn codex_server(path: PathBuf) -> Plan {
    let name = path.display().to_string();
    // The board's tools are pre-approved: `codex exec` never asks, so without this every
    // call fails ("requires approval, but approval policy is never").
    let block = "# tavern:begin (added by `tavern setup codex --mcp`)\n[mcp_servers.tavern]\ncommand = \"tavern\"\nargs = [\"mcp\", \"--client\", \"codex\"]\ndefault_tools_approval_mode = \"approve\"\n# tavern:end\n";
    Plan {
        path,
        what: "MCP server",
        merge: Box::new(move |text, add| {
            if add && merge::defines_outside_block(text, "[mcp_servers.tavern]") {
                return Err(Error::conflict(
                    &name,
                    "already has an [mcp_servers.tavern] table that is not tavern's; rename or remove it, nothing changed",
                ));
            }
            Ok(merge::block(text, add.then_some(block)))
        }),
        notes: false,
    }
}

/// The OpenCode plugin: runs the same hooks from inside OpenCode, whose own pid holds the
/// session's claims. It imports nothing, so it needs no package of OpenCode's installed.
const OPENCODE_PLUGIN: &str = r#"// tavern: added by `tavern setup opencode`; `tavern setup opencode --remove` takes it out.
// Registers this OpenCode process on the tavern board as one agent, opencode-PID (the
// process holds its claims), when a session is created or, in a session it did not see
// created (one resumed after a restart), at its first request to the model; gives the model
// the board summary in a new session (a message; a request sent before that message is in
// carries it in its system prompt) and again after a compaction; names the agent in the
// system prompt of every request (so a resumed session learns its new name) and sets
// TAVERN_AGENT in OpenCode's shell; heartbeats on tool use, adding to the tool's output what
// concerns the agent on the board (answers, decisions, findings, lost claims); deregisters once every session
// it saw created has been deleted; refuses an edit of a path another agent holds. Sessions
// of subagents (with a parent) are the same agent.
// Each step runs `tavern hook opencode EVENT --pid PID [--session ID]`.
export const TavernPlugin = async ({ $, client, directory }) => {
  const name = `opencode-${process.pid}`;
  // null: not registered yet; false: no board here; true: registered.
  let board = null;
  // The session-start hook while it runs: whatever needs it meanwhile waits for this one.
  let starting = null;
  const live = new Set();
  const again = new Map();
  // News from the board a tool's output could not carry, until the next request.
  const news = new Map();
  // A new session's start text until it is in the session as a message: OpenCode may send
  // the session's first request to the model before that, and the request then carries it.
  const intro = new Map();
  // Sessions whose start this process made: at their creation, or at a first request that
  // reached the model before OpenCode told of their creation (a loaded machine), whose
  // system prompt then carried the start text; their creation does not start them again.
  const started = new Set();
  const hook = async (what, session, extra = []) => {
    const args = ["hook", "opencode", what, "--pid", String(process.pid), ...extra];
    if (session) args.push("--session", String(session));
    try {
      const out = await $`tavern ${args}`.cwd(directory).quiet().nothrow().text();
      return out.trim();
    } catch {
      return "";
    }
  };
  const start = (session) => {
    starting ??= hook("session-start", session).then((text) => {
      board = text !== "";
      starting = null;
      return text;
    });
    return starting;
  };
  return {
    event: async ({ event }) => {
      const info = event.properties?.info;
      const id = info?.id ?? event.properties?.sessionID;
      if (event.type === "session.created" && id && !info?.parentID) {
        live.add(id);
        if (started.has(id)) return;
        started.add(id);
        const pending = start(id);
        intro.set(id, pending);
        const text = await pending;
        if (text) {
          try {
            await client.session.prompt({ path: { id }, body: { noReply: true, parts: [{ type: "text", text }] } });
          } catch {}
        }
        intro.delete(id);
      } else if (event.type === "session.deleted" && id && live.delete(id) && live.size === 0 && board) {
        board = null;
        await hook("session-end", id);
      }
    },
    "experimental.chat.system.transform": async (input, output) => {
      const pending = intro.get(input?.sessionID);
      let early = "";
      if (board === null) {
        if (input?.sessionID && !pending) started.add(input.sessionID);
        early = await start(input?.sessionID);
      }
      if (!board) return;
      output.system.push(
        `tavern: you are agent \`${name}\` on this project's tavern board, in this OpenCode process; TAVERN_AGENT=${name} is set in your shell (\`--as ${name}\` works too). A name that earlier messages of this conversation give you belonged to an earlier process: use this one.`,
      );
      const text = (pending && (await pending)) || early;
      if (text) output.system.push(text);
      const summary = again.get(input?.sessionID);
      if (summary) output.system.push(summary);
      const held = news.get(input?.sessionID);
      if (held) {
        news.delete(input?.sessionID);
        output.system.push(held);
      }
    },
    "shell.env": async (input, output) => {
      if (board) output.env.TAVERN_AGENT = name;
    },
    // Holds: an edit of a path another agent holds is refused (the error is what the
    // model reads); everything else goes through.
    "tool.execute.before": async (input, output) => {
      if (!board) return;
      const args = output?.args ?? {};
      const extra = [];
      for (const f of [args.filePath, args.file_path, args.path]) {
        if (typeof f === "string" && f) extra.push("--file", f);
      }
      if (typeof args.patchText === "string") extra.push("--patch", args.patchText);
      if (extra.length === 0) return;
      const refused = await hook("pre-edit", input?.sessionID, extra);
      if (refused) throw new Error(refused);
    },
    // After a tool use: a heartbeat, and what concerns this agent on the board (once,
    // bounded, fenced as data) added to the tool's output, which the model reads next; an
    // output it cannot be added to goes into the next request's system prompt.
    "tool.execute.after": async (input, output) => {
      if (board) {
        const text = await hook("heartbeat", input?.sessionID);
        if (!text) return;
        if (output && typeof output.output === "string") output.output += `\n\n${text}`;
        else news.set(input?.sessionID, [news.get(input?.sessionID), text].filter(Boolean).join("\n"));
      } else if (board === null) await start(input?.sessionID);
    },
    "experimental.session.compacting": async (input, output) => {
      const text = board ? await hook("compact", input?.sessionID) : await start(input?.sessionID);
      if (text) {
        output.context.push(text);
        // The summary the model writes may leave the board out: the requests after the
        // compaction carry it in their system prompt.
        again.set(input?.sessionID, text);
      }
    },
  };
};
"#;

/// A whole file tavern owns (its first line says so): the new content, or none.
fn owned_merge(name: &str, content: &str, text: Option<&str>, add: bool) -> Result<Option<String>> {
    match (text, add) {
        (None, true) => Ok(Some(content.to_string())),
        (Some(t), true) if t == content => Ok(Some(t.to_string())),
        (Some(t), true) if t.starts_with("// tavern:") => Ok(Some(content.to_string())),
        (Some(_), true) => Err(Error::conflict(
            name,
            "exists and is not tavern's plugin; move it away, nothing changed",
        )),
        (Some(t), false) if t.starts_with("// tavern:") => Ok(None),
        (text, false) => Ok(text.map(str::to_string)),
    }
}

fn owned_file(path: PathBuf, content: &'static str) -> Plan {
    let name = path.display().to_string();
    Plan {
        path,
        what: "plugin",
        merge: Box::new(move |text, add| owned_merge(&name, content, text, add)),
        notes: false,
    }
}

/// The git pre-commit hook: refuses a commit of paths another agent holds.
const PRE_COMMIT: &str = "#!/bin/sh\n# tavern: added by `tavern setup --pre-commit`; `tavern setup --pre-commit --remove` takes it out.\n# Refuses a commit of a path another agent holds (`tavern holds`); `git commit --no-verify` skips it.\nexec tavern hook git pre-commit\n";

/// The pre-commit hook in `hooks` (the repository's hooks directory): a whole file tavern
/// owns, refused over a hook that is not tavern's.
pub fn pre_commit(hooks: &Path) -> Plan {
    let path = hooks.join("pre-commit");
    let name = path.display().to_string();
    Plan {
        path,
        what: "git pre-commit hook",
        merge: Box::new(move |text, add| {
            let ours = |t: &str| t.lines().nth(1).is_some_and(|l| l.starts_with("# tavern:"));
            match (text, add) {
                (None, true) => Ok(Some(PRE_COMMIT.to_string())),
                (Some(t), true) if ours(t) => Ok(Some(PRE_COMMIT.to_string())),
                (Some(_), true) => Err(Error::conflict(
                    &name,
                    "exists and is not tavern's; add `tavern hook git pre-commit` to it yourself, nothing changed",
                )),
                (Some(t), false) if ours(t) => Ok(None),
                (text, false) => Ok(text.map(str::to_string)),
            }
        }),
        notes: false,
    }
}

/// Where an earlier version of setup put tavern's file: it goes, whether adding or not.
fn retired_file(path: PathBuf) -> Plan {
    let name = path.display().to_string();
    Plan {
        path,
        what: "plugin from an earlier setup",
        merge: Box::new(move |text, _| owned_merge(&name, "", text, false)),
        notes: false,
    }
}

/// What an opencode.json setup creates starts from. OpenCode adds `$schema` to one that
/// lacks it when it starts, which would leave the file changed since setup and so, after
/// `--remove`, a file of `$schema` alone; with it there, OpenCode leaves the file alone.
const OPENCODE_NEW: &str = "{\"$schema\": \"https://opencode.ai/config.json\"}";

fn opencode_start(text: Option<&str>, add: bool) -> Option<&str> {
    match text {
        None if add => Some(OPENCODE_NEW),
        _ => text,
    }
}

/// The user's opencode.json with the MCP server as `mcp.tavern`.
fn opencode_user_json(path: PathBuf, server: serde_json::Value) -> Plan {
    let name = path.display().to_string();
    Plan {
        path,
        what: "MCP server",
        merge: Box::new(move |text, add| {
            let text = opencode_start(text, add);
            merge::entry(&name, text, "mcp", "tavern", add.then(|| server.clone()))
        }),
        notes: false,
    }
}

/// The project's opencode.json: the plugin named in its `plugin` list, and with `server`
/// the MCP server as `mcp.tavern`.
fn opencode_json(path: PathBuf, server: Option<serde_json::Value>) -> Plan {
    let name = path.display().to_string();
    Plan {
        path,
        what: if server.is_some() {
            "plugin entry, MCP server"
        } else {
            "plugin entry"
        },
        merge: Box::new(move |text, add| {
            let text = opencode_start(text, add);
            let listed =
                merge::list_item(&name, text, "plugin", "./.tavern/clients/opencode.js", add)?;
            match &server {
                // Without --mcp an entry an earlier `--mcp` added stays: `--remove` takes it.
                None if add => Ok(listed),
                _ => merge::entry(
                    &name,
                    listed.as_deref(),
                    "mcp",
                    "tavern",
                    add.then(|| server.clone()).flatten(),
                ),
            }
        }),
        notes: false,
    }
}

fn config_home(home: &Path, var: &str, default: &[&str]) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .unwrap_or_else(|| default.iter().fold(home.to_path_buf(), |p, s| p.join(s)))
}

/// The user's file or the project's.
fn scoped(user: bool, user_file: PathBuf, project_file: PathBuf) -> PathBuf {
    if user { user_file } else { project_file }
}

/// What the user still does in the client itself once setup has written its files.
pub fn next_steps(client: &str, user: bool, mcp: bool) -> Vec<&'static str> {
    let mut steps = Vec::new();
    match client {
        "codex" => {
            steps.push(if user {
                "Codex runs these hooks only once you trust them: start `codex`, and at \"Hooks need review\" choose \"Trust all and continue\" (or review them one by one; `/hooks` lists them). Until then Codex, and `codex exec` above all, skips them without a word."
            } else {
                "Codex runs these hooks only once you trust them: start `codex` in this project, trust the folder (Codex reads a project's .codex/ only in a trusted project), and at \"Hooks need review\" choose \"Trust all and continue\" (or review them one by one; `/hooks` lists them). Until then Codex, and `codex exec` above all, skips them without a word."
            });
            steps.push("Codex runs shell commands in a login shell (`bash -lc`): tavern must be on the PATH your shell profile sets.");
        }
        "claude" if mcp && !user => steps.push(
            "Claude Code asks once, at its first interactive start here, to approve the project's MCP server `tavern` (.mcp.json).",
        ),
        _ => {}
    }
    steps
}

/// The clients setup knows.
pub const CLIENTS: [&str; 3] = ["claude", "codex", "opencode"];

/// The other clients set up in this scope whose agent-loop notes are the file `path`
/// (Codex and OpenCode share the project's AGENTS.md). A client counts as set up while its
/// first file (its hooks, or OpenCode's plugin) holds tavern's part; a file that cannot be
/// read or parsed counts as set up, so that in doubt the notes stay.
pub fn others_using(
    client: &str,
    path: &Path,
    user: bool,
    base: &Path,
    home: &Path,
) -> Vec<&'static str> {
    CLIENTS
        .into_iter()
        .filter(|other| *other != client)
        .filter(|other| {
            let Ok(theirs) = plans(other, user, base, home, false) else {
                return false;
            };
            theirs.iter().any(|p| p.notes && p.path == path)
                && theirs.first().is_some_and(installed)
        })
        .collect()
}

/// Whether the file of `plan` holds tavern's part.
pub fn installed(plan: &Plan) -> bool {
    match super::read(&plan.path) {
        Ok(None) => false,
        Ok(Some(text)) => (plan.merge)(Some(&text), false)
            .map_or(true, |without| without.as_deref() != Some(text.as_str())),
        Err(_) => true,
    }
}

/// The files of `client`, under `base` (the project, or the home directory with `user`).
pub fn plans(client: &str, user: bool, base: &Path, home: &Path, mcp: bool) -> Result<Vec<Plan>> {
    let mut plans = Vec::new();
    match client {
        "claude" => {
            let dir = base.join(".claude");
            plans.push(json_hooks(
                dir.join("settings.json"),
                hooks_of(
                    client,
                    &[
                        ("SessionStart", None, "session-start"),
                        (
                            "PreToolUse",
                            Some("Edit|Write|MultiEdit|NotebookEdit"),
                            "pre-edit",
                        ),
                        ("PostToolUse", Some("*"), "heartbeat"),
                        ("UserPromptSubmit", None, "turn"),
                        ("SessionEnd", None, "session-end"),
                    ],
                ),
            ));
            if mcp {
                plans.push(json_entry(
                    scoped(user, home.join(".claude.json"), base.join(".mcp.json")),
                    "mcpServers",
                    json!({"type": "stdio", "command": "tavern", "args": ["mcp", "--client", "claude"]}),
                ));
            }
            plans.push(notes(if user {
                dir.join("CLAUDE.md")
            } else {
                base.join("CLAUDE.md")
            }));
        }
        "codex" => {
            let dir = if user {
                config_home(home, "CODEX_HOME", &[".codex"])
            } else {
                base.join(".codex")
            };
            plans.push(json_hooks(
                dir.join("hooks.json"),
                // SessionStart without a matcher also fires after a compaction (source
                // `compact`), which is how the summary comes back: Codex drops what a
                // PostCompact hook prints.
                hooks_of(
                    client,
                    &[
                        ("SessionStart", None, "session-start"),
                        // Codex's edits are its apply_patch tool (the patch in the
                        // event's tool_input.command).
                        ("PreToolUse", Some("apply_patch|Edit|Write"), "pre-edit"),
                        ("PostToolUse", None, "heartbeat"),
                        ("SessionEnd", None, "session-end"),
                    ],
                ),
            ));
            if mcp {
                plans.push(codex_server(dir.join("config.toml")));
            }
            plans.push(notes(if user {
                dir.join("AGENTS.md")
            } else {
                base.join("AGENTS.md")
            }));
        }
        "opencode" => {
            let dir = if user {
                config_home(home, "XDG_CONFIG_HOME", &[".config"]).join("opencode")
            } else {
                base.join(".opencode")
            };
            let legacy = dir.join("plugins").join("tavern.js");
            // OpenCode installs its plugin package (some 60 MB) into every `.opencode/`
            // it finds: in a project the plugin lives in the board's directory instead, and
            // opencode.json names it. (The user's configuration directory gets that install
            // from OpenCode anyway.)
            let board_dir = base.join(".tavern");
            let server = json!({"type": "local", "command": ["tavern", "mcp", "--client", "opencode"], "enabled": true});
            if user || !board_dir.is_dir() {
                plans.push(owned_file(legacy, OPENCODE_PLUGIN));
                if mcp {
                    plans.push(opencode_user_json(dir.join("opencode.json"), server));
                }
            } else {
                plans.push(owned_file(
                    board_dir.join("clients").join("opencode.js"),
                    OPENCODE_PLUGIN,
                ));
                plans.push(opencode_json(
                    base.join("opencode.json"),
                    mcp.then_some(server),
                ));
                if legacy.exists() {
                    // What an earlier setup wrote there goes.
                    plans.push(retired_file(legacy));
                }
            }
            plans.push(notes(if user {
                dir.join("AGENTS.md")
            } else {
                base.join("AGENTS.md")
            }));
        }
        other => {
            return Err(Error::usage(format!(
                "setup: no client '{other}'; the clients are claude, codex and opencode"
            )));
        }
    }
    Ok(plans)
}
