#!/usr/bin/env bash
# A real single-node Kubernetes cluster on this machine's loopback, for running volley's Indexed
# Job for real (scripts/k8s-node/acceptance.sh; docs/kubernetes.md "On a real node").
#
# Brings up, each as a process of its own (PIDs in $K8S_NODE_WORK/pids/, logs beside them):
#   etcd (Debian), kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kube-proxy and
#   kubectl (v1.37.2, built from the Go module proxy with this folder's go.mod the first time, 8 min
#   on 2 cores; cached in target/k8s-node/), metrics-server v0.8.0 (../metrics-server/go.mod) as a
#   host process behind the API server's aggregation layer, containerd + runc (Debian), a pod
#   network on the bridge volley0 (10.244.0.0/24, Debian's CNI bridge + host-local + portmap) that
#   routes nowhere off this machine (a FORWARD drop rule; no masquerade, no default route in the
#   pods), Services through kube-proxy (iptables mode; a NodePort answers on 127.0.0.1 only), an
#   HPA that syncs every 5 s, the pause image built here from Kubernetes' own pause.c and volley's image
#   (image.sh; there is no registry: images are imported into containerd's k8s.io namespace), and
#   moto as the S3 endpoint with bucket volley-results and the Secret volley-s3 the manifests use.
# Every port is on 127.0.0.1. The kubelet takes requests only from the API server's client
# certificate (x509 + webhook authorization), the API server only from this run's random token.
#
#   eval "$(scripts/k8s-node/up.sh)"      # prints: export KUBECONFIG=... PATH=... AWS_...=...
#   scripts/k8s-node/down.sh             # stops everything by PID, unmounts, removes the state
# Needs root (containerd, kubelet) and cgroups; the kubelet runs on cgroup v1 with
# failCgroupV1: false when the machine has no unified hierarchy.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
W=${K8S_NODE_WORK:-/tmp/k8s-node}
CACHE="$ROOT/target/k8s-node"
BIN="$CACHE/bin"
PORT=${K8S_NODE_API_PORT:-17443}
EPORT=${K8S_NODE_ETCD_PORT:-23890}
MOTO_PORT=${K8S_NODE_S3_PORT:-18091}
BUCKET=volley-results
# The node's name is also the address the API server reaches the kubelet at (kubectl logs, exec):
# the kubelet refuses a loopback node IP, so the node is named for loopback instead.
NODE=localhost
BRIDGE=volley0; POD_CIDR=10.244.0.0/24; GW=10.244.0.1; SVC_CIDR=10.0.0.0/24
say() { echo "k8s-node: $*" >&2; }
die() { say "$*"; exit 1; }
[ "$(id -u)" = 0 ] || die "run it as root: containerd and the kubelet manage mounts and cgroups"

# --- what this needs from Debian -----------------------------------------------------------
need=()
for c in etcd:etcd-server containerd:containerd runc:runc ctr:containerd skopeo:skopeo umoci:umoci \
         openssl:openssl gcc:gcc conntrack:conntrack iptables:iptables; do
  command -v "${c%%:*}" >/dev/null || need+=("${c#*:}")
done
for p in loopback bridge host-local portmap; do
  [ -x /usr/lib/cni/$p ] || { need+=(containernetworking-plugins); break; }
done
command -v ip >/dev/null || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} (apt)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# --- the components, built once from the module proxy --------------------------------------
COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
missing=0; for c in "${COMPONENTS[@]}"; do [ -x "$BIN/$c" ] || missing=1; done
if [ $missing = 1 ]; then
  say "building ${COMPONENTS[*]} v1.37.2 into $BIN (first time only; 8 min on 2 cores here)"
  mkdir -p "$BIN"
  # The version Kubernetes' own build stamps in (a module build says v0.0.0-master otherwise).
  v=k8s.io/component-base/version
  (cd "$HERE" && GOCACHE="$CACHE/go-build" GOMODCACHE="$CACHE/gomod" \
     go build -ldflags "-X $v.gitVersion=v1.37.2 -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean" \
       -o "$BIN/" "${COMPONENTS[@]/#/k8s.io/kubernetes/cmd/}")
fi
# metrics-server from a go.mod of its own (its k8s.io/* are 0.33, not the node's 0.37).
if [ ! -x "$BIN/metrics-server" ]; then
  say "building metrics-server v0.8.0 into $BIN (first time only)"
  v=sigs.k8s.io/metrics-server/pkg/version
  (cd "$HERE/../metrics-server" && GOCACHE="$CACHE/go-build" GOMODCACHE="$CACHE/gomod" \
     go build -ldflags "-X k8s.io/component-base/version.gitVersion=v0.8.0 -X $v.gitVersion=v0.8.0" \
       -o "$BIN/" sigs.k8s.io/metrics-server/cmd/metrics-server)
fi

if [ -f "$W/pids/kubelet" ] && kill -0 "$(cat "$W/pids/kubelet")" 2>/dev/null; then
  cat "$W/env"; exit 0
fi
rm -rf "$W"; mkdir -p "$W"/{pids,logs,pki,cni/net.d,containerd,kubelet}
start() { # name, command...: runs it in the background, its PID in pids/NAME, output in logs/NAME.log
  local name=$1; shift
  "$@" >"$W/logs/$name.log" 2>&1 & echo $! >"$W/pids/$name"
}
wait_for() { # what, seconds, command...
  local what=$1 secs=$2; shift 2
  for _ in $(seq "$secs"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  die "$what did not come up within ${secs}s; see $W/logs/"
}

# --- certificates: one CA; the API server's serving cert, its client cert for the kubelet ----
P="$W/pki"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.crt" -days 2 \
  -subj "/CN=volley-node-ca" 2>/dev/null
cert() { # name, subject, extensions
  openssl req -newkey rsa:2048 -nodes -keyout "$P/$1.key" -out "$P/$1.csr" -subj "$2" 2>/dev/null
  printf '%s\n' "$3" > "$P/$1.ext"
  openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial \
    -out "$P/$1.crt" -days 2 -extfile "$P/$1.ext" 2>/dev/null
}
cert apiserver "/CN=kube-apiserver" \
  "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,IP:10.0.0.1"
cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
cert kubelet "/CN=localhost" "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
# kube-proxy, covered by the built-in binding system:node-proxier.
cert kube-proxy "/CN=system:kube-proxy" "extendedKeyUsage=clientAuth"
# metrics-server: served to the API server on the bridge's address, and its client certificate
# to the API server and the kubelets (RBAC below).
cert metrics-server "/CN=system:metrics-server" \
  "subjectAltName=IP:$GW,DNS:metrics-server.kube-system.svc,DNS:metrics-server.kube-system.svc.cluster.local
extendedKeyUsage=serverAuth,clientAuth"
# The aggregation layer: a CA of its own, whose client (the API server proxying to
# metrics-server) says who the user is in request headers.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/front-proxy-ca.key" -out "$P/front-proxy-ca.crt" \
  -days 2 -subj "/CN=volley-front-proxy-ca" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$P/front-proxy-client.key" -out "$P/front-proxy-client.csr" \
  -subj "/CN=front-proxy-client" 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' > "$P/front-proxy-client.ext"
openssl x509 -req -in "$P/front-proxy-client.csr" -CA "$P/front-proxy-ca.crt" -CAkey "$P/front-proxy-ca.key" \
  -CAcreateserial -out "$P/front-proxy-client.crt" -days 2 -extfile "$P/front-proxy-client.ext" 2>/dev/null
openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
TOKEN=$(openssl rand -hex 24)
echo "$TOKEN,admin,admin,system:masters" > "$P/tokens.csv"
chmod 600 "$P"/*.key "$P/tokens.csv"
KC="$W/admin.kubeconfig"
cat > "$KC" <<KCEOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$PORT", certificate-authority: "$P/ca.crt"}}]
users: [{name: admin, user: {token: "$TOKEN"}}]
contexts: [{name: local, context: {cluster: local, user: admin, namespace: default}}]
current-context: local
KCEOF
chmod 600 "$KC"
kubeconfig() { # name: $W/NAME.kubeconfig with the client certificate pki/NAME.crt
  cat > "$W/$1.kubeconfig" <<KCEOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$PORT", certificate-authority: "$P/ca.crt"}}]
users: [{name: $1, user: {client-certificate: "$P/$1.crt", client-key: "$P/$1.key"}}]
contexts: [{name: local, context: {cluster: local, user: $1}}]
current-context: local
KCEOF
  chmod 600 "$W/$1.kubeconfig"
}
kubeconfig kube-proxy
kubeconfig metrics-server

# --- the pod network: a bridge on this machine only -----------------------------------------
# The kernel settings it changes, saved for down.sh; the bridge exists before the kubelet (the
# CNI bridge plugin adopts it) so metrics-server can listen on its address.
for k in net/ipv4/ip_forward net/ipv4/conf/all/route_localnet net/bridge/bridge-nf-call-iptables; do
  [ -f /proc/sys/$k ] && echo "$k $(cat /proc/sys/$k)"; done > "$W/sysctl-net.saved"
ls /var/run/netns 2>/dev/null | grep '^cni-' > "$W/netns.before" || true
ip link add "$BRIDGE" type bridge 2>/dev/null || true
ip addr replace "$GW/24" dev "$BRIDGE"
ip link set "$BRIDGE" up
echo 1 > /proc/sys/net/ipv4/ip_forward                  # pod -> Service -> pod goes through the host
[ -f /proc/sys/net/bridge/bridge-nf-call-iptables ] && echo 1 > /proc/sys/net/bridge/bridge-nf-call-iptables
# Nothing from a pod leaves the bridge except to this host: no route off the machine.
iptables -C FORWARD -i "$BRIDGE" ! -o "$BRIDGE" -m comment --comment volley-pods -j DROP 2>/dev/null \
  || iptables -I FORWARD 1 -i "$BRIDGE" ! -o "$BRIDGE" -m comment --comment volley-pods -j DROP
iptables -C FORWARD -o "$BRIDGE" ! -i "$BRIDGE" -m comment --comment volley-pods -j DROP 2>/dev/null \
  || iptables -I FORWARD 1 -o "$BRIDGE" ! -i "$BRIDGE" -m comment --comment volley-pods -j DROP

# --- etcd and the control plane -------------------------------------------------------------
start etcd etcd --data-dir "$W/etcd" --listen-client-urls "http://127.0.0.1:$EPORT" \
  --advertise-client-urls "http://127.0.0.1:$EPORT" --listen-peer-urls "http://127.0.0.1:$((EPORT + 10))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((EPORT + 10))" \
  --initial-cluster "default=http://127.0.0.1:$((EPORT + 10))"
start kube-apiserver "$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$EPORT" \
  --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$PORT" \
  --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
  --client-ca-file="$P/ca.crt" --token-auth-file="$P/tokens.csv" --authorization-mode=Node,RBAC \
  --kubelet-client-certificate="$P/kubelet-client.crt" --kubelet-client-key="$P/kubelet-client.key" \
  --kubelet-certificate-authority="$P/ca.crt" \
  --service-account-issuer=https://kubernetes.default.svc --service-account-key-file="$P/sa.pub" \
  --service-account-signing-key-file="$P/sa.key" --service-cluster-ip-range="$SVC_CIDR" \
  --endpoint-reconciler-type=none \
  --requestheader-client-ca-file="$P/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
  --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --proxy-client-cert-file="$P/front-proxy-client.crt" --proxy-client-key-file="$P/front-proxy-client.key" \
  --enable-aggregator-routing=true
wait_for kube-apiserver 120 "$BIN/kubectl" --kubeconfig "$KC" get --raw /readyz
common=(--kubeconfig "$KC" --authentication-kubeconfig "$KC" --authorization-kubeconfig "$KC"
        --bind-address=127.0.0.1 --leader-elect=false)
start kube-controller-manager "$BIN/kube-controller-manager" "${common[@]}" --secure-port=10257 \
  --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
  --use-service-account-credentials=false \
  --horizontal-pod-autoscaler-sync-period=5s --horizontal-pod-autoscaler-downscale-stabilization=30s
start kube-scheduler "$BIN/kube-scheduler" "${common[@]}" --secure-port=10259

# --- containerd: its own root, state and socket under $W; the pause image imported ---------
C="$W/containerd"
cap=$(awk '/^CapEff/ {print $2}' /proc/self/status)
if (( 0x$cap >> 24 & 1 )); then restrict_oom=false; else restrict_oom=true; fi   # CAP_SYS_RESOURCE
# Pods get an address on the bridge and routes to their /24 and the Service range only (no
# default route, no masquerade); hairpin lets a pod reach itself through its Service.
cat > "$W/cni/net.d/10-volley-pods.conflist" <<CNI
{ "cniVersion": "1.0.0", "name": "volley-pods", "plugins": [
  { "type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": { "type": "host-local", "dataDir": "$W/cni/ipam",
              "ranges": [[{ "subnet": "$POD_CIDR", "gateway": "$GW" }]],
              "routes": [{ "dst": "$SVC_CIDR" }] } },
  { "type": "portmap", "capabilities": { "portMappings": true } } ] }
CNI
cat > "$C/config.toml" <<TOML
version = 2
root = "$C/root"
state = "$C/state"
[grpc]
  address = "$C/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "volley.local/pause:3.10"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # The kubelet asks for oom_score_adj -998 (sandboxes) and -997 (Guaranteed pods); lowering it
  # needs CAP_SYS_RESOURCE, which root lacks in some sandboxed VMs (this one). Kept no lower than
  # containerd's own, as rootless setups do; a real node has the capability and the scores.
  restrict_oom_score_adj = $restrict_oom
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$W/cni/net.d"
TOML
start containerd containerd --config "$C/config.toml"
CTR=(ctr --address "$C/containerd.sock" -n k8s.io)
wait_for containerd 30 "${CTR[@]}" version
"$HERE/image.sh" pause "$W/pause.tar" >&2
"${CTR[@]}" images import "$W/pause.tar" >/dev/null

# --- the kubelet ------------------------------------------------------------------------------
cgv1=true; [ -f /sys/fs/cgroup/cgroup.controllers ] && cgv1=false
cat > "$W/kubelet/config.yaml" <<KCFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$P/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$P/kubelet.crt"
tlsPrivateKeyFile: "$P/kubelet.key"
cgroupDriver: cgroupfs
failCgroupV1: $( $cgv1 && echo false || echo true )
failSwapOn: false
containerRuntimeEndpoint: "unix://$C/containerd.sock"
imageServiceEndpoint: "unix://$C/containerd.sock"
resolvConf: /etc/resolv.conf
serializeImagePulls: false
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: 20
podLogsDir: "$W/kubelet/logs"
KCFG
# The kubelet sets kernel tunables of its own (vm.overcommit_memory=1, kernel.panic=10, ...); the
# machine's values are saved here, and down.sh puts them back.
for k in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops kernel/keys/root_maxkeys kernel/keys/root_maxbytes; do
  echo "$k $(cat /proc/sys/$k)"; done > "$W/sysctl.saved"
start kubelet "$BIN/kubelet" --config "$W/kubelet/config.yaml" --kubeconfig "$KC" \
  --root-dir "$W/kubelet/root" --hostname-override "$NODE"
K=("$BIN/kubectl" --kubeconfig "$KC")
wait_for "node $NODE Ready" 180 bash -c "'$BIN/kubectl' --kubeconfig '$KC' get node $NODE -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
wait_for "the default service account" 60 "${K[@]}" get serviceaccount default

# --- kube-proxy: Services in iptables mode; NodePorts on 127.0.0.1 only (it sets route_localnet) --
start kube-proxy "$BIN/kube-proxy" --kubeconfig "$W/kube-proxy.kubeconfig" --proxy-mode=iptables \
  --hostname-override="$NODE" --cluster-cidr="$POD_CIDR" --nodeport-addresses=127.0.0.1/32 \
  --bind-address=127.0.0.1 --healthz-bind-address=127.0.0.1:10256 --metrics-bind-address=127.0.0.1:10249 \
  --conntrack-max-per-core=0 --conntrack-tcp-timeout-established=0 --conntrack-tcp-timeout-close-wait=0
wait_for kube-proxy 60 curl -sf http://127.0.0.1:10256/healthz
# Its own FORWARD rules go first; the pods' drop rules are put back in front of them.
for d in "-i $BRIDGE ! -o $BRIDGE" "-o $BRIDGE ! -i $BRIDGE"; do
  # shellcheck disable=SC2086
  iptables -D FORWARD $d -m comment --comment volley-pods -j DROP 2>/dev/null || true
  # shellcheck disable=SC2086
  iptables -I FORWARD 1 $d -m comment --comment volley-pods -j DROP
done

# --- metrics-server: a host process on the bridge's address, behind the aggregation layer ------
CA_B64=$(base64 -w0 "$P/ca.crt")
"${K[@]}" apply -f - >/dev/null <<YAML
# Upstream's manifests/base/rbac.yaml, for the user of metrics-server's certificate.
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:metrics-server", labels: {k8s-app: metrics-server}}
rules:
- {apiGroups: [""], resources: [nodes/metrics], verbs: [get]}
- {apiGroups: [""], resources: [pods, nodes], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:metrics-server", labels: {k8s-app: metrics-server}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:metrics-server"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "metrics-server:system:auth-delegator", labels: {k8s-app: metrics-server}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: metrics-server-auth-reader, namespace: kube-system, labels: {k8s-app: metrics-server}}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:metrics-server"}]
---
# No selector: its one endpoint is the host process on the bridge's address.
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system, labels: {k8s-app: metrics-server}}
spec:
  ports: [{name: https, port: 443, protocol: TCP, targetPort: 4443}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: metrics-server-host
  namespace: kube-system
  labels: {kubernetes.io/service-name: metrics-server, endpointslice.kubernetes.io/managed-by: volley-k8s-node}
addressType: IPv4
ports: [{name: https, port: 4443, protocol: TCP}]
endpoints: [{addresses: ["$GW"], conditions: {ready: true}}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io, labels: {k8s-app: metrics-server}}
spec:
  service: {name: metrics-server, namespace: kube-system, port: 443}
  group: metrics.k8s.io
  version: v1beta1
  caBundle: $CA_B64
  groupPriorityMinimum: 100
  versionPriority: 100
YAML
MS="$W/metrics-server.kubeconfig"
start metrics-server "$BIN/metrics-server" --kubeconfig "$MS" --authentication-kubeconfig "$MS" \
  --authorization-kubeconfig "$MS" --bind-address="$GW" --secure-port=4443 \
  --tls-cert-file="$P/metrics-server.crt" --tls-private-key-file="$P/metrics-server.key" \
  --kubelet-preferred-address-types=Hostname --kubelet-port=10250 \
  --kubelet-certificate-authority="$P/ca.crt" \
  --kubelet-client-certificate="$P/metrics-server.crt" --kubelet-client-key="$P/metrics-server.key" \
  --metric-resolution=10s --kubelet-request-timeout=5s --cert-dir="$W/metrics-server-certs"
wait_for "the metrics API" 120 "${K[@]}" get --raw /apis/metrics.k8s.io/v1beta1/nodes

# --- volley's image, when it is built -------------------------------------------------------
if [ -x "$ROOT/target/release/volley" ]; then
  "$HERE/image.sh" volley "$W/volley.tar" "$ROOT/target/release/volley" >&2
  "${CTR[@]}" images import "$W/volley.tar" >/dev/null
else
  say "no target/release/volley: build it (cargo build --release -p volley-cli) and run up.sh again for volley.local/volley:dev"
fi

# --- S3: moto on loopback, a bucket, and the Secret the manifests refer to -------------------
moto=$(command -v moto_server || true)
[ -n "$moto" ] || moto="$ROOT/target/tools/venv/bin/moto_server"
if [ ! -x "$moto" ]; then
  # The versions scripts/test.sh pins, in a venv of this node's own.
  say "installing moto (PyPI) into $CACHE/venv"
  python3 -m venv "$CACHE/venv" >&2
  "$CACHE/venv/bin/pip" install -q "moto[s3]==5.2.5" "flask==3.1.3" "flask-cors==6.0.5" >&2
  moto="$CACHE/venv/bin/moto_server"
fi
start moto "$moto" -H 127.0.0.1 -p "$MOTO_PORT"
wait_for moto 30 curl -sf "http://127.0.0.1:$MOTO_PORT/"
curl -sf -X PUT "http://127.0.0.1:$MOTO_PORT/$BUCKET" >/dev/null || die "moto did not create bucket $BUCKET"
S3_KEY=volley-node; S3_SECRET=$(openssl rand -hex 16)   # moto takes any key
"${K[@]}" create secret generic volley-s3 --from-literal=AWS_ACCESS_KEY_ID=$S3_KEY \
  --from-literal=AWS_SECRET_ACCESS_KEY="$S3_SECRET" >/dev/null

say "node $NODE Ready; pods on $BRIDGE ($POD_CIDR), Services $SVC_CIDR (NodePorts on 127.0.0.1), metrics API up; S3 at http://127.0.0.1:$MOTO_PORT, bucket $BUCKET; state in $W (scripts/k8s-node/down.sh stops it)"
echo "export KUBECONFIG=$KC PATH=$BIN:\$PATH AWS_ENDPOINT_URL=http://127.0.0.1:$MOTO_PORT AWS_ACCESS_KEY_ID=$S3_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET AWS_REGION=us-east-1" | tee "$W/env"
