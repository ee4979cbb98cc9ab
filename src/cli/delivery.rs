//! `events --for-me`: what concerns the acting agent since it last looked (an answer, a
//! decision, a finding about its task, a lost claim, a pause, a review), the same delivery
//! the client hooks and the MCP `status` tool give.

use std::process::ExitCode;

use super::Ctx;
use tavern::api::Result;
use tavern::api::delivery::{self, Bounds};

/// What ends a delivery that has more than it shows.
pub const MORE: &str = "run `tavern events --for-me`";

pub fn for_me(ctx: &Ctx) -> Result<ExitCode> {
    let board = ctx.board()?;
    let actor = ctx.actor(&board)?;
    let d = delivery::for_me(&board, &actor, Bounds::ASKED)?;
    if ctx.global.json {
        let v = serde_json::to_string(&d).unwrap_or_default();
        super::output::line(&v)?;
    } else if let Some(text) = d.fenced(&format!("{MORE} again")) {
        super::output::line(&text)?;
    } else {
        super::output::note(false, "nothing new for you");
    }
    // Printed: the cursor moves past it.
    delivery::delivered(&board, d)?;
    Ok(ExitCode::SUCCESS)
}
