//! The knowledge sources of watch mode (control/sources/*.md): what each reacts to and
//! when it last ran, and whether every source file is valid.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::board::Board;
use crate::check::Problem;
use crate::error::Result;
use crate::log::Entry;
use crate::watch::sources::{self, Source};

/// A source as listed.
#[derive(Debug, Serialize)]
pub struct SourceRow {
    pub name: String,
    pub path: String,
    pub watch: Vec<String>,
    pub on: Vec<String>,
    pub when: Option<String>,
    pub run: String,
    pub priority: i64,
    /// `30s`, `15m`: as a source file would spell it.
    pub cooldown: String,
    pub max_parallel: usize,
    pub timeout: String,
    pub description: Option<String>,
    /// Its last activation's log entry: started, or how it ended.
    pub last: Option<Entry>,
}

#[derive(Debug, Serialize)]
pub struct SourceList {
    pub sources: Vec<SourceRow>,
    /// Source files left out, and why.
    pub skipped: Vec<Problem>,
}

/// `30s`, `15m`: as a source file would spell it.
fn duration_text(d: Duration) -> String {
    match chrono::Duration::from_std(d) {
        Ok(d) => crate::time::format_duration(d),
        Err(_) => format!("{}s", d.as_secs()),
    }
}

fn row(s: &Source, last: &HashMap<String, Entry>) -> SourceRow {
    SourceRow {
        name: s.name.clone(),
        path: s.path.clone(),
        watch: s.watch.clone(),
        on: s.on.iter().map(|o| o.name()).collect(),
        when: (!s.when_text.is_empty()).then(|| s.when_text.clone()),
        run: s.run.clone(),
        priority: s.priority,
        cooldown: duration_text(s.cooldown),
        max_parallel: s.max_parallel,
        timeout: duration_text(s.timeout),
        description: s.description.clone(),
        last: last.get(&s.name).cloned(),
    }
}

/// The registered sources in the order they run, with their last activation.
pub fn list(board: &Board) -> Result<SourceList> {
    let (list, skipped) = sources::load_all(board);
    let last = sources::last_activations(board)?;
    Ok(SourceList {
        sources: list.iter().map(|s| row(s, &last)).collect(),
        skipped,
    })
}

/// Every problem in the source files, or none.
#[derive(Debug, Serialize)]
pub struct SourcesChecked {
    pub ok: bool,
    /// How many source files were checked.
    pub sources: usize,
    pub problems: Vec<Problem>,
    /// Where the source files are, for the report's last line.
    #[serde(skip)]
    pub dir: PathBuf,
}

/// Validates every source file.
pub fn check(board: &Board) -> Result<SourcesChecked> {
    let (list, problems) = sources::load_all(board);
    // A file may have several problems; count it once.
    let mut paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    paths.dedup();
    Ok(SourcesChecked {
        ok: problems.is_empty(),
        sources: list.len() + paths.len(),
        dir: sources::dir(board),
        problems,
    })
}
