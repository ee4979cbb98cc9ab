//! Document ids: validation of chosen ones and generation of new ones.
//!
//! Generated ids are `<prefix>-<random base32>`: short, and random rather than sequential
//! so that two machines or branches do not mint the same id. The creator grows the random
//! part by a character when the file already exists (see `store::create`).

use std::hash::{BuildHasher, Hasher};

use crate::error::{Error, Result};

/// Lowercase base32 without the letters that read like digits (i, l, o, u).
const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// Length of the random part of a fresh id.
pub const INITIAL_RANDOM_LEN: usize = 4;

/// Checks an id against `[a-z0-9][a-z0-9._-]{0,63}`.
pub fn validate(id: &str) -> Result<()> {
    let fail = |reason| {
        Err(Error::InvalidId {
            id: id.to_string(),
            reason,
        })
    };
    if id.is_empty() {
        return fail("it is empty");
    }
    if id.len() > 64 {
        return fail("it is longer than 64 characters");
    }
    let bytes = id.as_bytes();
    if !(bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit()) {
        return fail("it must start with a lowercase letter or a digit");
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')))
    {
        return Err(Error::InvalidId {
            id: id.to_string(),
            reason: if c == '/' || c == '\\' {
                "it contains a path separator"
            } else if c.is_ascii_uppercase() {
                "it contains an uppercase letter"
            } else {
                "it contains a character other than a-z 0-9 . _ -"
            },
        });
    }
    Ok(())
}

/// A random source good enough for ids: std's per-process random hasher keys, mixed with
/// the time, the pid and a counter. No extra dependency, no global state to seed.
fn random_u64(counter: u64) -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.write_u64(counter);
    h.finish()
}

/// A new id with `len` random characters, e.g. `task-7k2m`.
pub fn generate(prefix: &str, len: usize, counter: u64) -> String {
    let mut out = String::with_capacity(prefix.len() + 1 + len);
    out.push_str(prefix);
    out.push('-');
    let mut bits = random_u64(counter);
    for i in 0..len {
        if i > 0 && i % 12 == 0 {
            bits = random_u64(counter.wrapping_add(i as u64));
        }
        out.push(ALPHABET[(bits & 31) as usize] as char);
        bits >>= 5;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_good_ids() {
        for id in ["task-7k2m", "a", "0", "q-1.2_x", &"a".repeat(64)] {
            validate(id).unwrap();
        }
    }

    #[test]
    fn refuses_bad_ids() {
        for id in [
            "",
            "../../etc/passwd",
            "/abs",
            "Task",
            "-x",
            ".hidden",
            "a b",
            "a\0b",
            "é",
            &"a".repeat(65),
        ] {
            assert!(validate(id).is_err(), "{id:?} was accepted");
        }
    }

    #[test]
    fn generated_ids_are_valid_and_differ() {
        let ids: std::collections::HashSet<String> =
            (0..1000).map(|i| generate("task", 4, i)).collect();
        assert!(
            ids.len() > 990,
            "only {} distinct ids out of 1000",
            ids.len()
        );
        for id in &ids {
            validate(id).unwrap();
            assert_eq!(id.len(), "task-".len() + 4);
        }
    }
}
