#!/usr/bin/env bash
# Rebuilds .tavern-example/ by running real tavern commands as a planner, two coders and
# a reviewer, so its log.yaml, revs and diffs are genuine.
#
#   cargo build --release && scripts/make-example.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
T="${TAVERN_BIN:-$repo/target/release/tavern}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$T" init >/dev/null
t() { "$T" "$@" >/dev/null; }

# The planner splits "CSV export for the tally CLI" into tasks.
t new task --as planner --id task-csv1 -p 1 --tag design --title "Design the CSV export format" \
  --body $'Decide the columns, header row, quoting and line endings of `tally export --format csv`.\n\nWrite the decision to solutions/task-csv1/design.md.'
t new task --as planner --id task-csv2 -p 1 --tag csv --depends-on task-csv1 --title "Write the CSV writer" \
  --body $'Implement `CsvWriter` per the design: RFC 4180 quoting, CRLF rows, UTF-8.\n\nDone when the round-trip tests in tests/csv.rs pass.'
t new task --as planner --id task-csv3 -p 2 --tag cli --depends-on task-csv1 --title "Add --format to tally export" \
  --body 'Accept `--format csv|json` (json stays the default) and route to the writer.'
t new task --as planner --id task-csv4 -p 1 --tag csv --tag security --depends-on task-csv2 --title "Escape formula cells against CSV injection" \
  --body 'Cells starting with = + - @ must be prefixed with a single quote when `--safe` is on.'
t new task --as planner --id task-csv5 -p 3 --tag docs --depends-on task-csv2,task-csv3 --title "Document CSV export in the README"
t new task --as planner --id task-csv6 -p 2 --tag perf --title "Benchmark export on 1M rows" \
  --body 'Measure rows/s and peak memory against the JSON export.'
t new task --as planner --id task-csv7 -p 4 --title "Export to .xlsx"
t new task --as planner --id task-csv8 -p 2 --tag csv --title "Write a UTF-8 BOM when --excel is given"

# coder-1 takes the design, writes it down, and the reviewer approves it.
t claim --next --as coder-1
t start task-csv1 --as coder-1
mkdir -p .tavern/solutions/task-csv1
cat > .tavern/solutions/task-csv1/design.md <<'DESIGN'
# CSV export: design

- One header row with the column names of `tally export`, in the same order as JSON keys.
- RFC 4180: fields containing `,`, `"`, CR or LF are quoted; quotes are doubled.
- Rows end with CRLF (what spreadsheet tools expect); the last row too.
- UTF-8 without BOM by default; `--excel` adds a BOM (task-csv8).
- Numbers are written as in JSON; dates as RFC 3339.

Rejected: TSV (ambiguous with tabs in names), a `csv` dependency for now (see the open question).
DESIGN
t submit task-csv1 --as coder-1
t approve task-csv1 --as reviewer --note "clear and complete"

# Both coders pick up work that is now unblocked.
t claim task-csv2 --as coder-1
t start task-csv2 --as coder-1
t claim task-csv3 --as coder-2
t start task-csv3 --as coder-2

# coder-1 submits the writer; the reviewer sends it back once, then it is in review again.
t submit task-csv2 --as coder-1
t new observation --as reviewer --id obs-nl01 --title "Fields with embedded newlines are split across rows" \
  --set topic=csv --set severity=high --set confidence=0.9 --set 'about=[task-csv2]' \
  --body $'`tally export --format csv` on tests/data/notes.json writes the note "a\\nb" as two rows.\n\nRepro: `cargo test csv::newline_in_field` fails.'
t reject task-csv2 --as reviewer --note "embedded newlines are not quoted (obs-nl01)"
t new observation --as coder-1 --id obs-perf1 --title "Hand-rolled writer is 3x slower than the csv crate" \
  --set topic=performance --set severity=medium --set confidence=0.7 --set 'about=[task-csv2, task-csv6]' \
  --body '1M rows: 2.9 s hand-rolled vs 0.95 s with csv 1.3 (release build, warm cache).'
t edit obs-nl01 --as coder-1 --set status=acknowledged
t submit task-csv2 --as coder-1

# coder-1 picks up the benchmark, needs a decision, and asks.
t claim task-csv6 --as coder-1
t start task-csv6 --as coder-1
t new question --as coder-1 --id q-dep1 --title "May the export depend on the csv crate?" \
  --set 'options=[yes, "no, keep it hand-rolled"]' --set 'blocks=[task-csv6]' \
  --body $'The hand-rolled writer is 3x slower (obs-perf1). Adding `csv = "1.3"` fixes that and the quoting bugs,\nbut adds a dependency. Which do you prefer?'
t block task-csv6 --as coder-1 --note "waiting for q-dep1"

# Housekeeping by the planner.
t cancel task-csv7 --as planner --note "out of scope for this release"
t new observation --as coder-2 --id obs-fix1 --title "Test fixtures live in tests/data" \
  --set topic=repo --set severity=info --body 'Use tests/data/*.json as inputs for export tests.'

# A knowledge source: a reviewer that runs whenever a task enters review.
cat > .tavern/control/sources/reviewer.md <<'SOURCE'
---
name: reviewer
watch: [tasks]
on: [transition:review]
when: status=review
run: ./agents/reviewer.sh {id}
priority: 10
cooldown: 30s
max_parallel: 1
timeout: 15m
---
You are the reviewer of this repository. A task has just entered review.

Read the task ($TAVERN_DOC) and its solutions/ folder, run the tests it names, and then
either `tavern approve $TAVERN_ID --note "…"` or `tavern reject $TAVERN_ID --note "…"`.
Post what you find with `tavern new observation --set about=[$TAVERN_ID]`.
SOURCE

"$T" check >/dev/null
rm -rf "$repo/.tavern-example"
rm -rf .tavern/.state
cp -r .tavern "$repo/.tavern-example"
echo "wrote $repo/.tavern-example"
