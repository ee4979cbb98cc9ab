mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The library reports what it handled on the way as notices; here they are warnings.
    tavern::notice::set_sink(|n| cli::render::warn(&n.to_string()));
    let cli = cli::Cli::parse();
    let json = cli.global.json;
    match cli::run(cli) {
        Ok(code) => code,
        Err(tavern::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            let text = if json {
                let v = serde_json::json!({"error": {"kind": e.kind().name(), "code": e.exit_code(), "message": cli::errors::message(&e), "path": e.path()}});
                format!("{v}\n")
            } else {
                format!("error: {}\n", cli::errors::message(&e))
            };
            // One write, so messages of concurrent agents sharing a terminal do not interleave.
            let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
            ExitCode::from(e.exit_code())
        }
    }
}
