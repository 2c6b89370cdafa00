#!/usr/bin/env bash
# Records the list and watch answers of a real kube-apiserver (scripts/kube-apiserver/start.sh,
# v1.37, no nodes or controllers: every object and status is written here) while a fixed story
# happens to a Deployment's workload, into fixtures/kube/basic/ for crates/kube/tests/replay.rs.
# The story (story.json says when each step was written):
#   before the watches: namespace shop, Deployment chat (3 replicas, app=chat), its ReplicaSet
#   chat-7f8c, Services chat (app=chat) and other, HPA chat (cpu 70 %, 1 -> 5) at 1/1, three Ready
#   pods, EndpointSlice chat-abc with 3 ready endpoints;
#   1 pod chat-7f8c-1 not Ready; 2 Event Unhealthy (readiness probe) count 1; 3 the slice 2 of 3
#   ready; 4 the Event's count 3; 5 pod 1 Ready again and the slice 3 of 3; 6 the HPA 1 -> desired
#   3 (cpu 180 %); 7 the HPA at 3/3; 8 pod chat-7f8c-2 restarted after an OOMKilled (exit 137).
# Usage: scripts/kube-watch-record.sh [OUT_DIR]   (root not needed; ~1 min with the binaries cached)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/fixtures/kube/basic}
export KUBE_WORK=${KUBE_WORK:-/tmp/volley-kube-record}
export KUBE_PORT=${KUBE_PORT:-16643} KUBE_ETCD_PORT=${KUBE_ETCD_PORT:-24790}
mkdir -p "$KUBE_WORK" "$OUT"
# The API server built once by scripts/k8s-node (target/k8s-node/bin) or by start.sh itself.
[ -x "$KUBE_WORK/kube-apiserver" ] || [ ! -x "$ROOT/target/k8s-node/bin/kube-apiserver" ] \
  || cp "$ROOT/target/k8s-node/bin/kube-apiserver" "$KUBE_WORK/"
# A server of an earlier recording may still be shutting down on the port: start.sh would take it
# for this one.
for _ in $(seq 30); do ss -ltn | grep -q ":$KUBE_PORT " || break; sleep 1; done
"$ROOT/scripts/kube-apiserver/start.sh" >/dev/null
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; "$ROOT/scripts/kube-apiserver/stop.sh"; }
trap cleanup EXIT
API="https://127.0.0.1:$KUBE_PORT"
c() { curl -sSfk -H "Authorization: Bearer admintoken" "$@"; }
post() { c -X POST -H 'Content-Type: application/json' "$API$1" -d "$2" >/dev/null; }
patch() { c -X PATCH -H 'Content-Type: application/merge-patch+json' "$API$1" -d "$2" >/dev/null; }
T0=$(date +%s.%N)
STEPS=()
step() { STEPS+=("{\"step\":$1,\"t\":$(echo "$(date +%s.%N) - $T0" | bc -l | xargs printf '%.3f'),\"what\":\"$2\"}"); }

N=/api/v1/namespaces/shop
A=/apis/apps/v1/namespaces/shop
H=/apis/autoscaling/v2/namespaces/shop
D=/apis/discovery.k8s.io/v1/namespaces/shop
CONTAINERS='[{"name":"app","image":"volley.local/volley:dev","resources":{"requests":{"cpu":"100m","memory":"32Mi"},"limits":{"cpu":"200m","memory":"64Mi"}}}]'
pod_status() { # ready restarts oom
  local last=''
  [ "$3" = 1 ] && last=',"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled","startedAt":"2026-01-01T00:00:00Z","finishedAt":"2026-01-01T00:00:09Z"}}'
  local s=False; [ "$1" = 1 ] && s=True
  echo "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"$s\"}],\"containerStatuses\":[{\"name\":\"app\",\"image\":\"volley.local/volley:dev\",\"imageID\":\"\",\"ready\":$([ "$1" = 1 ] && echo true || echo false),\"restartCount\":$2,\"state\":{\"running\":{\"startedAt\":\"2026-01-01T00:00:10Z\"}}$last}]}}"
}
slice() { # ready flags of the three endpoints
  local eps='' i=0
  for r in "$@"; do eps+="${eps:+,}{\"addresses\":[\"10.244.0.1$i\"],\"conditions\":{\"ready\":$r,\"serving\":$r,\"terminating\":false},\"targetRef\":{\"kind\":\"Pod\",\"namespace\":\"shop\",\"name\":\"chat-7f8c-$i\"}}"; i=$((i+1)); done
  echo "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"chat-abc\",\"labels\":{\"kubernetes.io/service-name\":\"chat\"}},\"addressType\":\"IPv4\",\"ports\":[{\"port\":8080}],\"endpoints\":[$eps]}"
}

# readyz can answer before RBAC's bootstrap (a 403 then): wait for the default namespace.
for _ in $(seq 60); do c "$API/api/v1/namespaces/default" >/dev/null 2>&1 && break; sleep 1; done
post /api/v1/namespaces '{"metadata":{"name":"shop"}}'
# No controller-manager: the namespace's default ServiceAccount, which pods need, is made here.
post $N/serviceaccounts '{"metadata":{"name":"default"}}'
post $A/deployments "{\"metadata\":{\"name\":\"chat\"},\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"chat\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"chat\",\"tier\":\"web\"}},\"spec\":{\"containers\":$CONTAINERS}}}}"
patch $A/deployments/chat/status '{"status":{"observedGeneration":1,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,"conditions":[{"type":"Progressing","status":"True","reason":"NewReplicaSetAvailable"}]}}'
post $A/replicasets "{\"metadata\":{\"name\":\"chat-7f8c\",\"labels\":{\"app\":\"chat\",\"tier\":\"web\"},\"annotations\":{\"deployment.kubernetes.io/revision\":\"1\"}},\"spec\":{\"replicas\":3,\"selector\":{\"matchLabels\":{\"app\":\"chat\"}},\"template\":{\"metadata\":{\"labels\":{\"app\":\"chat\",\"tier\":\"web\"}},\"spec\":{\"containers\":$CONTAINERS}}}}"
patch $A/replicasets/chat-7f8c/status '{"status":{"replicas":3,"readyReplicas":3,"availableReplicas":3}}'
post $N/services '{"metadata":{"name":"chat"},"spec":{"selector":{"app":"chat"},"ports":[{"port":80,"targetPort":8080}]}}'
post $N/services '{"metadata":{"name":"other"},"spec":{"selector":{"app":"other"},"ports":[{"port":80}]}}'
post $H/horizontalpodautoscalers '{"metadata":{"name":"chat"},"spec":{"minReplicas":1,"maxReplicas":5,"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"chat"},"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":70}}}]}}'
patch $H/horizontalpodautoscalers/chat/status '{"status":{"currentReplicas":1,"desiredReplicas":1}}'
for i in 0 1 2; do
  post $N/pods "{\"metadata\":{\"name\":\"chat-7f8c-$i\",\"labels\":{\"app\":\"chat\",\"tier\":\"web\"}},\"spec\":{\"nodeName\":\"localhost\",\"containers\":$CONTAINERS}}"
  patch $N/pods/chat-7f8c-$i/status "$(pod_status 1 0 0)"
done
post $D/endpointslices "$(slice true true true)"

# What the watcher asks before the run, and each watch's list and stream.
c "$API$A/deployments/chat" > "$OUT/get-deployment.json"
c "$API$N/services" > "$OUT/list-services.json"
declare -A Q=([pods]="$N/pods?labelSelector=app%3Dchat" [events]="$N/events?" \
  [deployments]="$A/deployments?fieldSelector=metadata.name%3Dchat" \
  [replicasets]="$A/replicasets?labelSelector=app%3Dchat" \
  [endpointslices]="$D/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Dchat" \
  [horizontalpodautoscalers]="$H/horizontalpodautoscalers?fieldSelector=metadata.name%3Dchat")
for r in "${!Q[@]}"; do
  c "$API${Q[$r]}" > "$OUT/list-$r.json"
  rv=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["metadata"]["resourceVersion"])' "$OUT/list-$r.json")
  (c -N "$API${Q[$r]}&watch=1&resourceVersion=$rv&allowWatchBookmarks=true&timeoutSeconds=60" \
     | while IFS= read -r l; do printf '%s\t%s\n' "$(echo "$(date +%s.%N) - $T0" | bc -l | xargs printf '%.3f')" "$l"; done \
     > "$OUT/watch-$r.tsv") 2>/dev/null & PIDS+=($!)
done
sleep 1
patch $N/pods/chat-7f8c-1/status "$(pod_status 0 0 0)"; step 1 "pod chat-7f8c-1 not Ready"; sleep 1
post $N/events "{\"metadata\":{\"name\":\"chat-7f8c-1.unhealthy\"},\"involvedObject\":{\"kind\":\"Pod\",\"namespace\":\"shop\",\"name\":\"chat-7f8c-1\",\"uid\":\"$(c $API$N/pods/chat-7f8c-1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["uid"])')\"},\"type\":\"Warning\",\"reason\":\"Unhealthy\",\"message\":\"Readiness probe failed: Get \\\"http://10.244.0.11:8080/health\\\": context deadline exceeded\",\"count\":1,\"firstTimestamp\":\"$(date -u +%FT%TZ)\",\"lastTimestamp\":\"$(date -u +%FT%TZ)\",\"source\":{\"component\":\"kubelet\",\"host\":\"localhost\"}}"
step 2 "Event Unhealthy count 1"; sleep 1
patch $D/endpointslices/chat-abc "$(slice true false true)"; step 3 "EndpointSlice chat-abc 2 of 3 ready"; sleep 1
patch $N/events/chat-7f8c-1.unhealthy "{\"count\":3,\"lastTimestamp\":\"$(date -u +%FT%TZ)\"}"; step 4 "Event Unhealthy count 3"; sleep 1
patch $N/pods/chat-7f8c-1/status "$(pod_status 1 0 0)"; patch $D/endpointslices/chat-abc "$(slice true true true)"
step 5 "pod chat-7f8c-1 Ready, EndpointSlice 3 of 3"; sleep 1
patch $H/horizontalpodautoscalers/chat/status '{"status":{"currentReplicas":1,"desiredReplicas":3,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":180}}}]}}'
step 6 "HPA chat desired 3 (cpu 180 %)"; sleep 1
patch $H/horizontalpodautoscalers/chat/status '{"status":{"currentReplicas":3,"desiredReplicas":3}}'; step 7 "HPA chat 3 of 3"; sleep 1
patch $N/pods/chat-7f8c-2/status "$(pod_status 1 1 1)"; step 8 "pod chat-7f8c-2 restarted after OOMKilled (exit 137)"; sleep 2
{ echo '{"recorded_by":"scripts/kube-watch-record.sh","server":"kube-apiserver '"$("$KUBE_WORK/kube-apiserver" --version | awk '{print $2}')"'","namespace":"shop","t":"seconds since the watches started","steps":['
  (IFS=,; echo "${STEPS[*]}"); echo ']}'; } | python3 -m json.tool > "$OUT/story.json"
echo "recorded into $OUT" >&2
