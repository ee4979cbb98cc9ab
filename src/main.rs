use std::process::ExitCode;

use clap::Parser;

mod frontends;
mod mcp;
mod setup;

fn main() -> ExitCode {
    if let Some(code) = frontends::dispatch() {
        return code;
    }
    let cli = tavern::cli::Cli::parse();
    let json = cli.global.json;
    match tavern::cli::run(cli) {
        Ok(code) => code,
        Err(e) => report(e, json),
    }
}

/// Prints an error once, on stderr, and returns its exit code.
fn report(e: tavern::Error, json: bool) -> ExitCode {
    if let tavern::Error::Io { source, .. } = &e
        && source.kind() == std::io::ErrorKind::BrokenPipe
    {
        return ExitCode::SUCCESS;
    }
    let text = if json {
        let v = serde_json::json!({"error": {"kind": e.kind().name(), "code": e.exit_code(), "message": e.to_string(), "path": e.path()}});
        format!("{v}\n")
    } else {
        format!("error: {e}\n")
    };
    // One write, so messages of concurrent agents sharing a terminal do not interleave.
    let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
    ExitCode::from(e.exit_code())
}
