#!/usr/bin/env bash
# volley beside ghz (the common gRPC load tool) on the same unary call against the demo
# target's gRPC service (`volley target serve --db-rtt 0ms`): volley.chat.v1.Chat/ListMessages
# for room 1, page size 1 (one indexed SQLite query; the .proto is crates/demo/proto/chat.proto).
# Closed loop, the same concurrency and the same number of shared HTTP/2 connections for both;
# the target is pinned to CPU 0, each client to CPU 1; rounds are interleaved (ghz, volley, ...).
# Prints one Markdown table: calls/s, client CPU µs per call (user+sys of the whole process,
# start-up included, from GNU time), peak RSS, each tool's own p50/p99, and volley's ratios.
#
#   bench/grpc.sh                                   # 3 rounds of 10 s, 50 in flight on 2 connections
#   RUNS=5 DURATION=20 CONC=100 CONNS=4 bench/grpc.sh
#
# On a loaded machine the calls/s and latencies are noisy; the CPU-per-call ratio is the figure
# to quote (both clients are measured the same way). Re-run on a quiet machine for the rest.
# Needs GNU time and taskset (apt-get install time util-linux), Go for ghz (installed under
# $BENCH_WORK/tools/bin, default /tmp/volley-bench, pinned to GHZ_VERSION), and a release
# build: cargo build --release.
set -euo pipefail
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
CONC=${CONC:-50}
CONNS=${CONNS:-2}
PORT=${PORT:-18095}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
GHZ_VERSION=${GHZ_VERSION:-v0.121.0}
BENCH_WORK=${BENCH_WORK:-/tmp/volley-bench}
TOOLS=$BENCH_WORK/tools
GHZ=$TOOLS/bin/ghz

command -v taskset >/dev/null || { echo "grpc.sh: taskset is missing (apt-get install util-linux)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "grpc.sh: GNU time is missing (apt-get install time)" >&2; exit 2; }
[ -x "$VOLLEY" ] || { echo "grpc.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
if [ ! -x "$GHZ" ]; then
  command -v go >/dev/null || { echo "grpc.sh: Go is needed to install ghz $GHZ_VERSION" >&2; exit 2; }
  echo "grpc.sh: go install github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION into $TOOLS/bin" >&2
  mkdir -p "$TOOLS/bin"
  GOPATH=$TOOLS/go GOBIN=$TOOLS/bin GOMODCACHE=$TOOLS/go/pkg/mod GOCACHE=$TOOLS/go/cache GOFLAGS=-modcacherw \
    go install "github.com/bojand/ghz/cmd/ghz@$GHZ_VERSION"
fi
if (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null; then
  echo "grpc.sh: port $PORT is taken; set PORT" >&2; exit 2
fi

work=$(mktemp -d /tmp/volley-grpc.XXXXXX)
taskset -c "$SERVER_CPU" "$VOLLEY" target serve --listen "127.0.0.1:$PORT" --db-rtt 0ms >"$work/target.log" 2>&1 &
target_pid=$!
trap 'kill $target_pid 2>/dev/null; wait $target_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done

proto=$PWD/crates/demo/proto/chat.proto
call=volley.chat.v1.Chat/ListMessages
data='{"room_id": 1, "size": 1}'
cp "$proto" "$work/chat.proto"
cat >"$work/grpc.yaml" <<YAML
target: http://127.0.0.1:$PORT
steps:
  - name: list
    grpc: $call
    proto: chat.proto
    message: $data
    connections: $CONNS
YAML
"$VOLLEY" check "$work/grpc.yaml" >/dev/null || { echo "grpc.sh: the call fails; volley check $work/grpc.yaml" >&2; exit 1; }

results=$work/results.tsv
for round in $(seq "$RUNS"); do
  /usr/bin/time -f "%U %S %M" -o "$work/ghz.time" taskset -c "$CLIENT_CPU" \
    "$GHZ" --insecure --proto "$proto" --call "$call" -d "$data" -c "$CONC" --connections "$CONNS" \
    -z "${DURATION}s" -n 1000000000 --format json -o "$work/ghz.json" "127.0.0.1:$PORT" >/dev/null
  python3 - "$work/ghz.json" "$work/ghz.time" "$round" >>"$results" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); u, s, rss = open(sys.argv[2]).read().split()[-3:]
ok = r.get("statusCodeDistribution", {}).get("OK", 0)
if not ok or not r.get("latencyDistribution"):
    sys.exit(f"grpc.sh: ghz completed no call: {r.get('errorDistribution')}")
errors = r["count"] - ok
lat = {d["percentage"]: d["latency"] / 1e6 for d in r["latencyDistribution"]}
print("ghz", sys.argv[3], ok, errors, r["total"] / 1e9, float(u) + float(s), int(rss), lat[50], lat[99], sep="\t")
PY
  rm -rf "$work/runs"
  /usr/bin/time -f "%U %S %M" -o "$work/volley.time" taskset -c "$CLIENT_CPU" \
    "$VOLLEY" run "$work/grpc.yaml" --vus "$CONC" --duration "${DURATION}s" --threads 1 --progress none \
    -o "$work/runs" --name bench >"$work/volley.out" 2>"$work/volley.err"
  python3 - "$work/runs" "$work/volley.time" "$round" "$DURATION" >>"$results" <<'PY'
import glob, json, sys
r = json.load(open(glob.glob(sys.argv[1] + "/*/report.json")[0])); u, s, rss = open(sys.argv[2]).read().split()[-3:]
t = r["per_request"]["total_ms"]
ss = r["seed_suite"]
print("volley", sys.argv[3], ss["total_tests"], ss["errors"], float(sys.argv[4]), float(u) + float(s), int(rss), t["p50_ms"], t["p99_ms"], sep="\t")
PY
done

python3 - "$results" "$DURATION" "$CONC" "$CONNS" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
dur, conc, conns = float(sys.argv[2]), sys.argv[3], sys.argv[4]
by = {}
for tool, rnd, ok, errors, secs, cpu, rss, p50, p99 in rows:
    ok = int(ok)
    by.setdefault(tool, []).append((ok / float(secs), float(cpu) * 1e6 / max(ok, 1), int(rss) / 1024, float(p50), float(p99), int(errors)))
med = {t: [statistics.median(c) for c in zip(*v)] for t, v in by.items()}
print(f"Unary ListMessages, closed loop, {conc} in flight on {conns} HTTP/2 connections, {dur:.0f} s; demo target on one core, client on the other; median of {len(by['ghz'])} interleaved rounds\n")
print("| tool | calls/s | client CPU µs/call | peak RSS MB | p50 ms | p99 ms | errors | per-round calls/s |")
print("|---|---|---|---|---|---|---|---|")
for t, (rps, us, rss, p50, p99, err) in med.items():
    rounds = " / ".join(f"{r[0]:,.0f}" for r in by[t])
    print(f"| {t} | {rps:,.0f} | {us:.1f} | {rss:.1f} | {p50:.2f} | {p99:.2f} | {err:.0f} | {rounds} |")
v, g = med["volley"], med["ghz"]
print(f"\nvolley / ghz: {v[0] / g[0]:.2f}x calls/s, {v[1] / g[1]:.2f}x CPU per call, {v[2] / g[2]:.1f}x peak RSS")
print("(ghz's p50/p99 are its own; volley's are per-call totals from its HdrHistograms)")
PY
