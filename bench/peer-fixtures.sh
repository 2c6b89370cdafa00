#!/usr/bin/env bash
# Regenerates fixtures/peers/: real k6 and Locust output of one short run each against
# bench/peer-fixtures/server.py (loopback, known latency distribution, 5 % HTTP 500), with
# each tool's own end-of-test summary beside the files volley imports. The tests in
# crates/formats/tests/peer_agreement.rs check volley's import against those summaries.
#   bench/peer-fixtures.sh [OUT_DIR]     (default fixtures/peers)
# Needs k6 and Locust: /work/shared/bench/install.sh or bench/harness/install.sh installs
# them under $BENCH_WORK (default /tmp/volley-bench); K6 and LOCUST override the paths.
# Each run is bounded (k6 20 s, Locust 30 s, both under `timeout`); the server is stopped
# by its PID at the end, also on error.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-fixtures/peers}
BENCH_WORK=${BENCH_WORK:-/tmp/volley-bench}
K6=${K6:-$BENCH_WORK/tools/bin/k6}
LOCUST=${LOCUST:-$BENCH_WORK/tools/venv/bin/locust}
PORT=${PEER_FIXTURE_PORT:-18090}
HERE=bench/peer-fixtures
for t in "$K6" "$LOCUST"; do
  [ -x "$t" ] || { echo "peer-fixtures.sh: $t is missing: run bench/harness/install.sh (or set K6 / LOCUST)" >&2; exit 2; }
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
tmp=$(mktemp -d)
server=
stop() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; server=; }
trap 'stop; rm -rf "$tmp"' EXIT

start() {
  if curl -s -o /dev/null "http://127.0.0.1:$PORT/stats"; then
    echo "peer-fixtures.sh: port $PORT is taken; set PEER_FIXTURE_PORT" >&2; exit 2
  fi
  python3 "$HERE/server.py" "$PORT" & server=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/stats" && return; sleep 0.1; done
  echo "peer-fixtures.sh: the server did not start" >&2; exit 1
}

k6_version=$("$K6" version | head -1)
locust_version=$("$LOCUST" --version 2>&1 | sed 's/ from .*(/ (/')
date=$(date -u +%FT%TZ)

# --- k6: CSV (default whole-second time stamps), NDJSON, --summary-export, stdout -----------
start
(cd "$tmp" && K6_NO_USAGE_REPORT=true TARGET="http://127.0.0.1:$PORT" timeout -k 5 60 "$K6" run --quiet \
  --system-tags name,status,expected_response,error_code \
  --out csv=k6_out.csv --out json=k6_out.json --summary-export=k6_summary-export.json \
  "$OLDPWD/$HERE/k6.js" >k6_stdout.txt 2>k6_stderr.txt) || { cat "$tmp/k6_stderr.txt" >&2; exit 1; }
curl -s "http://127.0.0.1:$PORT/stats" >"$tmp/k6_server.json"
stop

# --- Locust: --csv with full history, --json (its stats on stdout) ------------------------
start
(cd "$tmp" && timeout -k 5 60 "$LOCUST" -f "$OLDPWD/$HERE/locustfile.py" --headless -u 10 -r 10 -t 30s \
  -H "http://127.0.0.1:$PORT" --csv locust --csv-full-history --json-file locust --only-summary \
  >locust_stdout.txt 2>locust_stderr.txt) || true # exits 1 when a request failed, as here
[ -s "$tmp/locust_stats.csv" ] || { cat "$tmp/locust_stderr.txt" >&2; exit 1; }
curl -s "http://127.0.0.1:$PORT/stats" >"$tmp/locust_server.json"
stop

cp "$tmp"/k6_out.csv "$tmp"/k6_out.json "$tmp"/k6_summary-export.json "$tmp"/k6_stdout.txt "$tmp"/k6_server.json \
   "$tmp"/locust_stats.csv "$tmp"/locust_stats_history.csv "$tmp"/locust_failures.csv "$tmp"/locust.json \
   "$tmp"/locust_server.json "$OUT"/
cat >"$OUT/PROVENANCE.txt" <<INFO
generated: $date by bench/peer-fixtures.sh
host:      $(uname -srm), $(nproc) CPUs
k6:        $k6_version
locust:    $locust_version
server:    bench/peer-fixtures/server.py on 127.0.0.1:$PORT (/fast 2-8 ms, /slow 20-40 ms, every 20th request per path HTTP 500)
k6 cmd:    k6 run --quiet --system-tags name,status,expected_response,error_code --out csv=k6_out.csv --out json=k6_out.json --summary-export=k6_summary-export.json bench/peer-fixtures/k6.js
locust cmd: locust -f bench/peer-fixtures/locustfile.py --headless -u 10 -r 10 -t 30s -H http://127.0.0.1:$PORT --csv locust --csv-full-history --json-file locust --only-summary
INFO
ls -l "$OUT"
