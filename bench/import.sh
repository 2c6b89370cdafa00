#!/usr/bin/env bash
# Import speed: generated result files (JTL of N requests, default 3 million, ~340 MB; k6 CSV
# of N/3 requests ~1 GB; k6 NDJSON of N/8 ~0.9 GB; nGrinder of N rows ~240 MB) read by volley
# and by pandas (read + per-second
# bucketing, what the seed's workflow does). For each: MB/s (wall), CPU seconds (user+sys)
# per GB, peak RSS; and callgrind's instruction count per byte on a small file of each
# format (repeatable on a loaded machine; wall-clock figures are not).
#   bench/import.sh [N] [FORMATS...]        FORMATS: jtl k6csv k6json ngrinder (default all)
# Env: WORK (files, venv; default /tmp/volley-import-bench), VOLLEY_IMPORT_THREADS (readers;
# default one per core), NO_PANDAS=1, NO_CALLGRIND=1, PANDAS_BIG=1 (pandas on a large NDJSON).
# Reads with target/release/volley (`volley report`) when built, else the formats crate's
# `import` example (a release build of volley-formats only). Re-run on a quiet machine for
# wall-clock figures.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-3000000}; shift || true
FORMATS=${*:-jtl k6csv k6json ngrinder}
WORK=${WORK:-/tmp/volley-import-bench}
SMALL=${SMALL:-100000}
mkdir -p "$WORK"
if [ -x target/release/volley ]; then
  READ=(target/release/volley report --format json)
else
  [ -x target/release/examples/import ] || cargo build --release -p volley-formats --example import
  READ=(target/release/examples/import)
fi
ext() { case $1 in jtl) echo jtl;; k6csv) echo csv;; k6json) echo json;; ngrinder) echo csv;; esac; }
# Prints "wall_s cpu_s peak_kb" of a command (its output to /dev/null).
measure() {
  /usr/bin/time -f "%e %U %S %M" -o "$WORK/time.txt" "$@" >/dev/null
  awk '{printf "%s %.3f %s\n", $1, $2 + $3, $4}' "$WORK/time.txt"
}
report() { # name file wall cpu kb
  local mb; mb=$(stat -c %s "$2" | awk '{print $1 / 1e6}')
  awk -v n="$1" -v mb="$mb" -v w="$3" -v c="$4" -v kb="$5" 'BEGIN {
    printf "  %-8s %8.0f MB  %6.2f s wall  %7.0f MB/s  %6.2f s CPU  %5.2f CPU s/GB  %7.0f MB/s per CPU-s  peak %6.0f MB\n",
      n, mb, w, mb / w, c, c / (mb / 1000), mb / c, kb / 1024 }'
}
if [ -z "${NO_PANDAS:-}" ] && [ ! -x "$WORK/venv/bin/python" ]; then
  python3 -m venv "$WORK/venv" && "$WORK/venv/bin/pip" install -q pandas numpy
fi
for f in $FORMATS; do
  case $f in k6csv) n=$((N / 3));; k6json) n=$((N / 8));; *) n=$N;; esac
  big="$WORK/big-$n.$f.$(ext "$f")"; small="$WORK/small-$SMALL.$f.$(ext "$f")"
  [ -f "$big" ] || python3 bench/import/gen.py "$f" "$n" "$big"
  echo "$f ($n $( [ "$f" = ngrinder ] && echo rows || echo requests)):"
  read -r w c kb < <(measure "${READ[@]}" "$big"); report volley "$big" "$w" "$c" "$kb"
  if [ "$f" = k6json ] && [ "$(stat -c %s "$big")" -gt 200000000 ] && [ -z "${PANDAS_BIG:-}" ]; then
    echo "  pandas   skipped: read_json(lines=True) takes ~10x the file in memory (PANDAS_BIG=1 runs it)"
  elif [ -z "${NO_PANDAS:-}" ]; then
    read -r w c kb < <(measure "$WORK/venv/bin/python" bench/import/to_series.py "$f" "$big" "$WORK/series.csv"); report pandas "$big" "$w" "$c" "$kb"
  fi
  if [ -z "${NO_CALLGRIND:-}" ]; then
    [ -f "$small" ] || python3 bench/import/gen.py "$f" "$SMALL" "$small"
    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" "${READ[@]}" "$small" >/dev/null 2>"$WORK/cg.err"
    ir=$(grep -o 'refs: *[0-9,]*' "$WORK/cg.err" | tr -dc 0-9)
    awk -v ir="$ir" -v b="$(stat -c %s "$small")" -v n="$SMALL" 'BEGIN { printf "  callgrind: %.0f M instructions for %d requests (%.1f MB): %.1f per byte, %.0f per request\n", ir / 1e6, n, b / 1e6, ir / b, ir / n }'
  fi
done
