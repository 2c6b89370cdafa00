#!/usr/bin/env bash
# What watching a run live costs: volley's CPU (user+sys of its whole process, GNU time) for
# the same open-model run against nginx on 127.0.0.1 — RATE arrivals/s (default 50,000) for
# DURATION s — without outputs, and with each output alone:
#   none        no output
#   prometheus  --out prometheus=  to a real Prometheus this script starts (remote-write receiver)
#   otlp        --out otlp=        to a sink that answers 200 to every POST (python3; Prometheus
#               2.42 has no OTLP receiver; volley's side — building, encoding, sending — is all counted)
#   dashboard   --dashboard        (skipped, saying so, when this volley does not know the flag)
# Variants are interleaved per round (none, prometheus, otlp, dashboard, none, ...); the table
# shows medians, and each variant's CPU as a ratio to `none`. nginx is pinned to one CPU,
# volley to the other. The machine's other load shows in wall clock, much less in CPU time:
# re-run on a quiet machine for the final figures.
#
#   bench/live.sh                         # 3 rounds of 10 s at 50,000/s
#   RUNS=5 DURATION=20 RATE=30000 bench/live.sh
#
# Needs nginx (nginx-light), prometheus, python3, GNU time, taskset, and a release build
# (cargo build --release).
set -euo pipefail
. "$(dirname "$0")/harness/hello-nginx.sh"
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10}
RATE=${RATE:-50000}
MAX_VUS=${MAX_VUS:-200}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
PATH=$PATH:/usr/sbin

for tool in nginx prometheus python3 taskset; do
  command -v "$tool" >/dev/null || { echo "live.sh: $tool is missing (apt-get install nginx-light prometheus python3 util-linux)" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "live.sh: GNU time is missing (apt-get install time)" >&2; exit 2; }
[ -x "$VOLLEY" ] || { echo "live.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
NGINX_PORT=$(free_port); PROM_PORT=$(free_port); SINK_PORT=$(free_port)

work=$(mktemp -d /tmp/volley-live.XXXXXX)
mkdir -p "$work/tmp" "$work/runs" "$work/prom"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

hello_nginx_conf "$work" "127.0.0.1:$NGINX_PORT" >"$work/nginx.conf"
taskset -c "$SERVER_CPU" nginx -c "$work/nginx.conf" -p "$work" & pids+=($!)
printf 'global:\n  scrape_interval: 15s\n' >"$work/prometheus.yml"
taskset -c "$SERVER_CPU" prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
  --web.listen-address=127.0.0.1:$PROM_PORT --web.enable-remote-write-receiver >"$work/prom.log" 2>&1 & pids+=($!)
cat >"$work/sink.py" <<'PY'
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Sink(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *a): pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink).serve_forever()
PY
taskset -c "$SERVER_CPU" python3 "$work/sink.py" "$SINK_PORT" & pids+=($!)
for port in $NGINX_PORT $PROM_PORT $SINK_PORT; do
  for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
done

variants=(none prometheus otlp)
run_help=$("$VOLLEY" run --help 2>&1 || true)
if grep -q -- '--dashboard' <<<"$run_help"; then
  variants+=(dashboard)
else
  echo "live.sh: $VOLLEY has no --dashboard flag: the dashboard variant is skipped" >&2
fi
flags() {
  case $1 in
    none) ;;
    prometheus) echo "--out prometheus=http://127.0.0.1:$PROM_PORT/api/v1/write" ;;
    otlp) echo "--out otlp=http://127.0.0.1:$SINK_PORT" ;;
    dashboard) echo "--dashboard=127.0.0.1:0" ;;
  esac
}

url=http://127.0.0.1:$NGINX_PORT/
results=$work/results.tsv
for round in $(seq "$RUNS"); do
  for v in "${variants[@]}"; do
    rm -rf "$work/runs"/*
    # shellcheck disable=SC2046
    /usr/bin/time -f "%U %S %M" -o "$work/$v.time" taskset -c "$CLIENT_CPU" \
      "$VOLLEY" run --url "$url" --rate "$RATE" --max-vus "$MAX_VUS" --duration "${DURATION}s" --threads 1 \
      --progress none -o "$work/runs" --name live $(flags "$v") >"$work/$v.out" 2>"$work/$v.err" || {
        echo "live.sh: volley failed ($v):" >&2; tail -5 "$work/$v.err" >&2; exit 1; }
    python3 - "$work/runs" "$work/$v.time" "$v" "$round" >>"$results" <<'PY'
import glob, json, sys
d = glob.glob(sys.argv[1] + "/*/")[0]
r = json.load(open(d + "report.json")); m = json.load(open(d + "run.json"))
u, s, rss = open(sys.argv[2]).read().split()[-3:]
outs = ";".join(f"{o['kind']}:{o['sent']}/{o['failed']}/{o['dropped']}" for o in m.get("outputs", [])) or "-"
print(sys.argv[3], sys.argv[4], r["seed_suite"]["total_tests"], float(u) + float(s), int(rss), outs, sep="\t")
PY
  done
done

python3 - "$results" "$DURATION" "$RATE" <<'PY'
import statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines()]
dur, rate = float(sys.argv[2]), sys.argv[3]
by = {}
for v, rnd, req, cpu, rss, outs in rows:
    by.setdefault(v, []).append((int(req) / dur, float(cpu), float(cpu) * 1e6 / max(int(req), 1), int(rss) / 1024, outs))
print(f"Open model, {rate} arrivals/s for {dur:.0f} s, nginx on one core, volley on the other; median of {len(by['none'])} interleaved rounds\n")
print("| output | req/s | volley CPU s (user+sys) | CPU µs/req | CPU vs none | peak RSS MB | per-round CPU s | sent/failed/dropped |")
print("|---|---|---|---|---|---|---|---|")
base = statistics.median(r[1] for r in by["none"])
for v, rs in by.items():
    rps, cpu, us, rss = (statistics.median(r[i] for r in rs) for i in range(4))
    print(f"| {v} | {rps:,.0f} | {cpu:.2f} | {us:.2f} | {cpu / base:.3f}x | {rss:.1f} | {' / '.join(f'{r[1]:.2f}' for r in rs)} | {rs[-1][4]} |")
PY
