#!/usr/bin/env bash
# Memory per VU at many connections: volley with N paced VUs (one request per VU per second,
# each on its own keep-alive connection) against nginx on 127.0.0.1, and N VUs that only hold
# a server-sent event stream or a WebSocket open against the demo target (`volley target serve`).
# GNU time's peak RSS of the volley process; KB per VU = (RSS(N) − RSS(10)) / (N − 10). Also
# the RSS while every VU holds its connection (/proc/PID/status, sampled halfway between the end
# of the ramp and the end of the run), per VU the same way: the peak also covers the end of the
# run, whose transients (thousands of VUs cancelled at once, the report) vary between runs.
# More connections than one source address has local ports for (net.ipv4.ip_local_port_range,
# ~28k by default; cheap to find while under half are taken) are spread over 127.0.0.1…127.0.0.K
# with --source-addrs, one address per 10,000 connections.
#
#   bench/vus.sh                           # paced: 10, 10000, 50000 VUs; streams: 10, 10000
#   VUS="10 1000 10000 50000" STREAM_VUS="10 50000" DURATION=30 bench/vus.sh
#   CASES=paced bench/vus.sh               # paced only (CASES="paced sse ws" by default)
#   SEGMENTS=3 PACING=5s CASES=paced VUS="10 50000" bench/vus.sh
#                                          # past the open-file limit: 3 processes side by side
#
# SEGMENTS=K runs each N above 10 as K volley processes (`--segment i/K`, the way a split run
# shares a plan), for a container whose open-file limit is below N: memory is then the sum of
# the K peak RSS, and KB per VU = (sum − K × RSS(smallest run)) / (N − smallest). nginx then
# runs K + 1 workers on one `reuseport` socket, each under the limit. PACING (default 1s) sets
# the time between a VU's requests.
#
# Needs nginx, GNU time, taskset, a release build (cargo build --release) and an open-file
# limit above the largest N (the script raises its own to the hard limit; as root it raises
# the hard limit too). The demo target runs from the same volley binary.
set -euo pipefail
. "$(dirname "$0")/harness/hello-nginx.sh"
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
VUS=${VUS:-10 10000 50000}
STREAM_VUS=${STREAM_VUS:-10 10000}
CASES=${CASES:-paced sse ws}
DURATION=${DURATION:-20}
SEGMENTS=${SEGMENTS:-1}
PACING=${PACING:-1s}
PORT=${PORT:-18093}
DEMO_PORT=${DEMO_PORT:-18094}
cpus=($(taskset -pc $$ | sed 's/.*: //' | tr ',' ' ' | tr '-' ' '))
SERVER_CPU=${SERVER_CPU:-${cpus[0]}}
CLIENT_CPU=${CLIENT_CPU:-${cpus[1]:-${cpus[0]}}}
PATH=$PATH:/usr/sbin

for tool in nginx taskset python3 pgrep; do
  command -v "$tool" >/dev/null || { echo "vus.sh: $tool is missing (apt-get install nginx-light util-linux python3 procps)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "vus.sh: GNU time is missing (apt-get install time)" >&2; exit 2; }
[ -x "$VOLLEY" ] || { echo "vus.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
VOLLEY=$(cd "$(dirname "$VOLLEY")" && pwd)/$(basename "$VOLLEY")
# The most VUs any case asked for runs (paced runs VUS, the stream cases STREAM_VUS).
counts=""
[[ " $CASES " == *" paced "* ]] && counts="$counts $VUS"
[[ " $CASES " == *" sse "* || " $CASES " == *" ws "* ]] && counts="$counts $STREAM_VUS"
max=$(printf '%s\n' $counts | sort -n | tail -1)
# Split runs: each process (and each nginx worker) holds its share.
max=$(( (max + SEGMENTS - 1) / SEGMENTS ))
want=$((2 * max + 1000))
# As root the hard limit goes up too, unless a container withholds CAP_SYS_RESOURCE.
if [ "$(id -u)" = 0 ] && [ "$(ulimit -Hn)" -lt "$want" ]; then ulimit -Hn "$want" 2>/dev/null || true; fi
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" -lt $((max + 100)) ]; then
  echo "vus.sh: the open-file limit $(ulimit -n) is below $max VUs and cannot be raised here; raise it (ulimit -Hn as root, or the container's nofile limit) or set VUS below $(( $(ulimit -n) - 100 )), or split the run with SEGMENTS" >&2; exit 2
fi
for p in $PORT $DEMO_PORT; do
  if (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "vus.sh: port $p is taken; set PORT / DEMO_PORT" >&2; exit 2; fi
done

# Source addresses: one per 10,000 connections (the default port range has ~28k, and Linux
# finds a free port cheaply only while fewer than half are taken).
sources() {
  local n=$(( ($1 + 9999) / 10000 )) list=127.0.0.1 i
  [ "$n" -lt 1 ] && n=1
  for i in $(seq 2 "$n"); do list=$list,127.0.0.$i; done
  echo "$list"
}

out=$(mktemp -d /tmp/volley-vus.XXXXXX)
mkdir -p "$out/tmp"
if [ "$SEGMENTS" -gt 1 ]; then
  hello_nginx_conf "$out" "127.0.0.1:$PORT reuseport" "$want" \
    | sed "s/^worker_processes 1;/worker_processes $((SEGMENTS + 1));/; s/^worker_rlimit_nofile .*/worker_rlimit_nofile $(ulimit -Hn);/" >"$out/nginx.conf"
else
  hello_nginx_conf "$out" "127.0.0.1:$PORT" "$want" >"$out/nginx.conf"
fi
taskset -c "$SERVER_CPU" nginx -c "$out/nginx.conf" -p "$out" &
nginx_pid=$!
demo_pid=
if [[ " $CASES " == *" sse "* || " $CASES " == *" ws "* ]]; then
  taskset -c "$SERVER_CPU" "$VOLLEY" target serve --listen "127.0.0.1:$DEMO_PORT" --max-connections $((max + 1000)) >"$out/demo.out" 2>&1 &
  demo_pid=$!
fi
trap 'kill $nginx_pid $demo_pid 2>/dev/null; wait $nginx_pid $demo_pid 2>/dev/null || true' EXIT
for p in $PORT ${demo_pid:+$DEMO_PORT}; do
  for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null && break; sleep 0.1; done
  (echo >/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo "vus.sh: nothing listens on port $p:" >&2; cat "$out"/*.out "$out"/error.log >&2 2>/dev/null; exit 1; }
done

cat >"$out/sse.yaml" <<YAML
# Each VU opens one event stream and holds it until the run ends: the target sends
# \`connect\`, then a \`message\` per new message, and nobody posts, so the second never comes.
target: http://127.0.0.1:$DEMO_PORT
steps:
  - name: hold stream
    sse: /rooms/1/stream
    events: 2
    wait: true
    timeout: 600s
YAML
cat >"$out/ws.yaml" <<YAML
# Each VU opens one WebSocket, sends a message and waits for an answer that never comes.
target: http://127.0.0.1:$DEMO_PORT
steps:
  - name: hold socket
    websocket: /ws/echo
    send: hello
    expect: never sent back
    timeout: 600s
YAML

# volley_under PID: the volley process started under PID (through taskset, time and timeout);
# nothing when it has already ended.
volley_under() {
  local todo=("$1") p
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]} todo=("${todo[@]:1}")
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = volley ] && { echo "$p"; return 0; }
    todo+=($(pgrep -P "$p" || true))
  done
  return 0
}

# run CASE N: one volley run; prints "CASE N rss_kb cpu_s requests errors processes hold_rss_kb".
run() {
  local case=$1 n=$2 dir=$out/$1-$2
  mkdir -p "$dir"
  local what
  case $case in
    paced) what=(--url "http://127.0.0.1:$PORT/" --pacing "$PACING") ;;
    sse | ws) what=("$out/$case.yaml") ;;
  esac
  local k=1 i pids=()
  [ "$n" -gt 10 ] && k=$SEGMENTS
  for i in $(seq 0 $((k - 1))); do
    local cmd=("$VOLLEY" run "${what[@]}" --vus "$n" --ramp-up 5s --duration "${DURATION}s" --threads 1 --timeout 600s --grace 1s
               --source-addrs "$(sources "$n")" --progress none -o runs --name "$case")
    [ "$k" -gt 1 ] && cmd+=(--segment "$i/$k")
    mkdir -p "$dir/$i"
    printf '%q ' "${cmd[@]}" >"$dir/$i/cmd"
    (cd "$dir/$i" && taskset -c "$CLIENT_CPU" /usr/bin/time -f "%U %S %M" -o time.txt timeout -k 5 $((DURATION + 60)) "${cmd[@]}" >out.txt 2>err.txt) &
    pids+=($!)
  done
  # RSS while every VU holds its connection: sampled halfway between the end of the ramp and
  # the end of the run. The peak (GNU time) also covers the end of the run — cancelling
  # thousands of VUs at once and writing the report — whose transients vary from run to run.
  sleep $((5 + (DURATION - 5) / 2))
  for i in $(seq 0 $((k - 1))); do
    local p
    p=$(volley_under "${pids[$i]}")
    if [ -n "$p" ]; then awk '/^VmRSS/ {print $2}' "/proc/$p/status" >"$dir/$i/hold_rss.txt" 2>/dev/null || true; fi
  done
  wait "${pids[@]}" || true
  python3 - "$case" "$n" "$dir" "$k" >>"$out/results.tsv" <<'PY'
import glob, json, sys
case, n, d, k = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rss, cpu, tests, errors, hold = 0, 0.0, 0, 0, 0
for i in range(k):
    u, s, m = open(f"{d}/{i}/time.txt").read().split()[-3:]
    rss, cpu = rss + int(m), cpu + float(u) + float(s)
    try:
        hold = hold + int(open(f"{d}/{i}/hold_rss.txt").read()) if hold is not None else None
    except (OSError, ValueError):
        hold = None  # the process had ended before the sample: no figure rather than a wrong one
    try:
        r = json.load(open(glob.glob(f"{d}/{i}/runs/*/report.json")[0]))
        tests += r["seed_suite"]["total_tests"]
        errors += r["seed_suite"]["errors"]
    except Exception as e:
        tests, errors = "?", f"no report in {d}/{i} ({e})"
        break
print(case, n, rss, f"{cpu:.2f}", tests, errors, k, "?" if hold is None else hold, sep="\t")
PY
  tail -1 "$out/results.tsv"
}

for case in $CASES; do
  list=$VUS
  [ "$case" != paced ] && list=$STREAM_VUS
  for n in $list; do run "$case" "$n"; done
done

python3 - "$out/results.tsv" <<'PY'
import sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
print("\n| case | VUs | processes | peak RSS MB (sum) | KB per VU (over the smallest run) | RSS holding MB (sum) | KB per VU holding | CPU s | requests ok | errors |")
print("|---|---|---|---|---|---|---|---|---|---|")
base = {}
for case, n, rss, cpu, tests, errors, k, hold in rows:
    n, rss, k = int(n), int(rss), int(k)
    hold = None if hold == "?" else int(hold)
    b = base.setdefault(case, (n, rss, hold))
    per = f"{(rss - k * b[1]) / (n - b[0]):.2f}" if n > b[0] else "–"
    hold_per = f"{(hold - k * b[2]) / (n - b[0]):.2f}" if n > b[0] and hold is not None and b[2] is not None else "–"
    held = "?" if hold is None else f"{hold / 1024:.1f}"
    print(f"| {case} | {n:,} | {k} | {rss / 1024:.1f} | {per} | {held} | {hold_per} | {cpu} | {tests} | {errors} |")
PY
echo "raw: $out"
