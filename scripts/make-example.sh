#!/usr/bin/env bash
# Rebuilds .tavern-example/ by running real tavern commands as a planner, two coders
# (coder-1, coder-2) and a reviewer, so its log.yaml, revs and diffs are genuine.
#
#   cargo build --release && scripts/make-example.sh
#
# TAVERN_BIN picks the binary (default target/release/tavern). EXAMPLE_STEP is the pause in
# seconds between scenes (default 1), so that updated_at visibly moves in the diffs.
#
# The story: `tally` is a small time-tracking CLI whose `tally export` writes JSON. The team
# is adding `tally export --format csv`. The design is done, the CSV writer is in its second
# review, the --format flag is being wired, a benchmark waits for a human's answer, and a
# security task was added after a coder found a CSV-injection risk.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
T="${TAVERN_BIN:-$repo/target/release/tavern}"
[ -x "$T" ] || { echo "no tavern binary at $T: run cargo build --release or set TAVERN_BIN" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
"$T" init >/dev/null
B="$work/.tavern"

t() { "$T" "$@" >/dev/null; }
scene() { sleep "${EXAMPLE_STEP:-1}"; }
# claim --next as $1 and check that the story goes as written: the claimed id must be $2.
claim_next() {
  local out
  out="$("$T" claim --next --json --as "$1")"
  case "$out" in
    *"\"id\":\"$2\""*) ;;
    *) echo "make-example: $1 expected to claim $2, got: $out" >&2; exit 1 ;;
  esac
}

# ---------------------------------------------------------------------------------------
# Set-up that no command writes: a knowledge source and an agent card, written by hand.

cat > "$B/control/sources/reviewer.md" <<'SOURCE'
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
You are the reviewer of the tally repository. A task has just been submitted for review;
its id is in $TAVERN_ID and its file in $TAVERN_DOC.

1. Read the task: its "Done when" section is the bar. Read solutions/$TAVERN_ID/ if it exists.
2. Check out the change, run `cargo test`, and try the commands the task names.
3. Post every problem you find as an observation about the task:
   `tavern post --as reviewer "…" --topic … --severity … --about $TAVERN_ID`
4. Then decide, with a one-line reason:
   `tavern approve $TAVERN_ID --as reviewer --note "…"` or
   `tavern reject $TAVERN_ID --as reviewer --note "… (obs-…)"`.

Do not edit the code yourself; the coder who holds the task fixes what you report.
SOURCE

# The planner's card. It holds no claims, so a lease sweep (run by `claim` and `ready`)
# has nothing to release on this board. (A card for a coder would make every `ready` on
# the example release that coder's claims once its lease ran out.)
now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
cat > "$B/control/agents/planner.md" <<AGENT
---
id: planner
name: planner
capabilities: [planning, triage]
status: active
registered_at: $now
created_by: planner
updated_at: $now
rev: 1
---
A Claude Code session in the main checkout of tally. Splits goals into tasks with
dependencies and priorities, turns high-severity observations into tasks, and trims the
scope. It never claims tasks itself.
AGENT

# ---------------------------------------------------------------------------------------
# 1. The planner splits "CSV export for tally" into tasks.

t new task --as planner --id task-csv1 -p 1 --tag design --tag csv --title "Design the CSV export format" --body-file - <<'EOF'
## Goal

Decide what `tally export --format csv` writes: columns and their order, header row,
quoting, line ends, encoding, and what an empty export looks like.

## Done when

solutions/task-csv1/design.md answers each of these, and the reviewer approved it.
EOF
t new task --as planner --id task-csv2 -p 1 --tag csv --depends-on task-csv1 --title "Write the CSV writer" --body-file - <<'EOF'
## Goal

`CsvWriter<W: Write>` in src/export/csv.rs, exactly as solutions/task-csv1/design.md says:
RFC 4180 quoting, CRLF after every row, UTF-8.

## Done when

- `cargo test export::csv` passes, including fields with `,`, `"`, CR and LF.
- Round trip: every tests/data/*.json fixture exported to CSV and read back with
  Python's `csv` module gives the same records.
EOF
t new task --as planner --id task-csv3 -p 2 --tag cli --depends-on task-csv1 --title "Add --format to tally export" --body-file - <<'EOF'
## Goal

`tally export --format csv|json` (json stays the default), routed to the right writer.
An unknown format is a usage error (exit 2) that lists the known ones.

## Done when

`tally export --format csv > out.csv` works on the fixtures, `--help` shows the flag,
and `tally export --format xml` exits 2.
EOF
t new task --as planner --id task-csv4 -p 2 --tag test --depends-on task-csv2,task-csv3 --title "Golden-file tests for the CSV export" --body-file - <<'EOF'
## Goal

One golden file per fixture under tests/golden/*.csv, compared byte for byte (CRLF included),
with `UPDATE_GOLDEN=1 cargo test` to regenerate them.

## Done when

The golden tests run in CI and fail on any change to the output.
EOF
t new task --as planner --id task-csv5 -p 3 --tag docs --depends-on task-csv1 --title "Document the CSV export in the README" --body-file - <<'EOF'
## Goal

An "Exporting" section in the README: `--format csv`, the columns and their order, quoting,
and how to open the file in a spreadsheet. The design (task-csv1) fixes all of this, so the
section need not wait for the code.

## Done when

The section matches solutions/task-csv1/design.md, and its example is replaced by output
from a real run once task-csv3 is done.
EOF
t new task --as planner --id task-csv6 -p 2 --tag perf --title "Benchmark the export on 1M entries" --body-file - <<'EOF'
## Goal

Rows per second and peak memory of `tally export` on 1,000,000 entries, CSV against JSON,
release build.

## Done when

The numbers are in an observation, and CSV is not slower than JSON (or we know why).
EOF
t new task --as planner --id task-csv7 -p 4 --tag csv --title "Export to .xlsx" --body-file - <<'EOF'
## Goal

`--format xlsx`, for users who cannot import CSV.

## Done when

A file that opens in Excel and LibreOffice without an import dialog.
EOF
t new task --as planner --id task-csv8 -p 2 --tag csv --depends-on task-csv1 --title "Write a UTF-8 BOM when --excel is given" --body-file - <<'EOF'
## Goal

Excel guesses a legacy code page for CSV without a byte order mark, which mangles non-ASCII
project names. `tally export --format csv --excel` starts the file with EF BB BF.

## Done when

A test checks the first three bytes with and without `--excel`.
EOF

# ---------------------------------------------------------------------------------------
# 2. coder-1 takes the best claimable task (the design), writes it down, and submits it.
scene
claim_next coder-1 task-csv1
t start task-csv1 --as coder-1
mkdir -p "$B/solutions/task-csv1"
cat > "$B/solutions/task-csv1/design.md" <<'EOF'
# CSV export: design (task-csv1)

## Format

- **Columns**: `date,project,minutes,note,tags`, the keys of the JSON export in the same
  order. `tags` is one column, joined with `;` (a tag cannot contain `;`).
- **Header**: always one header row, also for an empty export (header only, exit 0).
- **Quoting** (RFC 4180): a field containing `,`, `"`, CR or LF is wrapped in double quotes
  and its quotes are doubled. Every other field is written bare.
- **Line ends**: CRLF after every row, the last one included.
- **Encoding**: UTF-8 without a BOM; `--excel` adds one (task-csv8).
- **Values**: `minutes` as an integer (`90`, never `90.0`), `date` as `YYYY-MM-DD`, an
  absent note as an empty field.

## Code

- `src/export/csv.rs`: `CsvWriter<W: Write>` with `header()` and `row(&Entry)`, hand-rolled
  (about 60 lines). A crate could replace it later without changing the output.
- `src/cli/export.rs` gets `--format csv|json` (task-csv3); JSON stays the default.

## Rejected

- TSV: notes contain tabs.
- One column per tag: the number of columns would depend on the data.
- `;` as separator for European Excel locales: spreadsheets can import with any separator;
  a `--separator` flag can come later if users ask.
EOF
cat > "$B/solutions/task-csv1/history.md" <<'EOF'
# task-csv1: history

- Read src/export/json.rs for the field order; the CSV columns follow it.
- First draft ended rows with LF. Switched to CRLF: RFC 4180 §2 asks for it, Excel on
  Windows expects it, and LibreOffice and Python's `csv` read both.
- Tried one column per tag (`tag1,tag2,…`); dropped it, the header would change with the data.
- Checked three notes from tests/data/notes.json that contain `,`, `"` and a newline:
  the quoting rule covers all three.
EOF
t submit task-csv1 --as coder-1

# 3. The reviewer approves the design.
scene
t approve task-csv1 --as reviewer --note "complete: columns, quoting, CRLF and the empty export are all specified"

# 4. With the design done, both coders pick up work that it unblocked.
scene
claim_next coder-1 task-csv2
t start task-csv2 --as coder-1
claim_next coder-2 task-csv3
t start task-csv3 --as coder-2

# 5. coder-2, wiring --format, posts what it finds.
scene
t post --as coder-2 --id obs-fix1 "Export test fixtures live in tests/data" \
  --topic repo --severity info --about task-csv3,task-csv4 --body-file - <<'EOF'
## What was seen

tests/data/ has three fixtures for the JSON export: empty.json, basic.json and notes.json
(notes with commas, quotes and a newline). Use them as inputs for CSV tests too.

## Evidence

`ls tests/data` and tests/export_json.rs, which loads them with `fixture("basic.json")`.
EOF
t post --as coder-2 --id obs-inj1 "Notes starting with = run as formulas when the CSV is opened" \
  --topic security --severity high --confidence 0.95 --about task-csv1,task-csv3 --body-file - <<'EOF'
## What was seen

A note `=HYPERLINK("http://example.com","click")` exported to CSV becomes a live formula in
LibreOffice Calc and Excel (CSV injection). Notes are free text, often pasted from elsewhere.
The design (task-csv1) does not mention it.

## Evidence

Exported tests/data/notes.json with a note edited to start with `=`, opened the file in
LibreOffice 24.8: the cell shows a link, not the text. OWASP "CSV Injection" lists
`= + - @` (and tab, CR) as dangerous first characters.
EOF

# 6. The planner reads the observation and adds a task for it.
scene
t new task --as planner --id task-csv9 -p 1 --tag csv --tag security --depends-on task-csv2 \
  --set 'refs=[obs-inj1]' --title "Escape formula cells against CSV injection" --body-file - <<'EOF'
## Goal

Unless `--raw` is given, prefix a text field that starts with `=`, `+`, `-`, `@`, tab
or CR with a single quote `'`, so spreadsheets show it as text. See obs-inj1.

## Done when

A test exports each dangerous first character and checks the quote; negative numbers in
`minutes` are never touched (they are numbers, not text).
EOF
t ack obs-inj1 --as planner

# 7. coder-1 submits the writer; the reviewer finds a bug and sends it back.
scene
t submit task-csv2 --as coder-1
scene
t post --as reviewer --id obs-nl01 "Notes with a newline are split across two rows" \
  --topic csv --severity high --confidence 0.9 --about task-csv2 --body-file - <<'EOF'
## What was seen

The writer quotes fields with `,` and `"` but not fields with CR or LF, so a note
"call Ana\nre: invoice" is written as two rows and every later column shifts.

## Evidence

`tally export --format csv` on tests/data/notes.json: 4 records in, 5 rows out.
`cargo test export::csv::newline_in_field` fails (the test is in the task's Done when).
EOF
t reject task-csv2 --as reviewer --note "fields with CR/LF are not quoted (obs-nl01)"

# 8. coder-1 fixes it, notes a performance finding on the way, and resubmits.
scene
t resolve obs-nl01 --as coder-1 --resolution "CR and LF now force quoting; newline_in_field passes"
t post --as coder-1 --id obs-perf1 "Hand-rolled CSV writer is 3x slower than the csv crate" \
  --topic performance --severity medium --confidence 0.7 --about task-csv2,task-csv6 --body-file - <<'EOF'
## What was seen

Exporting 1,000,000 entries takes 2.9 s with the hand-rolled writer and 0.95 s with
`csv = "1.3"` behind the same `CsvWriter` interface. The output is byte-identical.

## Evidence

Release build, warm cache, median of 5 runs of `tally export --format csv > /dev/null`
on a generated store. Most of the time goes to one `write!` per field; the crate buffers
and scans for quote characters with memchr.
EOF
t submit task-csv2 --as coder-1

# 9. coder-1 starts the benchmark, needs a decision only a human can make, and asks
#    (the question blocks the task).
scene
t claim task-csv6 --as coder-1
t start task-csv6 --as coder-1
t ask --as coder-1 --id q-dep1 "May the CSV export depend on the csv crate?" \
  --options "yes: add csv 1.3" --options "no: keep the hand-rolled writer" --blocks task-csv6 --body-file - <<'EOF'
## Question

May tally depend on the `csv` crate (1.3, MIT/Unlicense; it brings csv-core, itoa and
ryu, and serde, which tally already has) for the CSV export?

## Context

The hand-rolled writer is 3x slower on 1M entries (obs-perf1) and already had one quoting
bug (obs-nl01). The design (task-csv1) chose hand-rolled to avoid a new dependency. The
benchmark (task-csv6) is blocked until this is decided, since it would measure the wrong
writer otherwise.
EOF

# 10. The planner trims the scope.
scene
t cancel task-csv7 --as planner --note "out of scope for this release: CSV with --excel covers the users who asked"

# 11. Blocked on the benchmark, coder-1 takes the next claimable task (not started yet).
scene
claim_next coder-1 task-csv8

# ---------------------------------------------------------------------------------------
"$T" check >/dev/null
rm -rf "$B/.state"
rm -rf "$repo/.tavern-example"
cp -R "$B" "$repo/.tavern-example"
echo "wrote $repo/.tavern-example"
