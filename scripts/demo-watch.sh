#!/usr/bin/env bash
# Watch mode on a copy of the example board: the reviewer knowledge source
# (.tavern-example/control/sources/reviewer.md) starts when a task enters review.
#
#   bash scripts/demo-watch.sh
#
# Uses `tavern` from PATH (cargo install --path .), or TAVERN_BIN. Works in a temp
# directory; the example board is not changed.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
T="${TAVERN_BIN:-$(command -v tavern || true)}"
[ -n "$T" ] && [ -x "$T" ] || { echo "no tavern on PATH: run cargo install --path . --locked, or set TAVERN_BIN" >&2; exit 1; }
demo="$(mktemp -d)"
watcher=""
cleanup() { [ -n "$watcher" ] && kill "$watcher" 2>/dev/null; rm -rf "$demo"; }
trap cleanup EXIT
cp -R "$repo/.tavern-example" "$demo/.tavern"
cd "$demo"
# tavern names whoever acts; a container may have no $USER, and then the watcher (which
# writes the log) would refuse to start. The demo's human is "demo" unless named.
export TAVERN_AGENT="${TAVERN_AGENT:-${USER:-demo}}"

# The source runs ./agents/reviewer.sh {id} in the project. A real reviewer would start an
# agent with the source's prompt on stdin; this stand-in approves, as the reviewer agent.
mkdir agents
cat > agents/reviewer.sh <<EOF
#!/bin/sh
echo "reviewing \$1; the prompt starts: \$(head -n 1)"
"$T" approve "\$1" --as reviewer --note "approved by the stand-in reviewer"
EOF
chmod +x agents/reviewer.sh

echo "\$ tavern sources list"
"$T" sources list
echo
echo "\$ tavern watch &        # the first start takes the board as it is"
"$T" watch > watch.out 2>&1 &
watcher=$!
# Wait until the watcher has taken its baseline.
for _ in $(seq 100); do [ -f .tavern/control/schedule.md ] && break; sleep 0.05; done
echo "\$ tavern submit task-csv3 --as coder-2"
"$T" submit task-csv3 --as coder-2
# Wait for the reviewer's activation to end (its second log entry: one line, op: "activation").
activations() { grep -c 'op: "activation"' .tavern/log.yaml || true; }
for _ in $(seq 600); do
  [ "$(activations)" -ge 2 ] && break
  sleep 0.05
done
kill -TERM "$watcher"; wait "$watcher" || true; watcher=""
if [ "$(activations)" -lt 2 ]; then
  echo "demo-watch: the reviewer's activation did not end within 30s; what tavern watch printed:" >&2
  cat watch.out >&2
  exit 1
fi
echo
echo "# what tavern watch printed"
cat watch.out
echo
echo "\$ tavern log --since -1m"
"$T" log --since -1m
echo
echo "\$ cat .tavern/control/metrics.md"
cat .tavern/control/metrics.md
