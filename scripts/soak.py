#!/usr/bin/env python3
"""A day of work on one board over several clones, compressed, then a verdict.

    python3 scripts/soak.py [--bin target/release/tavern] [--seconds 300] [--json out.json]

What runs (real processes, real git, a local bare repository as the remote):

- CLONES clones of one project, the board on its branch (`tavern sync init`);
  `tavern sync --watch` in each, and in the first clone a connected `tavern watch` as well
  (with a knowledge source that reacts to new observations);
- AGENTS agents spread over the clones: coders (claim --next, start, write under
  solutions/, post findings, ask questions that block their task, submit), reviewers
  (approve or reject what others submitted), planners (new tasks, some depending on
  others), each running `agent heartbeat` now and then;
- a human who answers questions, edits a task file by hand now and then, and archives
  what is finished;
- kills: an agent's running command is SIGKILLed now and then, two agents are killed for
  good (their claims must come back after the lease), and a `sync --watch` is killed and
  started again now and then.

A fault storm (`--storm SECONDS`): each clone's sync loop is a loop of one-shot `tavern
sync` processes instead of `sync --watch`, and for the first SECONDS of the run a killer
SIGKILLs a random `git` process of the clones (whatever tavern started: fetch, push,
read-tree, update-ref, ...) or a running `tavern sync` every few tenths of a second. The
issue's storm: `--storm 60 --seconds 60 --clones 3 --agents 6 --tasks 40 --no-watch
--require lost,identical,check,double-claims,exit-codes,converged`; with `--no-kills` as
well, the same one-shot sync loops with nothing killed.

Then every loop stops, every clone syncs until a round changes nothing, and the verdict:

- lost: documents whose `create` entry has no file on the board or in the archive, and no
  logged deletion (and board.yaml, .gitignore, the templates present; .state/ untracked);
- identical: the board branch and every board file agree on every clone and the remote;
- check: `tavern check` exits 0 in every clone;
- done: tasks that reached done through another agent's approval;
- double claims: an agent's confirmed move of a task after another agent's claim of it
  succeeded (and it was not released meanwhile);
- exit codes: every command's exit status, with those the conditions do not explain
  (1, 6, 7, a 3 that is no lost race ...) counted apart, with samples.

The script prints the figures and exits 1 when a required verdict fails (`--require`, by
default all of them). Nothing outside its temporary directory is touched; `--keep DIR`
keeps the clones for a look afterwards.
"""

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict

VERDICTS = ["lost", "identical", "check", "done", "double-claims", "exit-codes", "converged"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bin", default=os.environ.get("TAVERN_BIN", "target/release/tavern"))
    p.add_argument("--seconds", type=float, default=300.0, help="how long the agents work")
    p.add_argument("--clones", type=int, default=4)
    p.add_argument("--agents", type=int, default=16)
    p.add_argument("--tasks", type=int, default=40, help="tasks on the board at the start")
    p.add_argument("--interval", default="3s", help="sync --watch --interval")
    p.add_argument("--lease", default="30s", help="the board's lease")
    p.add_argument("--no-watch", action="store_true", help="no connected tavern watch")
    p.add_argument("--no-kills", action="store_true", help="kill nothing")
    p.add_argument(
        "--storm",
        type=float,
        default=0.0,
        help="for this many seconds, SIGKILL random git and tavern sync processes (sync loops of one-shot syncs)",
    )
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--keep", default=None, help="build the clones in DIR and keep them")
    p.add_argument("--json", default=None, help="write the figures as JSON to this file")
    p.add_argument(
        "--require",
        default=",".join(VERDICTS),
        help="comma-separated verdicts that must hold for exit 0 (of: %s; 'none')"
        % ", ".join(VERDICTS),
    )
    p.add_argument("--quiet", action="store_true")
    return p.parse_args()


ARGS = None
T0 = time.monotonic()


def say(msg):
    if not ARGS.quiet:
        print("[%7.1fs] %s" % (time.monotonic() - T0, msg), flush=True)


def base_env():
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("GIT_") or k.startswith("TAVERN_"):
            del env[k]
    env.update(
        {
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Soak",
            "GIT_AUTHOR_EMAIL": "soak@example.com",
            "GIT_COMMITTER_NAME": "Soak",
            "GIT_COMMITTER_EMAIL": "soak@example.com",
            "GIT_TERMINAL_PROMPT": "0",
            # The sync loops and the connected watch act as someone: a write with nobody
            # named is refused (CI's environment may have no USER). Agents use --as.
            "TAVERN_AGENT": "soak-sync",
        }
    )
    return env


ENV = None


def git(cwd, *args, check=True):
    r = subprocess.run(["git", "-C", cwd, *args], env=ENV, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("git %s in %s: %s" % (" ".join(args), cwd, r.stderr))
    return r.stdout.strip()


class Recorder:
    """Every command's exit status, and the commands the killer killed."""

    def __init__(self):
        self.lock = threading.Lock()
        self.codes = Counter()  # (command, code) -> n
        self.samples = defaultdict(list)  # (command, code) -> [stderr]
        self.killed = set()  # pids killed on purpose
        self.held = []  # (time, agent, task, event) for the double-claim verdict

    def note(self, command, code, stderr, pid):
        with self.lock:
            if code == -9 and pid in self.killed:
                code = "killed"
            self.codes[(command, code)] += 1
            if code not in (0, "killed") and len(self.samples[(command, code)]) < 4:
                self.samples[(command, code)].append(stderr.strip()[-400:])

    def event(self, agent, task, what):
        with self.lock:
            self.held.append((time.monotonic(), agent, task, what))


REC = Recorder()
REVIEWERS = True  # some agent reviews; without one, coders use `done`


class Actor:
    """One agent (or the human): a loop that runs tavern in its clone, one command at a time."""

    def __init__(self, name, clone, role, rng):
        self.name = name
        self.clone = clone
        self.role = role
        self.rng = rng
        self.proc = None  # the command running now (for the killer)
        self.dead = False
        self.task = None  # the task this agent holds, as it believes
        self.last_heartbeat = 0.0

    def tavern(self, *args, stdin=None):
        cmd = [ARGS.bin, "--as", self.name, *args]
        p = subprocess.Popen(
            cmd,
            cwd=self.clone,
            env=ENV,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.proc = p
        out, err = p.communicate(stdin)
        self.proc = None
        name = args[0] if args[0] != "agent" else "agent " + args[1]
        REC.note(name, p.returncode, err, p.pid)
        return p.returncode, out, err

    def pause(self, lo=0.2, hi=1.0):
        time.sleep(self.rng.uniform(lo, hi))

    def run(self, stop):
        self.tavern("agent", "register", "--capabilities", "code,review")
        while not stop.is_set() and not self.dead:
            try:
                getattr(self, "step_" + self.role)()
            except Exception as e:  # a bug in this script must show, not hang it
                say("%s: %r" % (self.name, e))
                time.sleep(1)
            if time.monotonic() - self.last_heartbeat > 8:
                self.last_heartbeat = time.monotonic()
                self.tavern("agent", "heartbeat")
            self.pause()

    # -- coders ----------------------------------------------------------------------
    def step_coder(self):
        if self.task is None:
            # A task sent back by a reviewer comes first.
            code, out, _ = self.tavern("list", "tasks", "claimed_by=" + self.name, "status=working,claimed", "--json")
            mine = json.loads(out)["documents"] if code == 0 else []
            if mine:
                self.task = mine[0]["id"]
                return
            code, out, _ = self.tavern("claim", "--next", "--json")
            if code == 0:
                self.task = json.loads(out)["id"]
                REC.event(self.name, self.task, "claim")
            return
        t = self.task
        status = self.status_of(t)
        if status is None or status in ("done", "cancelled", "failed", "pending"):
            self.task = None
            return
        if status == "claimed":
            if self.move("start", t) != 0:
                return
            sol = os.path.join(self.clone, ".tavern", "solutions", t)
            os.makedirs(sol, exist_ok=True)
            with open(os.path.join(sol, "notes.md"), "a") as f:
                f.write("%s worked on %s at %.1f\n" % (self.name, t, time.monotonic() - T0))
            if self.rng.random() < 0.3:
                self.tavern(
                    "post",
                    "Finding while working on %s" % t,
                    "--topic",
                    "soak",
                    "--severity",
                    "low",
                    "--about",
                    t,
                )
            if self.rng.random() < 0.15:
                self.tavern("ask", "Which way for %s?" % t, "--blocks", t)
            return
        if status == "working":
            # With no reviewer on the board (a small storm), a coder finishes its own task.
            if self.move("submit" if REVIEWERS else "done", t) == 0:
                self.task = None  # a reviewer decides; a rejection brings it back
            return
        if status == "review":
            self.task = None
            return
        if status == "blocked":
            return  # waiting for the human's answer

    def move(self, what, t):
        code, _, err = self.tavern(what, t)
        if code == 0:
            REC.event(self.name, t, what)
        elif code == 3 and ("held by" in err or "claimed by" in err or "released" in err):
            self.task = None  # lost it (swept, taken over)
        return code

    def status_of(self, t):
        code, out, _ = self.tavern("show", t, "--json")
        if code != 0:
            return None
        try:
            fields = json.loads(out).get("fields", {})
        except ValueError:
            return None
        if fields.get("claimed_by") not in (None, self.name) and fields.get("status") != "done":
            return None
        return fields.get("status")

    # -- reviewers ---------------------------------------------------------------------
    def step_reviewer(self):
        code, out, _ = self.tavern("list", "tasks", "status=review", "--json")
        if code != 0:
            return
        docs = [d for d in json.loads(out)["documents"] if d["fields"].get("claimed_by") != self.name]
        if not docs:
            return
        d = self.rng.choice(docs)
        verb = "approve" if self.rng.random() < 0.8 else "reject"
        code, _, _ = self.tavern(verb, d["id"])
        if code == 0:
            REC.event(self.name, d["id"], verb)

    # -- planners ----------------------------------------------------------------------
    def step_planner(self):
        code, out, _ = self.tavern("list", "tasks", "status=pending", "--json")
        pending = json.loads(out)["documents"] if code == 0 else []
        if len(pending) > 25:
            self.pause(1, 3)
            return
        args = ["new", "task", "--title", "Soak task by %s" % self.name, "--json"]
        args += ["--set", "priority=%d" % self.rng.randint(0, 4)]
        if pending and self.rng.random() < 0.2:
            args += ["--set", "depends_on=[%s]" % self.rng.choice(pending)["id"]]
        self.tavern(*args)
        self.pause(0.5, 2)

    # -- the human ---------------------------------------------------------------------
    def step_human(self):
        code, out, _ = self.tavern("questions", "--json")
        if code == 0:
            for q in json.loads(out)["documents"][:3]:
                self.tavern("answer", q["id"], "Take the simple way.")
        r = self.rng.random()
        if r < 0.25:
            self.hand_edit()
        elif r < 0.35:
            self.tavern("archive")
        self.pause(1, 3)

    def hand_edit(self):
        tasks = os.path.join(self.clone, ".tavern", "tasks")
        try:
            names = [n for n in os.listdir(tasks) if n.endswith(".md")]
        except OSError:
            return
        if not names:
            return
        path = os.path.join(tasks, self.rng.choice(names))
        try:
            with open(path) as f:
                text = f.read()
            with open(path, "w") as f:  # as an editor writes: in place
                f.write(text.rstrip("\n") + "\n\nA note from the human at %.1f s.\n" % (time.monotonic() - T0))
        except OSError:
            pass


def spawn_loop(clone, args, log):
    out = open(log, "a")
    return subprocess.Popen(
        [ARGS.bin, *args], cwd=clone, env=ENV, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def sync_loop(clone, stop, log):
    """A storm's sync loop: one-shot `tavern sync` processes, one after another (a killed
    one is one exchange lost, as a killed agent's command is)."""
    with open(log, "a") as out:
        while not stop.is_set():
            p = subprocess.Popen([ARGS.bin, "sync"], cwd=clone, env=ENV, stdout=out, stderr=subprocess.PIPE, text=True)
            _, err = p.communicate()
            REC.note("sync (storm loop)", p.returncode, err, p.pid)
            for line in err.splitlines():
                out.write("sync: " + line.removeprefix("error: ") + "\n")
            stop.wait(float(ARGS.interval.rstrip("s")) if ARGS.interval.endswith("s") else 1.0)


def storm_victims(root):
    """The processes a storm may kill: `git` run in one of the clones (or serving the remote),
    and one-shot `tavern sync` processes."""
    victims = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            cwd = os.readlink("/proc/%s/cwd" % pid)
        except OSError:
            continue
        if not argv or not (cwd == root or cwd.startswith(root + os.sep)):
            continue
        prog = os.path.basename(argv[0])
        if prog == "git" or prog.startswith("git-"):
            victims.append(("git " + git_subcommand(argv), int(pid)))
        elif argv[0] == ARGS.bin and "sync" in argv and "--watch" not in argv:
            victims.append(("tavern sync", int(pid)))
    return victims


def git_subcommand(argv):
    """The subcommand of a git command line (`git -C DIR -c K=V push ...`: push)."""
    if os.path.basename(argv[0]).startswith("git-"):
        return os.path.basename(argv[0])[4:]
    args = iter(argv[1:])
    for a in args:
        if a in ("-C", "-c"):
            next(args, None)
        elif not a.startswith("-"):
            return a
    return "?"


def setup(root, rng):
    remote = os.path.join(root, "remote.git")
    seed = os.path.join(root, "seed")
    os.makedirs(seed)
    git(seed, "init", "-q", "-b", "main")
    with open(os.path.join(seed, "README"), "w") as f:
        f.write("a project\n")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "start")
    git(root, "init", "-q", "--bare", "-b", "main", remote)
    git(seed, "push", "-q", remote, "main")
    clones = []
    for i in range(ARGS.clones):
        c = os.path.join(root, "clone%d" % i)
        git(root, "clone", "-q", remote, c)
        clones.append(c)
    first = clones[0]

    def t(*args):
        r = subprocess.run([ARGS.bin, *args], cwd=first, env=ENV, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("tavern %s: %s" % (" ".join(args), r.stderr))
        return r.stdout

    t("init")
    board_yaml = os.path.join(first, ".tavern", "board.yaml")
    with open(board_yaml) as f:
        text = f.read()
    with open(board_yaml, "w") as f:
        f.write(re.sub(r"(?m)^lease: .*$", "lease: %s" % ARGS.lease, text))
    with open(os.path.join(first, ".tavern", "control", "sources", "noter.md"), "w") as f:
        f.write("---\nname: noter\nwatch: [observations]\non: [created]\nrun: \"true\"\n---\nNotes a finding.\n")
    for i in range(ARGS.tasks):
        t("new", "task", "--title", "Seed task %d" % i, "--set", "priority=%d" % rng.randint(0, 4), "--as", "planner")
    t("sync", "init")
    t("sync")
    for c in clones[1:]:
        r = subprocess.run([ARGS.bin, "sync", "init"], cwd=c, env=ENV, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("sync init in %s: %s" % (c, r.stderr))
    return remote, clones


def board_files(clone):
    """relative path -> sha256 of every board file that is recorded (no .state/, no watch output)."""
    root = os.path.join(clone, ".tavern")
    out = {}
    for d, dirs, files in os.walk(root):
        rel_d = os.path.relpath(d, root)
        if rel_d == ".state" or rel_d.startswith(".state" + os.sep):
            dirs[:] = []
            continue
        for n in files:
            rel = os.path.normpath(os.path.join(rel_d, n))
            if rel in ("control/schedule.md", "control/metrics.md") or n.startswith(".") and n.endswith(".tmp"):
                continue
            with open(os.path.join(d, n), "rb") as f:
                out[rel] = hashlib.sha256(f.read()).hexdigest()
    return out


def log_entries(clone):
    """The entries of a clone's log.yaml, read from the file (a board that lost its
    board.yaml cannot be read through tavern any more): one flow mapping per entry."""
    try:
        with open(os.path.join(clone, ".tavern", "log.yaml"), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        if not line.startswith("- {"):
            continue
        e = flow_map(line[2:])
        if e is not None:
            entries.append(e)
    return entries


def flow_map(text):
    """A one-line YAML flow mapping with bare keys and double-quoted or plain scalar values,
    as tavern writes log entries, read as JSON once its keys are quoted."""
    out = []
    quoted = False
    i = 0
    while i < len(text):
        c = text[i]
        if quoted:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
            out.append(c)
        else:
            m = re.match(r"([A-Za-z_][A-Za-z0-9_-]*):", text[i:]) if (out and out[-1] in "{ ,") else None
            if m:
                out.append('"%s":' % m.group(1))
                i += len(m.group(0))
                continue
            out.append(c)
        i += 1
    try:
        return json.loads("".join(out))
    except ValueError:
        head = {}
        for key in ("seq", "origin", "actor", "op", "doc", "to"):
            m = re.search(r'\b%s: (?:"((?:[^"\\]|\\.)*)"|([^,}]*))' % key, text)
            if m:
                head[key] = m.group(1) if m.group(1) is not None else m.group(2).strip()
        return head or None


def lost_documents(clone, entries):
    root = os.path.join(clone, ".tavern")
    removed = {e["doc"] for e in entries if e.get("op") in ("delete",)}
    lost = Counter()
    examples = []
    for e in entries:
        if e.get("op") != "create":
            continue
        doc = e.get("doc", "")
        if doc in removed:
            continue
        if os.path.exists(os.path.join(root, doc)) or os.path.exists(os.path.join(root, "archive", doc)):
            continue
        lost[doc.split("/")[0]] += 1
        if len(examples) < 5:
            examples.append(doc)
    missing = [p for p in ("board.yaml", ".gitignore", "templates/task.md") if not os.path.exists(os.path.join(root, p))]
    return lost, examples, missing


def verdict(remote, clones, started):
    figures = {}
    # Identical.
    heads = {c: git(c, "rev-parse", "-q", "--verify", "refs/heads/tavern", check=False) for c in clones}
    remote_head = git(remote, "rev-parse", "-q", "--verify", "refs/heads/tavern", check=False)
    files = {c: board_files(c) for c in clones}
    ref0 = files[clones[0]]
    differing = set()
    for c in clones[1:]:
        for k in set(ref0) | set(files[c]):
            if ref0.get(k) != files[c].get(k):
                differing.add(k)
    figures["identical"] = {
        "branch_heads_equal": len(set(heads.values()) | {remote_head}) == 1,
        "differing_files": len(differing),
        "differing_examples": sorted(differing)[:8],
    }
    tracked_state = [
        c for c in clones if git(c, "ls-tree", "-r", "--name-only", "refs/heads/tavern", "--", ".state", check=False)
    ]
    # Lost documents and logs.
    lost_all = {}
    logs = {}
    for c in clones:
        entries = log_entries(c)
        logs[c] = {(e.get("seq"), e.get("origin"), e.get("op"), e.get("doc")) for e in entries}
        lost, examples, missing = lost_documents(c, entries)
        lost_all[os.path.basename(c)] = {
            "lost": sum(lost.values()),
            "by_region": dict(lost),
            "examples": examples,
            "missing_board_files": missing,
            "entries": len(entries),
        }
    figures["lost"] = lost_all
    figures["tracked_state"] = [os.path.basename(c) for c in tracked_state]
    first_log = logs[clones[0]]
    figures["logs_equal"] = all(logs[c] == first_log for c in clones)
    # check.
    checks = {}
    for c in clones:
        r = subprocess.run([ARGS.bin, "check"], cwd=c, env=ENV, capture_output=True, text=True)
        checks[os.path.basename(c)] = {"code": r.returncode, "says": (r.stdout + r.stderr).strip().splitlines()[:12]}
    figures["check"] = checks
    # Tasks.
    entries = log_entries(clones[0])
    states = Counter()
    approved_by_other = 0
    claimant = {}
    for e in entries:
        if e.get("op") in ("claim",) or (e.get("op") == "transition" and e.get("to") == "claimed"):
            claimant[e.get("doc")] = e.get("actor")
    for e in entries:
        if e.get("op") == "transition" and e.get("to") == "done" and e.get("actor") != claimant.get(e.get("doc")):
            approved_by_other += 1
    root = os.path.join(clones[0], ".tavern")
    for region in ("tasks", os.path.join("archive", "tasks")):
        d = os.path.join(root, region)
        for n in os.listdir(d) if os.path.isdir(d) else []:
            with open(os.path.join(d, n), errors="replace") as f:
                m = re.search(r"(?m)^status: *(\S+)", f.read())
            states[m.group(1) if m else "?"] += 1
    figures["tasks"] = dict(states)
    figures["done_through_review"] = approved_by_other
    # Double claims, from what the agents themselves saw.
    figures["double_claims"] = double_claims(REC.held)
    # Exit codes.
    explained = {
        "claim": {0, 3, 4, 5},
        "start": {0, 3},
        "submit": {0, 3},
        "done": {0, 3},
        "approve": {0, 3},
        "reject": {0, 3},
        "answer": {0, 3, 4},
        "show": {0, 4},
        "archive": {0, 3},
        "ask": {0, 3},
        "post": {0},
        "new": {0},
        "list": {0},
        "questions": {0},
        "agent register": {0},
        "agent heartbeat": {0},
    }
    if ARGS.storm > 0 and ARGS.no_kills:
        # The storm's one-shot sync loops, nothing killed: a sync may only lose a race
        # for the remote too often (3).
        explained["sync (storm loop)"] = {0, 3}
    elif ARGS.storm > 0:
        # A storm kills the git a command runs: the remote could not confirm (7), or its
        # answer was lost and the remote could not be asked (8); a sync whose git was
        # killed fails (1) or says the remote did not confirm (7). The final syncs, after
        # the storm, must all succeed: nothing may block.
        for cmd in ("claim", "start", "submit", "done", "approve", "reject", "answer", "ask", "agent heartbeat", "archive"):
            explained[cmd] = explained[cmd] | {7, 8}
        explained["sync (storm loop)"] = {0, 1, 3, 7}
    table = defaultdict(dict)
    unexplained = {}
    for (cmd, code), n in sorted(REC.codes.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        table[cmd][str(code)] = n
        if code != "killed" and code not in explained.get(cmd, {0}):
            unexplained["%s exit %s" % (cmd, code)] = {"count": n, "samples": REC.samples[(cmd, code)]}
    figures["exit_codes"] = table
    figures["unexplained"] = unexplained
    figures["samples"] = {"%s exit %s" % k: v for k, v in REC.samples.items() if v}
    figures["duration_s"] = round(time.monotonic() - started, 1)
    return figures


def double_claims(events):
    """An agent's successful move of a task after another agent's claim of it succeeded,
    with no release or loss of the first agent's claim in between."""
    holder = {}  # task -> agent that last claimed it successfully
    doubles = []
    for _, agent, task, what in sorted(events):
        if what == "claim":
            holder[task] = agent
        elif what in ("start", "submit", "done"):
            if holder.get(task) not in (None, agent):
                doubles.append((task, agent, holder[task]))
    return len(doubles)


def converge(clones):
    """Every clone syncs, round after round, until a round changes nothing."""
    rounds = []
    for n in range(12):
        outcomes = []
        for c in clones:
            r = subprocess.run([ARGS.bin, "sync", "--json"], cwd=c, env=ENV, capture_output=True, text=True)
            REC.note("sync (final)", r.returncode, r.stderr, r.pid if hasattr(r, "pid") else 0)
            try:
                x = json.loads(r.stdout)
                outcomes.append(x.get("outcome") if not x.get("claims_followed") else "followed")
            except ValueError:
                outcomes.append("exit %d" % r.returncode)
        rounds.append(outcomes)
        say("sync round %d: %s" % (n + 1, ", ".join(outcomes)))
        if all(o == "up-to-date" for o in outcomes) and n > 0:
            return True, rounds
    return False, rounds


def main():
    global ARGS, ENV
    ARGS = parse_args()
    ARGS.bin = os.path.abspath(ARGS.bin)
    ENV = base_env()
    seed = ARGS.seed if ARGS.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    root = ARGS.keep or tempfile.mkdtemp(prefix="tavern-soak-")
    os.makedirs(root, exist_ok=True)
    say("soak: %s, %d clones, %d agents, %.0f s, seed %d, in %s" % (ARGS.bin, ARGS.clones, ARGS.agents, ARGS.seconds, seed, root))
    remote, clones = setup(root, rng)
    loops = {}
    logs_dir = os.path.join(root, "logs")
    os.makedirs(logs_dir, exist_ok=True)

    def start_sync(i):
        loops[("sync", i)] = spawn_loop(
            clones[i], ["sync", "--watch", "--interval", ARGS.interval], os.path.join(logs_dir, "sync%d.log" % i)
        )

    storm_stop = threading.Event()
    storm_threads = []
    if ARGS.storm > 0:
        for i, c in enumerate(clones):
            th = threading.Thread(target=sync_loop, args=(c, storm_stop, os.path.join(logs_dir, "sync%d.log" % i)), daemon=True)
            th.start()
            storm_threads.append(th)
    else:
        for i in range(len(clones)):
            start_sync(i)
    if not ARGS.no_watch:
        loops[("watch", 0)] = spawn_loop(
            clones[0], ["watch", "--sync-interval", ARGS.interval], os.path.join(logs_dir, "watch0.log")
        )

    roles = ["coder", "coder", "reviewer", "planner"]
    actors = []
    for i in range(ARGS.agents):
        c = i % len(clones)
        role = roles[(i // len(clones)) % len(roles)]
        actors.append(Actor("%s-%d" % (role, i), clones[c], role, random.Random(rng.random())))
    global REVIEWERS
    REVIEWERS = any(a.role == "reviewer" for a in actors)
    human = Actor("human", clones[1 % len(clones)], "human", random.Random(rng.random()))
    stop = threading.Event()
    threads = [threading.Thread(target=a.run, args=(stop,), daemon=True) for a in actors + [human]]
    started = time.monotonic()
    for th in threads:
        th.start()

    kills = Counter()
    deaths = []
    next_kill = started + rng.uniform(5, 15)
    next_sync_kill = started + rng.uniform(30, 60)
    dead_at = sorted(started + ARGS.seconds * f for f in (0.3, 0.55))
    next_storm_kill = started
    while time.monotonic() - started < ARGS.seconds:
        time.sleep(0.1 if ARGS.storm > 0 else 0.5)
        now = time.monotonic()
        if ARGS.storm > 0 and not ARGS.no_kills and now - started < ARGS.storm and now >= next_storm_kill:
            next_storm_kill = now + rng.uniform(0.1, 0.6)
            victims = storm_victims(root)
            if victims:
                what, pid = rng.choice(victims)
                REC.killed.add(pid)  # before the kill: its command may end at once
                try:
                    os.kill(pid, signal.SIGKILL)
                    kills["storm: " + what] += 1
                except OSError:
                    pass
        if ARGS.no_kills:
            continue
        if now >= next_kill:
            next_kill = now + rng.uniform(5, 15)
            busy = [a for a in actors if a.proc is not None and not a.dead]
            if busy:
                a = rng.choice(busy)
                p = a.proc
                if p is not None:
                    REC.killed.add(p.pid)
                    try:
                        p.send_signal(signal.SIGKILL)
                        kills["agent command"] += 1
                    except OSError:
                        pass
        if dead_at and now >= dead_at[0]:
            dead_at.pop(0)
            alive = [a for a in actors if not a.dead and a.role == "coder"]
            if alive:
                a = rng.choice(alive)
                a.dead = True
                p = a.proc
                if p is not None:
                    REC.killed.add(p.pid)
                    try:
                        p.send_signal(signal.SIGKILL)
                    except OSError:
                        pass
                deaths.append(a.name)
                kills["agent for good"] += 1
                say("killed %s for good (it held %s)" % (a.name, a.task))
        if now >= next_sync_kill and ARGS.storm <= 0:
            next_sync_kill = now + rng.uniform(30, 60)
            i = rng.randrange(len(clones))
            p = loops[("sync", i)]
            try:
                os.killpg(p.pid, signal.SIGKILL)  # with the git it may be running
                kills["sync --watch"] += 1
            except OSError:
                pass
            p.wait()
            time.sleep(rng.uniform(0.5, 3))
            start_sync(i)
            say("killed and restarted sync --watch in clone%d" % i)

    say("stopping the agents")
    stop.set()
    for th in threads:
        th.join(timeout=120)
    say("stopping the sync loops and the watch")
    storm_stop.set()
    for th in storm_threads:
        th.join(timeout=120)
    for p in loops.values():
        try:
            p.send_signal(signal.SIGTERM)
        except OSError:
            pass
    for p in loops.values():
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    converged, rounds = converge(clones)
    figures = verdict(remote, clones, started)
    figures["seed"] = seed
    figures["converged"] = converged
    figures["sync_rounds"] = len(rounds)
    figures["kills"] = dict(kills)
    figures["killed_for_good"] = deaths
    figures["loop_errors"] = loop_errors(logs_dir)

    lost = sum(v["lost"] for v in figures["lost"].values())
    missing = sum(len(v["missing_board_files"]) for v in figures["lost"].values())
    results = {
        "lost": lost == 0 and missing == 0 and not figures["tracked_state"],
        "identical": figures["identical"]["branch_heads_equal"]
        and figures["identical"]["differing_files"] == 0
        and figures["logs_equal"],
        "check": all(v["code"] == 0 for v in figures["check"].values()),
        "done": figures["done_through_review"] > 0,
        "double-claims": figures["double_claims"] == 0,
        "exit-codes": not figures["unexplained"],
        "converged": converged,
    }
    figures["verdicts"] = results
    report(figures)
    if ARGS.json:
        with open(ARGS.json, "w") as f:
            json.dump(figures, f, indent=2, default=str)
    if not ARGS.keep:
        shutil.rmtree(root, ignore_errors=True)
    required = [v for v in ARGS.require.split(",") if v and v != "none"]
    failed = [v for v in required if not results.get(v, False)]
    if failed:
        print("soak: FAILED: %s" % ", ".join(failed))
        return 1
    print("soak: passed (%s)" % ", ".join(required or ["nothing required"]))
    return 0


def loop_errors(logs_dir):
    """What the sync loops and the watch reported as failed exchanges, by kind."""
    kinds = Counter()
    for n in sorted(os.listdir(logs_dir)):
        with open(os.path.join(logs_dir, n), errors="replace") as f:
            for line in f:
                if line.startswith("sync: "):
                    msg = re.sub(r"[0-9a-f]{40}", "SHA", line[6:].strip())
                    msg = re.sub(r"task-[a-z0-9]+|obs-[a-z0-9]+|q-[a-z0-9]+", "ID", msg)
                    kinds[msg[:140]] += 1
    return dict(kinds.most_common(12))


def report(f):
    print()
    print("== soak: %.0f s of work, seed %s" % (f["duration_s"], f["seed"]))
    lost = {k: v["lost"] for k, v in f["lost"].items()}
    print("documents lost (create with no file, no archive, no logged deletion): %s" % lost)
    for k, v in f["lost"].items():
        if v["lost"] or v["missing_board_files"]:
            print("  %s: by region %s, e.g. %s; missing %s" % (k, v["by_region"], v["examples"], v["missing_board_files"]))
    print("tracked .state/ on the branch: %s" % (f["tracked_state"] or "none"))
    i = f["identical"]
    print(
        "clones identical: branch heads equal %s, files differing %d %s, logs equal %s"
        % (i["branch_heads_equal"], i["differing_files"], i["differing_examples"], f["logs_equal"])
    )
    print("converged: %s after %d sync rounds" % (f["converged"], f["sync_rounds"]))
    print("check: %s" % {k: v["code"] for k, v in f["check"].items()})
    for k, v in f["check"].items():
        if v["code"]:
            for line in v["says"][:6]:
                print("  %s: %s" % (k, line))
    print("tasks by status: %s; done through another agent's approval: %d" % (f["tasks"], f["done_through_review"]))
    print("double claims: %d" % f["double_claims"])
    print("kills: %s; killed for good: %s" % (f["kills"], f["killed_for_good"]))
    print("exit codes:")
    for cmd, codes in sorted(f["exit_codes"].items()):
        print("  %-16s %s" % (cmd, ", ".join("%s: %d" % kv for kv in sorted(codes.items()))))
    if f["unexplained"]:
        print("exit codes the conditions do not explain:")
        for k, v in f["unexplained"].items():
            print("  %s (%d), e.g. %s" % (k, v["count"], v["samples"][:1]))
    if f["loop_errors"]:
        print("failed exchanges reported by the sync loops and the watch:")
        for k, n in f["loop_errors"].items():
            print("  %4d  %s" % (n, k))
    print("verdicts: %s" % ", ".join("%s %s" % (k, "ok" if v else "FAILED") for k, v in f["verdicts"].items()))


if __name__ == "__main__":
    sys.exit(main())
