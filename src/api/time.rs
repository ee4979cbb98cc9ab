//! Times and durations as tavern writes and reads them.

/// How long ago a time was, in words (`5m ago`).
pub use crate::time::ago;
/// A duration as people write it: `500ms`, `2s`, `10m`, `1h`, `7d`.
pub use crate::time::parse_duration;
/// A time as tavern stamps it, to the millisecond (`2026-11-27T10:55:04.123Z`).
pub use crate::time::stamp_millis;
