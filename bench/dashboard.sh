#!/usr/bin/env bash
# The dashboard's CPU cost: volley in the open model at RATE arrivals/s (default 50,000)
# against nginx on 127.0.0.1 (`return 200 "hello\n"`, one worker, pinned to the first CPU),
# volley pinned to the second; interleaved rounds of (a) a plain run, (b) the same run with
# --dashboard and a headless Chromium watching it (playwright-core, as scripts/test.sh installs
# it; Chromium on its own CPU set if there is one). Prints volley's CPU (user+sys of the whole
# process, GNU time) per request for each, and the ratio (b)/(a).
#
#   bench/dashboard.sh                         # 3 rounds of 20 s at 50,000/s
#   RUNS=5 DURATION=30 RATE=20000 bench/dashboard.sh
#
# Needs nginx (nginx-light), GNU time, node, Chromium, target/tools/playwright (scripts/test.sh)
# and a release build (cargo build --release). Run it on a quiet machine: the figures of a
# machine shared with other work are not comparable between rounds.
set -euo pipefail
. "$(dirname "$0")/harness/hello-nginx.sh"
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
RUNS=${RUNS:-3}
DURATION=${DURATION:-20}
RATE=${RATE:-50000}
PORT=${PORT:-18091}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
BROWSER_CPU=${BROWSER_CPU:-}
PATH=$PATH:/usr/sbin
CHROMIUM=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)

for tool in nginx taskset node; do
  command -v "$tool" >/dev/null || { echo "dashboard.sh: $tool is missing" >&2; exit 2; }
done
[ -n "$CHROMIUM" ] || { echo "dashboard.sh: Chromium is missing (apt-get install chromium)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "dashboard.sh: GNU time is missing (apt-get install time)" >&2; exit 2; }
[ -x "$VOLLEY" ] || { echo "dashboard.sh: $VOLLEY not built (cargo build --release)" >&2; exit 2; }
[ -d target/tools/playwright/node_modules/playwright-core ] || { echo "dashboard.sh: run scripts/test.sh once (installs playwright-core)" >&2; exit 2; }

work=$(mktemp -d /tmp/volley-dashboard.XXXXXX)
mkdir -p "$work/tmp" "$work/runs"
hello_nginx_conf "$work" "127.0.0.1:$PORT" >"$work/nginx.conf"
taskset -c "$SERVER_CPU" nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do (echo >/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done

url=http://127.0.0.1:$PORT/
results=$work/results.tsv
one() { # $1: plain | dashboard
  rm -rf "$work/runs"/*
  local extra=()
  [ "$1" = dashboard ] && extra=(--dashboard)
  /usr/bin/time -f "%U %S" -o "$work/volley.time" taskset -c "$CLIENT_CPU" \
    "$VOLLEY" run --url "$url" --rate "$RATE" --duration "${DURATION}s" --max-vus 400 --threads 1 --progress none \
    -o "$work/runs" --name bench "${extra[@]}" >"$work/volley.out" 2>"$work/volley.err" &
  local pid=$!
  if [ "$1" = dashboard ]; then
    local dash=""
    for _ in $(seq 100); do dash=$(sed -n 's/^volley: dashboard //p' "$work/volley.err"); [ -n "$dash" ] && break; sleep 0.1; done
    local pin=()
    [ -n "$BROWSER_CPU" ] && pin=(taskset -c "$BROWSER_CPU")
    NODE_PATH=target/tools/playwright/node_modules "${pin[@]}" node bench/dashboard-watch.cjs "$dash" "$CHROMIUM" >&2
  fi
  wait "$pid"
  python3 - "$work/runs" "$work/volley.time" "$1" >>"$results" <<'PY'
import glob, json, sys
r = json.load(open(glob.glob(sys.argv[1] + "/*/report.json")[0])); u, s = open(sys.argv[2]).read().split()[-2:]
print(sys.argv[3], r["seed_suite"]["total_tests"] + r["seed_suite"]["errors"], float(u) + float(s), sep="\t")
PY
}
for round in $(seq "$RUNS"); do one plain; one dashboard; done

python3 - "$results" "$RATE" "$DURATION" <<'PY'
import statistics, sys
by = {}
for tool, req, cpu in (l.split("\t") for l in open(sys.argv[1]).read().splitlines()):
    by.setdefault(tool, []).append((int(req), float(cpu), float(cpu) * 1e6 / max(int(req), 1)))
print(f"Open model, {float(sys.argv[2]):,.0f}/s for {sys.argv[3]} s, nginx on one core, volley on the other; median of {len(by['plain'])} interleaved rounds\n")
print("| run | requests | volley CPU s | CPU µs/req | per-round µs/req |")
print("|---|---|---|---|---|")
med = {}
for t, v in by.items():
    med[t] = [statistics.median(c) for c in zip(*v)]
    print(f"| {t} | {med[t][0]:,.0f} | {med[t][1]:.2f} | {med[t][2]:.2f} | {' / '.join(f'{r[2]:.2f}' for r in v)} |")
print(f"\ndashboard / plain: {med['dashboard'][2] / med['plain'][2]:.3f}x CPU per request")
PY
