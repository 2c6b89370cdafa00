#!/usr/bin/env bash
# Every page kind volley writes, rendered by one binary from the repository's fixtures into
# OUTDIR, so that two binaries' pages can be compared byte for byte with `diff -r`:
#
#   scripts/report-snapshots.sh BEFORE_BIN /tmp/snap-before
#   scripts/report-snapshots.sh target/debug/volley /tmp/snap-after
#   diff -r /tmp/snap-before /tmp/snap-after && echo "no page changed"
#
# What it renders (each file holds stdout, then stderr and the exit code, unless it is a page):
#   report/   each result file under fixtures/imports, fixtures/peers, fixtures/ngrinder and
#             fixtures/bad, and each fixture run directory, in every format: the terminal's summary and --verbose (NO_COLOR), md, json, csv, and
#             its HTML page (--html);
#   compare/  each input that reports cleanly against the next, in every format; the first two
#             also with --verbose and as a page;
#   gate/     the same pair gated (--fail-on regression; named figures with a tolerance and
#             --gate-steps; --baseline with two candidates) in table, md and json, and the page;
#   store/    a store of runs built from fixtures (below): `volley runs` (table, json, name
#             filter) and `--trend` (PNG, SVG, HTML);
#   group/    a run group of fixture run directories: report in every format and its page.
# The run store: copies of fixtures/bad/rundir_running_elsewhere (a real run directory) with
# run.json's name, status and start pinned by jq, and run directories whose figures are a
# fixture import's report.json (written by the binary under test, so both sides read their own),
# so nothing depends on the clock or on a live target.
#
# Volatile parts stripped (sed, after rendering): the absolute paths of the scratch directory
# (replaced by `$SNAP`) and of OUTDIR (`$OUT`, in the `volley: wrote …` lines). Nothing else
# is: every input and time stamp comes from the fixtures.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 VOLLEY_BINARY OUTDIR" >&2; exit 2; }
bin=$(realpath "$1")
out=$(realpath -m "$2")
cd "$(dirname "$0")/.."
rm -rf "$out"
mkdir -p "$out"/{report,compare,gate,store,group}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export NO_COLOR=1

# run OUTFILE ARGS...: stdout, stderr and the exit code of `volley ARGS` into OUTFILE.
run() {
  local f=$1
  shift
  { "$bin" "$@" 2>&1 && code=0 || code=$?; echo "exit: $code"; } > "$f"
}
slug() { printf '%s' "$1" | tr '/' '_'; }
# forms PREFIX INPUT: `volley report INPUT` in every form into PREFIX.{table,verbose,md,json,csv}
# and its page into PREFIX.html (what it printed beside it in PREFIX.html.log).
forms() {
  run "$1.table" report "$2"
  run "$1.verbose" report "$2" --verbose
  for format in md json csv; do
    run "$1.$format" report "$2" --format "$format"
  done
  run "$1.html.log" report "$2" --format json -o /dev/null --html "$1.html"
}

# --- reports of every fixture result file ---------------------------------------------------
# Also every file under fixtures/bad (each must be refused the same way) and each fixture run
# directory (a folder holding run.json) once, as a whole.
inputs=$( { find fixtures/imports fixtures/peers fixtures/ngrinder fixtures/bad -type f ! -path '*/rundir_*' \
              ! -name '*.md' ! -name '*.py' ! -name '*.js' ! -name '*.expected.json';
            find fixtures -name run.json -exec dirname {} \; ; } | sort -u)
ok=()
for input in $inputs; do
  s=$(slug "$input")
  forms "$out/report/$s" "$input"
  grep -qx 'exit: 0' "$out/report/$s.json" && ok+=("$input")
done
# Each input that reports cleanly against the next one that does, in each format.
for ((i = 0; i + 1 < ${#ok[@]}; i++)); do
  for format in table md json csv; do
    run "$out/compare/$(slug "${ok[i]}")-vs-$(slug "${ok[i+1]}").$format" compare "${ok[i]}" "${ok[i+1]}" --format "$format"
  done
done

# --- a comparison, and the gate on it -------------------------------------------------------
a=${ok[0]}
b=${ok[1]}
c=${ok[2]}
for format in table md json csv; do
  run "$out/compare/pair.$format" compare "$a" "$b" --format "$format" --verbose
  run "$out/gate/pair.$format" compare "$a" "$b" --format "$format" --verbose \
    --fail-on regression
done
run "$out/compare/pair.html.log" compare "$a" "$b" -o /dev/null --html "$out/compare/pair.html"
run "$out/gate/pair.html.log" compare "$a" "$b" -o /dev/null --fail-on regression \
  --html "$out/gate/pair.html"
for format in table md json; do
  run "$out/gate/all-tolerance.$format" compare "$a" "$b" --format "$format" --verbose \
    --gate-metrics error_rate_pct,tps_avg,mttfb_avg_ms --tolerance 5% --gate-steps
  run "$out/gate/baseline.$format" compare "$b" "$c" --baseline "$a" --format "$format" \
    --verbose --fail-on regression
done

# --- a store of runs, its history and a trend -----------------------------------------------
store=$scratch/runs
fixture_run=fixtures/bad/rundir_running_elsewhere
# runlike DIR NAME STATUS STARTED: a copy of the fixture run directory with run.json pinned.
runlike() {
  mkdir -p "$1"
  cp "$fixture_run"/* "$1"/
  jq --arg n "$2" --arg s "$3" --arg t "$4" '.name = $n | .status = $s | .started_at = $t' \
    "$fixture_run/run.json" > "$1/run.json"
}
runlike "$store/20261101T100000Z_api" api complete 2026-11-01T10:00:00Z
runlike "$store/20261102T100000Z_web" web complete 2026-11-02T10:00:00Z
runlike "$store/20261103T100000Z_api" api aborted 2026-11-03T10:00:00Z
# Runs whose figures are a fixture import's report.json (as `volley run` writes one at its end).
i=4
for input in "${ok[@]:0:4}"; do
  d="$store/2026110${i}T100000Z_api"
  runlike "$d" api complete "2026-11-0${i}T10:00:00Z"
  "$bin" report "$input" --format json > "$d/report.json"
  i=$((i + 1))
done
# A run whose run.json cannot be read, and a group of two fixture runs.
mkdir -p "$store/20261110T000000Z_crashed"
printf '{"schema": 1, "name": ' > "$store/20261110T000000Z_crashed/run.json"
group=$store/20261111T000000Z_api-x2
runlike "$group/20261111T000000Z_api" api complete 2026-11-11T00:00:00Z
runlike "$group/20261111T000100Z_api" api complete 2026-11-11T00:01:00Z
jq -n --slurpfile plan <(jq .plan "$fixture_run/run.json") '{schema: 1, kind: "group",
  id: "20261111T000000Z_api-x2", name: "api-group", repeat: 2, pause_s: 0.0,
  status: "complete", started_at: "2026-11-11T00:00:00Z", plan: $plan[0],
  runs: [{dir: "20261111T000000Z_api", status: "complete"},
         {dir: "20261111T000100Z_api", status: "complete"}]}' > "$group/group.json"

run "$out/store/runs.table" runs "$store"
run "$out/store/runs.json" runs "$store" --json
run "$out/store/runs-named.table" runs "$store" --name 'a*' --last 4
for metric in tps_avg ttfb_p99_ms; do
  run "$out/store/trend-$metric.log" runs "$store" --trend "$metric" \
    -o "$out/store/trend-$metric"
done

# --- a run group ----------------------------------------------------------------------------
forms "$out/group/group" "$group"
run "$out/group/compare-groups.table" compare "$group" "$group" --verbose

# The absolute paths are the volatile part: they differ run to run (PNG files are left alone).
grep -rlIF -e "$scratch" -e "$out" "$out" | while read -r f; do
  sed -i -e "s#$scratch#\$SNAP#g" -e "s#$out#\$OUT#g" "$f"
done
# The pages write a path with its slashes escaped (&#x2f;).
html_scratch=$(printf '%s' "$scratch" | sed 's|/|\&#x2f;|g')
grep -rlF "$html_scratch" "$out" | while read -r f; do sed -i "s|$html_scratch|\$SNAP|g" "$f"; done
echo "report-snapshots: $(find "$out" -type f | wc -l) files in $out"
