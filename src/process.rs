//! Child process groups: commands tavern starts (completion checks, knowledge sources) run
//! in their own process group, so that a timeout or a shutdown ends their children too.

use std::process::{Command, Stdio};

/// Puts the command in a new process group whose id is its pid.
pub fn own_group(command: &mut Command) {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(command, 0);
    #[cfg(not(unix))]
    let _ = command;
}

/// Sends SIGKILL to the whole process group `pgid` (a command and everything it started).
/// Through the shell's `kill` builtin: the standard library has no killpg, tavern has no
/// unsafe code, and a `kill` program is not on every minimal system, but `sh` is.
pub fn kill_group(pgid: u32) {
    let _ = Command::new("sh")
        .args(["-c", &format!("kill -s KILL -- -{pgid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
