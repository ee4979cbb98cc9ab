use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = tavern::cli::Cli::parse();
    let json = cli.global.json;
    match tavern::cli::run(cli) {
        Ok(code) => code,
        Err(tavern::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            if json {
                let v = serde_json::json!({"error": {"kind": e.kind().name(), "code": e.exit_code(), "message": e.to_string(), "path": e.path()}});
                eprintln!("{v}");
            } else {
                eprintln!("error: {e}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
