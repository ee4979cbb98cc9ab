//! Reading a source file: its frontmatter validated whole, every problem reported, each
//! naming its field and what the field expects, so one `tavern sources check` shows
//! everything there is to fix. Pure: nothing here reads the board's files.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{
    BAD_FILE_NAME, DEFAULT_TIMEOUT, DEFAULT_WATCH, FIELDS, On, Source, command, globs, rel_path,
    shown,
};
use crate::board::Board;
use crate::doc::split;
use crate::query::Query;

/// Parses and validates the text of source file `<stem>.md`. Every problem is reported,
/// each naming its field and what the field expects.
pub fn parse(board: &Board, stem: &str, text: &str) -> Result<Source, Vec<String>> {
    let mut problems = Vec::new();
    if crate::id::validate(stem).is_err() {
        problems.push(BAD_FILE_NAME.to_string());
    }
    let parts = match split::split(text) {
        Ok(parts) => parts,
        Err(e) => {
            problems.push(split_problem(e).into());
            return Err(problems);
        }
    };
    let map = match crate::yaml::parse_mapping(parts.frontmatter, board.config.yaml_limits()) {
        Ok(map) => map,
        Err(e) => {
            // The frontmatter starts on line 2 of the file.
            problems.push(format!("line {}: {}", e.line.max(1) + 1, e.message));
            return Err(problems);
        }
    };
    let mut f = Fields {
        map: &map,
        problems,
    };
    f.unknown_keys();
    f.read("name", (), |v| read_name(v, stem));
    let watch = f.read("watch", default_watch(), read_watch);
    let on = f.read("on", vec![On::Created, On::Changed], |v| {
        read_on(v, &board.config.workflow.states)
    });
    let (when, when_text) = f.read("when", (Query::default(), String::new()), |v| {
        read_when(board, v)
    });
    let run = f.required("run", read_run);
    let priority = f.read("priority", 0, read_integer);
    let cooldown = f.read("cooldown", Duration::ZERO, read_duration);
    let max_parallel = f.read("max_parallel", 1, read_max_parallel);
    let timeout = f.read("timeout", DEFAULT_TIMEOUT, read_timeout);
    let description = f.read("description", None, read_description);
    if !f.problems.is_empty() {
        return Err(f.problems);
    }
    Ok(Source {
        name: stem.to_string(),
        path: rel_path(stem),
        patterns: globs::Patterns::new(&watch),
        watch,
        on,
        when,
        when_text,
        run: run.unwrap_or_default(),
        priority,
        cooldown,
        max_parallel,
        timeout,
        prompt: parts.body.to_string(),
        description,
    })
}

fn split_problem(e: split::SplitError) -> &'static str {
    match e {
        split::SplitError::NoOpening => {
            "line 1: no frontmatter: the first line must be exactly `---`"
        }
        split::SplitError::NotClosed => {
            "line 1: frontmatter is not closed: no line is exactly `---` after the first"
        }
    }
}

fn default_watch() -> Vec<String> {
    DEFAULT_WATCH.iter().map(|s| s.to_string()).collect()
}

/// The frontmatter being read, and the problems found so far: one pass reports them all.
struct Fields<'a> {
    map: &'a Map<String, Value>,
    problems: Vec<String>,
}

impl Fields<'_> {
    fn unknown_keys(&mut self) {
        for key in self.map.keys() {
            if !FIELDS.contains(&key.as_str()) {
                self.problems.push(format!(
                    "unknown field '{}'; known fields: {}",
                    shown(key),
                    FIELDS.join(", ")
                ));
            }
        }
    }

    /// A field that is absent (or empty, `key:` with no value) is `default`.
    fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Reads `key` with `read`, recording its problems (prefixed by the field name).
    fn read<T>(
        &mut self,
        key: &str,
        default: T,
        read: impl FnOnce(&Value) -> Result<T, Vec<String>>,
    ) -> T {
        let Some(value) = self.get(key) else {
            return default;
        };
        match read(value) {
            Ok(t) => t,
            Err(list) => {
                self.problems
                    .extend(list.into_iter().map(|p| format!("{key}: {p}")));
                default
            }
        }
    }

    fn required<T>(
        &mut self,
        key: &str,
        read: impl FnOnce(&Value) -> Result<T, Vec<String>>,
    ) -> Option<T> {
        if self.get(key).is_none() {
            self.problems.push(format!(
                "{key}: missing; expected the command to start (run with sh -c in the project root), e.g. run: ./agents/x.sh {{id}}"
            ));
            return None;
        }
        self.read(key, None, |v| read(v).map(Some))
    }
}

/// A value as a message shows it: strings quoted, numbers as written, the rest by kind.
fn found(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", shown(s)),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => crate::yaml::kind_name(other).to_string(),
    }
}

fn one(problem: String) -> Vec<String> {
    vec![problem]
}

/// A string, or a list of strings.
fn strings(v: &Value, what: &str) -> Result<Vec<String>, Vec<String>> {
    let item = |v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!("expected {what}, found {}", found(other))),
    };
    match v {
        Value::Array(items) => {
            let (ok, bad): (Vec<_>, Vec<_>) = items.iter().map(item).partition(|r| r.is_ok());
            if bad.is_empty() {
                Ok(ok.into_iter().flatten().collect())
            } else {
                Err(bad.into_iter().filter_map(|r| r.err()).collect())
            }
        }
        other => item(other).map(|s| vec![s]).map_err(one),
    }
}

fn read_name(v: &Value, stem: &str) -> Result<(), Vec<String>> {
    match v {
        Value::String(s) if s == stem => Ok(()),
        Value::String(s) => Err(one(format!(
            "'{}' does not match the file name; expected '{}' (or leave name out)",
            shown(s),
            shown(stem)
        ))),
        other => Err(one(format!(
            "expected '{}' (the file name), found {}",
            shown(stem),
            found(other)
        ))),
    }
}

fn read_watch(v: &Value) -> Result<Vec<String>, Vec<String>> {
    let patterns = strings(
        v,
        "a path under the board like tasks or solutions/*/design.md",
    )?;
    if patterns.is_empty() {
        return Err(one(
            "empty; expected at least one path under the board (leave watch out for tasks, observations, questions)".into(),
        ));
    }
    let problems: Vec<String> = patterns
        .iter()
        .filter_map(|p| globs::pattern_problem(p))
        .collect();
    if problems.is_empty() {
        Ok(patterns)
    } else {
        Err(problems)
    }
}

fn read_on(v: &Value, states: &[String]) -> Result<Vec<On>, Vec<String>> {
    // `[transition: review]` (with a space) is a mapping in YAML: say what was meant.
    if let Value::Array(items) = v
        && items
            .iter()
            .any(|i| i.as_object().is_some_and(|m| m.contains_key("transition")))
    {
        return Err(one(
            "write transition:STATE without a space after the colon (with one, YAML reads a mapping)"
                .into(),
        ));
    }
    let names = strings(
        v,
        "an event (created, changed, deleted or transition:STATE)",
    )?;
    if names.is_empty() {
        return Err(one(
            "empty; expected at least one of created, changed, deleted, transition:STATE (leave on out for created, changed)".into(),
        ));
    }
    let (ok, bad): (Vec<_>, Vec<_>) = names
        .iter()
        .map(|n| On::parse(n, states))
        .partition(|r| r.is_ok());
    if bad.is_empty() {
        // `[created, created]` is `[created]`.
        let mut events: Vec<On> = Vec::new();
        for event in ok.into_iter().flatten() {
            if !events.contains(&event) {
                events.push(event);
            }
        }
        Ok(events)
    } else {
        Err(bad.into_iter().filter_map(|r| r.err()).collect())
    }
}

fn read_when(board: &Board, v: &Value) -> Result<(Query, String), Vec<String>> {
    let Value::String(text) = v else {
        return Err(one(format!(
            "expected a query like status=pending no:design, found {}",
            found(v)
        )));
    };
    match Query::parse(&[text.as_str()]) {
        // A term on a field no document may carry never holds: a typo.
        Ok(q) => {
            match crate::schema::unknown_in_query(board, &q, &crate::doc::Region::ALL, false) {
                Ok(None) => Ok((q, text.clone())),
                Ok(Some(problem)) => Err(one(shown_line(&problem))),
                Err(e) => Err(one(shown_line(&e.to_string()))),
            }
        }
        Err(e) => {
            let message = e.to_string();
            Err(one(shown_line(message.lines().next().unwrap_or(""))))
        }
    }
}

/// A whole line of a message built from file text: control characters escaped, no cut.
fn shown_line(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let escaped: Vec<char> = if c.is_control() {
                c.escape_default().collect()
            } else {
                vec![c]
            };
            escaped
        })
        .collect()
}

fn read_run(v: &Value) -> Result<String, Vec<String>> {
    let Value::String(run) = v else {
        return Err(one(format!(
            "expected the command to start (a string, run with sh -c in the project root), found {}",
            found(v)
        )));
    };
    if run.trim().is_empty() {
        return Err(one(
            "empty; expected the command to start (run with sh -c in the project root)".into(),
        ));
    }
    let problems = command::problems(run);
    if problems.is_empty() {
        Ok(run.clone())
    } else {
        Err(problems)
    }
}

fn read_integer(v: &Value) -> Result<i64, Vec<String>> {
    v.as_i64().ok_or_else(|| {
        one(format!(
            "expected an integer (higher runs first), found {}",
            found(v)
        ))
    })
}

fn read_max_parallel(v: &Value) -> Result<usize, Vec<String>> {
    v.as_u64()
        .filter(|n| *n >= 1)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            one(format!(
                "expected an integer >= 1 (how many runs of this source at once), found {}",
                found(v)
            ))
        })
}

/// The longest `cooldown` or `timeout`: longer is a typo, and would overflow the clock.
const MAX_DURATION: Duration = Duration::from_secs(366 * 24 * 3600);

fn read_duration(v: &Value) -> Result<Duration, Vec<String>> {
    let duration = match v {
        Value::String(s) => crate::time::parse_duration(s).and_then(|d| d.to_std().ok()),
        _ => None,
    };
    match duration {
        Some(d) if d > MAX_DURATION => Err(one(format!("{} is too long: at most 366d", found(v)))),
        Some(d) => Ok(d),
        None => Err(one(format!(
            "expected a duration like 30s, 5m or 2h, found {}",
            found(v)
        ))),
    }
}

fn read_timeout(v: &Value) -> Result<Duration, Vec<String>> {
    match read_duration(v)? {
        d if d.is_zero() => Err(one(format!(
            "expected a duration above zero like 15m, found {}",
            found(v)
        ))),
        d => Ok(d),
    }
}

fn read_description(v: &Value) -> Result<Option<String>, Vec<String>> {
    match v {
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(one(format!("expected a string, found {}", found(other)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The default board, which declares the field the architect's `when:` waits for.
    fn board() -> Board {
        let mut config = crate::board::parse_config(crate::board::DEFAULT_BOARD_YAML).unwrap();
        config.fields.tasks.push("design".into());
        Board {
            root: PathBuf::from("/nonexistent/.tavern"),
            config,
            found: Default::default(),
        }
    }

    fn parse_ok(text: &str) -> Source {
        parse(&board(), "architect", text).unwrap_or_else(|p| panic!("problems: {p:#?}"))
    }

    fn problems(text: &str) -> Vec<String> {
        match parse(&board(), "architect", text) {
            Ok(s) => panic!("parsed: {s:#?}"),
            Err(p) => p,
        }
    }

    fn fm(fields: &str) -> String {
        format!("---\n{fields}---\nprompt\n")
    }

    const STATES: &str = "pending, claimed, working, review, blocked, done, failed, cancelled";

    #[test]
    fn parses_every_field() {
        let text = "---\r\nname: architect\r\nwatch: [tasks, solutions/*/design.md]   # c\r\non: [created, changed, transition:pending]\r\nwhen: status=pending no:design\r\nrun: ./agents/architect.sh {id}\r\npriority: 10\r\ncooldown: 30s\r\nmax_parallel: 2\r\ntimeout: 15m\r\ndescription: Writes designs\r\n---\r\nThe prompt.\r\n\r\n---\r\nmore\r\n";
        let s = parse_ok(text);
        assert_eq!(s.name, "architect");
        assert_eq!(s.path, "control/sources/architect.md");
        assert_eq!(s.watch, ["tasks", "solutions/*/design.md"]);
        assert_eq!(
            s.on,
            [On::Created, On::Changed, On::Transition("pending".into())]
        );
        assert_eq!(s.when_text, "status=pending no:design");
        assert_eq!(s.when, Query::parse(&["status=pending no:design"]).unwrap());
        assert_eq!(s.run, "./agents/architect.sh {id}");
        assert_eq!(s.priority, 10);
        assert_eq!(s.cooldown, Duration::from_secs(30));
        assert_eq!(s.max_parallel, 2);
        assert_eq!(s.timeout, Duration::from_secs(15 * 60));
        assert_eq!(s.description.as_deref(), Some("Writes designs"));
        // Byte-exact: CRLF and a later `---` stay in the prompt.
        assert_eq!(s.prompt, "The prompt.\r\n\r\n---\r\nmore\r\n");
    }

    #[test]
    fn defaults() {
        let s = parse_ok("---\nrun: echo hi\n---\n");
        assert_eq!(s.watch, ["tasks", "observations", "questions"]);
        assert_eq!(s.on, [On::Created, On::Changed]);
        assert!(s.when.is_empty());
        assert_eq!(s.when_text, "");
        assert_eq!(s.priority, 0);
        assert_eq!(s.cooldown, Duration::ZERO);
        assert_eq!(s.max_parallel, 1);
        assert_eq!(s.timeout, Duration::from_secs(30 * 60));
        assert_eq!(s.description, None);
        assert_eq!(s.prompt, "");
        // An empty value is the default too.
        let s = parse_ok("---\nrun: x\nwhen:\ntimeout:\n---\n");
        assert_eq!(s.timeout, DEFAULT_TIMEOUT);
    }

    #[test]
    fn single_strings_are_accepted_for_lists() {
        let s = parse_ok(&fm("watch: solutions/**\non: deleted\nrun: x\n"));
        assert_eq!(s.watch, ["solutions/**"]);
        assert_eq!(s.on, [On::Deleted]);
    }

    #[test]
    fn file_level_problems() {
        assert_eq!(
            problems("run: x\n"),
            ["line 1: no frontmatter: the first line must be exactly `---`"]
        );
        assert_eq!(
            problems("---\nrun: x\n"),
            ["line 1: frontmatter is not closed: no line is exactly `---` after the first"]
        );
        assert_eq!(
            problems("---\n- a\n- b\n---\n"),
            ["line 2: frontmatter must be a mapping of fields, found a list"]
        );
        let duplicate = problems("---\nrun: x\nrun: y\n---\n");
        assert!(duplicate[0].starts_with("line 3: "), "{duplicate:?}");
        let e = parse(&board(), "Bad Name", "---\nrun: x\n---\n").unwrap_err();
        assert_eq!(e, [BAD_FILE_NAME]);
    }

    #[test]
    fn hostile_yaml_is_a_problem_not_a_crash() {
        let deep = format!(
            "---\nrun: x\nwatch: {}{}\n---\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        );
        let p = problems(&deep);
        assert_eq!(p.len(), 1);
        assert!(p[0].starts_with("line "), "{p:?}");
        let bomb = "---\na: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]\nrun: x\n---\n";
        let p = problems(bomb);
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].starts_with("line "), "{p:?}");
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let text = fm(
            "name: other\nmax-parallel: 2\nwatch: [archive/x, /tasks]\non: [created, modified, transition:reviewing]\nwhen: status=\nrun: ./x.sh {title}\npriority: high\ncooldown: 5 minutes\nmax_parallel: 0\ntimeout: 0s\ndescription: [a]\n",
        );
        let p = parse(&board(), "Arch", &text).unwrap_err();
        assert_eq!(
            p,
            [
                BAD_FILE_NAME.to_string(),
                "unknown field 'max-parallel'; known fields: name, watch, on, when, run, priority, cooldown, max_parallel, timeout, description".into(),
                "name: 'other' does not match the file name; expected 'Arch' (or leave name out)".into(),
                "watch: 'archive/x' is not under a watched area; watch tasks, observations, questions, solutions, control/sources, control/agents, or control/PAUSE, or paths and globs under them".into(),
                "watch: '/tasks' must be relative to the board (no leading /)".into(),
                "on: 'modified' is not an event; expected created, changed, deleted or transition:STATE".into(),
                format!("on: 'transition:reviewing': 'reviewing' is not a state of the workflow ({STATES})"),
                "when: malformed query term 'status=': expected a value after the operator".into(),
                "run: {title} is not substituted: only {id} {path} {region} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin".into(),
                "priority: expected an integer (higher runs first), found 'high'".into(),
                "cooldown: expected a duration like 30s, 5m or 2h, found '5 minutes'".into(),
                "max_parallel: expected an integer >= 1 (how many runs of this source at once), found 0".into(),
                "timeout: expected a duration above zero like 15m, found '0s'".into(),
                "description: expected a string, found a list".into(),
            ]
        );
    }

    #[test]
    fn name_must_be_the_file_stem() {
        parse_ok(&fm("name: architect\nrun: x\n"));
        assert_eq!(
            problems(&fm("name: 3\nrun: x\n")),
            ["name: expected 'architect' (the file name), found 3"]
        );
    }

    #[test]
    fn run_is_required_and_a_string() {
        let missing = "run: missing; expected the command to start (run with sh -c in the project root), e.g. run: ./agents/x.sh {id}";
        assert_eq!(problems(&fm("priority: 1\n")), [missing]);
        assert_eq!(problems(&fm("run:\n")), [missing]);
        assert_eq!(
            problems(&fm("run: '  '\n")),
            ["run: empty; expected the command to start (run with sh -c in the project root)"]
        );
        assert_eq!(
            problems(&fm("run: [a, b]\n")),
            [
                "run: expected the command to start (a string, run with sh -c in the project root), found a list"
            ]
        );
    }

    #[test]
    fn run_placeholders() {
        parse_ok(&fm(
            "run: ./x.sh {id} {path} {region} solutions/{id}/design.md\n",
        ));
        // The shell's own ${…}, brace groups, awk programs and escaped braces are not ours.
        parse_ok(&fm(
            "run: 'echo ${HOME} $TAVERN_ID; { echo a; }; awk \"{ print }\" f; echo \\{title}'\n",
        ));
        // Each unknown placeholder once, however often it appears.
        assert_eq!(
            problems(&fm("run: ./x.sh {title} {title} {doc_id}\n")),
            [
                "run: {title} is not substituted: only {id} {path} {region} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin",
                "run: {doc_id} is not substituted: only {id} {path} {region} are substituted; other values reach the command through the environment (TAVERN_DOC, TAVERN_ID, …) or stdin",
            ]
        );
    }

    #[test]
    fn run_placeholders_must_be_bare_words() {
        let inside = |what: &str| {
            format!(
                "run: {{id}} is inside {what}, where quoting cannot keep its value one word; write it outside any quotes: tavern quotes the value itself"
            )
        };
        for (run, what) in [
            (r#"run: "echo '{id}'""#, "'…'"),
            (r#"run: 'echo "{id}"'"#, "\"…\""),
            ("run: 'echo `cat {id}`'", "`…`"),
            ("run: 'echo $((1 + {id}))'", "$((…))"),
            ("run: 'echo ${x:-{id}}'", "${…}"),
            ("run: |\n  cat <<EOF\n  {id}\n  EOF\n", "a here-document"),
        ] {
            assert_eq!(problems(&fm(&format!("{run}\n"))), [inside(what)], "{run}");
        }
        // A fresh command inside $(…) or (…) quotes normally again, even within "…".
        parse_ok(&fm(
            "run: 'echo \"$(cat {id})\" $(x {path}) (cd {region})'\n",
        ));
        // A comment is not part of the command.
        parse_ok(&fm("run: \"./x.sh {id} # see '{title}\"\n"));
    }

    #[test]
    fn run_with_an_unclosed_quote() {
        assert_eq!(
            problems(&fm("run: \"echo it's\"\n")),
            ["run: a ' quote is never closed, so sh would refuse the command"]
        );
        assert_eq!(
            problems(&fm("run: 'echo $(date'\n")),
            ["run: a $( is never closed, so sh would refuse the command"]
        );
    }

    #[test]
    fn watch_entries() {
        assert_eq!(
            problems(&fm("watch: ['', 3]\nrun: x\n")),
            ["watch: expected a path under the board like tasks or solutions/*/design.md, found 3"]
        );
        assert_eq!(
            problems(&fm("watch: ['']\nrun: x\n")),
            [
                "watch: an entry is empty; expected a path under the board like tasks or solutions/*/design.md"
            ]
        );
        assert_eq!(
            problems(&fm("watch: []\nrun: x\n")),
            [
                "watch: empty; expected at least one path under the board (leave watch out for tasks, observations, questions)"
            ]
        );
        assert_eq!(
            problems(&fm("watch: {a: 1}\nrun: x\n")),
            [
                "watch: expected a path under the board like tasks or solutions/*/design.md, found a mapping"
            ]
        );
    }

    #[test]
    fn on_entries() {
        assert_eq!(
            problems(&fm("on: [transition: review]\nrun: x\n")),
            [
                "on: write transition:STATE without a space after the colon (with one, YAML reads a mapping)"
            ]
        );
        assert_eq!(
            problems(&fm("on: []\nrun: x\n")),
            [
                "on: empty; expected at least one of created, changed, deleted, transition:STATE (leave on out for created, changed)"
            ]
        );
        assert_eq!(
            problems(&fm("on: [1]\nrun: x\n")),
            ["on: expected an event (created, changed, deleted or transition:STATE), found 1"]
        );
        assert_eq!(
            On::parse("transition:", &["a".into()]),
            Err("'transition:': '' is not a state of the workflow (a)".into())
        );
        for on in [
            On::Created,
            On::Changed,
            On::Deleted,
            On::Transition("done".into()),
        ] {
            assert_eq!(On::parse(&on.name(), &["done".into()]), Ok(on));
        }
    }

    #[test]
    fn when_must_be_a_query_string() {
        assert_eq!(
            problems(&fm("when: [a]\nrun: x\n")),
            ["when: expected a query like status=pending no:design, found a list"]
        );
        assert_eq!(
            problems(&fm("when: 'priority<=x region:nowhere'\nrun: x\n")).len(),
            1
        );
        // A field nothing declares never holds: a typo, said with the likely field.
        assert_eq!(
            problems(&fm("when: stauts=pending\nrun: x\n")),
            ["when: unknown field 'stauts' in query term 'stauts=pending'; did you mean 'status'?"]
        );
        assert_eq!(
            problems(&fm("when: has:estimate\nrun: x\n")),
            [
                "when: unknown field 'estimate' in query term 'has:estimate'; it is not declared under fields: in board.yaml"
            ]
        );
    }

    #[test]
    fn numbers_and_durations() {
        let s = parse_ok(&fm(
            "run: x\npriority: -3\ncooldown: 0s\ntimeout: 2h\nmax_parallel: 4\n",
        ));
        assert_eq!(
            (s.priority, s.cooldown, s.timeout, s.max_parallel),
            (-3, Duration::ZERO, Duration::from_secs(7200), 4)
        );
        for (field, value, why) in [
            (
                "priority",
                "1.5",
                "expected an integer (higher runs first), found 1.5",
            ),
            (
                "priority",
                "'10'",
                "expected an integer (higher runs first), found '10'",
            ),
            (
                "max_parallel",
                "-1",
                "expected an integer >= 1 (how many runs of this source at once), found -1",
            ),
            (
                "max_parallel",
                "true",
                "expected an integer >= 1 (how many runs of this source at once), found true",
            ),
            (
                "cooldown",
                "30",
                "expected a duration like 30s, 5m or 2h, found 30",
            ),
            (
                "cooldown",
                "10000000h",
                "'10000000h' is too long: at most 366d",
            ),
            ("timeout", "400d", "'400d' is too long: at most 366d"),
            (
                "cooldown",
                "99999999999999999w",
                "expected a duration like 30s, 5m or 2h, found '99999999999999999w'",
            ),
            (
                "timeout",
                "-5m",
                "expected a duration like 30s, 5m or 2h, found '-5m'",
            ),
        ] {
            assert_eq!(
                problems(&fm(&format!("run: x\n{field}: {value}\n"))),
                [format!("{field}: {why}")],
                "{field}: {value}"
            );
        }
    }

    #[test]
    fn control_characters_never_reach_a_message() {
        let p = problems(&fm("\"bad\\e[31mkey\": 1\nrun: x\n"));
        assert_eq!(p.len(), 1);
        assert!(
            p[0].starts_with("unknown field 'bad\\u{1b}[31mkey'"),
            "{p:?}"
        );
        assert!(!p[0].chars().any(|c| c.is_control()));
    }

    #[test]
    fn watches_uses_every_pattern() {
        let s = parse_ok(&fm("watch: [tasks, solutions/*/design.md]\nrun: x\n"));
        assert!(s.watches("tasks/task-7k2m.md"));
        assert!(s.watches("solutions/task-1/design.md"));
        assert!(!s.watches("solutions/task-1/notes.md"));
        assert!(!s.watches("observations/obs-1.md"));
    }

    #[test]
    fn listens_returns_the_first_listed_event() {
        let s = parse_ok(&fm("on: [changed, transition:review]\nrun: x\n"));
        let review = On::Transition("review".into());
        let events = [On::Created, review.clone(), On::Changed];
        assert_eq!(s.listens(&events), Some(&review));
        assert_eq!(s.listens(&[On::Created, On::Deleted]), None);
        assert_eq!(
            s.listens(&[On::Transition("done".into()), On::Changed]),
            Some(&On::Changed)
        );
        let twice = parse_ok(&fm("on: [created, changed, created]\nrun: x\n"));
        assert_eq!(twice.on, vec![On::Created, On::Changed]);
    }

    #[test]
    fn command_substitutes_only_the_three_placeholders() {
        let s = parse_ok(&fm(
            "run: ./x.sh {id} --doc={path} solutions/{id}/design.md {region} ${HOME}\n",
        ));
        assert_eq!(
            s.command("task-1", "tasks/task-1.md", "tasks"),
            "./x.sh task-1 --doc=tasks/task-1.md solutions/task-1/design.md tasks ${HOME}"
        );
        // A value holding a placeholder is not substituted again.
        assert_eq!(
            s.command("{path}", "p", "r"),
            "./x.sh '{path}' --doc=p solutions/'{path}'/design.md r ${HOME}"
        );
    }
}
