#!/usr/bin/env bash
# Regenerates the JMeter and Gatling files of fixtures/peers/ (issue 36): real JMeter 5.6.3
# (jmeter-maven-plugin 3.7.0) and Gatling 3.13.4 / 3.10.5 (gatling-maven-plugin) output, each run
# against a fresh bench/peer-fixtures/server.py on a free loopback port (the server is restarted
# per run so its /stats JSON counts exactly that run), with the tool's own figures beside it.
# The projects are bench/peer-fixtures/jmeter/ and bench/peer-fixtures/gatling/ (what each
# plugin setting does, and the JMeter and Gatling source behind the importer's rules, are in
# bench/peer-fixtures/jvm-notes.md). crates/formats/tests/peer_agreement.rs reads the files.
#
#   bench/peer-fixtures-jvm.sh [STEP...]   STEP: jmeter-csv-report jmeter-csv-dates jmeter-xml
#                                          gatling-3.13 gatling-3.10 (default: all five)
#
# Needs Java 17 and Maven 3.8 (Debian's maven and default-jdk-headless); the first run downloads
# JMeter and Gatling from Maven Central into ~/.m2. About 3 minutes in all once downloaded.
#
# Output: $OUT (default fixtures/peers) with the files below and PROVENANCE-jvm.txt; Maven's and
# JMeter's logs go to a temporary directory, named at the end.
#   jmeter-csv-report  jmeter_default.csv, jmeter_default_statistics.json (JMeter's dashboard)
#   jmeter-csv-dates   jmeter_dates.csv
#   jmeter-xml         jmeter_xml.jtl
#   gatling-3.13       gatling313_simulation.log (binary), gatling313_{stats.json,assertions.xml}
#   gatling-3.10       gatling310_simulation.log (text),   gatling310_{same two}
#   every step         <prefix>_server.json (server.py /stats after the run)
#
# Environment: OUT, SERVER_PY (default bench/peer-fixtures/server.py), MVN (mvn),
#   MVN_FLAGS ("-q -B"), RUN_TIMEOUT (seconds per Maven run, default 1200: the first run of each
#   project also downloads JMeter / Gatling into ~/.m2).
# Every Maven run is under `timeout` (GNU timeout signals its whole process group, so the JVMs the
# plugins fork die with it); the server is stopped by its PID on exit, also on error or Ctrl-C.
set -euo pipefail

HERE=$(cd "$(dirname "$0")/peer-fixtures" && pwd)
OUT=${OUT:-$HERE/../../fixtures/peers}
SERVER_PY=${SERVER_PY:-$HERE/server.py}
MVN=${MVN:-mvn}
read -r -a MVN_FLAGS <<<"${MVN_FLAGS:--q -B}"
RUN_TIMEOUT=${RUN_TIMEOUT:-1200}

# Versions: keep in step with jmeter/pom.xml and gatling/pom.xml (passed explicitly below too).
JMETER_PLUGIN_VERSION=3.7.0
JMETER_VERSION=5.6.3
GATLING_313=3.13.4 GATLING_313_PLUGIN=4.12.2
GATLING_310=3.10.5 GATLING_310_PLUGIN=4.8.2

if [ $# -gt 0 ]; then STEPS=("$@"); else
  STEPS=(jmeter-csv-report jmeter-csv-dates jmeter-xml gatling-3.13 gatling-3.10)
fi

[ -f "$SERVER_PY" ] || { echo "peer-fixtures-jvm.sh: no server at $SERVER_PY (set SERVER_PY)" >&2; exit 2; }
command -v "$MVN" >/dev/null || { echo "peer-fixtures-jvm.sh: $MVN not found" >&2; exit 2; }
command -v curl >/dev/null || { echo "peer-fixtures-jvm.sh: curl not found" >&2; exit 2; }

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
LOGS=$(mktemp -d)
PROV=$(mktemp)

server= port=
stop_server() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    server=
  fi
}
cleanup() { stop_server; rm -f "$PROV"; echo "peer-fixtures-jvm.sh: Maven and JMeter logs in $LOGS" >&2; }
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start_server() {
  port=$(free_port)
  python3 "$SERVER_PY" "$port" &
  server=$!
  for _ in $(seq 50); do
    if curl -s --max-time 1 -o /dev/null "http://127.0.0.1:$port/stats"; then return 0; fi
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
  done
  echo "peer-fixtures-jvm.sh: server.py did not start on 127.0.0.1:$port" >&2
  exit 1
}

server_stats() { curl -s --max-time 5 "http://127.0.0.1:$port/stats" || echo '{"error": "no /stats answer"}'; }

# run_mvn DIR LOG ARGS...: bounded Maven run; sets $rc (never aborts the script)
run_mvn() {
  local dir=$1 log=$2
  shift 2
  rc=0
  (cd "$dir" && timeout -k 15 "$RUN_TIMEOUT" "$MVN" "${MVN_FLAGS[@]}" "$@") >"$LOGS/$log" 2>&1 || rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "peer-fixtures-jvm.sh: $log: timed out after ${RUN_TIMEOUT}s" >&2
  elif [ "$rc" -ne 0 ]; then
    echo "peer-fixtures-jvm.sh: $log: mvn exited $rc (see $LOGS/$log)" >&2
  fi
}

copy_if() { # SRC DEST: copy when present, else note it
  if [ -f "$1" ]; then cp "$1" "$2"; else echo "peer-fixtures-jvm.sh: missing $1" >&2; echo "  MISSING: $1" >>"$PROV"; fi
}

jmeter_step() {
  local profile=$1 prefix=$2 proj=$HERE/jmeter
  rm -rf "$proj/target"
  start_server
  local args=(verify -P"$profile" -Djmeter.maven.plugin.version="$JMETER_PLUGIN_VERSION"
    -Dpeer.jmeter.version="$JMETER_VERSION" -Dpeer.host=127.0.0.1 -Dpeer.port="$port")
  local started
  started=$(date -u +%FT%TZ)
  run_mvn "$proj" "$prefix.mvn.txt" "${args[@]}"
  server_stats >"$OUT/${prefix}_server.json"
  stop_server
  local t=$proj/target/jmeter
  {
    echo "[$prefix] started $started, mvn exit $rc"
    echo "  cmd:    (cd jmeter && $MVN ${MVN_FLAGS[*]} ${args[*]})"
    echo "  jmeter: $(grep -m1 -o 'Version [0-9][0-9.]*' "$t/logs/peer.jmx.log" 2>/dev/null || echo '?') (from jmeter.log), plugin $JMETER_PLUGIN_VERSION"
    echo "  server /stats: $(cat "$OUT/${prefix}_server.json")"
  } >>"$PROV"
  copy_if "$t/logs/peer.jmx.log" "$LOGS/$prefix.jmeter.log"
  case $profile in
    csv-report)
      copy_if "$t/results/peer.csv" "$OUT/${prefix}.csv"
      copy_if "$t/reports/peer/statistics.json" "$OUT/${prefix}_statistics.json"
      ;;
    csv-dates) copy_if "$t/results/peer.csv" "$OUT/${prefix}.csv" ;;
    xml) copy_if "$t/results/peer.jtl" "$OUT/${prefix}.jtl" ;;
  esac
}

gatling_step() {
  local profile=$1 prefix=$2 version=$3 plugin=$4 proj=$HERE/gatling
  rm -rf "$proj/target"
  start_server
  local args=(test-compile gatling:test -P"$profile" -Dpeer.gatling.version="$version"
    -Dpeer.gatling.plugin.version="$plugin" -Dpeer.baseUrl="http://127.0.0.1:$port")
  local started
  started=$(date -u +%FT%TZ)
  run_mvn "$proj" "$prefix.mvn.txt" "${args[@]}"
  server_stats >"$OUT/${prefix}_server.json"
  stop_server
  local run
  run=$({ find "$proj/target/gatling" -mindepth 1 -maxdepth 1 -type d 2>/dev/null || true; } | sort | tail -1)
  {
    echo "[$prefix] started $started, mvn exit $rc"
    echo "  cmd:    (cd gatling && $MVN ${MVN_FLAGS[*]} ${args[*]})"
    echo "  gatling $version, gatling-maven-plugin $plugin; run folder: ${run#"$proj/"}"
    echo "  server /stats: $(cat "$OUT/${prefix}_server.json")"
  } >>"$PROV"
  if [ -z "$run" ]; then
    echo "peer-fixtures-jvm.sh: $prefix: no run folder under $proj/target/gatling" >&2
    echo "  MISSING: run folder" >>"$PROV"
    return
  fi
  copy_if "$run/simulation.log" "$OUT/${prefix}_simulation.log"
  for f in stats.json assertions.xml; do
    copy_if "$run/js/$f" "$OUT/${prefix}_$f"
  done
  if [ -f "$OUT/${prefix}_simulation.log" ]; then
    echo "  simulation.log header (gatling_header.py):" >>"$PROV"
    python3 "$HERE/gatling_header.py" "$OUT/${prefix}_simulation.log" 2>&1 | sed 's/^/    /' >>"$PROV" || true
  fi
}

for step in "${STEPS[@]}"; do
  case $step in
    jmeter-csv-report) jmeter_step csv-report jmeter_default ;;
    jmeter-csv-dates) jmeter_step csv-dates jmeter_dates ;;
    jmeter-xml) jmeter_step xml jmeter_xml ;;
    gatling-3.13) gatling_step gatling-3.13 gatling313 "$GATLING_313" "$GATLING_313_PLUGIN" ;;
    gatling-3.10) gatling_step gatling-3.10 gatling310 "$GATLING_310" "$GATLING_310_PLUGIN" ;;
    *) echo "peer-fixtures-jvm.sh: unknown step $step" >&2; exit 2 ;;
  esac
done

{
  echo "generated: $(date -u +%FT%TZ) by bench/peer-fixtures-jvm.sh ${STEPS[*]}"
  echo "host:      $(uname -srm), $(nproc) CPUs"
  echo "java:      $(java -version 2>&1 | head -1)"
  echo "maven:     $("$MVN" -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g')"
  echo "server:    $SERVER_PY on 127.0.0.1, a fresh process per step (/fast 2-8 ms, /slow 20-40 ms, every 20th request per path HTTP 500)"
  echo "jmeter:    peer.jmx: 5 threads x 40 loops; TX fast+slow (Transaction Controller, generateParentSample=false) = GET /fast + GET /slow; GET /fast (outside) after a 300 ms timer"
  echo "gatling:   peer.PeerSimulation: constantUsersPerSec(10) during 15 s; group A: same (GET /fast), group B: same (GET /fast), outside (GET /slow); 4 assertions"
  echo
  cat "$PROV"
} >"$OUT/PROVENANCE-jvm.txt"
echo "peer-fixtures-jvm.sh: wrote $OUT"
