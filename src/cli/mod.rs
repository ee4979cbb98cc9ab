//! The command line: clap definitions, and one module per group of commands. Every
//! command has `--json`; human output is for reading, JSON output is for agents.

mod admin;
mod agents;
pub mod delivery;
mod docs;
pub mod errors;
mod graph;
mod history;
mod holds;
mod observations;
mod output;
mod questions;
pub mod render;
mod search;
mod sources;
mod style;
mod sync;
mod tasks;
mod text;
mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use tavern::api::Board;
use tavern::api::{Error, Result};

#[derive(Debug, Parser)]
#[command(
    name = "tavern",
    version,
    about = "A blackboard made of plain files for teams of AI coding agents and the humans who watch them",
    after_help = "Exit codes: 0 ok, 2 usage, 3 conflict (lost a race, not the owner, rev mismatch, transition not allowed), 4 not found, 5 paused, 6 invalid document or input, 7 unconfirmed (a connected board's remote could not confirm a claim; nothing changed), 1 anything else."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// The flags every command takes: listed under their own heading, after the command's own.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The board: its .tavern directory or the project holding it [default: found by walking up from the working directory]
    #[arg(long, global = true, env = "TAVERN_BOARD", value_name = "DIR")]
    pub board: Option<PathBuf>,
    /// Who is acting, for claims and the log [default: $TAVERN_AGENT, else $USER, else $LOGNAME; a command that writes refuses when none is set]
    #[arg(long = "as", global = true, value_name = "NAME")]
    pub actor: Option<String>,
    /// Print machine-readable JSON instead of text
    #[arg(long, global = true)]
    pub json: bool,
}

// Flags shared by every transition. (Not a doc comment: on an `Args` type clap takes it
// for the help text of every command that uses it; see `Command`.)
#[derive(Debug, Args, Clone)]
pub struct TransitionArgs {
    /// The task: its id or a unique prefix of it
    pub id: String,
    /// Move a task claimed by someone else (for humans; the log says so)
    #[arg(long)]
    pub force: bool,
    /// Only if the task's rev is still N (compare-and-swap)
    #[arg(long, value_name = "N")]
    pub if_rev: Option<u64>,
    /// A note for the log entry
    #[arg(long, value_name = "TEXT")]
    pub note: Option<String>,
    /// On a board connected to a remote: move it on this clone alone, unconfirmed
    #[arg(long)]
    pub local: bool,
}

/// Every command. Each one's flags are built only when it is the command given (`defer`):
/// building all of them took about 0.4 ms of every call's start, a fifth of a `show`. So a
/// flags type carries no doc comment (clap would take it for the help text of the command
/// using it) and no flag of a command shares an id with a global one (the global's value
/// would land in it): the tests `the_parser_passes_clap_s_checks` and
/// `each_command_s_help_starts_with_its_line_in_the_command_list` hold both.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Create a board (.tavern/) in the current or given directory
    Init(admin::InitArgs),
    /// Create a task, observation or question from the board's template
    New(docs::NewArgs),
    /// Post an observation (a finding): --topic T --severity info|low|medium|high|critical
    Post(observations::PostArgs),
    /// Acknowledge an open observation
    Ack(observations::AckArgs),
    /// Resolve an open or acknowledged observation: --resolution "…"
    Resolve(observations::ResolveArgs),
    /// Print a document (by id or unique id prefix)
    Show(docs::ShowArgs),
    /// List documents matching a query, best first
    #[command(alias = "ls")]
    List(docs::ListArgs),
    /// Search every document and solutions/ by relevance: words, "phrases", filters
    Search(search::SearchArgs),
    /// Change fields or the body of a document
    Edit(docs::EditArgs),
    /// Claim a task, or the best claimable one with --next
    Claim(tasks::ClaimArgs),
    /// Move a task to STATE by whichever transition leads there
    Move(tasks::MoveArgs),
    /// Give a claimed task back to the pool (transition `release`)
    Release(TransitionArgs),
    /// Start working on a claimed task (transition `start`)
    Start(TransitionArgs),
    /// Submit a task for review (transition `submit`)
    Submit(TransitionArgs),
    /// Approve a task in review (transition `approve`), or a permission request (humans only)
    Approve(TransitionArgs),
    /// Deny a permission request (humans only, at a terminal)
    Deny(questions::DenyArgs),
    /// Ask a question (or, with --permission, request a permission); --blocks TASK waits for it
    Ask(questions::AskArgs),
    /// Answer an open question: text, or --choice OPTION; unblocks the tasks waiting only on it
    Answer(questions::AnswerArgs),
    /// Open questions, oldest first (--all: answered and decided ones too)
    Questions(questions::QuestionsArgs),
    /// Send a task in review back to work (transition `reject`), or reject an observation
    Reject(TransitionArgs),
    /// Mark a task blocked (transition `block`)
    Block(TransitionArgs),
    /// Unblock a blocked task (transition `unblock`)
    Unblock(TransitionArgs),
    /// Mark a task done without review (transition `done`)
    Done(TransitionArgs),
    /// Mark a task failed (transition `fail`)
    Fail(TransitionArgs),
    /// Cancel a task (transition `cancel`)
    Cancel(TransitionArgs),
    /// Bring a finished task (done, failed, cancelled) back to pending (transition `reopen`)
    Reopen(TransitionArgs),
    /// Read the audit log
    Log(history::LogArgs),
    /// What changed since the acting agent last looked (then remembers where it stopped)
    Events(history::EventsArgs),
    /// Show what changed in a document, from its log entries
    Diff(history::DiffArgs),
    /// Move finished documents to archive/ (still readable with show and list --archived)
    Archive(admin::ArchiveArgs),
    /// What an agent needs after a context reset: agents, findings, tasks, questions, what looks stuck (markdown)
    Summary(admin::SummaryArgs),
    /// Validate the whole board; exit 6 listing every problem, 0 when clean
    Check,
    /// Which board is used and why, its layout, and the remote it is connected to
    Status,
    /// Exchange the board with the remote now (record, fetch, fast-forward, push); `sync init [REMOTE]` connects it
    Sync(sync::SyncArgs),
    /// Print shell completions
    Completions(admin::CompletionsArgs),
    /// Tasks that are claimable now (dependencies done), best first
    Ready(agents::ReadyArgs),
    /// What a task waits for (depends_on, transitively) and what waits for it
    Deps(graph::GraphArgs),
    /// A task and its subtasks (tasks whose `parent` is it)
    Tree(graph::GraphArgs),
    /// Hold paths, globs or named resources (exclusive, or --shared) for a while: exit 3 naming the holder when another agent holds them
    Hold(holds::HoldArgs),
    /// Give up holds: paths as held, --resource, --id, --task, or --all
    #[command(alias = "unhold")]
    ReleaseHold(holds::ReleaseHoldArgs),
    /// Who holds what, since and until when, for which task; who waits on whom
    Holds,
    /// Register, heartbeat, deregister and list agents
    #[command(subcommand)]
    Agent(agents::AgentCommand),
    /// Give the claims of agents whose lease expired back to the pool, and archive expired session findings
    Sweep,
    /// Watch the board: log hand edits and start the knowledge sources that react to changes
    Watch(watch::WatchArgs),
    /// The board in a browser, live: http://127.0.0.1:PORT/ with a per-run secret
    Serve(crate::web::ServeArgs),
    /// Stop new claims and new activations: writes control/PAUSE with the reason
    Pause(watch::PauseArgs),
    /// Lift a pause: removes control/PAUSE
    Resume,
    /// List or validate the knowledge sources (control/sources/*.md)
    #[command(subcommand)]
    Sources(sources::SourcesCommand),
    /// Serve the board to an agent client over MCP on stdio: the agent loop as tools
    Mcp(crate::mcp::McpArgs),
    /// Set up an agent client (claude, codex, opencode): hooks, notes, and with --mcp the MCP server
    Setup(crate::setup::SetupArgs),
    /// What the hooks `tavern setup` installs run (the client's event comes on stdin)
    #[command(hide = true)]
    Hook(crate::setup::hook::HookArgs),
    /// Any other transition defined in board.yaml: `tavern NAME ID`
    #[command(external_subcommand)]
    Custom(Vec<String>),
}

/// What every command gets: the global flags, and the board once it is needed.
pub struct Ctx {
    pub global: Global,
    pub cwd: PathBuf,
}

impl Ctx {
    pub fn format(&self) -> render::Format {
        if self.global.json {
            render::Format::Json
        } else {
            render::Format::Text
        }
    }

    /// Prints a command's result in the format asked for; its exit code.
    pub fn print<R: render::Render>(&self, r: &R) -> Result<ExitCode> {
        render::print(self.format(), r)
    }

    /// The board, with any change an interrupted command left half made completed first.
    pub fn board(&self) -> Result<Board> {
        tavern::api::board::open(self.global.board.as_deref(), &self.cwd)
    }

    /// The board as it is (`check` reports interrupted changes instead of completing them).
    pub fn board_as_found(&self) -> Result<Board> {
        tavern::api::board::open_as_found(self.global.board.as_deref(), &self.cwd)
    }

    /// The acting agent: --as, else TAVERN_AGENT, else the user. A command run as a
    /// registered agent counts as its heartbeat.
    pub fn actor(&self, board: &Board) -> Result<String> {
        tavern::api::actor(board, &self.actor_name()?)
    }

    /// The acting agent's name, for a command that acts (`api::acting_name`): with nothing
    /// naming it (a container) a usage error saying how to name one.
    fn actor_name(&self) -> Result<String> {
        tavern::api::acting_name(self.named_actor())
    }

    /// The acting agent's name if anything names it (reads that only show who acts): --as,
    /// else what the environment names (`api::named_actor`).
    pub fn named_actor(&self) -> Option<String> {
        tavern::api::named_actor(self.global.actor.clone())
    }
}

/// Prints an error once, as text or (with `--json`) as one JSON object on stderr, and
/// gives its exit code. A closed stdout (`tavern list | head`) is success.
pub fn report_error(e: &Error, json: bool) -> ExitCode {
    if let Error::Io { source, .. } = e
        && source.kind() == std::io::ErrorKind::BrokenPipe
    {
        return ExitCode::SUCCESS;
    }
    let text = if json {
        let v = serde_json::to_string(&errors::report(e)).unwrap_or_default();
        format!("{v}\n")
    } else {
        format!("error: {}\n", errors::message(e))
    };
    // One write, so messages of concurrent agents sharing a terminal do not interleave.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    ExitCode::from(e.exit_code())
}

/// Was `--json` among the arguments (before a `--`)? For errors clap finds before it has
/// parsed anything.
fn json_requested() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// What an argument-parsing error becomes: help and version go to stdout with exit 0; a
/// missing command prints the help on stderr with exit 2; an argument that is not UTF-8
/// is invalid input (exit 6); anything else is a usage error (exit 2). With `--json`,
/// every error is one JSON object on stderr, as for any other command.
pub fn parse_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let kind = e.kind();
    if matches!(kind, ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let json = json_requested();
    if kind == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand && !json {
        let _ = e.print();
        return ExitCode::from(tavern::api::Kind::Usage.exit_code());
    }
    let text = e.render().to_string();
    let message = match kind {
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "a command is required; `tavern --help` lists them".to_string()
        }
        _ => clap_message(&e),
    };
    let error = if kind == ErrorKind::InvalidUtf8 {
        Error::input(format!(
            "{message}\nhint: arguments must be UTF-8 (ids, titles and query terms are text)"
        ))
    } else {
        Error::usage(message)
    };
    if json {
        return report_error(&error, true);
    }
    // Text mode keeps clap's own rendering (with its usage line), under our exit code.
    let text = if kind == ErrorKind::InvalidUtf8 {
        format!("error: {error}\n")
    } else {
        text
    };
    let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    ExitCode::from(error.exit_code())
}

/// `tavern hook …` parsed alone (the global flags and the hook's own): a hook runs before
/// every edit and after every tool use, and building the whole command line's parser
/// costs more than what the hook does when there is nothing to say. `main` takes this
/// path only when `hook` is the first argument; anything else goes through the full
/// parser, which has the same `hook` command.
#[derive(Debug, Parser)]
#[command(name = "tavern")]
struct HookCli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: HookCommand,
}

#[derive(Debug, Subcommand)]
enum HookCommand {
    /// What the hooks `tavern setup` installs run (the client's event comes on stdin)
    Hook(crate::setup::hook::HookArgs),
}

/// `tavern hook CLIENT EVENT` and nothing else, as `tavern setup` installs the hooks of
/// Claude Code and Codex: what clap would make of it, without building its parser (most
/// of what is left of a quiet hook's cost). Anything else (a flag, `--`, a missing or
/// extra word, a word that is not UTF-8 or starts with `-`, an empty TAVERN_BOARD, which
/// clap refuses) is left to clap.
fn hook_words(args: &[std::ffi::OsString]) -> Option<HookCli> {
    let [_, hook, client, event] = args else {
        return None;
    };
    let word = |w: &std::ffi::OsString| {
        w.to_str()
            .filter(|w| !w.is_empty() && !w.starts_with('-'))
            .map(str::to_string)
    };
    if hook != "hook" {
        return None;
    }
    let board = match std::env::var_os("TAVERN_BOARD") {
        Some(b) if b.is_empty() => return None,
        b => b.map(PathBuf::from),
    };
    Some(HookCli {
        global: Global {
            board,
            actor: None,
            json: false,
        },
        command: HookCommand::Hook(crate::setup::hook::HookArgs {
            client: word(client)?,
            event: word(event)?,
            session: None,
            pid: None,
            files: Vec::new(),
            patch: None,
        }),
    })
}

/// The word naming the command: the first argument that is not a global flag or its value
/// (`tavern --as bob claim ID` gives `claim`); None when there is none.
fn command_word(args: &[std::ffi::OsString]) -> Option<&std::ffi::OsStr> {
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        if a == "--board" || a == "--as" {
            rest.next();
        } else if a != "--json"
            && !a
                .to_str()
                .is_some_and(|a| a.starts_with("--board=") || a.starts_with("--as="))
        {
            return Some(a);
        }
    }
    None
}

/// Is this command line a hook's: `hook` as the command, after global flags only
/// (`tavern --json hook …` too)?
pub fn is_hook(args: &[std::ffi::OsString]) -> bool {
    command_word(args) == Some(std::ffi::OsStr::new("hook"))
}

/// Parses a command line exactly as `Cli::try_parse_from` does, quicker.
///
/// clap copies every global flag into every command before it parses (its
/// `_propagate_global_args`), which was about a quarter of a `claim`'s own CPU. So the line
/// is parsed first by a parser holding only the command it names; when that parser takes
/// it, the whole one would have taken it the same way (the same flags, the same command's
/// definition). Anything else (no command word, an unknown one, `--help`, `--version`, a
/// mistake) goes to the whole parser, whose messages and help are the ones users see.
/// `the_narrow_parser_agrees_with_the_whole_one` holds this.
pub fn parse(args: Vec<std::ffi::OsString>) -> std::result::Result<Cli, clap::Error> {
    match parse_narrow(&args) {
        Some(cli) => Ok(cli),
        None => Cli::try_parse_from(args),
    }
}

/// The parser of the one command `args` names (or of a workflow's transition, for a word
/// that names no command), with the global flags; None when the line names none, or that
/// parser refuses it.
fn parse_narrow(args: &[std::ffi::OsString]) -> Option<Cli> {
    use clap::FromArgMatches;
    let word = command_word(args)?;
    let every = Command::augment_subcommands(clap::Command::new("tavern"));
    let mut parser = Global::augment_args(clap::Command::new("tavern"));
    parser = match every.find_subcommand(word) {
        Some(named) => parser.subcommand(named.clone()),
        // A workflow's own transition (`tavern review ID`): any word but clap's `help`,
        // taken as `Command::Custom` takes it.
        None if word != "help" => parser
            .allow_external_subcommands(true)
            .external_subcommand_value_parser(clap::value_parser!(String)),
        None => return None,
    };
    let matches = parser.try_get_matches_from(args).ok()?;
    Cli::from_arg_matches(&matches).ok()
}

/// `tavern hook …` as the whole program.
pub fn hook_main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let parsed = match hook_words(&args) {
        Some(cli) => Ok(cli),
        None => HookCli::try_parse_from(&args),
    };
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => return hook_parse_error(e),
    };
    let json = cli.global.json;
    let HookCommand::Hook(a) = cli.command;
    let ran = std::env::current_dir()
        .map_err(|e| Error::io(".", "read the working directory", e))
        .and_then(|cwd| {
            crate::setup::hook::run(&cwd, cli.global.board.as_deref(), cli.global.actor, json, a)
        });
    match ran {
        Ok(code) => code,
        Err(e) => report_error(&e, json),
    }
}

/// A hook's words that do not parse: help and version as for any command; anything else
/// (a flag it does not know, a missing word, an empty TAVERN_BOARD) is said on stderr
/// with exit 1, never the usage error's 2, which Claude Code and Codex take as "block
/// this" (the user's prompt, the edit): a mis-installed hook blocks nothing.
fn hook_parse_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let kind = e.kind();
    if matches!(kind, ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return parse_error(e);
    }
    let message = clap_message(&e);
    let empty_board = std::env::var_os("TAVERN_BOARD").is_some_and(|b| b.is_empty());
    let message = if kind == ErrorKind::InvalidValue && empty_board && message.contains("'--board")
    {
        "TAVERN_BOARD is set and empty; unset it, or set it to the board's directory".to_string()
    } else {
        message
    };
    crate::setup::hook::failed(&Error::usage(message))
}

/// What clap says of an argument it refused, without its "error: " and its pointer to
/// `--help`.
fn clap_message(e: &clap::Error) -> String {
    e.render()
        .to_string()
        .trim_start_matches("error: ")
        .trim_end()
        .trim_end_matches("For more information, try '--help'.")
        .trim_end()
        .to_string()
}

pub fn run(cli: Cli) -> Result<ExitCode> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io(".", "read the working directory", e))?;
    let ctx = Ctx {
        global: cli.global,
        cwd,
    };
    match cli.command {
        Command::Init(a) => admin::init(&ctx, a),
        Command::New(a) => docs::new(&ctx, a),
        Command::Post(a) => observations::post(&ctx, a),
        Command::Ack(a) => observations::ack(&ctx, a),
        Command::Resolve(a) => observations::resolve(&ctx, a),
        Command::Show(a) => docs::show(&ctx, a),
        Command::List(a) => docs::list(&ctx, a),
        Command::Search(a) => search::search(&ctx, a),
        Command::Edit(a) => docs::edit(&ctx, a),
        Command::Claim(a) => tasks::claim(&ctx, a),
        Command::Move(a) => tasks::move_cmd(&ctx, a),
        Command::Release(a) => tasks::run_transition(&ctx, "release", a),
        Command::Start(a) => tasks::run_transition(&ctx, "start", a),
        Command::Submit(a) => tasks::run_transition(&ctx, "submit", a),
        Command::Approve(a) => questions::approve(&ctx, a),
        Command::Deny(a) => questions::deny(&ctx, a),
        Command::Ask(a) => questions::ask(&ctx, a),
        Command::Answer(a) => questions::answer(&ctx, a),
        Command::Questions(a) => questions::list(&ctx, a),
        Command::Reject(a) => observations::reject(&ctx, a),
        Command::Block(a) => tasks::run_transition(&ctx, "block", a),
        Command::Unblock(a) => tasks::run_transition(&ctx, "unblock", a),
        Command::Done(a) => tasks::run_transition(&ctx, "done", a),
        Command::Fail(a) => tasks::run_transition(&ctx, "fail", a),
        Command::Cancel(a) => tasks::run_transition(&ctx, "cancel", a),
        Command::Reopen(a) => tasks::run_transition(&ctx, "reopen", a),
        Command::Log(a) => history::log(&ctx, a),
        Command::Events(a) => history::events(&ctx, a),
        Command::Diff(a) => history::diff(&ctx, a),
        Command::Check => admin::check(&ctx),
        Command::Status => sync::status(&ctx),
        Command::Sync(a) => sync::sync(&ctx, a),
        Command::Summary(a) => admin::summary(&ctx, a),
        Command::Archive(a) => admin::archive(&ctx, a),
        Command::Completions(a) => admin::completions(a),
        Command::Ready(a) => agents::ready(&ctx, a),
        Command::Agent(a) => agents::agent(&ctx, a),
        Command::Deps(a) => graph::deps(&ctx, a),
        Command::Tree(a) => graph::tree(&ctx, a),
        Command::Sweep => agents::sweep(&ctx),
        Command::Hold(a) => holds::hold(&ctx, a),
        Command::ReleaseHold(a) => holds::release(&ctx, a),
        Command::Holds => holds::list(&ctx),
        Command::Watch(a) => watch::watch(&ctx, a),
        Command::Serve(a) => {
            // Refused before anything else: no board is opened, nothing listens.
            crate::web::loopback(&a.bind)?;
            let board = ctx.board()?;
            // Nobody named: the page is read-only (only a human under humans: acts).
            let actor = match ctx.named_actor() {
                Some(_) => Some(ctx.actor(&board)?),
                None => None,
            };
            crate::web::run(&board, actor.as_deref(), &a)
        }
        Command::Pause(a) => watch::pause(&ctx, a),
        Command::Resume => watch::resume(&ctx),
        Command::Sources(a) => sources::run(&ctx, a),
        Command::Mcp(a) => crate::mcp::command(|| ctx.board(), ctx.global.actor.clone(), a),
        Command::Setup(a) => {
            crate::setup::run(&ctx.cwd, ctx.global.board.as_deref(), ctx.global.json, a)
        }
        Command::Hook(a) => crate::setup::hook::run(
            &ctx.cwd,
            ctx.global.board.as_deref(),
            ctx.global.actor.clone(),
            ctx.global.json,
            a,
        ),
        Command::Custom(args) => tasks::custom(&ctx, args),
    }
}

#[cfg(test)]
mod tests {
    /// clap's own checks of the whole parser (duplicate ids, a flag shadowing a global one,
    /// conflicting short names), every command built: parsing builds only the one given.
    #[test]
    fn the_parser_passes_clap_s_checks() {
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }

    /// Command lines for every command and subcommand: with what it requires, then with
    /// each of its flags in turn, with global flags before and after, and some mistakes.
    fn lines(cmd: &clap::Command, words: &[&str], out: &mut Vec<Vec<String>>) {
        let mut base: Vec<String> = std::iter::once("tavern")
            .chain(words.iter().copied())
            .map(String::from)
            .collect();
        let positionals: Vec<&clap::Arg> = cmd.get_positionals().collect();
        for p in positionals.iter().filter(|p| p.is_required_set()) {
            base.push(format!("{}-1", p.get_id()));
        }
        let with = |extra: &[&str]| -> Vec<String> {
            base.iter()
                .cloned()
                .chain(extra.iter().map(|s| s.to_string()))
                .collect()
        };
        out.push(base.clone());
        out.push(with(&["--json"]));
        out.push(with(&["--as", "ann", "--board=b"]));
        out.push(with(&["--nope"]));
        out.push(with(&["-h"]));
        out.push(with(&["--", "--json"]));
        let mut globals_first = vec!["tavern".to_string(), "--as".into(), "bob".into()];
        globals_first.extend(base[1..].iter().cloned());
        out.push(globals_first);
        for p in positionals.iter().filter(|p| !p.is_required_set()) {
            out.push(with(&["extra-1"]));
            out.push(with(&[p.get_id().as_str(), "two"]));
        }
        for a in cmd.get_opts().chain(
            cmd.get_arguments()
                .filter(|a| a.get_long().is_some() && !a.get_action().takes_values()),
        ) {
            let long = format!("--{}", a.get_long().unwrap_or("x"));
            if a.get_action().takes_values() {
                out.push(with(&[&long, "1"]));
                out.push(with(&[&long]));
            } else {
                out.push(with(&[&long]));
                out.push(with(&[&long, &long]));
            }
        }
        for sub in cmd.get_subcommands() {
            let mut deeper = words.to_vec();
            deeper.push(sub.get_name());
            lines(sub, &deeper, out);
        }
    }

    /// Wherever the quick parser takes a line, the whole one takes it the same way; and it
    /// takes every line the whole one takes that names a command.
    #[test]
    fn the_narrow_parser_agrees_with_the_whole_one() {
        use clap::Parser;
        let mut whole = <super::Cli as clap::CommandFactory>::command();
        whole.build();
        let mut all = Vec::new();
        for sc in whole.get_subcommands() {
            lines(sc, &[sc.get_name()], &mut all);
        }
        all.push(vec!["tavern".into()]);
        all.push(vec!["tavern".into(), "--json".into()]);
        all.push(vec!["tavern".into(), "--version".into(), "show".into()]);
        all.push(vec!["tavern".into(), "help".into(), "show".into()]);
        all.push(vec!["tavern".into(), "sho".into(), "x".into()]);
        let mut taken = 0;
        for line in &all {
            let args: Vec<std::ffi::OsString> = line.iter().map(Into::into).collect();
            let narrow = super::parse_narrow(&args).map(|c| format!("{c:?}"));
            let full = super::Cli::try_parse_from(&args)
                .ok()
                .map(|c| format!("{c:?}"));
            assert_eq!(narrow, full, "{line:?}");
            taken += usize::from(full.is_some());
        }
        // Not a comparison of refusals only: about a third of the lines are valid.
        assert!(taken * 4 > all.len(), "{taken} of {}", all.len());
    }
}
