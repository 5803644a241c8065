#!/usr/bin/env bash
# A single-node Kubernetes cluster on this machine for the cluster tests (tests/k8s): Debian's
# etcd, containerd, runc and CNI plugins, and kube binaries built from the Go module
# k8s.io/kubernetes (build-kube.sh; cached). Idempotent: what already runs is left running.
# Needs root and a Docker engine (scripts/with-docker.sh) for the locally built pause image.
#
#   deploy/k8s-local/cluster-up.sh [IMAGE...]   up, then load the given Docker images
#   eval "$(deploy/k8s-local/cluster-up.sh --env)"   KUBECONFIG and PATH for kubectl
#
# Env: K8S_VERSION (1.34.4), K8S_LOCAL_CACHE (~/.cache/replygate/k8s-local: binaries),
#      K8S_LOCAL_METRICS_SERVER (1; 0: no metrics-server, no HPA on CPU),
#      K8S_LOCAL_PROMETHEUS_ADAPTER (1; 0: no prometheus-adapter, no HPA on lag),
#      K8S_LOCAL_HOME (<repo>/.k8s-local: certificates, state, logs, pid files).
# Pod network: bridge k8slocal0, 10.244.0.0/24; the host is 10.244.0.1 on it (pods reach
# host services bound there). No kube-proxy or DNS: use pod IPs, hostNetwork or port-forward.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=deploy/k8s-local/common.sh
source "$HERE/common.sh"

if [[ ${1:-} == --env ]]; then
  printf 'export KUBECONFIG=%q PATH=%q:$PATH\n' "$KC" "$BIN"
  exit 0
fi
[[ $(id -u) -eq 0 ]] || die "run as root (containerd, kubelet, mounts, the bridge)"

install_packages() {
  local missing=() pkg
  for pkg in etcd-server containerd runc containernetworking-plugins iptables openssl; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$pkg")
  done
  ((${#missing[@]})) || return 0
  log "apt: installing ${missing[*]}"
  local policy=/usr/sbin/policy-rc.d added=0
  # keep the packages from starting their own services (etcd, containerd)
  if [[ ! -e $policy ]]; then printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy && added=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null >/dev/null
  if [[ $added == 1 ]]; then rm -f $policy; fi
}

make_pki() {
  mkdir -p "$P"
  # the aggregation layer's front proxy (metrics APIs served by metrics-server)
  if [[ ! -f $P/front-proxy-client.crt ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/front-proxy-ca.key" -out "$P/front-proxy-ca.crt" -days 3650 -subj /CN=front-proxy-ca 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout "$P/front-proxy-client.key" -out "$P/front-proxy-client.csr" -subj /CN=front-proxy-client 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >"$P/client.cnf"
    openssl x509 -req -in "$P/front-proxy-client.csr" -CA "$P/front-proxy-ca.crt" -CAkey "$P/front-proxy-ca.key" -CAcreateserial -out "$P/front-proxy-client.crt" -days 3650 -extfile "$P/client.cnf" 2>/dev/null
  fi
  [[ -f $P/sa.key ]] && return 0
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.crt" -days 3650 -subj /CN=replygate-local-ca 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$P/apiserver.key" -out "$P/apiserver.csr" -subj /CN=kube-apiserver 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' >"$P/ext.cnf"
  openssl x509 -req -in "$P/apiserver.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -out "$P/apiserver.crt" -days 3650 -extfile "$P/ext.cnf" 2>/dev/null
  openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
  openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
  (umask 077 && echo "$(openssl rand -hex 16),admin,admin,system:masters" >"$P/tokens.csv")
}

write_kubeconfig() {
  kubectl config set-cluster local --server=https://127.0.0.1:6443 --certificate-authority="$P/ca.crt" --embed-certs --kubeconfig="$KC" >/dev/null
  kubectl config set-credentials admin --token="$(cut -d, -f1 "$P/tokens.csv")" --kubeconfig="$KC" >/dev/null
  kubectl config set-context local --cluster=local --user=admin --kubeconfig="$KC" >/dev/null
  kubectl config use-context local --kubeconfig="$KC" >/dev/null
}

# The pod bridge with the host's address on it, made before any pod so that host services
# (the Kafka broker, the scripted LLM server) can bind 10.244.0.1 from the start.
make_bridge() {
  ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
  ip addr show dev "$BRIDGE" | grep "inet $GATEWAY/" >/dev/null || ip addr add "$GATEWAY/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

write_configs() {
  mkdir -p "$W/cni" "$R"
  cat >"$W/containerd.toml" <<CONF
version = 2
root = "$W/containerd"
state = "$R/containerd"
[grpc]
  address = "$R/containerd.sock"
[ttrpc]
  address = "$R/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # root here may lack CAP_SYS_RESOURCE: runc fails on the kubelet's oom_score_adj -998 otherwise
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$W/cni"
CONF
  cat >"$W/cni/10-local.conflist" <<CONF
{"cniVersion": "0.4.0", "name": "k8slocal", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$GATEWAY"}]], "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$R/ipam"}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}]}
CONF
  cat >"$W/kubelet.yaml" <<CONF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$R/containerd.sock
address: 127.0.0.1
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
evictionHard: {"memory.available": "100Mi", "nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
CONF
}

# The sandbox image, built here: a static Go binary that waits for SIGTERM (none is pulled).
pause_image() {
  $CTR images ls -q | grep -x "$PAUSE_IMAGE" >/dev/null && return 0
  docker info >/dev/null 2>&1 || die "a Docker engine is needed once to build the pause image (scripts/with-docker.sh)"
  local dir=$W/pause
  mkdir -p "$dir"
  printf 'package main\nimport ("os";"os/signal";"syscall")\nfunc main(){c:=make(chan os.Signal,1);signal.Notify(c,syscall.SIGINT,syscall.SIGTERM);<-c}\n' >"$dir/main.go"
  printf 'module pause\ngo 1.24\n' >"$dir/go.mod"
  (cd "$dir" && CGO_ENABLED=0 go build -ldflags='-s -w' -o pause .)
  printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"$dir/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q -t "$PAUSE_IMAGE" "$dir" >/dev/null
  load_image "$PAUSE_IMAGE"
}

# resource metrics for the HorizontalPodAutoscaler (tests/k8s/test_autoscale.py), on the host
metrics_server() {
  bash "$HERE/build-metrics-server.sh"
  mkdir -p "$W/metrics-server"
  start metrics-server metrics-server --secure-port=4443 --bind-address="$GATEWAY" \
    --cert-dir="$W/metrics-server" --kubeconfig="$KC" --authentication-kubeconfig="$KC" \
    --authorization-kubeconfig="$KC" --kubelet-insecure-tls --kubelet-preferred-address-types=Hostname \
    --metric-resolution=15s
  kubectl apply -f "$HERE/metrics-server.yaml" >/dev/null
}

# external metrics for the HorizontalPodAutoscaler on lag (deploy/k8s/components/hpa-lag), on
# the host: prometheus-adapter with that component's rule, asking the Prometheus the cluster
# tests run on 127.0.0.1:19090 (tests/k8s/prometheus.py). Until that Prometheus runs, the
# adapter has no series and the metric is not found; it lists them again every 10 s.
prometheus_adapter() {
  local bin
  bin=$(bash "$HERE/build-prometheus-adapter.sh")
  mkdir -p "$W/prometheus-adapter"
  start prometheus-adapter "$bin" --secure-port=4444 --bind-address="$GATEWAY" \
    --cert-dir="$W/prometheus-adapter" --lister-kubeconfig="$KC" --authentication-kubeconfig="$KC" \
    --authorization-kubeconfig="$KC" --prometheus-url="$PROMETHEUS_URL" \
    --config="$REPO/deploy/k8s/components/hpa-lag/prometheus-adapter.yaml" \
    --metrics-relist-interval=10s --metrics-max-age=30s
  kubectl apply -f "$HERE/prometheus-adapter.yaml" >/dev/null
}

main() {
  local t0=$SECONDS
  # what containerd and the kubelet create (snapshots, the pods' root directories) must be
  # readable by the containers' users
  umask 022
  install_packages
  bash "$HERE/build-kube.sh"
  make_pki
  write_kubeconfig
  make_bridge
  write_configs
  mkdir -p "$W/logs"

  start containerd containerd --config "$W/containerd.toml"
  waitfor 30 "$CTR version"
  pause_image

  start etcd etcd --name local --data-dir "$W/etcd" --listen-client-urls http://127.0.0.1:2379 \
    --advertise-client-urls http://127.0.0.1:2379 --listen-peer-urls http://127.0.0.1:2380 \
    --initial-advertise-peer-urls http://127.0.0.1:2380 --initial-cluster local=http://127.0.0.1:2380
  waitfor 30 "curl -sf http://127.0.0.1:2379/health"
  start kube-apiserver kube-apiserver --etcd-servers=http://127.0.0.1:2379 --bind-address=127.0.0.1 --secure-port=6443 \
    --advertise-address=127.0.0.1 --endpoint-reconciler-type=none --kubelet-preferred-address-types=Hostname \
    --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
    --token-auth-file="$P/tokens.csv" --authorization-mode=RBAC --allow-privileged=true \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local --service-account-key-file="$P/sa.pub" \
    --service-account-signing-key-file="$P/sa.key" --service-cluster-ip-range=10.96.0.0/16 \
    --requestheader-client-ca-file="$P/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- --proxy-client-cert-file="$P/front-proxy-client.crt" \
    --proxy-client-key-file="$P/front-proxy-client.key" --enable-aggregator-routing=true
  waitfor 90 "kubectl get --raw /readyz"
  start kube-controller-manager kube-controller-manager --kubeconfig="$KC" --service-account-private-key-file="$P/sa.key" \
    --root-ca-file="$P/ca.crt" --use-service-account-credentials=true --leader-elect=false --bind-address=127.0.0.1 \
    --horizontal-pod-autoscaler-sync-period=5s
  start kube-scheduler kube-scheduler --kubeconfig="$KC" --leader-elect=false --bind-address=127.0.0.1
  # node name "localhost": the apiserver reaches the kubelet on 127.0.0.1 (logs, exec, port-forward)
  start kubelet kubelet --config="$W/kubelet.yaml" --kubeconfig="$KC" --root-dir="$W/kubelet" --hostname-override=localhost
  waitfor 120 "kubectl wait --for=condition=Ready node/localhost --timeout=2s"
  waitfor 60 "kubectl -n default get sa default && kubectl -n default get cm kube-root-ca.crt"
  [[ ${K8S_LOCAL_METRICS_SERVER:-1} == 0 ]] || metrics_server
  [[ ${K8S_LOCAL_PROMETHEUS_ADAPTER:-1} == 0 ]] || prometheus_adapter
  local img
  for img in "$@"; do load_image "$img"; done
  log "cluster up in $((SECONDS - t0))s: eval \"\$($0 --env)\""
}

main "$@"
