#!/usr/bin/env bash
# Streaming import: a generated JMeter JTL of N requests (default 10 million, ~1.1 GB, 5,000/s
# for 2,000 s, 0.5 % errors), read by `volley report` and by pandas (read_csv + per-second
# bucketing, what the seed's workflow does), each timed with GNU time (wall, peak RSS).
#   bench/import.sh [N]
# Needs a release build and python3; pandas is installed into a venv under $WORK.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-10000000}
WORK=${WORK:-/tmp/volley-import-bench}
mkdir -p "$WORK"
[ -x target/release/volley ] || cargo build --release
[ -f "$WORK/big.jtl" ] || python3 bench/import/gen_jtl.py "$N" "$WORK/big.jtl"
[ -x "$WORK/venv/bin/python" ] || { python3 -m venv "$WORK/venv" && "$WORK/venv/bin/pip" install -q pandas numpy; }
echo "volley report:"
/usr/bin/time -f "  %e s wall, %M KB peak RSS" target/release/volley report --format json "$WORK/big.jtl" >"$WORK/volley.json"
echo "pandas (read_csv + bucket by second):"
/usr/bin/time -f "  %e s wall, %M KB peak RSS" "$WORK/venv/bin/python" bench/import/jtl_to_series.py "$WORK/big.jtl" "$WORK/series.csv"
