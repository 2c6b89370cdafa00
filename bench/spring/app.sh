#!/usr/bin/env bash
# Starts or stops bench/spring/app on 127.0.0.1, one at a time, by PID file.
#   bench/spring/app.sh start PORT [SPRING SETTINGS...]   (returns once it answers)
#   bench/spring/app.sh stop
# e.g. bench/spring/app.sh start 18480 --spring.datasource.hikari.maximum-pool-size=10
# The PID file and the app's log are in $WORK (default /tmp/volley-spring).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
jar="$here/app/target/rooms-app.jar"
WORK=${WORK:-/tmp/volley-spring}
mkdir -p "$WORK"
pidfile="$WORK/app.pid"

stop() {
  if [ -f "$pidfile" ]; then
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  fi
}

case "${1:-}" in
  start)
    port=${2:?"give the port: app.sh start PORT [SETTINGS...]"}
    shift 2
    [ -f "$jar" ] || mvn -q -B -f "$here/app/pom.xml" package -DskipTests
    stop
    java -Xmx256m -jar "$jar" --server.port="$port" "$@" >"$WORK/app.log" 2>&1 &
    echo $! > "$pidfile"
    for _ in $(seq 1 600); do
      if curl -sf "http://127.0.0.1:$port/rooms?hold=0" >/dev/null 2>&1; then
        # A few requests through the pool before the measured run.
        for _ in $(seq 1 20); do curl -sf "http://127.0.0.1:$port/rooms?hold=0" >/dev/null; done
        exit 0
      fi
      kill -0 "$(cat "$pidfile")" 2>/dev/null || { echo "app.sh: the app exited; see $WORK/app.log" >&2; exit 1; }
      sleep 0.2
    done
    echo "app.sh: the app did not answer within 120 s; see $WORK/app.log" >&2
    exit 1
    ;;
  stop) stop ;;
  *) echo "usage: app.sh start PORT [SETTINGS...] | app.sh stop" >&2; exit 2 ;;
esac
