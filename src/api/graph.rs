//! The task graph: what a task waits for and what waits for it (`deps`), and its
//! subtasks (`tree`).

use crate::board::Board;
use crate::doc::Region;
use crate::error::Result;
pub use crate::ops::graph::{Deps, Node, Task};

/// `deps` of a task given by id or unique prefix.
pub fn deps(board: &Board, reference: &str) -> Result<Deps> {
    let (_, id) = crate::ops::resolve::resolve(board, reference, &[Region::Tasks])?;
    crate::ops::graph::deps(board, &id)
}

/// The subtask tree of a task given by id or unique prefix.
pub fn tree(board: &Board, reference: &str) -> Result<Node> {
    let (_, id) = crate::ops::resolve::resolve(board, reference, &[Region::Tasks])?;
    crate::ops::graph::tree(board, &id)
}
