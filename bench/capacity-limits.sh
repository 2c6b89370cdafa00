#!/usr/bin/env bash
# `volley capacity` against targets whose limit is known from their own rule (issue 52): the
# demo target set up as
#   queue    2 DB connections held 20 ms each, the rest wait           (--db-pool 2 --db-rtt 20ms)
#   refuse   4 slots of 20 ms, the rest refused at once with 503        (--max-threads 4 --accept-count 0 --db-pool 4)
#   timeout  the queue, with requests that wait over 200 ms failing     (--db-pool 2 --db-rtt 20ms --db-timeout 200ms)
#   demo     Tomcat's 50 threads behind an accept queue of 100, 5 DB connections held 20 ms each
#            (--max-threads 50 --accept-count 100 --db-pool 5 --db-rtt 20ms): the pool is the
#            queue, and beyond 150 requests in the server the rest are refused
# searched for each arrival kind (even and Poisson arrivals: --rates; closed: --vus) under
# `ttfb p99 < S` with the default error SLO (error_rate < 1%). The limit that meets the SLO is
# worked out by bench/capacity_limits.py from each target's rule (P/H for even arrivals, the
# M/D/P queue's or Erlang's loss system's steady state for Poisson, the users whose response
# stays within the SLO for a closed search). Prints one Markdown row per search: capacity, its
# ratio to the limit (the issue asks 0.80–1.00), status, what it names as the limit, probes,
# wall time; then, per target and kind, the spread of REPEAT searches around their mean.
#
#   bench/capacity-limits.sh                         # 4 targets × 3 kinds, REPEAT=5, 30 s probes (hours)
#   REPEAT=1 PROBE=5s WARMUP=2s bench/capacity-limits.sh
#   KINDS="refuse" ARRIVALS="poisson" bench/capacity-limits.sh
#   KINDS=demo REPEAT=1 bench/capacity-limits.sh      # the fourth target of issue 52
#   KINDS=queue RATES=40..400 VUS=2..100 bench/capacity-limits.sh   # fewer step-up probes
#
# Needs a release build (cargo build --release) and python3. Load stays on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
KINDS=${KINDS:-queue refuse timeout demo}
ARRIVALS=${ARRIVALS:-even poisson closed}
REPEAT=${REPEAT:-5}
PROBE=${PROBE:-30s}
WARMUP=${WARMUP:-5s}
PRECISION=${PRECISION:-5%}
RATES=${RATES:-10..2000}   # the open searches' START..MAX
VUS=${VUS:-1..400}         # the closed search's
PORT=${PORT:-18094}
work=${BENCH_WORK:-/tmp/volley-bench}/capacity-limits-$(date +%Y%m%dT%H%M%S)
mkdir -p "$work"
[ -x "$VOLLEY" ] || { echo "capacity-limits.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }

server_pid=
stop_server() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi; server_pid=; }
trap stop_server EXIT
start_server() { # knobs...
  stop_server
  "$VOLLEY" target serve --listen "127.0.0.1:$PORT" "$@" >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 50); do curl -fs "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && return; sleep 0.1; done
  echo "capacity-limits.sh: the demo target did not start" >&2; exit 1
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

echo "| target | arrivals | limit | search | capacity | capacity / limit | status | limited by | probes | time |"
echo "|---|---|---:|---:|---:|---:|---|---|---:|---:|"
summary=()
for kind in $KINDS; do
  case $kind in
    queue) knobs=(--db-pool 2 --db-rtt 20ms); rule=(queue 2 20 100); slo=100 ;;
    refuse) knobs=(--max-threads 4 --accept-count 0 --db-pool 4 --db-rtt 20ms); rule=(refuse 4 20 100); slo=100 ;;
    timeout) knobs=(--db-pool 2 --db-rtt 20ms --db-timeout 200ms); rule=(timeout 2 20 250 200); slo=250 ;;
    demo) knobs=(--max-threads 50 --accept-count 100 --db-pool 5 --db-rtt 20ms); rule=(queue 5 20 100); slo=100 ;;
    *) echo "capacity-limits.sh: unknown target $kind (queue, refuse, timeout, demo)" >&2; exit 2 ;;
  esac
  limits=$(python3 bench/capacity_limits.py "${rule[@]}")
  start_server "${knobs[@]}"
  for arr in $ARRIVALS; do
    limit=$(python3 -c "import json; print(json.loads('$limits')['$arr'])")
    caps=()
    for i in $(seq "$REPEAT"); do
      out="$work/$kind-$arr-$i"
      case $arr in
        even) load=(--rates "$RATES") ;;
        poisson) load=(--rates "$RATES" --arrivals "poisson:$i") ;;
        closed) load=(--vus "$VUS") ;;
      esac
      start=$(date +%s.%N)
      "$VOLLEY" capacity --url "http://127.0.0.1:$PORT/rooms" "${load[@]}" --slo "ttfb p99 < ${slo}ms" \
        --probe "$PROBE" --warmup "$WARMUP" --precision "$PRECISION" \
        --server-metrics "http://127.0.0.1:$PORT/metrics" -o "$out" >"$out.txt" 2>"$out.log" || true
      end=$(date +%s.%N)
      c=$(ls "$out"/*/capacity.json)
      if [ "$arr" = closed ]; then cap=$(json "$c" "d['capacity_vus']"); else cap=$(json "$c" "d['capacity_rps']"); fi
      caps+=("$cap")
      echo "| $kind | $arr | $limit | $i | $cap | $(python3 -c "print(f'{$cap/$limit:.2f}' if '$cap'!='None' else 'n/a')") | $(json "$c" "d['status']") | $(json "$c" "d.get('limited_by')") | $(json "$c" "len(d['probes'])") | $(python3 -c "print(f'{$end-$start:.0f} s')") |"
    done
    summary+=("$(python3 - "$kind" "$arr" "$limit" "${caps[@]}" <<'EOF'
import statistics, sys
kind, arr, limit, caps = sys.argv[1], sys.argv[2], float(sys.argv[3]), [float(c) for c in sys.argv[4:] if c != 'None']
if not caps:
    print(f"| {kind} | {arr} | {limit:g} | none found | | |")
else:
    m = statistics.mean(caps)
    spread = max(abs(c - m) / m * 100 for c in caps)
    print(f"| {kind} | {arr} | {limit:g} | {m:.1f} ({m / limit:.2f} ×) | ±{spread:.1f} % | {min(caps):g}..{max(caps):g} |")
EOF
)")
  done
done
echo
echo "| target | arrivals | limit | mean capacity | largest distance from the mean | range |"
echo "|---|---|---:|---:|---:|---|"
printf '%s\n' "${summary[@]}"
echo
echo "raw files: $work"
