#!/usr/bin/env bash
# A multi-step user flow with value extraction, volley beside k6 and Locust: log in (POST,
# JSON body), take the token from the JSON answer, GET the items under it (check the JSON),
# POST an item — three requests per iteration, 50 VUs closed loop, 10 s, against nginx
# answering fixed JSON (bench/flow/nginx.conf.in) on 127.0.0.1:18090. nginx is pinned to the
# first CPU, every client to the second; rounds are interleaved; GNU time measures each
# client's CPU and peak RSS over its whole life. volley also runs one fixed URL on the same
# server (volley-url), so a scenario request's CPU can be put beside a plain request's.
#   bench/flow.sh [ROUNDS]          # default 3; peers from bench/harness/install.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
work=${BENCH_WORK:-/tmp/volley-bench}
tools=$work/tools
k6=$tools/bin/k6
locust=$tools/venv/bin/locust
port=18090
cpus=($(taskset -pc $$ | sed 's/.*: //' | tr ',' ' ' | tr '-' ' '))
server_cpu=${BENCH_SERVER_CPU:-${cpus[0]}}
tool_cpu=${BENCH_TOOL_CPU:-${cpus[1]:-${cpus[0]}}}
[ -x target/release/volley ] || cargo build --release
out=$(mktemp -d /tmp/volley-flow.XXXXXX)
mkdir -p "$out/nginx/tmp"
sed -e "s|@DIR@|$out/nginx|g" -e "s|@PORT@|$port|g" bench/flow/nginx.conf.in > "$out/nginx/nginx.conf"
if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then echo "flow.sh: port $port is taken" >&2; exit 2; fi
taskset -c "$server_cpu" nginx -c "$out/nginx/nginx.conf" -p "$out/nginx" &
nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null || true' EXIT
sleep 0.5

# run NAME CMD...: one client run; prints "NAME requests cpu_s rss_kb"
run() {
  local name=$1; shift
  local dir=$out/$name.$round
  mkdir -p "$dir"
  (cd "$dir" && env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY K6_NO_USAGE_REPORT=true GOMAXPROCS=1 \
    taskset -c "$tool_cpu" /usr/bin/time -v -o time.txt timeout -k 2 30 "$@" > out.txt 2> err.txt) || true
  local cpu rss n
  cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$dir/time.txt")
  rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$dir/time.txt")
  case $name in
    volley | volley-url) n=$(python3 -c "import json,glob; print(json.load(open(glob.glob('$dir/runs/*/report.json')[0]))['seed_suite']['total_tests'])") ;;
    k6) n=$(python3 -c "import json; print(json.load(open('$dir/summary.json'))['metrics']['http_reqs']['count'])") ;;
    locust) n=$(python3 -c "import csv; print([r for r in csv.DictReader(open('$dir/l_stats.csv')) if r['Name']=='Aggregated'][0]['Request Count'])") ;;
  esac
  echo "$name $n $cpu $rss" | tee -a "$out/results.txt"
}

for round in $(seq 1 "$rounds"); do
  run volley "$PWD/target/release/volley" run "$PWD/bench/flow/flow.yaml" --vus 50 --duration 10s --threads 1 -o runs --progress none
  # The same server and VUs with one fixed URL: what a step costs beyond a plain request.
  run volley-url "$PWD/target/release/volley" run --url "http://127.0.0.1:$port/items/t0k3n-42" --vus 50 --duration 10s --threads 1 -o runs --progress none
  [ -x "$k6" ] && run k6 "$k6" run --quiet --vus 50 --duration 10s --summary-export summary.json -e TARGET=http://127.0.0.1:$port "$PWD/bench/flow/flow_k6.js"
  [ -x "$locust" ] && run locust "$locust" -f "$PWD/bench/flow/flow_locust.py" --headless -u 50 -r 50 -t 10s --host http://127.0.0.1:$port --csv l --only-summary
done

echo
echo "| tool | requests/s (median) | client CPU µs/request | peak RSS MB | rounds (req/s) |"
echo "|---|---|---|---|---|"
python3 - "$out/results.txt" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    name, n, cpu, rss = line.split()
    rows.setdefault(name, []).append((int(float(n)) / 10.0, float(cpu) / max(int(float(n)), 1) * 1e6, int(rss) / 1024))
base = statistics.median(r[0] for r in rows.get("volley", [(1, 0, 0)]))
for name, rs in rows.items():
    rps = statistics.median(r[0] for r in rs)
    print(f"| {name} | {rps:,.0f} | {statistics.median(r[1] for r in rs):.1f} | {statistics.median(r[2] for r in rs):.1f} | {', '.join(f'{r[0]:,.0f}' for r in rs)} |")
cpu = lambda name: statistics.median(r[1] for r in rows[name])
if "volley" in rows and "volley-url" in rows:
    print(f"\nvolley's CPU per scenario request ÷ per fixed-URL request: {cpu('volley') / cpu('volley-url'):.2f}×")
for name, rs in rows.items():
    if name not in ("volley", "volley-url"):
        print(f"\nvolley ÷ {name}: {base / statistics.median(r[0] for r in rs):.2f}× the requests/s")
PY
echo "raw: $out"
