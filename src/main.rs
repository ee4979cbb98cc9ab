mod cli;
mod mcp;
mod setup;
mod web;

use std::process::ExitCode;

fn main() -> ExitCode {
    // The library reports what it handled on the way as notices; here they are warnings.
    tavern::api::on_notice(|n| cli::render::warn(&n.to_string()));
    // A read that builds the index of a big board from nothing says how far it is, on a
    // terminal only.
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        tavern::api::on_index_progress(cli::render::index_progress);
    }
    // A read of a big board with no watcher running starts the index keeper: this
    // program, `--board ROOT watch --keeper`.
    tavern::api::on_index_keeper(|root| {
        let mut command = std::process::Command::new(std::env::current_exe().ok()?);
        command.arg("--board").arg(root).args(["watch", "--keeper"]);
        Some(command)
    });
    // The hooks run at every edit and tool use: they parse only their own arguments.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if cli::is_hook(&args) {
        return cli::hook_main();
    }
    let cli = match cli::parse(args) {
        Ok(cli) => cli,
        // Help and version are printed; anything else is an error like every other.
        Err(e) => return cli::parse_error(e),
    };
    let json = cli.global.json;
    match cli::run(cli) {
        Ok(code) => code,
        Err(e) => cli::report_error(&e, json),
    }
}
