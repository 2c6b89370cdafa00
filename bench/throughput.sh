#!/usr/bin/env bash
# volley beside wrk: closed loop, 50 connections, 10 s, against nginx on 127.0.0.1
# (`return 200 "hello\n"`, one worker). nginx is pinned to the first CPU, each client to the
# second; rounds are interleaved (wrk, volley, wrk, volley, ...). Prints one Markdown table:
# requests/s, client CPU µs per request (user+sys of the whole process, start-up included,
# from GNU time), peak RSS, the client's own p50/p99, each as the median over the rounds, then
# each round's requests/s and CPU µs per request (the spread), and volley's ratio to wrk.
#
#   bench/throughput.sh                  # 3 rounds of 10 s
#   RUNS=5 DURATION=20 CONNS=100 bench/throughput.sh
#   CALLGRIND=1 RUNS=0 bench/throughput.sh   # only the instruction counts (below)
#
# CALLGRIND=1 adds each client's user-space instructions per request under valgrind's
# callgrind, which do not move with the machine's noise: each client runs CG_SHORT (4) and
# CG_LONG (12) seconds, pinned to the client CPU, and the figure is ΔIr ÷ Δrequests, so start-up
# and the end-of-run report drop out. Kernel time is not in it. CG_TOOLS (default "wrk volley")
# picks the clients. Each thread is counted apart (--separate-threads=yes), and the table also
# gives the count per request of the thread that made the requests: volley's worker (the one
# that parsed response heads; wrk's busiest thread), without volley's main thread's
# interval log and report, which grow with the run's length, not its requests (on a loaded
# machine fewer requests share them). CG_OUT=DIR keeps the callgrind files there, one per
# thread (TOOL-SECONDS.out-NN), with each run's request count (TOOL-SECONDS.req), for
# callgrind_annotate and bench/cgdiff.py (per-function cost per request, and its change
# between two builds). CG_WRAP is put before valgrind: a volley that reads the clock through
# rustix >= 1 (the closed run's alarm, since 5a55662) dies under valgrind 3.19 on Linux >= 6.4,
# which hands rustix the host's auxv through prctl(PR_GET_AUXV) and so a vDSO the guest does not
# have (rustix issue 1559); a wrapper that makes that prctl fail (a seccomp filter, then exec)
# sends rustix to /proc/self/auxv, which valgrind fakes. The script stops if a client dies.
#
# Needs nginx (nginx-light), wrk and GNU time (Debian: apt-get install nginx-light wrk time),
# and a release build: cargo build --release.
set -euo pipefail
. "$(dirname "$0")/harness/hello-nginx.sh"
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
CONNS=${CONNS:-50}
PORT=${PORT:-18090}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PATH=$PATH:/usr/sbin

for tool in nginx wrk taskset; do
  command -v "$tool" >/dev/null || { echo "throughput.sh: $tool is missing (apt-get install nginx-light wrk util-linux)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "throughput.sh: GNU time is missing (apt-get install time)" >&2; exit 2; }
[ -x "$VOLLEY" ] || { echo "throughput.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
if (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then
  echo "throughput.sh: port $PORT is taken; set PORT" >&2; exit 2
fi

work=$(mktemp -d /tmp/volley-throughput.XXXXXX)
mkdir -p "$work/tmp" "$work/runs"
hello_nginx_conf "$work" "127.0.0.1:$PORT" >"$work/nginx.conf"
taskset -c "$SERVER_CPU" nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done

url=http://127.0.0.1:$PORT/
results=$work/results.tsv
for round in $(seq "$RUNS"); do
  /usr/bin/time -f "%U %S %M" -o "$work/wrk.time" taskset -c "$CLIENT_CPU" \
    wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency "$url" >"$work/wrk.out"
  python3 - "$work/wrk.out" "$work/wrk.time" "$round" >>"$results" <<'PY'
import re, sys
out = open(sys.argv[1]).read(); u, s, rss = open(sys.argv[2]).read().split()[-3:]
req = int(re.search(r"(\d+) requests in", out).group(1))
def ms(label):
    m = re.search(r"\s%s\s+([\d.]+)(us|ms|s)" % label, out)
    v = float(m.group(1)); return {"us": v / 1000, "ms": v, "s": v * 1000}[m.group(2)]
print("wrk", sys.argv[3], req, float(u) + float(s), int(rss), ms("50%"), ms("99%"), sep="\t")
PY
  rm -rf "$work/runs"/*
  /usr/bin/time -f "%U %S %M" -o "$work/volley.time" taskset -c "$CLIENT_CPU" \
    "$VOLLEY" run --url "$url" --vus "$CONNS" --duration "${DURATION}s" --threads 1 --progress none \
    -o "$work/runs" --name bench >"$work/volley.out" 2>"$work/volley.err"
  python3 - "$work/runs" "$work/volley.time" "$round" >>"$results" <<'PY'
import glob, json, sys
r = json.load(open(glob.glob(sys.argv[1] + "/*/report.json")[0])); u, s, rss = open(sys.argv[2]).read().split()[-3:]
t = r["per_request"]["ttfb_ms"]
print("volley", sys.argv[3], r["seed_suite"]["total_tests"] + 0, float(u) + float(s), int(rss), t["p50_ms"], t["p99_ms"], sep="\t")
PY
done

[ "$RUNS" -gt 0 ] && python3 - "$results" "$DURATION" "$CONNS" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
dur, conns = float(sys.argv[2]), sys.argv[3]
by = {}
for tool, rnd, req, cpu, rss, p50, p99 in rows:
    by.setdefault(tool, []).append((int(req) / dur, float(cpu) * 1e6 / int(req), int(rss) / 1024, float(p50), float(p99)))
med = {t: [statistics.median(c) for c in zip(*v)] for t, v in by.items()}
print(f"Closed loop, {conns} connections, {dur:.0f} s, nginx on one core, client on the other; median of {len(by['wrk'])} interleaved rounds")
print("(each column is its own median over the rounds; CPU is the client's user+sys from GNU time, start-up included)\n")
print("| tool | req/s | client CPU µs/req | peak RSS MB | p50 ms | p99 ms | per-round req/s | per-round CPU µs/req | CPU µs/req min–max |")
print("|---|---|---|---|---|---|---|---|---|")
for t, (rps, us, rss, p50, p99) in med.items():
    rounds = " / ".join(f"{r[0]:,.0f}" for r in by[t])
    cpus = [r[1] for r in by[t]]
    spread = f"{min(cpus):.2f}–{max(cpus):.2f} (±{(max(cpus) - min(cpus)) / 2 / us * 100:.0f} %)"
    print(f"| {t} | {rps:,.0f} | {us:.2f} | {rss:.1f} | {p50:.2f} | {p99:.2f} | {rounds} | {' / '.join(f'{c:.2f}' for c in cpus)} | {spread} |")
v, w = med["volley"], med["wrk"]
per_round = " / ".join(f"{a[1] / b[1]:.2f}" for a, b in zip(by["volley"], by["wrk"]))
print(f"\nvolley / wrk: {v[0] / w[0]:.2f}x requests/s, {v[1] / w[1]:.2f}x CPU per request (per round: {per_round}), {v[2] / w[2]:.1f}x peak RSS")
print("(wrk's p50/p99 are its own, from `--latency`; volley's are per-request TTFB from its HdrHistograms)")
PY

if [ -n "${CALLGRIND:-}" ]; then
  command -v valgrind >/dev/null || { echo "throughput.sh: CALLGRIND=1 needs valgrind (apt-get install valgrind)" >&2; exit 2; }
  CG_SHORT=${CG_SHORT:-4}
  CG_LONG=${CG_LONG:-12}
  CG_TOOLS=${CG_TOOLS:-"wrk volley"}
  [ -n "${CG_OUT:-}" ] && mkdir -p "$CG_OUT"
  # request_thread OUT TOOL -> the Ir of the thread that made the requests (a callgrind file per
  # thread: OUT-01, OUT-02, ...): volley's worker, the one that parsed response heads; wrk's
  # busiest.
  request_thread() {
    local f
    if [ "$2" = volley ]; then
      f=$(grep -l 'fn=.*volley_engine::h1::parse_head' "$1"-* | head -1)
      awk '/^summary:/ {print $2; exit}' "$f"
    else
      cat "$1"-* | awk '/^summary:/ && $2 > m {m = $2} END {print m + 0}'
    fi
  }
  # instructions TOOL SECONDS -> "Ir requests thread": callgrind's count, the requests done
  # and the count of the thread that made them.
  instructions() {
    local tool=$1 secs=$2 req
    local out=$work/cg/$tool-$secs.out
    [ -n "${CG_OUT:-}" ] && out=$CG_OUT/$tool-$secs.out
    mkdir -p "$work/cg"; rm -f "$out" "$out"-*
    rm -rf "$work/runs"/*
    if [ "$tool" = wrk ]; then
      taskset -c "$CLIENT_CPU" ${CG_WRAP:-} valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" \
        wrk -t1 -c"$CONNS" -d"${secs}s" "$url" >"$work/cg.out" 2>"$work/cg.err"
      req=$(awk '/requests in/ {print $1}' "$work/cg.out")
    else
      taskset -c "$CLIENT_CPU" ${CG_WRAP:-} valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" \
        "$VOLLEY" run --url "$url" --vus "$CONNS" --duration "${secs}s" --threads 1 --progress none \
        -o "$work/runs" --name cg >"$work/cg.out" 2>"$work/cg.err" || true
      if grep -q 'Process terminating' "$work/cg.err" || ! ls "$work/runs"/*/report.json >/dev/null 2>&1; then
        { echo "throughput.sh: volley died under callgrind (see CG_WRAP above):"; grep -v '^==[0-9]*==    by' "$work/cg.err" | tail -12; } >&2
        return 1
      fi
      req=$(python3 -c 'import glob, json, sys; print(json.load(open(glob.glob(sys.argv[1] + "/*/report.json")[0]))["seed_suite"]["total_tests"])' "$work/runs")
    fi
    [ -n "${CG_OUT:-}" ] && echo "$req" >"$CG_OUT/$tool-$secs.req"
    echo "$(grep -o 'Collected : [0-9]*' "$work/cg.err" | tr -dc 0-9) $req $(request_thread "$out" "$tool")"
  }
  echo
  echo "User-space instructions per request (callgrind), closed loop, $CONNS connections, one thread, ${CG_LONG} s − ${CG_SHORT} s, client on CPU $CLIENT_CPU:"
  echo
  echo "| client | Ir, ${CG_SHORT} s run | Ir, ${CG_LONG} s run | Δ requests | Ir per request | the requests' thread's Ir per request |"
  echo "|---|---|---|---|---|---|"
  for tool in $CG_TOOLS; do
    r1=$(instructions "$tool" "$CG_SHORT"); r2=$(instructions "$tool" "$CG_LONG")
    read -r i1 q1 b1 <<<"$r1"; read -r i2 q2 b2 <<<"$r2"
    python3 -c 'import sys; t, i1, q1, b1, i2, q2, b2 = sys.argv[1], *map(int, sys.argv[2:]); print(f"| {t} | {i1:,} | {i2:,} | {q2 - q1:,} | **{(i2 - i1) / (q2 - q1):,.0f}** | {(b2 - b1) / (q2 - q1):,.0f} |")' \
      "$tool" "$i1" "$q1" "$b1" "$i2" "$q2" "$b2"
  done
  echo
  echo "(the requests' thread: volley's worker, wrk's busiest; the rest is volley's main thread's interval"
  echo "log and end-of-run report and its conductor, whose work grows with the run's length, not its"
  echo "requests: callgrind's slowdown, or a loaded machine, spreads it over fewer requests)"
fi
