#!/usr/bin/env bash
# A soak: a fixed arrival rate against a loopback nginx for a long time, sampling volley's
# RSS every 30 s, to show memory stays flat. Not part of CI (it takes DURATION).
#   bench/soak.sh                      # 5000/s for 30 minutes
#   RATE=5000 DURATION=60m bench/soak.sh
#   RATE=2000 DURATION=10m WINDOW=120 bench/soak.sh
# Prints the RSS samples (elapsed_s,rss_kb), then: the mean RSS over the first and the last
# WINDOW seconds of the load (default 600: ten minutes) and their ratio, the run's peak RSS (GNU
# time; the end-of-run report included), the run directory's size and its size per hour, and
# `volley report` of the run directory afterwards (time, peak RSS).
# Needs nginx (nginx-light), GNU time and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
RATE=${RATE:-5000}
DURATION=${DURATION:-30m}
WINDOW=${WINDOW:-600}
PORT=${PORT:-18092}
PATH=$PATH:/usr/sbin
work=$(mktemp -d /tmp/volley-soak.XXXXXX)
mkdir -p "$work/tmp"
cat >"$work/nginx.conf" <<CONF
worker_processes 1; daemon off; pid $work/nginx.pid; error_log $work/error.log;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 100000000; keepalive_timeout 120s;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  server { listen 127.0.0.1:$PORT; location / { return 200 "hello\n"; } } }
CONF
taskset -c 0 nginx -c "$work/nginx.conf" -p "$work" & nginx_pid=$!
trap 'kill $nginx_pid 2>/dev/null; wait $nginx_pid 2>/dev/null' EXIT
sleep 0.5
taskset -c 1 /usr/bin/time -f "%M" -o "$work/peak" "$VOLLEY" run --url "http://127.0.0.1:$PORT/" --rate "$RATE" --duration "$DURATION" --max-vus 200 \
  --threads 1 --progress none -o "$work/runs" --name soak >"$work/out" 2>&1 & pid=$!
sleep 0.2
vpid=$(pgrep -P $pid -f "$VOLLEY run" || echo $pid)
echo "elapsed_s,rss_kb"
start=$(date +%s)
while kill -0 "$vpid" 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$vpid/status 2>/dev/null || true)
  [ -n "$rss" ] && echo "$(( $(date +%s) - start )),$rss" | tee -a "$work/rss.csv"
  sleep 30
done
wait $pid || true
grep -E "Total Tests|Error Rate|TPS Average|TTFB  |Generator" "$work/out" || tail -5 "$work/out"
dir=$(ls -d "$work"/runs/*)
seconds=$(python3 -c "import json;print(json.load(open('$dir/run.json'))['planned_duration_s'])")
python3 - "$work/rss.csv" "$seconds" "$WINDOW" <<'PY'
import sys
rows=[tuple(map(int,l.split(','))) for l in open(sys.argv[1]) if l.strip()]
d=float(sys.argv[2]); w=float(sys.argv[3])
first=[r for t,r in rows if t<w]; last=[r for t,r in rows if d-w<=t<d]
f=sum(first)/len(first); l=sum(last)/len(last)
print(f"RSS: first {w/60:.0f} min {f/1024:.1f} MB ({len(first)} samples), last {w/60:.0f} min {l/1024:.1f} MB ({len(last)} samples): {(l/f-1)*100:+.1f} %")
PY
echo "peak RSS of the run (with its report): $(( $(cat "$work/peak") / 1024 )) MB"
# What grows with the run: its series and its histograms (the report files are written once).
bytes=$(cat "$dir/latency.hlog" "$dir/series.csv" | wc -c)
echo "run directory: $dir ($(du -sh "$dir" | cut -f1) in all)"
echo "latency.hlog + series.csv: $(python3 -c "print(round($bytes/1048576,1))") MB, $(python3 -c "print(round($bytes/1048576*3600/$seconds,1))") MB per hour"
/usr/bin/time -f "volley report of it: %e s, %M KB peak RSS" "$VOLLEY" report "$dir" >/dev/null
