#!/usr/bin/env bash
# SKELETON of issue 54's acceptance (§3): the seeds' cluster story, on the single node of up.sh,
# with the load from `volley run` through a NodePort on 127.0.0.1. Needs root; not part of the
# test command. Steps 1-3 run the cluster and the load and print what the runs measured; what
# volley itself must say about the cluster needs `--kube`, which is being written (issue 54 §1-2):
# every place it goes is marked `KUBE:` below.
#
# 1. Readiness timeoutSeconds 1 under a step-up: two pods of the demo target whose /health shares
#    the workers (--health-shares-workers), so a saturated pod misses its probe and leaves the
#    Service, as Spring's did in the seeds' Phase 2: errors appear.
# 2. The same with timeoutSeconds 60: the probes wait instead of failing, the pods stay in the
#    Service, and the errors go; `volley compare` of the two phases.
# 3. An HPA on CPU (50 % of a 100m request, 1-3 replicas): the scale-out under load.
# 4. One nginx proxy pod (image.sh nginx) with a CPU limit in front of the target, then 2 and 3
#    replicas: TPS and per-pod CPU for each, and `volley compare` of the three.
#
#   sudo scripts/k8s-node/kube-acceptance.sh      # STAGES=... NODEPORT=30080
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
NODEPORT=${NODEPORT:-30080}
# A step-up in virtual users, each request 5 ms of CPU on a 200m pod: ~40 req/s a pod at most, so
# at 100 VUs a probe queued behind ~50 requests waits over 1 s (at 40 VUs it waited ~0.5 s and
# never failed: the first run, 2026-11-29).
STAGES=${STAGES:-10s:5,20s:5,10s:100,30s:100}
OUT=${OUT:-$ROOT/target/k8s-node/kube-acceptance}
V="$ROOT/target/release/volley"
URL="http://127.0.0.1:$NODEPORT/rooms"
say() { printf '\n== %s\n' "$*" >&2; }
fail() {
  echo "FAILED: $*" >&2
  kubectl get pods,svc,hpa,endpointslices -o wide >&2 || true
  exit 1
}

[ -n "${SKIP_BUILD:-}" ] || nice -n 10 cargo build --release --locked -p volley-cli
"$HERE/down.sh" 2>/dev/null
trap '"$HERE/down.sh"' EXIT
eval "$("$HERE/up.sh")"
rm -rf "$OUT"; mkdir -p "$OUT"

chat() { # replicas, readiness timeoutSeconds: the demo target's Deployment and its NodePort Service
  kubectl apply -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: chat, labels: {app: chat}}
spec:
  replicas: $1
  selector: {matchLabels: {app: chat}}
  template:
    metadata: {labels: {app: chat}}
    spec:
      containers:
      - name: chat
        image: volley.local/volley:dev
        imagePullPolicy: Never
        args: [target, serve, --listen, "0.0.0.0:8080", --cpu-work, 5ms, --db-rtt, 0ms,
               --max-threads, "8", --accept-count, "100", --health-shares-workers]
        ports: [{containerPort: 8080, name: http}]
        resources:
          requests: {cpu: 100m, memory: 64Mi}
          limits: {cpu: 200m, memory: 256Mi}
        readinessProbe:
          httpGet: {path: /health, port: http}
          periodSeconds: 2
          timeoutSeconds: $2
          failureThreshold: 1
---
apiVersion: v1
kind: Service
metadata: {name: chat}
spec:
  type: NodePort
  selector: {app: chat}
  ports: [{name: http, port: 80, targetPort: http, nodePort: $NODEPORT}]
YAML
  kubectl rollout status deployment/chat --timeout=120s >/dev/null || fail "chat did not become ready"
  # kube-proxy writes a new Service's rules within a second or so of its creation.
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$NODEPORT/health" >/dev/null && return 0; sleep 0.1; done
  fail "the NodePort $NODEPORT does not answer"
}

events() { # the probe timeouts the kubelet reported, as Events (not a pod's refusal while it starts)
  kubectl get events --field-selector reason=Unhealthy -o custom-columns=AT:.lastTimestamp,POD:.involvedObject.name,COUNT:.count,MESSAGE:.message --no-headers 2>/dev/null \
    | grep -E 'Client.Timeout|deadline exceeded|timeout' || true
}

run() { # name: the step-up against the NodePort, with the target's own metrics beside it
  # KUBE: add `--kube deployment/chat` here once it exists; its findings must name the probe,
  # the pods and the errors in their windows (step 1), the scale-out (step 3).
  "$V" run --url "$URL" --stages "$STAGES" --timeout 5s --no-error-stop --progress none \
    --name "$1" -o "$OUT/runs/$1" >"$OUT/$1.log" 2>&1 || true
  local dir
  dir=$(find "$OUT/runs/$1" -name run.json 2>/dev/null | head -1)
  [ -n "$dir" ] || fail "volley run $1 wrote no run: $(head -3 "$OUT/$1.log")"
  dir=$(dirname "$dir")
  "$V" report "$dir" --warmup 0s --format json | python3 -c '
import json, sys
r = json.load(sys.stdin); s = r["seed_suite"]; t = r["per_request"]["ttfb_ms"]
print("%s: %d requests, %d errors (%.2f %%), TPS %.1f, TTFB p50 %.1f p99 %.1f ms" % (sys.argv[1],
    s["total_tests"] + s["errors"], s["errors"], 100 * s["errors"] / max(1, s["total_tests"] + s["errors"]),
    s["tps_avg"], t["p50_ms"], t["p99_ms"]))' "$1"
  echo "$dir"
}

say "1. readiness timeoutSeconds 1 under a step-up ($STAGES)"
chat 2 1
p1=$(run phase-probe-1s | tee /dev/stderr | tail -1)
events | tee "$OUT/phase-probe-1s.events" >&2
[ -s "$OUT/phase-probe-1s.events" ] || fail "no readiness probe failed under the step-up"
# KUBE: assert the findings (report.json) name the probe and the pods, with the errors inside
# their not-ready windows.

say "2. readiness timeoutSeconds 60, the same step-up"
kubectl delete deployment chat --wait=true >/dev/null
kubectl delete events --all >/dev/null
chat 2 60
p2=$(run phase-probe-60s | tee /dev/stderr | tail -1)
events | tee "$OUT/phase-probe-60s.events" >&2
"$V" compare "$p1" "$p2" --labels "timeoutSeconds 1,timeoutSeconds 60" >"$OUT/compare.txt" 2>&1 || true
head -30 "$OUT/compare.txt" >&2
# KUBE: assert the comparison says why (the pods left the Service in the first phase only).

say "3. an HPA on CPU 50 % of the request"
kubectl delete deployment chat --wait=true >/dev/null
chat 1 60
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
STAGES=${HPA_STAGES:-10s:10,110s:10} run phase-hpa | tail -2 | head -1 >&2
kubectl get hpa chat -o jsonpath='{.status.currentReplicas} replicas (desired {.status.desiredReplicas})' >&2; echo >&2
[ "$(kubectl get hpa chat -o jsonpath='{.status.desiredReplicas}')" -gt 1 ] || fail "the HPA did not scale out"
# KUBE: assert the findings name the scale-out (1 -> N at T s, CPU % of request) and the TPS after.

say "4. one nginx proxy pod (CPU limit ${PROXY_CPU:-100m}) in front of the target, then 2 and 3"
kubectl delete hpa chat >/dev/null
kubectl delete deployment chat --wait=true >/dev/null
chat 2 60
"$HERE/image.sh" nginx "$OUT/nginx.tar" >&2
ctr --address "${K8S_NODE_WORK:-/tmp/k8s-node}/containerd/containerd.sock" -n k8s.io images import "$OUT/nginx.tar" >/dev/null
# No CoreDNS here: the proxy reaches the target by its Service's clusterIP.
cip=$(kubectl get service chat -o jsonpath='{.spec.clusterIP}')
PROXY_PORT=$((NODEPORT + 1))
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: proxy}
data:
  nginx.conf: |
    daemon off;
    worker_processes 1;
    pid /tmp/nginx.pid;
    error_log stderr warn;
    events { worker_connections 1024; }
    http {
      access_log off;
      client_body_temp_path /tmp/body; proxy_temp_path /tmp/proxy; fastcgi_temp_path /tmp/fastcgi;
      uwsgi_temp_path /tmp/uwsgi; scgi_temp_path /tmp/scgi;
      upstream chat { server $cip:80; keepalive 64; }
      server {
        listen 8080;
        location /nginx-health { return 200 "ok\n"; }
        location / { proxy_pass http://chat; proxy_http_version 1.1; proxy_set_header Connection ""; }
      }
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: proxy, labels: {app: proxy}}
spec:
  replicas: 1
  selector: {matchLabels: {app: proxy}}
  template:
    metadata: {labels: {app: proxy}}
    spec:
      containers:
      - name: nginx
        image: volley.local/nginx:dev
        imagePullPolicy: Never
        ports: [{containerPort: 8080, name: http}]
        resources:
          requests: {cpu: ${PROXY_CPU:-100m}, memory: 32Mi}
          limits: {cpu: ${PROXY_CPU:-100m}, memory: 64Mi}
        readinessProbe: {httpGet: {path: /nginx-health, port: http}, periodSeconds: 2}
        volumeMounts: [{name: conf, mountPath: /etc/nginx}]
      volumes: [{name: conf, configMap: {name: proxy}}]
---
apiVersion: v1
kind: Service
metadata: {name: proxy}
spec:
  type: NodePort
  selector: {app: proxy}
  ports: [{name: http, port: 80, targetPort: http, nodePort: $PROXY_PORT}]
YAML
dirs=()
for n in 1 2 3; do
  kubectl scale deployment proxy --replicas=$n >/dev/null
  kubectl rollout status deployment/proxy --timeout=120s >/dev/null || fail "the proxy did not reach $n replicas"
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PROXY_PORT/nginx-health" >/dev/null && break; sleep 0.1; done
  # KUBE: add `--kube deployment/proxy`; assert the finding names the proxy pod at its CPU limit.
  "$V" run --url "http://127.0.0.1:$PROXY_PORT/health" --vus "${PROXY_VUS:-32}" --duration "${PROXY_DURATION:-20s}" \
    --no-error-stop --progress none --name "proxy-$n" -o "$OUT/runs/proxy-$n" >"$OUT/proxy-$n.log" 2>&1 || true
  d=$(find "$OUT/runs/proxy-$n" -name run.json 2>/dev/null | head -1)
  [ -n "$d" ] || fail "volley run proxy-$n wrote no run: $(head -3 "$OUT/proxy-$n.log")"
  d=$(dirname "$d"); dirs+=("$d")
  "$V" report "$d" --warmup 0s --format json | python3 -c '
import json, sys
r = json.load(sys.stdin); s = r["seed_suite"]; t = r["per_request"]["ttfb_ms"]
print("proxy x%s: %d errors, TPS %.1f, TTFB p50 %.1f p99 %.1f ms" % (sys.argv[1], s["errors"], s["tps_avg"], t["p50_ms"], t["p99_ms"]))' "$n"
  kubectl get --raw /apis/metrics.k8s.io/v1beta1/namespaces/default/pods | python3 -c '
import json, sys
print("  CPU:", ", ".join("%s %s" % (p["metadata"]["name"], p["containers"][0]["usage"]["cpu"])
      for p in json.load(sys.stdin)["items"] if p["metadata"]["name"].startswith("proxy")))'
done
"$V" compare "${dirs[@]}" --labels "1 proxy,2 proxies,3 proxies" >"$OUT/proxy-compare.txt" 2>&1 || true
head -30 "$OUT/proxy-compare.txt" >&2
echo "kube-acceptance: steps 1-4 ran; the --kube assertions (KUBE:) are to be written" >&2
