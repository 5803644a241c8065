# shellcheck shell=bash
# Shared by cluster-up.sh, cluster-down.sh and load-image.sh: paths, names and small helpers.
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
K8S_VERSION=${K8S_VERSION:-1.34.4}
CACHE=${K8S_LOCAL_CACHE:-$HOME/.cache/replygate/k8s-local}
BIN=$CACHE/bin-$K8S_VERSION
W=${K8S_LOCAL_HOME:-$REPO/.k8s-local}   # certificates, state, logs, pid files
R=/run/replygate-k8s                    # sockets (short paths)
P=$W/pki
KC=$W/admin.kubeconfig
BRIDGE=k8slocal0
POD_CIDR=10.244.0.0/24
GATEWAY=10.244.0.1
PAUSE_IMAGE=localhost/pause:local
PROMETHEUS_URL=http://127.0.0.1:19090/   # the cluster tests' Prometheus (tests/k8s/prometheus.py)
CTR="ctr -a $R/containerd.sock -n k8s.io"
export KUBECONFIG=$KC PATH=$BIN:$PATH:/usr/local/go/bin

log() { printf 'k8s-local: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# pid of a process this script set started, if it still runs
alive_pid() {
  local f=$W/$1.pid pid
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  kill -0 "$pid" 2>/dev/null && printf '%s' "$pid"
}

# start NAME CMD...: in the background with its log and pid file, unless it already runs
start() {
  local name=$1
  shift
  if alive_pid "$name" >/dev/null; then return 0; fi
  setsid nohup "$@" >"$W/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$W/$name.pid"
}

waitfor() {
  local _
  for _ in $(seq "$1"); do eval "$2" >/dev/null 2>&1 && return 0; sleep 1; done
  die "timeout after $1 s: $2 (logs: $W/logs)"
}

# load_image IMG: into the cluster's containerd, unless this Docker image id was loaded already
load_image() {
  local id ref=$1 mark
  id=$(docker image inspect -f '{{.Id}}' "$1") || die "no Docker image $1 (make images)"
  # as containerd names it: docker.io/library/NAME, docker.io/USER/NAME, or a registry's
  if [[ $ref != */* ]]; then
    ref=docker.io/library/$ref
  elif [[ ${ref%%/*} != *.* && ${ref%%/*} != *:* && ${ref%%/*} != localhost ]]; then
    ref=docker.io/$ref
  fi
  mark=$W/images/${ref//[\/:]/_}
  if [[ -f $mark && $(<"$mark") == "$id" ]] && $CTR images ls -q | grep -x "$ref" >/dev/null; then return 0; fi
  docker save "$1" | $CTR images import - >/dev/null
  mkdir -p "$W/images" && printf '%s' "$id" >"$mark"
  log "loaded $1"
}
