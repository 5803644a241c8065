#!/usr/bin/env bash
# Run a command with a Docker engine: the one that answers already, else `dockerd` started
# here (installed from Debian's docker.io when missing) and stopped afterwards, with what it
# ran. Fails loudly when no engine can be had: the container tests must not skip.
#   scripts/with-docker.sh CMD [ARGS...]
# Env: WITH_DOCKER_HOME (<repo>/.run/dockerd: pid file and log), DOCKERD_START_TIMEOUT (60),
#      KEEP_DOCKER=1 (leave a dockerd started here running).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
home=${WITH_DOCKER_HOME:-$here/.run/dockerd}
timeout=${DOCKERD_START_TIMEOUT:-60}

log() { printf 'with-docker: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
answers() { docker info >/dev/null 2>&1; }

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || die "need root (or passwordless sudo) to install and start dockerd"
  SUDO=(sudo -n)
fi

install_engine() {
  command -v apt-get >/dev/null || die "dockerd is missing and apt-get is not here to install it"
  log "installing the Docker engine (apt: docker.io)"
  # Keep the package from starting its service: this script starts and stops dockerd itself.
  local policy=/usr/sbin/policy-rc.d added=0
  if [[ ! -e $policy ]]; then
    "${SUDO[@]}" sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
    added=1
  fi
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    docker.io </dev/null >/dev/null || die "apt-get install docker.io failed"
  if [[ $added == 1 ]]; then "${SUDO[@]}" rm -f "$policy"; fi
  command -v dockerd >/dev/null || die "dockerd not found after installing docker.io"
}

started=""
stop() {
  [[ -n $started && -z ${KEEP_DOCKER:-} ]] || return 0
  local i t0
  t0=$(now)
  "${SUDO[@]}" kill -TERM "$started" 2>/dev/null || return 0
  for ((i = 0; i < 300; i++)); do
    if ! kill -0 "$started" 2>/dev/null; then
      log "stopped dockerd (pid $started) in $(elapsed "$t0")s"
      return 0
    fi
    sleep 0.1
  done
  log "dockerd (pid $started) still alive after 30s; sending SIGKILL"
  "${SUDO[@]}" kill -KILL "$started" 2>/dev/null || true
}

start_engine() {
  command -v dockerd >/dev/null || install_engine
  command -v docker >/dev/null || die "the docker CLI is missing (docker.io brings one)"
  mkdir -p "$home"
  local t0 pid deadline=$((SECONDS + timeout))
  t0=$(now)
  rm -f "$home/dockerd.pid"
  # setsid: the engine is not in make's process group; stop() ends it
  "${SUDO[@]}" setsid dockerd --pidfile "$home/dockerd.pid" >>"$home/dockerd.log" 2>&1 </dev/null &
  pid=$!
  # an interrupted run stops the engine too (bash runs the EXIT trap on `exit`, not on a signal)
  trap stop EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  while ! answers; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$home/dockerd.log" >&2
      die "dockerd exited before answering (log: $home/dockerd.log)"
    fi
    if ((SECONDS >= deadline)); then
      started=$pid
      tail -n 30 "$home/dockerd.log" >&2
      die "dockerd did not answer within ${timeout}s (log: $home/dockerd.log)"
    fi
    sleep 0.2
  done
  started=$(<"$home/dockerd.pid")
  log "started dockerd (pid $started) in $(elapsed "$t0")s; it stops when the command ends"
}

if answers; then
  log "using the Docker engine that already answers"
else
  start_engine
fi
"$@"
