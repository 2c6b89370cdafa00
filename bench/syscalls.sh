#!/usr/bin/env bash
# Counts that do not flip with a noisy machine (issue 40 §1): system calls per request for
# volley and wrk, closed loop, 50 connections, one thread, against nginx on 127.0.0.1 (one
# worker, `return 200 "hello\n"`), nginx pinned to the first CPU and the client to the second.
# perf counts the client's syscalls (`raw_syscalls:sys_enter`, every thread); each tool runs a
# SHORT and a LONG time and the figure is Δsyscalls ÷ Δrequests, so start-up and exit drop out.
# Rounds are interleaved (wrk, volley, wrk, volley, ...); prints each round and the medians.
#
#   bench/syscalls.sh                       # 3 rounds, 2 s and 6 s
#   ROUNDS=5 SHORT=2 LONG=10 bench/syscalls.sh
#
# Needs nginx (nginx-light), wrk, perf with tracepoints (linux-perf), taskset, a release build.
set -euo pipefail
. "$(dirname "$0")/harness/hello-nginx.sh"
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
ROUNDS=${ROUNDS:-3}
SHORT=${SHORT:-2}
LONG=${LONG:-6}
PORT=${PORT:-18095}
PATH=$PATH:/usr/sbin
for tool in nginx wrk perf taskset python3; do
  command -v "$tool" >/dev/null || { echo "syscalls.sh: $tool is missing (apt-get install nginx-light wrk linux-perf util-linux python3)" >&2; exit 2; }
done
[ -x "$VOLLEY" ] || { echo "syscalls.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
VOLLEY=$(cd "$(dirname "$VOLLEY")" && pwd)/$(basename "$VOLLEY")
perf stat -e raw_syscalls:sys_enter -- true >/dev/null 2>&1 || { echo "syscalls.sh: perf cannot read the raw_syscalls tracepoint here (perf_event_paranoid, or no tracefs)" >&2; exit 2; }
cpus=($(taskset -pc $$ | sed 's/.*: //' | tr ',' ' ' | tr '-' ' '))
SERVER_CPU=${SERVER_CPU:-${cpus[0]}}
CLIENT_CPU=${CLIENT_CPU:-${cpus[1]:-${cpus[0]}}}
out=$(mktemp -d /tmp/volley-syscalls.XXXXXX)
hello_nginx_conf "$out" "127.0.0.1:$PORT" >"$out/nginx.conf"
taskset -c "$SERVER_CPU" nginx -c "$out/nginx.conf" -p "$out" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null || true' EXIT
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$PORT/

# measure TOOL SECONDS -> "syscalls requests"
measure() {
  local tool=$1 secs=$2 dir
  dir=$(mktemp -d "$out/$tool-$secs.XXXX")
  case $tool in
    wrk) (cd "$dir" && taskset -c "$CLIENT_CPU" perf stat -x, -o perf.txt -e raw_syscalls:sys_enter -- \
            wrk -t1 -c50 -d"${secs}s" "$url" >out.txt 2>&1)
         req=$(awk '/requests in/ {print $1}' "$dir/out.txt") ;;
    volley) (cd "$dir" && taskset -c "$CLIENT_CPU" perf stat -x, -o perf.txt -e raw_syscalls:sys_enter -- \
            "$VOLLEY" run --url "$url" --vus 50 --threads 1 --duration "${secs}s" --progress none -o runs >out.txt 2>&1)
         req=$(python3 -c 'import json,glob,sys; r=json.load(open(glob.glob(sys.argv[1]+"/runs/*/report.json")[0])); print(r["seed_suite"]["total_tests"])' "$dir") ;;
  esac
  echo "$(awk -F, '/raw_syscalls/ {print $1}' "$dir/perf.txt") $req"
}

echo "round tool syscalls/request (Δ of ${LONG}s − ${SHORT}s) requests/s" >"$out/rounds.txt"
for r in $(seq "$ROUNDS"); do
  for tool in wrk volley; do
    read -r s1 q1 < <(measure "$tool" "$SHORT")
    read -r s2 q2 < <(measure "$tool" "$LONG")
    python3 -c "import sys; s1,q1,s2,q2,l,s=map(float,sys.argv[1:7]); print(f'$r $tool {(s2-s1)/(q2-q1):.3f} {(q2-q1)/(l-s):.0f}')" \
      "$s1" "$q1" "$s2" "$q2" "$LONG" "$SHORT" | tee -a "$out/rounds.txt"
  done
done
python3 - "$out/rounds.txt" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
med = {t: statistics.median(float(r[2]) for r in rows if r[1] == t) for t in ("wrk", "volley")}
rps = {t: statistics.median(float(r[3]) for r in rows if r[1] == t) for t in ("wrk", "volley")}
print("\n| tool | syscalls per request (median) | requests/s (median) |\n|---|---|---|")
for t in ("wrk", "volley"):
    print(f"| {t} | {med[t]:.3f} | {rps[t]:,.0f} |")
print(f"\nvolley / wrk: {med['volley'] / med['wrk']:.2f}× syscalls per request")
PY
echo "raw: $out"
