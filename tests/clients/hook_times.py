#!/usr/bin/env python3
"""Stands first on the clients' PATH as `tavern` when the client tests run with
TAVERN_HOOK_TIMES=FILE (tests/clients.rs): every `tavern hook …` a client runs is timed as
the client runs it (its stdin, its environment, its load), followed by a /bin/true started
the same way as the baseline, and one JSON line is appended to FILE:
{"args": [...], "ms": wall time of the tavern process, "true_ms": ..., "code": exit status}.
Anything else (the MCP server, the shell tool's commands) is the real tavern, exec'd.

    scripts/hook-cost.py --client-times FILE   # medians per client and event
"""

import json
import os
import subprocess
import sys
import time

real = os.environ["TAVERN_HOOK_TIMES_REAL"]
args = sys.argv[1:]
if not args or args[0] != "hook":
    os.execv(real, [real, *args])

# The hook takes the first process above it that is not a wrapper (a shell, `env`, …) for
# the client's: this one is a wrapper, and says so by its name, as `env` would.
try:
    import ctypes
    ctypes.CDLL(None).prctl(15, b"env", 0, 0, 0)  # PR_SET_NAME
except (OSError, AttributeError):
    pass

t = time.perf_counter()
code = subprocess.run([real, *args]).returncode
ms = (time.perf_counter() - t) * 1000
t = time.perf_counter()
subprocess.run(["/bin/true"], stdin=subprocess.DEVNULL)
true_ms = (time.perf_counter() - t) * 1000
with open(os.environ["TAVERN_HOOK_TIMES"], "a") as f:
    f.write(json.dumps({"args": args[1:], "ms": round(ms, 3), "true_ms": round(true_ms, 3), "code": code}) + "\n")
sys.exit(code)
