#!/usr/bin/env python3
"""What one tavern process costs in the common case, beside a process start (`/bin/true`),
timed in interleaved rounds so that all see the same load:

- `tavern hook claude heartbeat` after a tool use with nothing to deliver (its PostToolUse
  event as JSON on stdin, the agent named by TAVERN_AGENT), and, for scale, with one item;
- `tavern hook claude pre-edit` before an Edit of a file nobody holds (its PreToolUse
  event on stdin), with no hold at all, then with another agent holding other paths;
- `tavern --version`, the binary's start alone;
- `tavern claim ID` of a pending task (a new one each round), and the fsyncs one claim
  makes (counted with strace, when it is installed).

    cargo build --release && scripts/hook-cost.py [TAVERN_BIN ...] [--tasks N] [--rounds N]

With several binaries (say, a build before and after a change), each is timed in the same
rounds, one after the other, on the same board. Prints medians and the ratio to
/bin/true; the targets are within 2x for the hooks, within 3x for `claim`. Each time is
the wall time of one process, spawned and waited for by this script (the same spawn cost
for all); beside it, the CPU time (user + system) of the process alone.

    TAVERN_HOOK_TIMES=/tmp/times.jsonl cargo test --test tests clients::
    scripts/hook-cost.py --client-times /tmp/times.jsonl

summarises the hooks as the released clients ran them in their tests (through
tests/clients/hook_times.py; `TAVERN_HOOK_TIMES_BIN=target/release/tavern` to time the
release build there), per client and event, each beside a /bin/true started right after.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser()
    p.add_argument("bins", nargs="*", metavar="TAVERN_BIN",
                   help="binaries to time side by side (default: target/release/tavern)")
    p.add_argument("--tasks", type=int, default=1000, help="tasks on the board (each one log entry)")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--client-times", metavar="FILE",
                   help="summarise the hook times the client tests wrote (TAVERN_HOOK_TIMES=FILE) and exit")
    a = p.parse_args()
    if a.client_times:
        return client_times(a.client_times)
    bins = [os.path.abspath(b) for b in (a.bins or [os.path.join(here, "..", "target", "release", "tavern")])]
    tavern = bins[0]
    project = tempfile.mkdtemp(prefix="hook-cost-")
    env = dict(os.environ, USER="bench", TAVERN_AGENT="agent-1")
    env.pop("TAVERN_BOARD", None)
    env.pop("CLAUDE_ENV_FILE", None)

    def tv(*args, stdin=None, bin=tavern):
        return subprocess.run([bin, *args], cwd=project, env=env, input=stdin,
                              capture_output=True, text=True, check=True)

    tv("init")
    for i in range(a.tasks):
        tv("--as", "human", "new", "task", f"Task {i}")
    # Pending tasks to claim, one per binary and round (and one for the fsync count each).
    claimable = []
    for i in range((a.rounds + 2) * len(bins)):
        out = tv("--as", "human", "--json", "new", "task", f"Claim me {i}").stdout
        claimable.append(json.loads(out)["id"])
    # The session starts as a client's does: the agent registered, its cursor at the end.
    tv("hook", "claude", "session-start", stdin='{"source":"startup"}')
    event = json.dumps({
        "session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "cargo test"}, "tool_response": {"stdout": "ok\n" * 200},
    })

    def timed(argv, stdin=None):
        u0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        r = subprocess.run(argv, cwd=project, env=env, input=stdin, capture_output=True, text=True)
        dt = time.perf_counter() - t
        u1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r.cpu = (u1.ru_utime - u0.ru_utime) + (u1.ru_stime - u0.ru_stime)
        return dt, r

    # The pre-edit hook as Claude Code runs it before an Edit, on a file nobody holds:
    # first with no hold at all, then (below) with another file held.
    edit = json.dumps({
        "session_id": "s", "cwd": project, "hook_event_name": "PreToolUse", "tool_name": "Edit",
        "tool_input": {"file_path": os.path.join(project, "src", "free.rs"),
                       "old_string": "a", "new_string": "b"},
    })

    def edit_allowed(r):
        if r.returncode != 0 or r.stdout != "":
            sys.exit(f"the pre-edit hook refused or failed a free path: {r.returncode} {r.stdout!r} {r.stderr!r}")

    def claimed(r):
        if r.returncode != 0:
            sys.exit(f"claim failed: {r.returncode} {r.stdout!r} {r.stderr!r}")

    # The fsyncs of one claim, per binary (strace counts each call).
    fsyncs = {}
    if shutil.which("strace"):
        for b in bins:
            r = subprocess.run(["strace", "-f", "-qq", "-e", "trace=fsync,fdatasync,sync_file_range,syncfs,sync",
                                b, "--as", "agent-3", "claim", claimable.pop()], cwd=project, env=env, capture_output=True, text=True)
            claimed(r)
            fsyncs[b] = [line.split("(")[0] for line in r.stderr.splitlines() if "(" in line]

    # Wall time and CPU time (user + system, of the process alone) of each run.
    true, true_cpu = [], []
    quiet, free, start = ({b: ([], []) for b in bins} for _ in range(3))
    for i in range(a.rounds + 1):
        t1, r = timed(["/bin/true"])
        if i:  # the first round warms up
            true.append(t1)
            true_cpu.append(r.cpu)
        for b in bins:
            t2, r2 = timed([b, "hook", "claude", "heartbeat"], event)
            if r2.returncode != 0 or r2.stdout != "":
                sys.exit(f"the hook delivered or failed with nothing to deliver: {r2.returncode} {r2.stdout!r} {r2.stderr!r}")
            t3, r3 = timed([b, "hook", "claude", "pre-edit"], edit)
            edit_allowed(r3)
            t4, r4 = timed([b, "--version"])
            if i:
                for xs, t, r in ((quiet, t2, r2), (free, t3, r3), (start, t4, r4)):
                    xs[b][0].append(t)
                    xs[b][1].append(r.cpu)

    # Claims (each appends to the log, so not in the rounds above: the heartbeat would
    # then have news to read), each beside its own /bin/true.
    true_claim, true_claim_cpu = [], []
    claim = {b: ([], []) for b in bins}
    for i in range(a.rounds + 1):
        t1, r = timed(["/bin/true"])
        if i:
            true_claim.append(t1)
            true_claim_cpu.append(r.cpu)
        for b in bins:
            t, r = timed([b, "--as", "agent-3", "claim", claimable.pop()])
            claimed(r)
            if i:
                claim[b][0].append(t)
                claim[b][1].append(r.cpu)

    # Another agent holds other files: the free path's edit reads the registry.
    tv("--as", "agent-2", "hold", "src/held.rs", "docs/**", "--resource", "db:test", "--for", "2h")
    true_held, free_held = [], {b: [] for b in bins}
    for i in range(a.rounds + 1):
        t1, _ = timed(["/bin/true"])
        if i:
            true_held.append(t1)
        for b in bins:
            t2, r = timed([b, "hook", "claude", "pre-edit"], edit)
            edit_allowed(r)
            if i:
                free_held[b].append(t2)

    # With one item: a human pauses the board before each hook call (the pause itself is
    # not timed), so each call reads one new entry and delivers it.
    news = {b: [] for b in bins}
    paused = False
    for i in range(min(a.rounds, 50)):
        for b in bins:
            paused = not paused
            tv("--as", "human", "pause" if paused else "resume", *(["lunch"] if paused else []))
            t, r = timed([b, "hook", "claude", "heartbeat"], event)
            if "hookSpecificOutput" not in r.stdout:
                sys.exit(f"the hook did not deliver: {r.stdout!r} {r.stderr!r}")
            news[b].append(t)

    ms = lambda xs: statistics.median(xs) * 1000
    base, base_cpu = ms(true), ms(true_cpu)
    base2 = ms(true_held)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])

    def row(name, xs, target="", base=base, base_cpu=base_cpu):
        wall, cpu_ = ms(xs[0]), ms(xs[1])
        print(f"{name:<38} median {wall:6.2f} ms  {wall / base:5.2f}x /bin/true;"
              f"  CPU {cpu_:5.2f} ms  {cpu_ / base_cpu:5.2f}x{target}")

    print(f"board: {a.tasks + (a.rounds + 2) * len(bins)} tasks, {a.rounds} rounds, load {load}")
    print(f"/bin/true                              median {base:6.2f} ms;  CPU {base_cpu:5.2f} ms")
    for b in bins:
        print(f"-- {b}")
        row("hook claude heartbeat, nothing new", quiet[b], " (target <= 2x)")
        print(f"hook claude heartbeat, one item        median {ms(news[b]):6.2f} ms  {ms(news[b]) / base:5.2f}x /bin/true")
        row("tavern --version", start[b])
        row("hook claude pre-edit, nothing held", free[b], " (target <= 2x)")
        print(f"hook claude pre-edit, others held      median {ms(free_held[b]):6.2f} ms  {ms(free_held[b]) / base2:5.2f}x /bin/true ({base2:.2f} ms in these rounds)")
        row("claim ID", claim[b], f" (target <= 3x; /bin/true {ms(true_claim):.2f} ms, CPU {ms(true_claim_cpu):.2f} ms in these rounds)",
            ms(true_claim), ms(true_claim_cpu))
        if b in fsyncs:
            print(f"claim ID's syncs                       {len(fsyncs[b])}: {', '.join(fsyncs[b])}")
    subprocess.run(["rm", "-rf", project])


def client_times(path):
    """Medians per client and event of the hooks as the real clients ran them (each beside
    the /bin/true the wrapper started right after it)."""
    groups = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            client, event = (r["args"] + ["?", "?"])[:2]
            groups.setdefault((client, event), []).append(r)
    print(f"{'client':<9} {'event':<14} {'runs':>4} {'median':>9} {'/bin/true':>10} {'ratio':>6}  exit codes")
    for (client, event), rs in sorted(groups.items()):
        ms = statistics.median(r["ms"] for r in rs)
        base = statistics.median(r["true_ms"] for r in rs)
        codes = sorted({r["code"] for r in rs})
        print(f"{client:<9} {event:<14} {len(rs):>4} {ms:>6.2f} ms {base:>7.2f} ms {ms / base:>5.2f}x  {codes}")

if __name__ == "__main__":
    main()
