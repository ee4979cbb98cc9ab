//! `tavern search`: the hits as text (id or path, score, title, then the matching lines)
//! or as JSON.

use std::process::ExitCode;

use clap::Args;

use super::Ctx;
use super::output::{self, cell, out};
use super::render::{Render, skipped_warnings};
use tavern::api::Result;
use tavern::api::search::{DEFAULT_LIMIT, Found, SearchRequest};

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Words, "quoted phrases" and query filters, in any order: "lock timeout" region:observations status=open
    #[arg(value_name = "WORDS", required = true)]
    pub terms: Vec<String>,
    /// At most N hits
    #[arg(long, value_name = "N", default_value_t = DEFAULT_LIMIT)]
    pub limit: usize,
}

pub fn search(ctx: &Ctx, a: SearchArgs) -> Result<ExitCode> {
    let board = ctx.board()?;
    let found = tavern::api::search::search(
        &board,
        &SearchRequest {
            terms: a.terms,
            limit: a.limit,
        },
    )?;
    let code = ctx.print(&found)?;
    if found.hits.is_empty() {
        output::note(ctx.global.json, "nothing matches");
    }
    Ok(code)
}

impl Render for Found {
    fn text(&self) -> Result<()> {
        let mut text = String::new();
        for hit in &self.hits {
            let mut status = hit.status.clone().unwrap_or_else(|| "-".into());
            if hit.archived {
                status.push_str(" (archived)");
            }
            text.push_str(&format!(
                "{}  {:.2}  {}  {}\n",
                cell(&hit.id),
                hit.score,
                cell(&status),
                cell(&hit.title)
            ));
            for s in &hit.snippets {
                text.push_str(&format!("    {}: {}\n", s.line, cell(&s.text)));
            }
        }
        out(&text)
    }

    fn warnings(&self) -> Vec<String> {
        skipped_warnings(&self.skipped)
    }
}
