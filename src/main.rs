use std::process::ExitCode;

use clap::Parser;

mod web;

fn main() -> ExitCode {
    let mut argv = std::env::args_os().skip(1).peekable();
    let (json, result) = if argv.peek().is_some_and(|a| a == "serve") {
        (false, web::run_cli(argv.skip(1).collect()))
    } else {
        let cli = tavern::cli::Cli::parse();
        (cli.global.json, tavern::cli::run(cli))
    };
    match result {
        Ok(code) => code,
        Err(tavern::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
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
    }
}
