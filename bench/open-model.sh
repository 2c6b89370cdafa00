#!/usr/bin/env bash
# The open model's cost per arrival: volley (--rate), vegeta (attack -rate) and k6
# (constant-arrival-rate) at a fixed arrival rate against nginx on 127.0.0.1 (one worker,
# `return 200 "hello\n"`), nginx pinned to the first CPU and each client to the second, rates
# and tools interleaved. GNU time measures each client's whole process (start-up included).
# Prints one Markdown table per rate: achieved rate, client CPU µs per arrival
# ((user+sys) / requests sent), p99 latency (volley: from each arrival's due time), dropped
# arrivals, peak RSS; for volley also its schedule lag — each arrival's delay from its due time
# to its dispatch, from the run's `sched_lag` histogram: p50, p99, p99.9 and max.
#
#   bench/open-model.sh                          # 1k, 5k, 20k, 50k/s; 10 s each; 1 round
#   RATES="1000 5000" DURATION=20 ROUNDS=3 bench/open-model.sh
#   TOOLS="volley vegeta" VOLLEY=target/release/volley bench/open-model.sh
#   TOOLS=volley VOLLEY_ARGS="--arrival-wait spin" bench/open-model.sh   # extra volley flags
#   TOOLS="volley volley@worker" bench/open-model.sh   # also with only the worker on CLIENT_CPU
#
# `volley@worker` is volley with its worker thread (`volley-worker-0`, which waits for the
# arrivals and runs the VUs) alone on CLIENT_CPU and its other threads (the main thread, which
# writes the interval log, and the conductor, which merges the intervals) on SERVER_CPU with
# nginx: the process starts on both CPUs, and the threads are moved as soon as they exist
# (within ~10 ms of the start, polled from /proc). Plain `volley` has the whole process on
# CLIENT_CPU, as every other tool.
#
# Needs nginx, GNU time and taskset (Debian: nginx-light time util-linux), a release build
# (cargo build --release) and the peers from bench/harness/install.sh (vegeta, k6 under
# $BENCH_WORK/tools/bin; a missing peer is skipped with a note). Every raw file is kept in
# the folder printed at the end. The machine should be otherwise idle: the figures are CPU
# time, which a loaded machine inflates for every tool alike, but not evenly.
set -euo pipefail
. "$(dirname "$0")/harness/hello-nginx.sh"
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
RATES=${RATES:-1000 5000 20000 50000}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-1}
TOOLS=${TOOLS:-volley vegeta k6}
PORT=${PORT:-18092}
work_dir=${BENCH_WORK:-/tmp/volley-bench}
bin=$work_dir/tools/bin
cpus=($(taskset -pc $$ | sed 's/.*: //' | tr ',' ' ' | tr '-' ' '))
SERVER_CPU=${SERVER_CPU:-${cpus[0]}}
CLIENT_CPU=${CLIENT_CPU:-${cpus[1]:-${cpus[0]}}}
PATH=$PATH:/usr/sbin

for tool in nginx taskset python3; do
  command -v "$tool" >/dev/null || { echo "open-model.sh: $tool is missing (apt-get install nginx-light util-linux python3)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "open-model.sh: GNU time is missing (apt-get install time)" >&2; exit 2; }
[ -x "$VOLLEY" ] || { echo "open-model.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
VOLLEY=$(cd "$(dirname "$VOLLEY")" && pwd)/$(basename "$VOLLEY")
if (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then
  echo "open-model.sh: port $PORT is taken; set PORT" >&2; exit 2
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

out=$(mktemp -d /tmp/volley-open-model.XXXXXX)
mkdir -p "$out/tmp"
hello_nginx_conf "$out" "127.0.0.1:$PORT" 65536 >"$out/nginx.conf"
taskset -c "$SERVER_CPU" nginx -c "$out/nginx.conf" -p "$out" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$PORT/

# pin_worker DIR RUNNER: once the volley running in DIR has its worker thread, puts that thread
# alone on CLIENT_CPU and every other thread of the process on SERVER_CPU (threads made later
# inherit their maker's CPUs). Notes in DIR/pinned.txt what it moved.
pin_worker() {
  local dir=$1 runner=$2 pid task comm
  for _ in $(seq 500); do
    kill -0 "$runner" 2>/dev/null || return 0
    for pid in /proc/[0-9]*; do
      pid=${pid#/proc/}
      [ "$(readlink "/proc/$pid/cwd" 2>/dev/null)" = "$dir" ] || continue
      grep -qx 'volley-worker-0' /proc/"$pid"/task/*/comm 2>/dev/null || continue
      for task in /proc/"$pid"/task/*; do
        comm=$(cat "$task/comm" 2>/dev/null) || continue
        if [[ $comm == volley-worker-* ]]; then
          taskset -p -c "$CLIENT_CPU" "${task##*/}" >/dev/null
        else
          taskset -p -c "$SERVER_CPU" "${task##*/}" >/dev/null
        fi
        echo "$comm ${task##*/} CPUs $(taskset -pc "${task##*/}" | sed 's/.*: //')" >>"$dir/pinned.txt"
      done
      return 0
    done
    sleep 0.01
  done
  echo "open-model.sh: no volley-worker-0 thread found in $dir; left on CPUs $SERVER_CPU,$CLIENT_CPU" >&2
}

# run TOOL RATE ROUND: one client run in its own folder; GNU time around the whole process.
run() {
  local tool=$1 rate=$2 round=$3
  local dir=$out/$tool-$rate-$round
  local vus=$((rate / 50 > 200 ? rate / 50 : 200))
  mkdir -p "$dir"
  local cmd cpus=$CLIENT_CPU
  [ "$tool" = volley@worker ] && cpus=$SERVER_CPU,$CLIENT_CPU
  case ${tool%@*} in
    volley) cmd=("$VOLLEY" run --url "$url" --rate "$rate" --duration "${DURATION}s" --max-vus "$vus" --threads 1
                 --interval 100ms --progress none -o runs --name open ${VOLLEY_ARGS:-}) ;;
    vegeta) cmd=(sh -c "echo 'GET $url' | exec '$bin/vegeta' attack -rate $rate/s -duration ${DURATION}s -output results.bin") ;;
    k6) cmd=("$bin/k6" run --quiet --summary-export summary.json -e TARGET="$url" -e RATE="$rate" -e DUR="${DURATION}s"
             -e PREVUS="$vus" -e MAXVUS="$((vus * 5))" "$PWD/bench/harness/load/k6_arrival.js") ;;
  esac
  printf '%q ' "${cmd[@]}" >"$dir/cmd"
  (cd "$dir" && env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY K6_NO_USAGE_REPORT=true GOMAXPROCS=1 \
    taskset -c "$cpus" /usr/bin/time -f "%U %S %M" -o time.txt timeout -k 2 $((DURATION + 30)) "${cmd[@]}" >out.txt 2>err.txt) &
  local runner=$!
  [ "$tool" = volley@worker ] && pin_worker "$dir" "$runner"
  wait "$runner" || true
  if [ "$tool" = vegeta ] && [ -s "$dir/results.bin" ]; then
    "$bin/vegeta" report -type=json "$dir/results.bin" >"$dir/report.json" 2>>"$dir/err.txt" || true
  fi
  python3 - "$tool" "$rate" "$round" "$dir" "$DURATION" >>"$out/results.tsv" <<'PY'
import glob, json, sys
tool, rate, rnd, d, dur = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], float(sys.argv[5])
try:
    u, s, rss = open(d + "/time.txt").read().split()[-3:]
    cpu = float(u) + float(s)
except Exception:
    print(tool, rate, rnd, "failed", sep="\t"); sys.exit()
n, p99, dropped, lag = 0, float("nan"), "", ["", "", "", ""]
if tool.startswith("volley"):
    r = json.load(open(glob.glob(d + "/runs/*/report.json")[0]))
    n = r["seed_suite"]["total_tests"] + r["seed_suite"]["errors"]
    p99 = r["per_request"]["total_ms"]["p99_ms"]
    dropped = r["generator"]["dropped"]
    # Every arrival's dispatch delay, from the run's schedule-lag histogram.
    h = r["generator"].get("sched_lag_ms") or {}
    lag = [f"{h[k]:.3f}" if k in h else "" for k in ("p50_ms", "p99_ms", "p99_9_ms", "max_ms")]
elif tool == "vegeta":
    r = json.load(open(d + "/report.json"))
    n = r["requests"]
    p99 = r["latencies"]["99th"] / 1e6
elif tool == "k6":
    m = json.load(open(d + "/summary.json"))["metrics"]
    n = int(m["http_reqs"]["count"])
    p99 = m["http_req_duration"].get("p(99)", float("nan"))
    dropped = int(m.get("dropped_iterations", {}).get("count", 0))
print(tool, rate, rnd, n, f"{n / dur:.0f}", f"{cpu / max(n, 1) * 1e6:.1f}", f"{p99:.2f}", dropped, int(rss) // 1024, *lag, sep="\t")
PY
  tail -1 "$out/results.tsv"
}

for round in $(seq "$ROUNDS"); do
  for rate in $RATES; do
    for tool in $TOOLS; do
      if [ "${tool%@*}" != volley ] && [ ! -x "$bin/$tool" ]; then
        echo "open-model.sh: $tool not installed (bench/harness/install.sh); skipped" >&2; continue
      fi
      run "$tool" "$rate" "$round"
    done
  done
done

python3 - "$out/results.tsv" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) < 13:
        continue
    rows.setdefault((int(f[1]), f[0]), []).append(f)
med = lambda rs, i: statistics.median(float(r[i]) for r in rs)
print("\n| rate/s | tool | achieved/s | CPU µs/arrival | p99 ms | dropped | peak RSS MB | lag p50 / p99 / p99.9 / max ms (medians) | rounds (µs/arrival) |")
print("|---|---|---|---|---|---|---|---|---|")
for (rate, tool), rs in sorted(rows.items()):
    print(f"| {rate:,} | {tool} | {med(rs, 4):,.0f} | {med(rs, 5):.1f} | {med(rs, 6):.2f} | {rs[0][7] or 'n/a'} | {med(rs, 8):.0f} | "
          f"{' / '.join(f'{med(rs, i):.3f}' for i in range(9, 13)) if rs[0][9] else '–'} | {', '.join(r[5] for r in rs)} |")
for rate in sorted({k[0] for k in rows}):
    v = rows.get((rate, "volley"))
    for peer in ("vegeta", "k6"):
        p = rows.get((rate, peer))
        if v and p:
            print(f"\n{rate:,}/s: volley's CPU per arrival ÷ {peer}'s: {med(v, 5) / med(p, 5):.2f}")
PY
echo "raw: $out"
