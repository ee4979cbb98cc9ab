//! Finding running processes by their command lines (Linux `/proc`): the tests that kill
//! a process at a chosen moment (a push whose answer is lost, a keeper) look for it here.

use std::path::Path;

/// The pids of the running processes whose arguments `wanted` accepts. A zombie (ended,
/// not yet reaped) has no arguments.
pub fn matching(wanted: impl Fn(&[String]) -> bool) -> Vec<u32> {
    let mut pids = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|&b| b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if wanted(&args) {
            pids.push(pid);
        }
    }
    pids.sort_unstable();
    pids
}

/// The pids of a push to `remote` under a lease that starts with `lease` (for instance
/// `--force-with-lease=refs/tavern/claims/`): the client's `git push`, and the
/// `git-receive-pack` serving it.
pub fn pushes(remote: &Path, lease: &str) -> Vec<u32> {
    let remote = remote.to_string_lossy();
    matching(|args| {
        let push = args.iter().any(|a| a == "push") && args.iter().any(|a| a.starts_with(lease));
        let receive = args.iter().any(|a| a.contains("receive-pack"))
            && args.iter().any(|a| a.contains(remote.as_ref()));
        push || receive
    })
}
