#!/usr/bin/env bash
# Issue 54's acceptance (§3): the seeds' cluster story, on the single node of up.sh, with the load
# from `volley run --kube deployment/NAME` through a NodePort on 127.0.0.1 and every step checked
# from the run directory volley wrote (kube.jsonl, kube.csv, series.csv; kube-assert.py) and from
# volley's own findings in its report.json (FINDINGS=0 skips those). Needs root; not part of the
# test command; ~8 min. docs/kubernetes.md "The seeds' cluster story, on the real node" has the
# figures of the runs; fixtures/runs/kube-*/ keeps three of them.
#
# In the seeds an ingress (ingress-nginx) sat in front of the chat pods and chose a ready endpoint
# for every request. So here too: one nginx pod (image.sh nginx) is the ingress, behind the NodePort
# the load goes to, and proxies to the chat Service's clusterIP with a new connection per request
# (no upstream keepalive), so kube-proxy picks among the ready endpoints each time and, with none
# ready, the connection is refused and nginx answers 502. (Without it, volley's keep-alive
# connections through a NodePort stay on their pod: conntrack keeps a connection on an endpoint
# that left the Service, and an unready pod costs no error.)
#
# 1. Readiness timeoutSeconds 1 under a step-up: two pods of the demo target whose /health shares
#    the workers (--health-shares-workers), so a saturated pod misses its probe and leaves the
#    Service, as Spring's did in the seeds' Phase 2: errors appear while pods are not ready.
# 2. The same with timeoutSeconds 60: the probes wait instead of failing, the pods stay in the
#    Service, and the errors go: none, or HTTP 503 only at most a fifth of step 1's rate (random
#    routing can still fill one pod's accept queue with both pods Ready: 20, 14, 0, 0 and 8 HTTP
#    503 of ~4,700 in five runs after the demo's queue-leak fix; QUEUES=1 shows each pod's queue);
#    `volley compare` of the two.
# 3. An HPA on CPU (50 % of a 100m request, 1-3 replicas): the scale-out under load, TPS after.
# 4. The proxy is what is measured: one nginx pod with a CPU limit of 100m (upstream keepalive, as
#    ingress-nginx keeps to its endpoints), then 2 and 3 replicas: per-pod CPU against the limit,
#    and `volley compare` of the three.
#
#   sudo scripts/k8s-node/kube-acceptance.sh   # SKIP_BUILD=1 STEPS="1 2 3 4" STAGES=... NODEPORT=30080 QUEUES=1
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
cd "$ROOT"
NODEPORT=${NODEPORT:-30080}
STEPS=${STEPS:-1 2 3 4}
# A step-up in virtual users, each request 5 ms of CPU on a 200m pod: ~40 req/s a pod at most, so
# at 100 VUs a probe queued behind ~50 requests waits over 1 s (at 40 VUs it waited ~0.5 s and
# never failed: the first run, 2026-11-29).
STAGES=${STAGES:-10s:5,20s:5,10s:100,30s:100}
# Requests a chat pod lets wait for its 8 workers (Tomcat accept-count; beyond it 503): 100 VUs on
# two pods fit (~50 each), on one pod they do not, so a pod that leaves the Service costs errors
# on the other, as in the seeds. Measured 2026-11-29: with 100 the pod left held all 100 VUs (2
# errors in 4,529); with 70 the errors came (822) but with timeoutSeconds 60 too (160 HTTP 503:
# random routing piles the VUs onto a pod that stalls); 85 gave 489 errors, then none. Those runs
# predate the demo's fix of 8f55519 (each probe that timed out while waiting for a worker shrank
# its pod's queue for good); with it, 85 gave 198, 159, 225, 229 and 170 errors in step 1.
ACCEPT=${ACCEPT:-85}
OUT=${OUT:-$ROOT/target/k8s-node/kube-acceptance}
V="$ROOT/target/release/volley"
URL="http://127.0.0.1:$NODEPORT"
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
"$HERE/image.sh" nginx "$OUT/nginx.tar" >&2
ctr --address "${K8S_NODE_WORK:-/tmp/k8s-node}/containerd/containerd.sock" -n k8s.io images import "$OUT/nginx.tar" >/dev/null

chat() { # replicas, readiness timeoutSeconds: the demo target's Deployment and its (clusterIP) Service
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
               --max-threads, "8", --accept-count, "$ACCEPT", --health-shares-workers]
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
  selector: {app: chat}
  ports: [{name: http, port: 80, targetPort: http}]
YAML
  kubectl rollout status deployment/chat --timeout=120s >/dev/null || fail "chat did not become ready"
}

unchat() { # the chat Deployment gone, its pods too, and the Events of the step before
  kubectl delete hpa chat --ignore-not-found >/dev/null
  kubectl delete deployment chat --ignore-not-found --wait=true >/dev/null
  kubectl wait --for=delete pod -l app=chat --timeout=60s >/dev/null 2>&1 || true
  kubectl delete events --all >/dev/null
}

proxy() { # replicas, CPU limit, keepalive|ingress: nginx in front of chat's clusterIP, on the NodePort
  local cip upstream location
  cip=$(kubectl get service chat -o jsonpath='{.spec.clusterIP}')   # no CoreDNS here
  if [ "$3" = keepalive ]; then
    upstream="upstream chat { server $cip:80; keepalive 64; }"
    location="proxy_pass http://chat; proxy_http_version 1.1; proxy_set_header Connection \"\";"
  else # a new connection per request: kube-proxy picks a ready endpoint every time
    upstream=""
    location="proxy_pass http://$cip:80; proxy_http_version 1.1;"
  fi
  kubectl delete deployment proxy --ignore-not-found --wait=true >/dev/null
  kubectl wait --for=delete pod -l app=proxy --timeout=60s >/dev/null 2>&1 || true
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
      $upstream
      server {
        listen 8080;
        location /nginx-health { return 200 "ok\n"; }
        location / { $location }
      }
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: proxy, labels: {app: proxy}}
spec:
  replicas: $1
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
          requests: {cpu: $2, memory: 32Mi}
          limits: {cpu: $2, memory: 64Mi}
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
  ports: [{name: http, port: 80, targetPort: http, nodePort: $NODEPORT}]
YAML
  kubectl rollout status deployment/proxy --timeout=120s >/dev/null || fail "the proxy did not become ready"
}

through() { # the NodePort answers through the proxy and the chat Service (kube-proxy's rules are
  # written within a second or so of a change)
  for _ in $(seq 200); do curl -sf "$URL/health" >/dev/null && return 0; sleep 0.1; done
  fail "the NodePort $NODEPORT does not answer through the proxy to chat"
}

run() { # name, volley's flags...: one run into $OUT/runs/NAME; prints its directory last
  local name=$1; shift
  "$V" run "$@" --timeout 5s --no-error-stop --progress none \
    --name "$name" -o "$OUT/runs/$name" >"$OUT/$name.log" 2>&1 || true
  local dir
  dir=$(find "$OUT/runs/$name" -name run.json 2>/dev/null | head -1)
  [ -n "$dir" ] || fail "volley run $name wrote no run: $(head -3 "$OUT/$name.log")"
  dir=$(dirname "$dir")
  [ -s "$dir/kube.jsonl" ] && [ -s "$dir/kube.csv" ] || fail "volley run $name wrote no kube.jsonl/kube.csv: $(head -3 "$OUT/$name.log")"
  "$V" report "$dir" --warmup 0s --format json >"$OUT/$name.report.json"
  nosecret "$dir"
  echo "$dir"
}

nosecret() { # dir: none of the kubeconfig's credentials (its token, the CA's and keys' bytes) in it
  python3 - "$KUBECONFIG" "$1" <<'PY' >&2 || fail "a credential from the kubeconfig is in $1"
import os, re, sys
kc, d = open(sys.argv[1]).read(), sys.argv[2]
needles = []
for key, val in re.findall(r'(token|certificate-authority|client-certificate|client-key)(?:-data)?:\s*"?([^"\s}]+)', kc):
    if key != "token" and os.path.isfile(val):   # a file: every base64 line of its PEM
        needles += [l for l in open(val).read().splitlines() if len(l) >= 32 and not l.startswith("-----")]
    else:
        needles.append(val)
needles = [n.encode()[:40] for n in needles if len(n) >= 16]
assert needles, "no credential found in the kubeconfig to look for"
for root, _, files in os.walk(d):
    for f in files:
        data = open(os.path.join(root, f), "rb").read()
        for n in needles:
            if n in data:
                sys.exit("%s holds %s..." % (os.path.join(root, f), n[:6]))
print("  no credential of the kubeconfig (%d pieces) in %s" % (len(needles), d))
PY
}

failed=()
check() { # step, dir[, step 1's dir]: kube-assert.py's figures and verdict; a failed step is
  # reported at the end, after the other steps ran
  python3 "$HERE/kube-assert.py" "$@" | tee "$OUT/$(basename "$2").$1.txt" >&2 \
    || failed+=("$1 ($(basename "$2")): $(tail -1 "$OUT/$(basename "$2").$1.txt")")
}

# volley's own words about the cluster (issue 54 §2): report.json's `findings` must match these
# (FINDINGS=0 skips them, for a binary built before the findings existed).
FINDINGS=${FINDINGS:-1}
findings() { # name, regex...: each regex must match one of the findings of $OUT/NAME.report.json;
  # a regex written !REGEX must match none
  [ "$FINDINGS" = 1 ] || return 0
  local name=$1; shift
  python3 - "$OUT/$name.report.json" "$@" <<'PY' | tee "$OUT/$name.findings.txt" >&2
import json, re, sys
fs = json.load(open(sys.argv[1])).get("findings") or []
for f in fs:
    print("  finding: " + f)
bad = [rx for rx in sys.argv[2:] if not rx.startswith("!") and not any(re.search(rx, f) for f in fs)]
bad += [rx for rx in sys.argv[2:] if rx.startswith("!") and any(re.search(rx[1:], f) for f in fs)]
print("FAILED: findings against " + " / ".join(bad) if bad else "  findings OK")
PY
  grep -q '^FAILED' "$OUT/$name.findings.txt" && failed+=("findings of $name: $(tail -1 "$OUT/$name.findings.txt")")
  return 0
}

# QUEUES=1: steps 1-2 also scrape each chat pod's own /metrics at its pod address (observation
# only; the load still goes through the NodePort) into server.csv, and kube-assert.py prints each
# pod's accept-queue depth and its 503s (volley_demo_accept_queue_waiting, _rejected_total) per
# second: which pod refused, when, and how full its queue was.
QUEUES=${QUEUES:-0}
queues() {
  [ "$QUEUES" = 1 ] || return 0
  local ip
  for ip in $(kubectl get pods -l app=chat -o jsonpath='{.items[*].status.podIP}'); do
    printf -- '--server-metrics http://%s:8080/metrics ' "$ip"
  done
}

chat_up=0
ensure_ingress() { # chat's Service exists before the proxy is pointed at its clusterIP
  [ $chat_up = 1 ] && return 0
  proxy 1 300m ingress; chat_up=1
}

if [[ " $STEPS " == *" 1 "* || " $STEPS " == *" 2 "* ]]; then
  say "1. readiness timeoutSeconds 1 under a step-up ($STAGES), through the ingress"
  chat 2 1; ensure_ingress; through
  p1=$(run phase-probe-1s --url "$URL/rooms" --stages "$STAGES" --kube deployment/chat $(queues) | tail -1)
  check probe "$p1"
  findings phase-probe-1s 'was not ready .* s \(readiness probe'
  if [[ " $STEPS " == *" 2 "* ]]; then
    say "2. readiness timeoutSeconds 60, the same step-up"
    unchat; chat 2 60; through
    p2=$(run phase-probe-60s --url "$URL/rooms" --stages "$STAGES" --kube deployment/chat $(queues) | tail -1)
    check noprobe "$p2" "$p1"
    findings phase-probe-60s '!was not ready'
    "$V" compare "$p1" "$p2" --labels "timeoutSeconds 1,timeoutSeconds 60" >"$OUT/compare.txt" 2>&1 || true
    head -40 "$OUT/compare.txt" >&2
  fi
fi

if [[ " $STEPS " == *" 3 "* ]]; then
  say "3. an HPA on CPU 50 % of the request, through the ingress"
  unchat; chat 1 60; ensure_ingress; through
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
  # The HPA's first reading (metrics-server at 10 s resolution) before the load.
  for _ in $(seq 60); do
    [ -n "$(kubectl get hpa chat -o jsonpath='{.status.currentMetrics[0].resource.current.averageUtilization}')" ] && break; sleep 1
  done
  p3=$(run phase-hpa --url "$URL/rooms" --stages "${HPA_STAGES:-10s:10,80s:10}" --kube deployment/chat | tail -1)
  check hpa "$p3"
  findings phase-hpa 'The HPA \S+ scaled \S+ \d+ → \d+ at'
fi

if [[ " $STEPS " == *" 4 "* ]]; then
  say "4. nginx pods (CPU limit ${PROXY_CPU:-100m}) in front of the target: 1, 2 and 3 replicas"
  unchat; chat 2 60
  dirs=()
  for n in 1 2 3; do
    proxy "$n" "${PROXY_CPU:-100m}" keepalive; through
    d=$(run "proxy-$n" --url "$URL/health" --vus "${PROXY_VUS:-32}" --duration "${PROXY_DURATION:-30s}" \
      --kube deployment/proxy | tail -1)
    dirs+=("$d")
    check cpu "$d"
    findings "proxy-$n" 'at its CPU limit'
  done
  "$V" compare "${dirs[@]}" --labels "1 proxy,2 proxies,3 proxies" >"$OUT/proxy-compare.txt" 2>&1 || true
  head -40 "$OUT/proxy-compare.txt" >&2
fi
if [ ${#failed[@]} -gt 0 ]; then
  printf 'kube-acceptance: FAILED %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "kube-acceptance: steps $STEPS passed; runs in $OUT/runs" >&2
