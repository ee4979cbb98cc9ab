//! `watch`, `pause`, `resume`. Watch mode reports typed events; this module renders them:
//! a text line each (`HH:MM:SS.mmm text`), or with `--json` one JSON object per line (the
//! event's fields, `event` and `at`). Warnings go to stderr in both, and alerts too with
//! `--json`, for the person watching a watcher whose stdout goes to a tool.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::Ctx;
use tavern::api::watch::{Event, NativeFailure, Skip, Warning, human_duration};
use tavern::api::{self, Error, Kind, Result};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Handle what changed since the last run, wait for the activations it starts (and
    /// what they change), then exit: 1 if one failed or the loop guard stopped one, 5 if
    /// the pause holds some back
    #[arg(long)]
    pub once: bool,
    /// Activations running at once, in all
    #[arg(long, short, default_value_t = 4, value_name = "N")]
    pub jobs: usize,
    /// Poll the board every DUR (e.g. 500ms, 2s) instead of using file-system events
    #[arg(long, value_name = "DUR")]
    pub poll: Option<String>,
    /// On SIGINT/SIGTERM, how long running activations may finish before they are killed
    #[arg(long, default_value = "10s", value_name = "DUR")]
    pub grace: String,
    /// On a board connected to a remote (`sync init`): exchange with it at least this
    /// often, and soon after each change here
    #[arg(long, default_value = "30s", value_name = "DUR")]
    pub sync_interval: String,
    /// Run as the index keeper: keep only the change journal reads go by (reads of a big
    /// board start one in the background; board.yaml `watch.keeper`)
    #[arg(long, hide = true, conflicts_with_all = ["once", "poll"])]
    pub keeper: bool,
}

#[derive(Debug, Args)]
pub struct PauseArgs {
    /// Why (the text of control/PAUSE, shown to every refused claim)
    #[arg(value_name = "REASON")]
    pub reason: Vec<String>,
}

fn duration(flag: &str, text: &str) -> Result<Duration> {
    let parsed = api::time::parse_duration(text).and_then(|d| d.to_std().ok());
    parsed.ok_or_else(|| {
        Error::usage(format!(
            "{flag} '{text}': expected a duration like 500ms, 2s or 1m"
        ))
    })
}

pub fn watch(ctx: &Ctx, a: WatchArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    if a.keeper {
        // Started in the background with nowhere to print: how it ended is its exit.
        return Ok(match api::watch::keep_index(&board)? {
            api::watch::KeeperEnd::Failed(_) => ExitCode::FAILURE,
            _ => ExitCode::SUCCESS,
        });
    }
    if a.jobs == 0 {
        return Err(Error::usage("--jobs must be at least 1"));
    }
    let poll = a
        .poll
        .as_deref()
        .map(|p| duration("--poll", p))
        .transpose()?;
    if poll.is_some_and(|p| p.is_zero()) {
        return Err(Error::usage("--poll must be longer than 0"));
    }
    let opts = api::watch::Options {
        once: a.once,
        jobs: a.jobs,
        poll,
        grace: duration("--grace", &a.grace)?,
    };
    let keep = super::sync::keep_options(
        &a.sync_interval,
        a.poll.as_deref(),
        api::sync::Options {
            actor: ctx.actor(&board)?,
            allow_deletions: false,
        },
    )?;
    let json = ctx.global.json;
    let summary = api::watch::run(board, opts, keep, &mut |e| show(&e, json), move |r| {
        super::sync::report_exchange(json, r)
    })?;
    Ok(if !a.once {
        ExitCode::SUCCESS
    } else if summary.failed > 0 || summary.guarded > 0 {
        ExitCode::from(Kind::Other.exit_code())
    } else if summary.held > 0 {
        ExitCode::from(Kind::Paused.exit_code())
    } else {
        ExitCode::SUCCESS
    })
}

/// Prints one event. The watcher keeps going when its output is closed
/// (`tavern watch | head`).
fn show(e: &Event, json: bool) {
    if let Event::Warning(w) = e {
        let _ = writeln!(std::io::stderr(), "warning: {}", warning_text(w));
        return;
    }
    let now = chrono::Utc::now();
    let line = if json {
        if let Event::Alert { note, seq, .. } = e {
            let _ = writeln!(std::io::stderr(), "alert: {note} (log seq {seq})");
        }
        let mut j = serde_json::to_value(e).unwrap_or_default();
        j["at"] = api::time::stamp_millis(now).into();
        format!("{j}\n")
    } else {
        let Some(text) = text(e) else {
            return;
        };
        let text: String = text
            .chars()
            .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
            .collect();
        format!("{} {text}\n", now.format("%H:%M:%S%.3f"))
    };
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// An event as a text line (None: not shown in text).
fn text(e: &Event) -> Option<String> {
    Some(match e {
        Event::Watching {
            board,
            mode,
            sources,
            ..
        } => format!(
            "watching {} ({mode}; {} source{}{})",
            board.display(),
            sources.len(),
            plural(sources.len()),
            if sources.is_empty() {
                String::new()
            } else {
                format!(": {}", sources.join(", "))
            }
        ),
        Event::Change {
            doc,
            events,
            actor,
            seq,
        } => {
            // A change made outside tavern already has its external-edit line; only a
            // transition is news.
            let shown: Vec<&str> = events
                .iter()
                .map(String::as_str)
                .filter(|e| actor.is_some() || e.starts_with("transition:"))
                .collect();
            if shown.is_empty() {
                return None;
            }
            let by = match actor {
                Some(actor) => format!("by {actor}"),
                None => "outside tavern".to_string(),
            };
            format!("{doc}: {} {by} (seq {seq})", shown.join(", "))
        }
        Event::Queued(a) => format!("{}: queued for {} ({})", a.source, a.doc, a.trigger),
        Event::Merged(a) => format!("{}: already waiting for {}", a.source, a.doc),
        Event::Skipped {
            source,
            doc,
            why: Skip::OwnWrite,
            ..
        } => format!("{source}: not started for {doc}: the change is its own"),
        Event::Skipped {
            source,
            doc,
            why: Skip::AlreadyStarted,
            seq,
        } => format!(
            "{source}: not started again for {doc}: the previous watcher started it for this change (seq {seq})"
        ),
        Event::Started {
            activation: a,
            pid,
            output,
            ..
        } => format!(
            "{}: started for {} (pid {pid}, output {output})",
            a.source, a.doc
        ),
        Event::Finished {
            activation: a,
            result,
            note,
            ..
        } => format!("{}: {result} for {}: {note}", a.source, a.doc),
        Event::Timeout { source, doc, pid } => {
            format!("{source}: timed out for {doc}: killing its process group {pid}")
        }
        Event::Alert { seq, note, .. } => format!("alert: {note} (seq {seq})"),
        Event::ExternalEdit { doc, seq, note } => {
            format!("{doc}: {note}; logged as external-edit (seq {seq})")
        }
        Event::Sources { sources } => format!("sources now: {}", sources.join(", ")),
        Event::Stopping { running, grace_ms } => format!(
            "stopping: no new activations; {running} running may finish within {}",
            human_duration(Duration::from_millis(*grace_ms))
        ),
        Event::Stopped {
            ran,
            failed,
            waiting,
            paused,
        } => format!(
            "stopped: {ran} activation{} ran, {failed} failed, {waiting} waiting{}",
            plural(*ran),
            if paused.is_some() {
                " (the board is paused)"
            } else {
                ""
            }
        ),
        Event::Warning(w) => warning_text(w),
    })
}

fn warning_text(w: &Warning) -> String {
    match w {
        Warning::NativeFailed {
            failure,
            poll_every_ms,
            at_start,
        } => format!(
            "the native file watcher failed: {failure}\n{}\npolling every {} {}",
            native_hint(failure),
            human_duration(Duration::from_millis(*poll_every_ms)),
            if *at_start { "instead" } else { "from now on" }
        ),
        Warning::SourceSkipped(p) => format!(
            "skipped {}: {} (`tavern sources check` lists every problem)",
            p.path, p.problem
        ),
        Warning::LookFailed {
            path,
            error,
            again: true,
        } => format!("{path}: {error} (will look again)"),
        Warning::LookFailed { path, error, .. } => {
            format!("{path}: {error} (gave up until it changes again)")
        }
        Warning::Dropped { source, doc } => {
            format!("dropped the activation of {source} for {doc}: the source is gone or invalid")
        }
        Warning::Relocked => {
            ".state/ was removed under the watcher (git clean?): locked the board again".into()
        }
        Warning::Trouble { message } => message.clone(),
    }
}

/// What to do when the native watcher fails.
fn native_hint(failure: &NativeFailure) -> &'static str {
    match failure {
        NativeFailure::WatchLimit => {
            "hint: raise it with `sudo sysctl fs.inotify.max_user_watches=524288` (and add `fs.inotify.max_user_watches=524288` to /etc/sysctl.d/99-inotify.conf to keep it),\nor run `tavern watch --poll 2s`"
        }
        NativeFailure::OpenFiles { .. } => {
            "hint: raise the limit (`ulimit -n 4096`, or fs.inotify.max_user_instances), or run `tavern watch --poll 2s`"
        }
        NativeFailure::Other { .. } => {
            "hint: on file systems without change notification (some network or container mounts), run `tavern watch --poll 2s`"
        }
    }
}

pub fn pause(ctx: &Ctx, a: PauseArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    ctx.print(&api::board::pause(&board, &actor, &a.reason.join(" "))?)
}

pub fn resume(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    ctx.print(&api::board::resume(&board, &actor)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tavern::api::watch::{ActivationInfo, Mode};

    #[test]
    fn a_failed_native_watcher_says_what_to_do() {
        let w = Warning::NativeFailed {
            failure: NativeFailure::WatchLimit,
            poll_every_ms: 2000,
            at_start: true,
        };
        assert_eq!(
            warning_text(&w),
            "the native file watcher failed: the limit of inotify watches is reached (one is needed per directory watched, and solutions/ has one per task).\n\
             hint: raise it with `sudo sysctl fs.inotify.max_user_watches=524288` (and add `fs.inotify.max_user_watches=524288` to /etc/sysctl.d/99-inotify.conf to keep it),\n\
             or run `tavern watch --poll 2s`\npolling every 2s instead"
        );
    }

    #[test]
    fn text_lines() {
        let a = ActivationInfo {
            source: "rev".into(),
            doc: "tasks/t.md".into(),
            id: "t".into(),
            region: "tasks".into(),
            trigger: "changed".into(),
            cause: 3,
            chain: 1,
        };
        let t = |e: Event| text(&e);
        assert_eq!(
            t(Event::Watching {
                board: "/b/.tavern".into(),
                mode: Mode::Polling(Duration::from_secs(2)),
                sources: vec!["a".into(), "b".into()],
                waiting: 0
            })
            .unwrap(),
            "watching /b/.tavern (polling every 2s; 2 sources: a, b)"
        );
        // Outside tavern: the external-edit line said it; only a transition is news.
        let change = |actor: Option<&str>, events: &[&str]| Event::Change {
            doc: "tasks/t.md".into(),
            events: events.iter().map(|s| s.to_string()).collect(),
            actor: actor.map(str::to_string),
            seq: 4,
        };
        assert_eq!(t(change(None, &["changed"])), None);
        assert_eq!(
            t(change(None, &["changed", "transition:review"])).unwrap(),
            "tasks/t.md: transition:review outside tavern (seq 4)"
        );
        assert_eq!(
            t(change(Some("bob"), &["changed"])).unwrap(),
            "tasks/t.md: changed by bob (seq 4)"
        );
        assert_eq!(
            t(Event::Queued(a.clone())).unwrap(),
            "rev: queued for tasks/t.md (changed)"
        );
        assert_eq!(
            t(Event::Stopped {
                ran: 1,
                failed: 0,
                waiting: 2,
                paused: Some("x".into())
            })
            .unwrap(),
            "stopped: 1 activation ran, 0 failed, 2 waiting (the board is paused)"
        );
    }
}
