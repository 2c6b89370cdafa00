#!/usr/bin/env bash
# The cluster the seeds' story needs (issue 54 §3), checked for real on the single node of up.sh:
# a pod network, Services through kube-proxy, the metrics API and an HPA. Needs root; not part of
# the test command. Prints the figures docs/kubernetes.md quotes; exits 1 on the first check that
# fails. Everything it starts stops by itself: the load is one bounded `volley run` against the
# NodePort on 127.0.0.1, and down.sh runs on exit (KEEP=1 keeps the state folder).
#
# 1. The demo target as a Deployment of 1 replica (volley.local/volley:dev, `target serve
#    --cpu-work 2ms`), requests 100m / limit 200m, a readiness probe on /health, behind a
#    NodePort Service: times from `kubectl apply` to the pod Ready and to the NodePort answering.
# 2. `curl http://127.0.0.1:NODEPORT/rooms` answers 200 through kube-proxy's rules.
# 3. The metrics API (metrics-server) reports the pod's CPU: `kubectl get --raw
#    /apis/metrics.k8s.io/v1beta1/namespaces/default/pods`.
# 4. An HPA on CPU 50 % of the request, 1 to 3 replicas: `volley run` at RATE req/s for DURATION
#    against the NodePort; the HPA must scale out while it runs. Times from the load's start to
#    the HPA's first scale-out and to the new pods Ready, and the CPU it read.
# 5. The pods stop on SIGTERM: `kubectl delete deployment` to no pods left, against the 30 s
#    grace period a process that ignores SIGTERM costs.
#
#   sudo scripts/k8s-node/cluster-check.sh       # RATE=80 DURATION=100s NODEPORT=30080
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
RATE=${RATE:-80}; DURATION=${DURATION:-100s}; NODEPORT=${NODEPORT:-30080}
W=${K8S_NODE_WORK:-/tmp/k8s-node}
OUT=${OUT:-$ROOT/target/k8s-node/cluster-check}
V="$ROOT/target/release/volley"
say() { printf '\n== %s\n' "$*" >&2; }
fail() {
  echo "FAILED: $*" >&2
  if [ -n "${KUBECONFIG:-}" ]; then
    kubectl get pods,svc,hpa -o wide >&2 || true
    kubectl describe pods 2>&1 | grep -A12 '^Events' | head -60 >&2 || true
    kubectl logs -l app=chat --tail=10 --prefix >&2 || true
  fi
  exit 1
}
ms() { date +%s%3N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", (b - a) / 1000}'; }

[ -n "${SKIP_BUILD:-}" ] || nice -n 10 cargo build --release --locked -p volley-cli
"$HERE/down.sh" 2>/dev/null   # from nothing: a node left up by hand has an older image
trap '"$HERE/down.sh"' EXIT
t=$(ms)
eval "$("$HERE/up.sh")"
echo "node up (pod network, kube-proxy, metrics API): $(secs "$t" "$(ms)") s"
rm -rf "$OUT"; mkdir -p "$OUT"

say "1. the demo target as a Deployment behind a NodePort"
t_apply=$(ms)
kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: chat, labels: {app: chat}}
spec:
  replicas: 1
  selector: {matchLabels: {app: chat}}
  template:
    metadata: {labels: {app: chat}}
    spec:
      containers:
      - name: chat
        image: volley.local/volley:dev
        imagePullPolicy: Never
        args: [target, serve, --listen, "0.0.0.0:8080", --cpu-work, 2ms, --db-rtt, 0ms]
        ports: [{containerPort: 8080, name: http}]
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {cpu: 200m, memory: 256Mi}
        readinessProbe:
          httpGet: {path: /health, port: http}
          periodSeconds: 2
          timeoutSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: chat}
spec:
  type: NodePort
  selector: {app: chat}
  ports: [{name: http, port: 80, targetPort: http, nodePort: $NODEPORT}]
YAML
kubectl rollout status deployment/chat --timeout=120s >/dev/null || fail "the Deployment did not become ready"
t_ready=$(ms)
pod=$(kubectl get pods -l app=chat -o jsonpath='{.items[0].metadata.name}')
ip=$(kubectl get pod "$pod" -o jsonpath='{.status.podIP}')
case "$ip" in 10.244.0.*) ;; *) fail "pod $pod has address '$ip', not one on volley0 (10.244.0.0/24)" ;; esac
echo "apply -> pod $pod ($ip) Ready: $(secs "$t_apply" "$t_ready") s"

say "2. the NodePort on 127.0.0.1"
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$NODEPORT/health" >/dev/null && break; sleep 0.1; done
t_port=$(ms)
code=$(curl -s -o "$OUT/rooms.json" -w '%{http_code}' "http://127.0.0.1:$NODEPORT/rooms")
[ "$code" = 200 ] || fail "GET http://127.0.0.1:$NODEPORT/rooms answered $code"
echo "apply -> NodePort answering: $(secs "$t_apply" "$t_port") s; GET /rooms: $code, $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$OUT/rooms.json") rooms"

say "3. the pod's CPU from the metrics API"
cpu_of() { # the pods' CPU from metrics.k8s.io: "name=123m ..." (empty before the first scrape)
  kubectl get --raw /apis/metrics.k8s.io/v1beta1/namespaces/default/pods 2>/dev/null | python3 -c '
import json, sys
for p in json.load(sys.stdin)["items"]:
    c = p["containers"][0]["usage"]["cpu"]   # 174760894n, 175m or 1
    m = float(c[:-1]) / 1e6 if c.endswith("n") else float(c[:-1]) if c.endswith("m") else float(c) * 1000
    print("%s=%.1fm" % (p["metadata"]["name"], m), end=" ")'
}
for _ in $(seq 90); do c=$(cpu_of); [ -n "$c" ] && break; sleep 1; done
[ -n "$c" ] || fail "no pod metrics in 90 s"
echo "metrics API: $c ($(secs "$t_ready" "$(ms)") s after Ready)"

say "4. an HPA on CPU 50 % of the request, under $RATE req/s for $DURATION"
kubectl apply -f - >/dev/null <<YAML
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: chat}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  minReplicas: 1
  maxReplicas: 3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
YAML
for _ in $(seq 60); do
  kubectl get hpa chat -o jsonpath='{.status.currentMetrics[0].resource.current.averageUtilization}' 2>/dev/null | grep -q . && break
  sleep 1
done
watch_hpa() { # a line a second: ms into the load, HPA current and desired replicas, its CPU % of
              # the request, ready pods, each pod's CPU
  while :; do
    IFS=, read -r cur des util < <(kubectl get hpa chat -o jsonpath='{.status.currentReplicas},{.status.desiredReplicas},{.status.currentMetrics[0].resource.current.averageUtilization}' 2>/dev/null; echo)
    r=$(kubectl get deployment chat -o jsonpath='{.status.readyReplicas}' 2>/dev/null || true)
    echo "$(( $(ms) - t_load )) ${cur:-0} ${des:-0} ${util:-0} ${r:-0} $(cpu_of)"
    sleep 1
  done
}
t_load=$(ms)
watch_hpa > "$OUT/hpa.txt" & watcher=$!
"$V" run --url "http://127.0.0.1:$NODEPORT/rooms" --rate "$RATE" --duration "$DURATION" --max-vus 64 \
  --no-error-stop --progress none --name hpa -o "$OUT/runs" >"$OUT/run.log" 2>&1 || true
kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null || true
awk 'NR == 1 || $3 > 1 {print}' "$OUT/hpa.txt" | head -3 >&2
out=$(awk '$3 > 1 && !d {d = $1} $5 > 1 && !r {r = $1; n = $5} {if ($4 + 0 > m) m = $4}
  END {if (d) printf "%d %d %d %d", d, r, n, m}' "$OUT/hpa.txt")
[ -n "$out" ] || fail "the HPA did not scale out under $RATE req/s (see $OUT/hpa.txt)"
read -r d r n m <<<"$out"
[ "$r" -gt 0 ] || fail "the HPA asked for more pods at $(secs 0 "$d") s, but none more was ready during the load"
echo "HPA: desired > 1 at $(secs 0 "$d") s into the load (peak CPU read $m % of the request);" \
     "$n pods ready at $(secs 0 "$r") s"
run=$(dirname "$(find "$OUT/runs" -name run.json | head -1)")
"$V" report "$run" --warmup 0s --format json | python3 -c '
import json, sys
r = json.load(sys.stdin); s = r["seed_suite"]; t = r["per_request"]["ttfb_ms"]
print("load: %d requests, %d errors, TPS %.1f, TTFB p50 %.1f p99 %.1f ms" % (
    s["total_tests"] + s["errors"], s["errors"], s["tps_avg"], t["p50_ms"], t["p99_ms"]))'

say "5. the pods stop on SIGTERM"
t=$(ms)
kubectl delete hpa chat >/dev/null
kubectl delete deployment chat --wait=true --timeout=60s >/dev/null
for _ in $(seq 600); do [ -z "$(kubectl get pods -l app=chat -o name)" ] && break; sleep 0.1; done
[ -z "$(kubectl get pods -l app=chat -o name)" ] || fail "pods left 60 s after the delete"
took=$(secs "$t" "$(ms)")
echo "delete deployment -> no pods: $took s (30 s grace period)"
awk -v s="$took" 'BEGIN {exit !(s < 25)}' || fail "the pods took $took s to stop: SIGTERM was not handled"
echo "cluster-check: all checks passed" >&2
