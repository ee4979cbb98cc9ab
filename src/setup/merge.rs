//! Merging tavern's entries into a client's configuration files without losing anything of
//! the user's: JSON settings (hook groups, server entries), marked blocks in text files
//! (AGENTS.md, CLAUDE.md, config.toml), and whole files tavern owns (a plugin).
//!
//! Each merge is a pure function from the file's current text (None: no such file) to its
//! new text (None: no file); applying, showing and undoing it is the caller's.

use serde_json::{Map, Value};

use tavern::api::{Error, Result};

/// What marks a command as one tavern installed: every hook runs `tavern hook …`.
pub const HOOK_MARK: &str = "tavern hook ";

fn parse_object(path: &str, text: Option<&str>) -> Result<Map<String, Value>> {
    match text {
        None => Ok(Map::new()),
        Some(t) if t.trim().is_empty() => Ok(Map::new()),
        Some(t) => match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(o)) => Ok(o),
            Ok(_) => Err(Error::input(format!(
                "{path}: expected a JSON object at the top; nothing changed"
            ))),
            Err(e) => Err(Error::input(format!(
                "{path}: not valid JSON ({e}); fix it or move it away, nothing changed"
            ))),
        },
    }
}

fn render(o: Map<String, Value>) -> Option<String> {
    if o.is_empty() {
        return None;
    }
    let mut text = serde_json::to_string_pretty(&Value::Object(o)).unwrap_or_default();
    text.push('\n');
    Some(text)
}

/// Keeps the user's text when the merge changes nothing, so a second run writes nothing
/// even if tavern would have formatted the file differently.
fn unless_same(
    old: Option<&str>,
    old_value: &Map<String, Value>,
    new: Map<String, Value>,
) -> Option<String> {
    if &new == old_value {
        return old.map(str::to_string);
    }
    render(new)
}

fn is_ours(hook: &Value) -> bool {
    hook.get("command")
        .and_then(Value::as_str)
        .is_some_and(|c| c.starts_with(HOOK_MARK) || c.contains(&format!(" {HOOK_MARK}")))
}

/// One hook to install: the event, an optional matcher, the command.
pub struct Hook {
    pub event: &'static str,
    pub matcher: Option<&'static str>,
    pub command: String,
}

/// Removes tavern's hooks from a `{"hooks": {EVENT: [{matcher, hooks: [..]}]}}` object,
/// dropping groups, events and the `hooks` key that only held them.
fn strip_hooks(o: &mut Map<String, Value>) {
    let Some(Value::Object(events)) = o.get_mut("hooks") else {
        return;
    };
    let mut emptied = Vec::new();
    for (event, groups) in events.iter_mut() {
        let Value::Array(groups) = groups else {
            continue;
        };
        let before = groups.len();
        groups.retain_mut(|g| {
            let Some(Value::Array(hooks)) = g.get_mut("hooks") else {
                return true;
            };
            let n = hooks.len();
            hooks.retain(|h| !is_ours(h));
            // A group goes only when it held nothing but tavern's hooks.
            !(hooks.is_empty() && n > 0)
        });
        if groups.is_empty() && before > 0 {
            emptied.push(event.clone());
        }
    }
    let had = events.len();
    for e in emptied {
        events.remove(&e);
    }
    if events.is_empty() && had > 0 {
        o.remove("hooks");
    }
}

/// The settings with exactly `hooks` as tavern's (None: none of tavern's).
pub fn hooks(path: &str, text: Option<&str>, hooks: Option<&[Hook]>) -> Result<Option<String>> {
    let old = parse_object(path, text)?;
    let o = old.clone();
    if let Some(events) = o.get("hooks")
        && !events.is_object()
    {
        return Err(Error::input(format!(
            "{path}: `hooks` is not an object; nothing changed"
        )));
    }
    // Take ours out, then put them back where they were (or at the end): a second run with
    // the same hooks leaves the value as it was.
    let mut before = o.clone();
    strip_hooks(&mut before);
    let wanted = match hooks {
        None => before,
        Some(list) => {
            let mut with = o.clone();
            let events = with
                .entry("hooks")
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
                .expect("checked above");
            for h in list {
                let group = {
                    let mut g = Map::new();
                    if let Some(m) = h.matcher {
                        g.insert("matcher".into(), Value::String(m.into()));
                    }
                    g.insert(
                        "hooks".into(),
                        serde_json::json!([{"type": "command", "command": h.command}]),
                    );
                    Value::Object(g)
                };
                let groups = events
                    .entry(h.event)
                    .or_insert_with(|| Value::Array(Vec::new()));
                let Value::Array(groups) = groups else {
                    return Err(Error::input(format!(
                        "{path}: hooks.{} is not a list; nothing changed",
                        h.event
                    )));
                };
                let present = groups.iter().any(|g| g == &group);
                if !present {
                    // An older version of ours goes; the user's groups stay.
                    for g in groups.iter_mut() {
                        if let Some(Value::Array(hs)) = g.get_mut("hooks") {
                            hs.retain(|x| !is_ours(x));
                        }
                    }
                    groups.retain(|g| {
                        !g.get("hooks")
                            .and_then(Value::as_array)
                            .is_some_and(|h| h.is_empty())
                    });
                    groups.push(group);
                }
            }
            with
        }
    };
    Ok(unless_same(text, &old, wanted))
}

/// The settings with `value` under `outer.name` (None: without it), e.g. `mcpServers.tavern`.
pub fn entry(
    path: &str,
    text: Option<&str>,
    outer: &str,
    name: &str,
    value: Option<Value>,
) -> Result<Option<String>> {
    let old = parse_object(path, text)?;
    let mut o = old.clone();
    match value {
        Some(v) => {
            let servers = o.entry(outer).or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(servers) = servers else {
                return Err(Error::input(format!(
                    "{path}: `{outer}` is not an object; nothing changed"
                )));
            };
            if let Some(existing) = servers.get(name)
                && existing != &v
                && !is_tavern_server(existing)
            {
                return Err(Error::conflict(
                    path,
                    format!(
                        "already has a `{outer}.{name}` entry that is not tavern's; rename or remove it, nothing changed"
                    ),
                ));
            }
            servers.insert(name.into(), v);
        }
        None => {
            if let Some(Value::Object(servers)) = o.get_mut(outer)
                && servers.get(name).is_some_and(is_tavern_server)
            {
                servers.remove(name);
                // The table goes too when tavern's entry was all it held.
                if servers.is_empty() {
                    o.remove(outer);
                }
            }
        }
    }
    Ok(unless_same(text, &old, o))
}

/// The settings with the string `item` in the list `key` (added at the end), or without it;
/// a list that held only tavern's item goes with it.
pub fn list_item(
    path: &str,
    text: Option<&str>,
    key: &str,
    item: &str,
    add: bool,
) -> Result<Option<String>> {
    let old = parse_object(path, text)?;
    let mut o = old.clone();
    let list = match o.get(key) {
        None => Vec::new(),
        Some(Value::Array(l)) => l.clone(),
        Some(_) => {
            return Err(Error::input(format!(
                "{path}: `{key}` is not a list; nothing changed"
            )));
        }
    };
    let has = list.iter().any(|v| v == item);
    let list: Vec<Value> = match (add, has) {
        (true, false) => list
            .into_iter()
            .chain([Value::String(item.into())])
            .collect(),
        (false, true) => list.into_iter().filter(|v| v != item).collect(),
        _ => list,
    };
    if list.is_empty() {
        o.remove(key);
    } else {
        o.insert(key.into(), Value::Array(list));
    }
    Ok(unless_same(text, &old, o))
}

/// A server entry that runs `tavern mcp`, whichever client's shape it has.
fn is_tavern_server(v: &Value) -> bool {
    let text = v.to_string();
    text.contains("\"tavern\"") && text.contains("\"mcp\"")
}

pub const BEGIN: &str = "tavern:begin";
pub const END: &str = "tavern:end";

/// Where a marked block starts and ends (byte offsets, whole lines).
fn find_block(text: &str) -> Option<(usize, usize)> {
    let mut start = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if start.is_none() && line.contains(BEGIN) {
            start = Some(offset);
        }
        offset += line.len();
        if let Some(s) = start
            && line.contains(END)
        {
            return Some((s, offset));
        }
    }
    None
}

/// The text with `block` (already holding its begin and end lines) as tavern's block, or
/// without it (None). An added block is separated from what precedes it by a blank line;
/// taking it out takes that line too.
pub fn block(text: Option<&str>, block: Option<&str>) -> Option<String> {
    let current = text.unwrap_or("");
    let (head, tail) = match find_block(current) {
        Some((s, e)) => {
            let mut head = &current[..s];
            // The blank line this added before the block goes with it.
            if head.ends_with("\n\n") {
                head = &head[..head.len() - 1];
            }
            (head.to_string(), current[e..].to_string())
        }
        None => (current.to_string(), String::new()),
    };
    let out = match block {
        None => format!("{head}{tail}"),
        Some(b) => {
            let mut head = head;
            if !head.is_empty() && !head.ends_with('\n') {
                head.push('\n');
            }
            if !head.is_empty() {
                head.push('\n');
            }
            format!("{head}{b}{tail}")
        }
    };
    if out.is_empty() {
        return None;
    }
    Some(out)
}

/// Whether a text file already defines `needle` outside tavern's block.
pub fn defines_outside_block(text: Option<&str>, needle: &str) -> bool {
    let Some(t) = text else { return false };
    let outside = match find_block(t) {
        Some((s, e)) => format!("{}{}", &t[..s], &t[e..]),
        None => t.to_string(),
    };
    outside.lines().any(|l| l.trim() == needle)
}
