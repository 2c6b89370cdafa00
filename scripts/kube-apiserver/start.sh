#!/usr/bin/env bash
# A real Kubernetes API server (v1.37, no nodes) on loopback, for checking generated manifests with
# server-side validation (`kubectl apply --dry-run=server`) or creating objects through the API.
# Builds kube-apiserver from the Go module proxy the first time (go.mod here pins the k8s.io staging
# modules; ~3-10 min on 2 cores), runs Debian's etcd beside it. Usage:
#   scripts/kube-apiserver/start.sh   -> prints: export KUBECONFIG=...   (state in $KUBE_WORK)
#   scripts/kube-apiserver/stop.sh
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${KUBE_WORK:-/tmp/kube-apiserver}; mkdir -p "$W"
PORT=${KUBE_PORT:-16443}; EPORT=${KUBE_ETCD_PORT:-23790}
command -v etcd >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >/dev/null; }
command -v kubectl >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kubernetes-client >/dev/null || true; }
if [ ! -x "$W/kube-apiserver" ]; then
  echo "building kube-apiserver (first time only) ..." >&2
  (cd "$HERE" && go build -o "$W/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver)
fi
if [ -f "$W/api.pid" ] && kill -0 "$(cat "$W/api.pid")" 2>/dev/null; then echo "export KUBECONFIG=$W/kubeconfig"; exit 0; fi
[ -f "$W/sa.key" ] || { openssl genrsa -out "$W/sa.key" 2048 2>/dev/null; openssl rsa -in "$W/sa.key" -pubout -out "$W/sa.pub" 2>/dev/null; }
echo "admintoken,admin,admin,system:masters" > "$W/tokens.csv"
rm -rf "$W/etcd"
etcd --data-dir "$W/etcd" --listen-client-urls "http://127.0.0.1:$EPORT" --advertise-client-urls "http://127.0.0.1:$EPORT" \
  --listen-peer-urls "http://127.0.0.1:$((EPORT + 10))" >"$W/etcd.log" 2>&1 & echo $! > "$W/etcd.pid"
"$W/kube-apiserver" --etcd-servers="http://127.0.0.1:$EPORT" --bind-address=127.0.0.1 --secure-port="$PORT" \
  --cert-dir="$W/certs" --token-auth-file="$W/tokens.csv" --authorization-mode=RBAC \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$W/sa.pub" \
  --service-account-signing-key-file="$W/sa.key" --service-cluster-ip-range=10.0.0.0/24 \
  --endpoint-reconciler-type=none >"$W/apiserver.log" 2>&1 & echo $! > "$W/api.pid"
cat > "$W/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$PORT", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: admintoken}}]
contexts: [{name: local, context: {cluster: local, user: admin, namespace: default}}]
current-context: local
KC
for i in $(seq 90); do
  curl -sk -H "Authorization: Bearer admintoken" "https://127.0.0.1:$PORT/readyz" 2>/dev/null | grep -q ok && { echo "export KUBECONFIG=$W/kubeconfig"; exit 0; }
  sleep 1; done
echo "kube-apiserver did not become ready; see $W/apiserver.log" >&2; exit 1
