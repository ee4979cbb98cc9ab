//! The process an agent's session lives in: the lease holder of its claims.
//!
//! An agent client (an editor, a coding assistant) runs tavern through a hook or a tool
//! call, usually by way of a shell that exits as soon as the command does. Recording that
//! shell's pid as the lease holder would let a sweep release the agent's claims one lease
//! after every call. The holder is the first ancestor that is not such a short-lived
//! wrapper: the client itself.

/// Programs that only run a command for someone else and exit with it.
const WRAPPERS: [&str; 11] = [
    "sh", "bash", "dash", "zsh", "fish", "ksh", "ash", "env", "timeout", "nohup", "setsid",
];

/// The parent pid and the command name of process `pid`, read from /proc.
fn parent_and_name(pid: u32) -> Option<(u32, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`: comm may hold spaces and parentheses, so split at the last ')'.
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_string();
    let ppid = stat
        .get(close + 1..)?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some((ppid, name))
}

/// The client process above `start` (normally this process's parent): walks up past shells
/// and wrappers. Where /proc is missing, or the walk reaches init, `start` itself.
pub fn holder_from(start: u32) -> u32 {
    let mut pid = start;
    for _ in 0..16 {
        let Some((ppid, name)) = parent_and_name(pid) else {
            return start;
        };
        if !WRAPPERS.contains(&name.as_str()) {
            return pid;
        }
        if ppid <= 1 {
            return start;
        }
        pid = ppid;
    }
    start
}

/// The client process of this one: see [`holder_from`].
pub fn holder() -> u32 {
    holder_from(std::os::unix::process::parent_id())
}
