#!/usr/bin/env bash
# The Indexed Job run for real on a single-node cluster (scripts/k8s-node/up.sh), against a target
# and an S3 server (moto) on this machine's loopback. Not part of the test command: the first run
# builds Kubernetes (~30-40 min on 2 cores). Needs root. Prints the figures docs/kubernetes.md
# quotes; exits 1 on the first check that fails.
#
# 1. A single `volley run` of the plan on the host: its count and percentiles.
# 2. `volley k8s manifest --segments 4 --host-network ...` piped to `kubectl apply -f -`; four pods
#    run from the image built here (image.sh, imported into containerd), each uploads its
#    segment to moto; `volley k8s collect` merges them. Checks: the Job completes, the merged
#    count is the target's own count, the merged TPS and TTFB percentiles are those of the single
#    process within the rule crates/cli/tests/it/netns.rs (bench/segments.sh) holds split runs to.
#    Times kubectl apply -> each container started -> the first request at the target.
# 3. The same with segment 2's process killed (SIGKILL, as the OOM killer or a lost node would)
#    mid-run: the collect must say `partial`, name segment 2, and exit 1.
# 4. The same with segment 1's pod deleted (kubectl delete pod: SIGTERM): the segment stops
#    gracefully and uploads what it ran, its pod fails, and so does the Job; the collect must
#    say the segment is interrupted, and exit 1.
# 5. Image sizes: FROM scratch (what runs here) against a Debian minbase root (IMAGE_SIZES=0 skips).
# 6. What is typed reaches the pods: a header holding `$$`, `$(NAME)` and a trailing `$` goes
#    through `k8s manifest` and the kubelet's expansion into each pod's volley unchanged (its
#    run.json records the command it received).
#
#   sudo scripts/k8s-node/acceptance.sh          # RATE=1500 DURATION=10s SEGMENTS=4
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
RATE=${RATE:-1500}; DURATION=${DURATION:-10s}; N=${SEGMENTS:-4}
W=${K8S_NODE_WORK:-/tmp/k8s-node}
OUT=${OUT:-$ROOT/target/k8s-node/acceptance}
TPORT=${TARGET_PORT:-18090}
V="$ROOT/target/release/volley"
say() { printf '\n== %s\n' "$*" >&2; }
fail() {
  echo "FAILED: $*" >&2
  if [ -n "${KUBECONFIG:-}" ]; then
    kubectl get pods -o wide >&2 || true
    kubectl describe pods 2>&1 | grep -A12 '^Events' | head -60 >&2 || true
    kubectl logs -l app.kubernetes.io/name=volley --tail=10 --prefix >&2 || true
  fi
  exit 1
}
ms() { date +%s%3N; }

cargo build --release --locked -p volley-cli
"$HERE/down.sh" 2>/dev/null   # from nothing: a node left up by hand has an older image
trap '"$HERE/down.sh"' EXIT
eval "$("$HERE/up.sh")"   # the node, volley's image in it, moto with bucket volley-results
K=(kubectl)
CTR=(ctr --address "$W/containerd/containerd.sock" -n k8s.io)
rm -rf "$OUT"; mkdir -p "$OUT"

say "the target on loopback"
"$V" target serve --listen "127.0.0.1:$TPORT" >"$W/logs/target.log" 2>&1 & echo $! >"$W/pids/target"
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$TPORT/health" >/dev/null && break; sleep 0.2; done
count() { # requests to /health the target has answered (its own Prometheus counter)
  curl -sf "http://127.0.0.1:$TPORT/metrics" | awk '/^http_server_requests_seconds_count\{/ && /uri="\/health"/ {s += $NF} END {print s + 0}'
}
PLAN=(--url "http://127.0.0.1:$TPORT/health" --rate "$RATE" --duration "$DURATION" --max-vus 64)
figures() { # run dir -> "count tps p50 p90 p99" over the whole run
  "$V" report "$1" --warmup 0s --format json | python3 -c '
import json, sys
r = json.load(sys.stdin); s = r["seed_suite"]; t = r["per_request"]["ttfb_ms"]
print(s["total_tests"] + s["errors"], s["tps_avg"], t["p50_ms"], t["p90_ms"], t["p99_ms"], r["status"])' \
    || echo "FAILED: volley report $1" >&2
}

say "1. one process on the host: ${PLAN[*]}"
before=$(count)
"$V" run "${PLAN[@]}" --progress none -o "$OUT/single" >/dev/null 2>&1
seen=$(( $(count) - before ))
read -r s_count s_tps s_p50 s_p90 s_p99 _ < <(figures "$(dirname "$(find "$OUT/single" -name run.json)")")
[ -n "$s_count" ] || fail "no figures for the single run"
echo "single: target $seen, run $s_count, TPS $s_tps, TTFB p50 $s_p50 p90 $s_p90 p99 $s_p99 ms"
[ "$seen" = "$s_count" ] || fail "the single run counted $s_count, the target $seen"

job() { # run id, plan flags... -> the manifest piped to kubectl apply (a copy in $OUT/ID.yaml)
  local id=$1; shift
  "$V" k8s manifest --segments "$N" --image volley.local/volley:dev --image-pull-policy Never --host-network \
    --bucket s3://volley-results/k8s --endpoint "$AWS_ENDPOINT_URL" --region us-east-1 --run-id "$id" \
    --start-in 10s --cpu 400m --memory 256Mi -- "$@" 2>"$OUT/$id-manifest.log" \
    | tee "$OUT/$id.yaml" | "${K[@]}" apply -f - >/dev/null
}

say "2. $N pods of an Indexed Job: ${PLAN[*]}"
before=$(count)
t0=$(ms); job accept-1 "${PLAN[@]}"
running=""
while [ "$(count)" = "$before" ]; do
  [ $(( $(ms) - t0 )) -lt 120000 ] || fail "no request reached the target within 120 s of kubectl apply"
  if [ -z "$running" ] && [ "$("${K[@]}" get pods -l volley.dev/run-id=accept-1 -o jsonpath='{range .items[*]}{.status.containerStatuses[0].state.running.startedAt}{" "}{end}' | wc -w)" = "$N" ]; then
    running=$(( $(ms) - t0 ))
  fi
  sleep 0.05
done
first=$(( $(ms) - t0 ))
"${K[@]}" wait --for=condition=complete job/volley-accept-1 --timeout=180s >/dev/null || {
  "${K[@]}" get pods -o wide; "${K[@]}" logs -l volley.dev/run-id=accept-1 --tail=20; fail "the Job did not complete"; }
seen=$(( $(count) - before ))
echo "kubectl apply (manifest written just before) -> all $N containers running: ${running:-?} ms; -> the first request at the target: $first ms (--start-in 10s: the pods wait for it)"
"$V" k8s collect s3://volley-results/k8s/accept-1 -o "$OUT/accept-1" >"$OUT/accept-1-collect.log" 2>&1 || { cat "$OUT/accept-1-collect.log"; fail "collect failed"; }
read -r m_count m_tps m_p50 m_p90 m_p99 m_status < <(figures "$OUT/accept-1/merged")
[ -n "$m_count" ] || fail "no figures for the merged run"
echo "merged: target $seen, merged $m_count ($m_status), TPS $m_tps, TTFB p50 $m_p50 p90 $m_p90 p99 $m_p99 ms"
[ "$m_status" = complete ] || fail "merged status $m_status"
# --start-at across pods: how late each segment's first arrival was against the shared instant.
python3 - "$OUT/accept-1/segments" <<'PY' || fail "a segment started late"
import json, pathlib, sys
lags = {p.parent.name: json.loads(p.read_text())["segment"]["start_lag_ms"] for p in sorted(pathlib.Path(sys.argv[1]).glob("*/run.json"))}
print("start lag against --start-at: " + ", ".join(f"{k} {v:.2f} ms" for k, v in lags.items()))
sys.exit(0 if max(lags.values()) < 100 else 1)
PY
[ "$seen" = "$m_count" ] || fail "the merged count $m_count is not the target's $seen"
[ "$m_count" = "$s_count" ] || fail "the same schedule sent $m_count in pods, $s_count in one process"
python3 - "$s_tps" "$m_tps" "$s_p50" "$m_p50" <<'PY' || fail "merged TPS or TTFB p50 outside the noise of one process"
import sys
s_tps, m_tps, s_p50, m_p50 = map(float, sys.argv[1:])
# crates/cli/tests/it/netns.rs's rule for split runs: TPS within 1 %, p50 within half of it or 0.5 ms
ok = abs(m_tps - s_tps) / s_tps < 0.01 and abs(m_p50 - s_p50) < max(0.5 * s_p50, 0.5)
print(f"TPS {m_tps} vs {s_tps}, p50 {m_p50} vs {s_p50} ms: {'within' if ok else 'OUTSIDE'} the split-run noise")
sys.exit(0 if ok else 1)
PY

say "3. the same, segment 2's process killed mid-run"
LONG=(--url "http://127.0.0.1:$TPORT/health" --rate "$RATE" --duration 20s --max-vus 64)
before=$(count); job accept-2 "${LONG[@]}"
while [ "$(count)" = "$before" ]; do sleep 0.1; done
sleep 5
pod=$("${K[@]}" get pods -l volley.dev/run-id=accept-2,batch.kubernetes.io/job-completion-index=2 -o jsonpath='{.items[0].metadata.name}')
cid=$("${K[@]}" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].containerID}'); cid=${cid#containerd://}
pid=$("${CTR[@]}" tasks ls | awk -v c="$cid" '$1 == c {print $2}')
[ -n "$pid" ] || fail "no task for pod $pod"
echo "killing pod $pod (segment 2): SIGKILL to its volley process, host PID $pid"
kill -KILL "$pid"
"${K[@]}" wait --for=condition=failed job/volley-accept-2 --timeout=180s >/dev/null || { "${K[@]}" get pods; fail "the Job did not end as failed"; }
"${K[@]}" get pods -l volley.dev/run-id=accept-2 -o custom-columns=POD:.metadata.name,INDEX:.metadata.annotations.batch\\.kubernetes\\.io/job-completion-index,PHASE:.status.phase,EXIT:.status.containerStatuses[0].state.terminated.exitCode
set +e
"$V" k8s collect s3://volley-results/k8s/accept-2 -o "$OUT/accept-2" >"$OUT/accept-2-collect.log" 2>&1; rc=$?
set -e
grep -E "segment|partial|missing" "$OUT/accept-2-collect.log" | head -12
[ "$rc" = 1 ] || fail "collect of a run with a killed segment exited $rc, not 1"
grep -q partial "$OUT/accept-2-collect.log" || fail "collect did not say partial"
grep -Eq "segment 2 (is )?missing|segments? .*\b2\b.*missing" "$OUT/accept-2-collect.log" || fail "collect did not name segment 2"

say "4. the same, segment 1's pod deleted mid-run (kubectl delete pod: SIGTERM, as a drain or an eviction sends)"
before=$(count); job accept-3 "${LONG[@]}"
while [ "$(count)" = "$before" ]; do sleep 0.1; done
sleep 5
"${K[@]}" delete pod -l volley.dev/run-id=accept-3,batch.kubernetes.io/job-completion-index=1 --wait=false
"${K[@]}" wait --for=condition=failed job/volley-accept-3 --timeout=180s >/dev/null || { "${K[@]}" get jobs,pods; fail "the Job did not end as failed"; }
set +e
"$V" k8s collect s3://volley-results/k8s/accept-3 -o "$OUT/accept-3" >"$OUT/accept-3-collect.log" 2>&1; rc=$?
set -e
grep -E "segment|INCOMPLETE|FAILED" "$OUT/accept-3-collect.log" | head -12
[ "$rc" = 1 ] || fail "collect of a run with a deleted pod exited $rc, not 1"
grep -q "INCOMPLETE: segment 1/$N is interrupted" "$OUT/accept-3-collect.log" || fail "collect did not name segment 1 as interrupted"

if [ "${IMAGE_SIZES:-1}" = 1 ]; then
  say "5. image sizes"
  "$HERE/image.sh" debian "$OUT/volley-debian.tar" "$V"
  ls -l "$W/volley.tar" "$OUT/volley-debian.tar" | awk '{print $5, $9}'
fi
say "6. every arg reaches the pods as typed (\$\$, \$(NAME), a trailing \$)"
typed='X-Typed: pa$$word a=$$b $(JOB_COMPLETION_INDEX) $(HOME) end$'
job accept-4 --url "http://127.0.0.1:$TPORT/health" --rate 50 --duration 2s --header "$typed"
"${K[@]}" wait --for=condition=complete job/volley-accept-4 --timeout=180s >/dev/null || { "${K[@]}" get pods; fail "the Job did not complete"; }
"$V" k8s collect s3://volley-results/k8s/accept-4 -o "$OUT/accept-4" >"$OUT/accept-4-collect.log" 2>&1 || { cat "$OUT/accept-4-collect.log"; fail "collect failed"; }
grep -F -- "- \"X-Typed: pa\$\$\$\$word" "$OUT/accept-4.yaml" | sed 's/^ *//; s/^/manifest: /'
python3 - "$OUT/accept-4/segments" "$typed" "$N" <<'PY' || fail "an arg changed on its way into a pod"
import json, pathlib, sys
root, typed, n = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
seen = {}
for p in sorted(root.glob("*/run.json")):
    r = json.loads(p.read_text())
    got = [a for a in r["command"] if a.startswith("X-Typed:")]
    seen[p.parent.name] = got
    print(f"pod {p.parent.name}: {got!r}")
ok = len(seen) == n and all(v == [typed] for v in seen.values())
print(f"typed: {typed!r}: {'every pod got it as typed' if ok else 'CHANGED'}")
sys.exit(0 if ok else 1)
PY

say "all checks passed"
