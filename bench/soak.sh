#!/usr/bin/env bash
# A soak: a fixed arrival rate against a loopback nginx for a long time, sampling volley's
# RSS every 30 s, to show memory stays flat. Not part of CI (it takes DURATION).
#   bench/soak.sh                      # 5000/s for 30 minutes
#   RATE=2000 DURATION=10m bench/soak.sh
# Needs nginx (nginx-light) and a release build.
set -euo pipefail
cd "$(dirname "$0")/.."
VOLLEY=${VOLLEY:-target/release/volley}
RATE=${RATE:-5000}
DURATION=${DURATION:-30m}
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
taskset -c 1 "$VOLLEY" run --url "http://127.0.0.1:$PORT/" --rate "$RATE" --duration "$DURATION" --max-vus 200 \
  --threads 1 --progress none -o "$work/runs" --name soak >"$work/out" 2>&1 & pid=$!
echo "elapsed_s,rss_kb"
start=$(date +%s)
while kill -0 $pid 2>/dev/null; do
  rss=$(awk '/VmRSS/ {print $2}' /proc/$pid/status 2>/dev/null || true)
  [ -n "$rss" ] && echo "$(( $(date +%s) - start )),$rss"
  sleep 30
done
wait $pid || true
grep -E "Total Tests|Error Rate|TPS Average|TTFB  |Generator" "$work/out" || tail -5 "$work/out"
echo "run directory: $(ls -d "$work"/runs/*)"
