#!/usr/bin/env bash
# volley beside wrk: closed loop, 50 connections, 10 s, against nginx on 127.0.0.1
# (`return 200 "hello\n"`, one worker). nginx is pinned to the first CPU, each client to the
# second; rounds are interleaved (wrk, volley, wrk, volley, ...). Prints one Markdown table:
# requests/s, client CPU µs per request (user+sys of the whole process, start-up included,
# from GNU time), peak RSS, the client's own p50/p99, and volley's ratio to wrk.
#
#   bench/throughput.sh                  # 3 rounds of 10 s
#   RUNS=5 DURATION=20 CONNS=100 bench/throughput.sh
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

python3 - "$results" "$DURATION" "$CONNS" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
dur, conns = float(sys.argv[2]), sys.argv[3]
by = {}
for tool, rnd, req, cpu, rss, p50, p99 in rows:
    by.setdefault(tool, []).append((int(req) / dur, float(cpu) * 1e6 / int(req), int(rss) / 1024, float(p50), float(p99)))
med = {t: [statistics.median(c) for c in zip(*v)] for t, v in by.items()}
print(f"Closed loop, {conns} connections, {dur:.0f} s, nginx on one core, client on the other; median of {len(by['wrk'])} interleaved rounds\n")
print("| tool | req/s | client CPU µs/req | peak RSS MB | p50 ms | p99 ms | per-round req/s |")
print("|---|---|---|---|---|---|---|")
for t, (rps, us, rss, p50, p99) in med.items():
    rounds = " / ".join(f"{r[0]:,.0f}" for r in by[t])
    print(f"| {t} | {rps:,.0f} | {us:.1f} | {rss:.1f} | {p50:.2f} | {p99:.2f} | {rounds} |")
v, w = med["volley"], med["wrk"]
print(f"\nvolley / wrk: {v[0] / w[0]:.2f}x requests/s, {v[1] / w[1]:.2f}x CPU per request, {v[2] / w[2]:.1f}x peak RSS")
print("(wrk's p50/p99 are its own, from `--latency`; volley's are per-request TTFB from its HdrHistograms)")
PY
