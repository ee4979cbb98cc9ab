#!/usr/bin/env python3
"""What the hook after each tool use costs when there is nothing to deliver (the common
case), beside a process start: `tavern hook claude heartbeat` as Claude Code runs it (its
PostToolUse event as JSON on stdin, the agent named by TAVERN_AGENT), and `/bin/true`,
timed in interleaved rounds so that both see the same load. Also, for scale, the same hook
when it has one item to deliver.

    cargo build --release && scripts/hook-cost.py [TAVERN_BIN] [--tasks N] [--rounds N]

Prints medians and the ratio to /bin/true; the target is within 2x. Each time is the
wall time of one process, spawned and waited for by this script (the same spawn cost for
both).
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
    true, quiet = [], []
    for i in range(a.rounds + 1):
        t1, _ = timed(["/bin/true"])
        t2, r = timed(hook, event)
        if r.returncode != 0 or r.stdout != "":
            sys.exit(f"the hook delivered or failed with nothing to deliver: {r.returncode} {r.stdout!r} {r.stderr!r}")
        if i:  # the first round warms up
            true.append(t1)
            quiet.append(t2)

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
    subprocess.run(["rm", "-rf", project])


if __name__ == "__main__":
    main()
