#!/usr/bin/env bash
# `volley capacity` against the demo target, whose limit is known: `GET /rooms` holds one of
# `--db-pool` connections for `--db-rtt`, so its saturation throughput X is measured by a
# closed run with many VUs (50 VUs, 12 s, the first 3 s left out; the median of its intervals'
# TPS) and P/R bounds it.
#
# For each (pool, rtt) setting: X, then a capacity search under
# `ttfb p99 < 250ms, error_rate < 1%` (--rates 50..4000, 5 s probes after a 2 s warm-up,
# --server-metrics on the target), and its answer against X: capacity / X (the issue asks
# 0.80–1.05), the resource named, the probes used (≤ 12) and the wall time. The first setting
# is searched REPEAT times to show how far repeated searches agree. With k6 on PATH (or under
# $BENCH_WORK/tools/bin), k6's breakpoint test runs beside it on the same setting:
# ramping-arrival-rate from 0 to 2·P/R over 60 s with the same thresholds and abortOnFail;
# its summary's http_reqs rate and the offered rate when it stopped are printed.
#
#   bench/capacity.sh                              # settings "2:10 4:10 10:20", 5 searches of the first
#   SETTINGS="2:10" REPEAT=1 bench/capacity.sh
#   ARRIVALS=poisson bench/capacity.sh             # the searches with --arrivals poisson
#
# Needs a release build (cargo build --release) and python3. Load stays on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
SETTINGS=${SETTINGS:-2:10 4:10 10:20}
REPEAT=${REPEAT:-5}
ARRIVALS=${ARRIVALS:-even}
PORT=${PORT:-18093}
work=${BENCH_WORK:-/tmp/volley-bench}/capacity-$(date +%Y%m%dT%H%M%S)
mkdir -p "$work"
[ -x "$VOLLEY" ] || { echo "capacity.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
K6=$(command -v k6 || true)
[ -z "$K6" ] && [ -x "${BENCH_WORK:-/tmp/volley-bench}/tools/bin/k6" ] && K6=${BENCH_WORK:-/tmp/volley-bench}/tools/bin/k6

server_pid=
stop_server() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi; server_pid=; }
trap stop_server EXIT
start_server() { # pool rtt_ms
  stop_server
  "$VOLLEY" target serve --listen "127.0.0.1:$PORT" --db-pool "$1" --db-rtt "${2}ms" >"$work/server-$1-$2.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 50); do curl -fs "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && return; sleep 0.1; done
  echo "capacity.sh: the demo target did not start" >&2; exit 1
}

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

echo "| pool | rtt | P/R req/s | X (closed, 50 VUs) | search | capacity | capacity / X | bracket | limited by | probes | time |"
echo "|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|"
first=1
for s in $SETTINGS; do
  pool=${s%%:*}; rtt=${s##*:}
  pr=$(python3 -c "print(round($pool/($rtt/1000)))")
  start_server "$pool" "$rtt"
  "$VOLLEY" run --url "http://127.0.0.1:$PORT/rooms" --vus 50 --duration 12s --warmup 3s \
    --progress none -o "$work/x-$pool-$rtt" >/dev/null 2>"$work/x-$pool-$rtt.log"
  # The median of the intervals' TPS: the run's last interval is partial and also holds what
  # finished in the grace period, which swings a mean by tens of percent.
  x=$(json "$(ls -d "$work/x-$pool-$rtt"/*/ | head -1)report.json" "round(d['seed_suite']['tps_p50'],1)")
  n=1; [ $first = 1 ] && n=$REPEAT
  for i in $(seq "$n"); do
    out="$work/cap-$pool-$rtt-$i"
    start=$(date +%s.%N)
    "$VOLLEY" capacity --url "http://127.0.0.1:$PORT/rooms" --rates 50..4000 \
      --slo "ttfb p99 < 250ms" --slo "error_rate < 1%" --probe 5s --warmup 2s --arrivals "$ARRIVALS" \
      --server-metrics "http://127.0.0.1:$PORT/metrics" -o "$out" >"$out.txt" 2>"$out.log" || true
    end=$(date +%s.%N)
    c=$(ls "$out"/*/capacity.json)
    cap=$(json "$c" "d['capacity_rps']")
    echo "| $pool | ${rtt} ms | $pr | $x | $i | $cap | $(python3 -c "print(f'{$cap/$x:.2f}' if '$cap'!='None' else 'n/a')") | $(json "$c" "f\"{d['last_pass']}..{d['first_fail']}\"") | $(json "$c" "d.get('limited_by')") | $(json "$c" "len(d['probes'])") | $(python3 -c "print(f'{$end-$start:.0f} s')") |"
  done
  first=0
  if [ -n "$K6" ]; then
    top=$((pr * 2))
    cat >"$work/k6-$pool-$rtt.js" <<EOF
import http from 'k6/http';
export const options = {
  scenarios: { breakpoint: { executor: 'ramping-arrival-rate', startRate: 0, timeUnit: '1s',
    preAllocatedVUs: 50, maxVUs: 1000, stages: [{ duration: '60s', target: $top }] } },
  thresholds: {
    http_req_waiting: [{ threshold: 'p(99)<250', abortOnFail: true }],
    http_req_failed: [{ threshold: 'rate<0.01', abortOnFail: true }],
  },
};
export default function () { http.get('http://127.0.0.1:$PORT/rooms'); }
EOF
    start=$(date +%s.%N)
    "$K6" run --quiet --summary-export "$work/k6-$pool-$rtt.json" "$work/k6-$pool-$rtt.js" >"$work/k6-$pool-$rtt.txt" 2>&1 || true
    end=$(date +%s.%N)
    python3 - "$work/k6-$pool-$rtt.json" "$start" "$end" "$top" "$x" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
start, end, top, x = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
rate = d["metrics"]["http_reqs"]["rate"]
t = end - start
offered = min(top, top * t / 60.0)
print(f"|  k6 breakpoint | stopped after {t:.0f} s | summary http_reqs rate {rate:.1f}/s ({rate/x:.2f} X) | offered when it stopped ≈ {offered:.0f}/s ({offered/x:.2f} X) |")
PY
  fi
done
echo
echo "raw files: $work"
