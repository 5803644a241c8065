#!/usr/bin/env bash
# Stops what cluster-up.sh started (only the processes of its pid files and the containers of
# its own containerd) and undoes its host changes: mounts, network namespaces, the bridge, the
# kubelet's iptables chains and cgroups. Keeps the certificates and the cached kube binaries
# (--purge also deletes the state dir). Idempotent.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=deploy/k8s-local/common.sh
source "$HERE/common.sh"
[[ $(id -u) -eq 0 ]] || die "run as root"

stop() {
  local pid i
  pid=$(alive_pid "$1") || { rm -f "$W/$1.pid"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$W/$1.pid"
}

stop prometheus-adapter
stop metrics-server
stop kubelet
stop kube-scheduler
stop kube-controller-manager
if alive_pid containerd >/dev/null; then
  for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks kill -s KILL "$t" 2>/dev/null || true; done
  sleep 1
  for t in $($CTR tasks ls -q 2>/dev/null); do $CTR tasks rm -f "$t" >/dev/null 2>&1 || true; done
  for c in $($CTR containers ls -q 2>/dev/null); do $CTR containers rm "$c" >/dev/null 2>&1 || true; done
fi
stop kube-apiserver
stop containerd
stop etcd
# shim processes of our containerd (their socket paths are under our state dir)
for pid in $(pgrep -f "containerd-shim.*-address $R/containerd.sock" || true); do kill -KILL "$pid" 2>/dev/null || true; done

grep -E " ($W|$R|/run/netns/cni-)" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do
  umount "$m" 2>/dev/null || umount -l "$m" || true
done
for ns in /run/netns/cni-*; do [[ -e $ns ]] && { ip netns delete "${ns##*/}" 2>/dev/null || rm -f "$ns"; }; done
ip link del "$BRIDGE" 2>/dev/null || true
# the kubelet's chains (it has no flag to keep them off); only ours, by name
for ipt in iptables ip6tables; do
  $ipt -D INPUT -j KUBE-FIREWALL 2>/dev/null || true
  $ipt -D OUTPUT -j KUBE-FIREWALL 2>/dev/null || true
  $ipt -F KUBE-FIREWALL 2>/dev/null || true
  $ipt -X KUBE-FIREWALL 2>/dev/null || true
  for t in filter nat mangle; do $ipt -t $t -F KUBE-KUBELET-CANARY 2>/dev/null || true; $ipt -t $t -X KUBE-KUBELET-CANARY 2>/dev/null || true; done
  $ipt -t mangle -X KUBE-IPTABLES-HINT 2>/dev/null || true
done
for s in /sys/fs/cgroup/*/; do
  [[ -d $s/kubepods ]] && find "$s/kubepods" -depth -type d -exec rmdir {} \; 2>/dev/null || true
done
rm -rf "$R" "$W/etcd" "$W/kubelet" "$W/containerd" "$W/images"
[[ ${1:-} == --purge ]] && rm -rf "$W"
log "cluster down"
