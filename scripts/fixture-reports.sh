#!/usr/bin/env bash
# Every fixture result file and run directory reported by one volley binary, in each output
# format, into OUT: one file per (input, format) holding stdout, then stderr and the exit code.
# Two binaries' OUT directories are then compared with `diff -r`: a change that must not alter
# any report (a refactor, a speed-up) shows no difference.
#
#   scripts/fixture-reports.sh BEFORE_BIN /tmp/before
#   scripts/fixture-reports.sh target/debug/volley /tmp/after
#   diff -r /tmp/before /tmp/after && echo "no report changed"
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 VOLLEY_BINARY OUT_DIR" >&2; exit 2; }
bin=$(realpath "$1")
out=$2
cd "$(dirname "$0")/.."
mkdir -p "$out"
# Inputs: every file under fixtures/ngrinder, imports, peers and bad, and each run directory
# (a folder holding run.json) once, as a whole.
inputs=$( { find fixtures/ngrinder fixtures/imports fixtures/peers fixtures/bad -type f ! -path '*/rundir_*' ! -name '*.md';
            find fixtures -name run.json -exec dirname {} \; ; } | sort -u)
n=0
for input in $inputs; do
  for format in table md json csv; do
    name=$(printf '%s.%s' "$input" "$format" | tr '/' '_')
    {
      # Paths are relative to the checkout, so two binaries run from it compare equal.
      NO_COLOR=1 "$bin" report "$input" --format "$format" 2>&1 && code=0 || code=$?
      echo "exit: $code"
    } > "$out/$name"
    n=$((n + 1))
  done
done
# Comparisons: each input that reports cleanly against the next one that does, in each format.
ok=()
for input in $inputs; do
  grep -qx 'exit: 0' "$out/$(printf '%s.json' "$input" | tr '/' '_')" && ok+=("$input")
done
c=0
for ((i = 0; i + 1 < ${#ok[@]}; i++)); do
  for format in table md json csv; do
    name=$(printf 'compare_%s_%s.%s' "${ok[i]}" "${ok[i+1]}" "$format" | tr '/' '_')
    {
      NO_COLOR=1 "$bin" compare "${ok[i]}" "${ok[i+1]}" --format "$format" 2>&1 && code=0 || code=$?
      echo "exit: $code"
    } > "$out/$name"
    c=$((c + 1))
  done
done
echo "fixture-reports: $n reports of $(echo "$inputs" | wc -l) inputs and $c comparisons in $out"
