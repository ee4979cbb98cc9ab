//! `tavern hook CLIENT EVENT`.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

#[derive(Debug, Args)]
pub struct HookArgs {
    pub client: String,
    pub event: String,
}

pub fn run(_cwd: &Path, _board: Option<&Path>, _actor: Option<String>, _a: HookArgs) -> tavern::Result<ExitCode> {
    Ok(ExitCode::SUCCESS)
}
