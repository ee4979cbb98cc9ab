#!/usr/bin/env python3
"""What the hooks cost in the common case, beside a process start (`/bin/true`), timed in
interleaved rounds so that all see the same load:

- `tavern hook claude heartbeat` after a tool use with nothing to deliver (its PostToolUse
  event as JSON on stdin, the agent named by TAVERN_AGENT), and, for scale, with one item;
- `tavern hook claude pre-edit` before an Edit of a file nobody holds (its PreToolUse
  event on stdin), with no hold at all, then with another agent holding other paths;
- `tavern --version`, the binary's start alone.

    cargo build --release && scripts/hook-cost.py [TAVERN_BIN] [--tasks N] [--rounds N]

Prints medians and the ratio to /bin/true; the target is within 2x. Each time is the
wall time of one process, spawned and waited for by this script (the same spawn cost for
all).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser()
    p.add_argument("bin", nargs="?", default=os.path.join(here, "..", "target", "release", "tavern"))
    p.add_argument("--tasks", type=int, default=1000, help="tasks on the board (each one log entry)")
    p.add_argument("--rounds", type=int, default=200)
    a = p.parse_args()
    tavern = os.path.abspath(a.bin)
    project = tempfile.mkdtemp(prefix="hook-cost-")
    env = dict(os.environ, USER="bench", TAVERN_AGENT="agent-1")
    env.pop("TAVERN_BOARD", None)
    env.pop("CLAUDE_ENV_FILE", None)

    def tv(*args, stdin=None):
        return subprocess.run([tavern, *args], cwd=project, env=env, input=stdin,
                              capture_output=True, text=True, check=True)

    tv("init")
    for i in range(a.tasks):
        tv("--as", "human", "new", "task", f"Task {i}")
    # The session starts as a client's does: the agent registered, its cursor at the end.
    tv("hook", "claude", "session-start", stdin='{"source":"startup"}')
    event = json.dumps({
        "session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "cargo test"}, "tool_response": {"stdout": "ok\n" * 200},
    })

    def timed(argv, stdin=None):
        t = time.perf_counter()
        r = subprocess.run(argv, cwd=project, env=env, input=stdin, capture_output=True, text=True)
        dt = time.perf_counter() - t
        return dt, r

    hook = [tavern, "hook", "claude", "heartbeat"]
    # The pre-edit hook as Claude Code runs it before an Edit, on a file nobody holds:
    # first with no hold at all, then (below) with another file held.
    pre_edit = [tavern, "hook", "claude", "pre-edit"]
    edit = json.dumps({
        "session_id": "s", "cwd": project, "hook_event_name": "PreToolUse", "tool_name": "Edit",
        "tool_input": {"file_path": os.path.join(project, "src", "free.rs"),
                       "old_string": "a", "new_string": "b"},
    })
    version = [tavern, "--version"]

    def edit_allowed(r):
        if r.returncode != 0 or r.stdout != "":
            sys.exit(f"the pre-edit hook refused or failed a free path: {r.returncode} {r.stdout!r} {r.stderr!r}")

    true, quiet, free, start = [], [], [], []
    for i in range(a.rounds + 1):
        t1, _ = timed(["/bin/true"])
        t2, r = timed(hook, event)
        if r.returncode != 0 or r.stdout != "":
            sys.exit(f"the hook delivered or failed with nothing to deliver: {r.returncode} {r.stdout!r} {r.stderr!r}")
        t3, r = timed(pre_edit, edit)
        edit_allowed(r)
        t4, _ = timed(version)
        if i:  # the first round warms up
            true.append(t1)
            quiet.append(t2)
            free.append(t3)
            start.append(t4)

    # Another agent holds other files: the free path's edit reads the registry.
    tv("--as", "agent-2", "hold", "src/held.rs", "docs/**", "--resource", "db:test", "--for", "2h")
    true_held, free_held = [], []
    for i in range(a.rounds + 1):
        t1, _ = timed(["/bin/true"])
        t2, r = timed(pre_edit, edit)
        edit_allowed(r)
        if i:
            true_held.append(t1)
            free_held.append(t2)

    # With one item: a human pauses the board before each hook call (the pause itself is
    # not timed), so each call reads one new entry and delivers it.
    news = []
    for i in range(min(a.rounds, 50)):
        tv("--as", "human", "pause" if i % 2 == 0 else "resume", *(["lunch"] if i % 2 == 0 else []))
        t, r = timed(hook, event)
        if "hookSpecificOutput" not in r.stdout:
            sys.exit(f"the hook did not deliver: {r.stdout!r} {r.stderr!r}")
        news.append(t)

    ms = lambda xs: statistics.median(xs) * 1000
    base = ms(true)
    print(f"board: {a.tasks} tasks, log of {a.tasks + 2} entries; {a.rounds} rounds; {tavern}")
    print(f"/bin/true                              median {base:.2f} ms")
    print(f"hook claude heartbeat, nothing new     median {ms(quiet):.2f} ms  {ms(quiet) / base:.2f}x /bin/true (target <= 2x)")
    print(f"hook claude heartbeat, one item        median {ms(news):.2f} ms  {ms(news) / base:.2f}x /bin/true")
    print(f"tavern --version                       median {ms(start):.2f} ms  {ms(start) / base:.2f}x /bin/true")
    print(f"hook claude pre-edit, nothing held     median {ms(free):.2f} ms  {ms(free) / base:.2f}x /bin/true (target <= 2x)")
    base2 = ms(true_held)
    print(f"hook claude pre-edit, others held      median {ms(free_held):.2f} ms  {ms(free_held) / base2:.2f}x /bin/true ({base2:.2f} ms in these rounds)")
    subprocess.run(["rm", "-rf", project])


if __name__ == "__main__":
    main()
