#!/usr/bin/env bash
# The seeds' own stack, diagnosed: step-ups on Spring Boot 2.7 + HikariCP + Tomcat (bench/spring/app,
# GET /rooms holding a pooled connection for 20 ms) read as a team reads them, level by level.
# Each case's ceiling is known by construction: pool P serves P / 20 ms, threads.max T < P serves
# T / 20 ms. Writes $WORK/results.md: what volley says in each case, beside the true answer.
#
#   bench/spring/run.sh                    (about 14 min; VOLLEY=path/to/volley, WORK=dir to keep)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
VOLLEY=${VOLLEY:-$root/target/release/volley}
export WORK=${WORK:-$(mktemp -d /tmp/volley-spring.XXXXXX)}
PORT=${PORT:-18480}
STAGES="0s:5,15s:5,0s:10,15s:10,0s:20,15s:20,0s:40,15s:40"
PACED_STAGES="0s:10,15s:10,0s:20,15s:20,0s:30,15s:30,0s:40,15s:40,0s:50,15s:50,0s:60,15s:60"
app=bench/spring/app.sh
[ -x "$VOLLEY" ] || cargo build --release --locked
[ -f bench/spring/app/target/rooms-app.jar ] || mvn -q -B -f bench/spring/app/pom.xml package -DskipTests
trap '"$root/$app" stop' EXIT
echo "work: $WORK" >&2
url="http://127.0.0.1:$PORT/rooms"
metrics="http://127.0.0.1:$PORT/actuator/prometheus"

# case NAME "SPRING SETTINGS" VOLLEY RUN FLAGS...
case_run() {
  local name=$1 settings=$2
  shift 2
  echo "== $name: $settings" >&2
  # shellcheck disable=SC2086
  "$app" start "$PORT" $settings
  "$VOLLEY" run --url "$url" --server-metrics "$metrics" --name "$name" -o "$WORK/$name" \
    --progress none "$@" > "$WORK/$name.txt" 2>&1 || true
  "$app" stop
}

case_run pool10 "--spring.datasource.hikari.maximum-pool-size=10" --stages "$STAGES"
case_run pool5 "--spring.datasource.hikari.maximum-pool-size=5" --stages "$STAGES"
case_run paced-pool2 "--spring.datasource.hikari.maximum-pool-size=2" --stages "$PACED_STAGES" --pacing 250ms
case_run maxconn10 "--spring.datasource.hikari.maximum-pool-size=10 --server.tomcat.max-connections=10 --server.tomcat.accept-count=5" --stages "$STAGES"
case_run threads5 "--spring.datasource.hikari.maximum-pool-size=10 --server.tomcat.threads.max=5" --stages "$STAGES"

echo "== sweep pool=2,5,10,20" >&2
"$VOLLEY" sweep --vary pool=2,5,10,20 -o "$WORK/sweep" \
  --setup "$root/$app start $PORT --spring.datasource.hikari.maximum-pool-size={pool}" \
  -- --url "$url" --server-metrics "$metrics" --stages "$STAGES" --progress none > "$WORK/sweep.txt" 2>&1 || true
"$app" stop

"$VOLLEY" compare "$WORK"/pool10/*/ "$WORK"/threads5/*/ --labels "pool 10,threads 5" > "$WORK/compare.txt" 2>&1 || true
"$VOLLEY" compare "$WORK"/pool10/*/ "$WORK"/threads5/*/ --labels "pool 10,threads 5" --format json > "$WORK/compare.json" 2>/dev/null || true

python3 bench/spring/results.py "$WORK" > "$WORK/results.md"
cat "$WORK/results.md"
