#!/usr/bin/env bash
# Stops what scripts/k8s-node/up.sh started, by the PIDs it wrote: the kubelet first (so it
# restarts nothing), then every container containerd runs for it, containerd, metrics-server,
# kube-proxy, the control plane and etcd; removes kube-proxy's iptables rules, the pods' FORWARD
# rules, their network namespaces and the bridge volley0, puts back the kernel settings up.sh
# and the kubelet changed (ip_forward, route_localnet, ...); unmounts what they mounted under the
# state folder and removes it (KEEP=1 keeps it, e.g. to read the logs).
set -uo pipefail
W=${K8S_NODE_WORK:-/tmp/k8s-node}
[ -d "$W/pids" ] || { echo "k8s-node: nothing to stop under $W" >&2; exit 0; }
stop() { # name: SIGTERM, then SIGKILL after 10 s
  local f="$W/pids/$1"; [ -f "$f" ] || return 0
  local pid; pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  fi
  rm -f "$f"
}
stop kubelet
C="$W/containerd"
if [ -S "$C/containerd.sock" ]; then
  CTR=(ctr --address "$C/containerd.sock" -n k8s.io)
  for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do "${CTR[@]}" tasks kill -s KILL "$t" >/dev/null 2>&1; done
  sleep 1
  for t in $("${CTR[@]}" tasks ls -q 2>/dev/null); do "${CTR[@]}" tasks delete -f "$t" >/dev/null 2>&1; done
fi
# Shims whose containerd was this one (they outlive it otherwise).
pkill -KILL -f -- "-address $C/containerd.sock" 2>/dev/null
for name in containerd metrics-server kube-proxy kube-scheduler kube-controller-manager kube-apiserver etcd moto target; do stop "$name"; done
# The pod network: kube-proxy's rules, the pods' drop rules, what portmap added, the pods' network
# namespaces (containerd's, made after up.sh began) and the bridge.
BIN=$(cd "$(dirname "$0")/../.." && pwd)/target/k8s-node/bin
if [ -f "$W/sysctl-net.saved" ]; then
  [ -x "$BIN/kube-proxy" ] && "$BIN/kube-proxy" --cleanup --proxy-mode=iptables >/dev/null 2>&1
  for d in "-i volley0 ! -o volley0" "-o volley0 ! -i volley0"; do
    # shellcheck disable=SC2086
    while iptables -D FORWARD $d -m comment --comment volley-pods -j DROP 2>/dev/null; do :; done
  done
  for t in nat filter; do
    iptables -t "$t" -S 2>/dev/null | grep -- '-j CNI-' | grep -v '^-N' | sed 's/^-A/-D/' \
      | while read -r rule; do eval "iptables -t $t $rule" 2>/dev/null; done
    for c in $(iptables -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^CNI-/ {print $2}'); do
      iptables -t "$t" -F "$c" 2>/dev/null; iptables -t "$t" -X "$c" 2>/dev/null; done
  done
  for ns in $(ls /var/run/netns 2>/dev/null | grep '^cni-'); do
    grep -qx "$ns" "$W/netns.before" 2>/dev/null || ip netns delete "$ns" 2>/dev/null
  done
  ip link del volley0 2>/dev/null
fi
# The kubelet's own chains (KUBE-FIREWALL's drop of non-local traffic to 127.0.0.0/8, its canaries),
# and what kube-proxy's cleanup left: jumps to KUBE-* first, then the chains.
for ipt in iptables ip6tables; do
  command -v $ipt >/dev/null || continue
  for t in filter nat mangle; do
    $ipt -t "$t" -S 2>/dev/null | grep -E '^-A [^ ]+ .*-j KUBE-' | grep -v '^-A KUBE-' | sed 's/^-A/-D/' \
      | while read -r rule; do eval "$ipt -t $t $rule" 2>/dev/null; done
    for c in $($ipt -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
      $ipt -t "$t" -F "$c" 2>/dev/null; done
    for c in $($ipt -t "$t" -S 2>/dev/null | awk '$1 == "-N" && $2 ~ /^KUBE-/ {print $2}'); do
      $ipt -t "$t" -X "$c" 2>/dev/null; done
  done
done
if [ -f "$W/sysctl-net.saved" ]; then
  while read -r k v; do echo "$v" > "/proc/sys/$k" 2>/dev/null; done < "$W/sysctl-net.saved"
fi
# The kernel tunables the kubelet changed, back to what they were.
[ -f "$W/sysctl.saved" ] && while read -r k v; do echo "$v" > "/proc/sys/$k" 2>/dev/null; done < "$W/sysctl.saved"
# The cgroups the kubelet made (empty once their containers are gone).
for d in /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods*; do
  [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
grep -o " ${W}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
if [ -z "${KEEP:-}" ]; then rm -rf "$W"; echo "k8s-node: stopped; $W removed" >&2
else echo "k8s-node: stopped; state kept in $W" >&2; fi
