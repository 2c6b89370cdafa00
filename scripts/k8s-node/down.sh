#!/usr/bin/env bash
# Stops what scripts/k8s-node/up.sh started, by the PIDs it wrote: the kubelet first (so it
# restarts nothing), then every container containerd runs for it, containerd, the control plane
# and etcd; unmounts what they mounted under the state folder and removes it (KEEP=1 keeps it,
# e.g. to read the logs).
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
for name in containerd kube-scheduler kube-controller-manager kube-apiserver etcd moto target; do stop "$name"; done
# The kernel tunables the kubelet changed, back to what they were.
[ -f "$W/sysctl.saved" ] && while read -r k v; do echo "$v" > "/proc/sys/$k" 2>/dev/null; done < "$W/sysctl.saved"
# The cgroups the kubelet made (empty once their containers are gone).
for d in /sys/fs/cgroup/*/kubepods* /sys/fs/cgroup/kubepods*; do
  [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null; done
grep -o " ${W}[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
if [ -z "${KEEP:-}" ]; then rm -rf "$W"; echo "k8s-node: stopped; $W removed" >&2
else echo "k8s-node: stopped; state kept in $W" >&2; fi
