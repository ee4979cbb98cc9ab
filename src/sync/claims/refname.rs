//! Where a task's claim record lives: `refs/tavern/claims/<task-id>`, on the remote and in
//! every clone.

/// Where claim records live, on the remote and in every clone.
pub const REF_PREFIX: &str = "refs/tavern/claims/";

/// The ref of a task's record: `refs/tavern/claims/<task-id>`, the id as it is when it is
/// a valid ref name component. An id the board accepts may not be one (`a..b`, `x.lock`,
/// `v1.`): then every byte other than `a-z 0-9 _ -` is written `%XX` (`a%2E%2Eb`). Such
/// an id always has a byte that is encoded and no id has a `%`, so no two ids share a ref.
pub fn ref_name(task: &str) -> String {
    format!("{REF_PREFIX}{}", component(task))
}

/// The ref name component of a task id (see [`ref_name`]).
pub fn component(task: &str) -> String {
    let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-';
    let safe = !task.is_empty()
        && task.bytes().all(|b| plain(b) || b == b'.')
        && !task.starts_with('.')
        && !task.ends_with('.')
        && !task.contains("..")
        && !task.ends_with(".lock");
    if safe {
        return task.to_string();
    }
    task.bytes()
        .map(|b| {
            if plain(b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The task id a ref name component stands for (the inverse of [`component`]); None for
/// a component no id encodes to.
pub fn task_of(component: &str) -> Option<String> {
    if !component.contains('%') {
        return Some(component.to_string());
    }
    let bytes = component.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = component.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_are_valid_ref_components_are_kept_as_they_are() {
        assert_eq!(ref_name("t01"), "refs/tavern/claims/t01");
        assert_eq!(
            ref_name("fix_login-2.b"),
            "refs/tavern/claims/fix_login-2.b"
        );
    }

    #[test]
    fn ids_that_git_would_refuse_are_percent_encoded_whole() {
        for (id, want) in [
            ("a..b", "a%2E%2Eb"),
            ("x.lock", "x%2Elock"),
            ("v1.", "v1%2E"),
            (".hidden", "%2Ehidden"),
        ] {
            assert_eq!(ref_name(id), format!("{REF_PREFIX}{want}"), "{id}");
        }
    }

    #[test]
    fn a_component_reads_back_as_its_task() {
        for id in ["t01", "a..b", "x.lock", "v1.", ".h", "fix_login-2.b"] {
            assert_eq!(task_of(&component(id)).as_deref(), Some(id), "{id}");
        }
        assert_eq!(task_of("bad%zz"), None);
        assert_eq!(task_of("cut%2"), None);
    }

    #[test]
    fn no_two_ids_share_a_ref() {
        // An encoded name always has a `%`, which no id has; a plain one never does.
        let ids = [
            "a..b", "a%2E%2Eb", "a.b", "x.lock", "x%2Elock", "v1.", "v1", "v1%2E",
        ];
        let names: std::collections::BTreeSet<String> = ids.iter().map(|i| ref_name(i)).collect();
        assert_eq!(names.len(), ids.len());
        // Every encoded name is one git accepts.
        for id in ["a..b", "x.lock", "v1.", ".h"] {
            let name = ref_name(id);
            let c = &name[REF_PREFIX.len()..];
            assert!(!c.contains("..") && !c.ends_with(".lock") && !c.starts_with('.'));
        }
    }
}
