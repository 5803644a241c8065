#!/usr/bin/env bash
# Installs the tools the deployment tests need, and only what is missing:
#   - Debian packages: kcat, prometheus (for promtool), debootstrap (for the local images),
#     openssl (the TLS tests' CA and certificates, made by deploy/kafka-local/kafka-local.sh)
#     (apt-get update only if one is missing; no prometheus system service is left running)
#   - kustomize (go install, pinned)                     -> $GOBIN or $HOME/go/bin
#   - the docker compose CLI plugin, when missing (built from its Go module, pinned; the docker
#     CLI and engine come from scripts/with-docker.sh) -> /usr/local/lib/docker/cli-plugins
# Idempotent; a second run only checks. Safe without a terminal (CI: root, no stdin).
# Env: KUSTOMIZE_VERSION (v5.8.2), COMPOSE_VERSION (v5.6.0), INSTALL_TOOLS_SKIP_APT=1.
set -euo pipefail

KUSTOMIZE_VERSION=${KUSTOMIZE_VERSION:-v5.8.2}
COMPOSE_VERSION=${COMPOSE_VERSION:-v5.6.0}
APT_PACKAGES=(kcat prometheus debootstrap openssl)

log() { printf 'install-tools: %s\n' "$*"; }
die() { printf 'install-tools: ERROR: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo -n "$@"; else
    die "need root (or passwordless sudo) for: $*"
  fi
}

go_bin_dir() {
  local dir
  dir=$(go env GOBIN 2>/dev/null || true)
  [[ -n $dir ]] || dir="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"
  printf '%s' "${dir%%:*}"
}

# ---------------------------------------------------------------- Debian packages
stop_prometheus_service() {
  # The Debian package may start (and enable) a prometheus service; tests only need promtool.
  if command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
    if systemctl is-active --quiet prometheus 2>/dev/null || systemctl is-enabled --quiet prometheus 2>/dev/null; then
      as_root systemctl disable --now prometheus >/dev/null 2>&1 || true
      log "stopped and disabled the prometheus systemd service"
    fi
  elif [[ -x /etc/init.d/prometheus ]]; then
    if as_root /etc/init.d/prometheus status >/dev/null 2>&1; then
      as_root /etc/init.d/prometheus stop >/dev/null 2>&1 || true
      log "stopped the prometheus init.d service"
    fi
    if command -v update-rc.d >/dev/null; then as_root update-rc.d prometheus disable >/dev/null 2>&1 || true; fi
  fi
}

install_apt_packages() {
  local missing=() pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$pkg")
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    log "apt: ${APT_PACKAGES[*]} already installed"
  elif [[ ${INSTALL_TOOLS_SKIP_APT:-0} == 1 ]]; then
    log "apt: missing ${missing[*]} but INSTALL_TOOLS_SKIP_APT=1"
  else
    command -v apt-get >/dev/null || die "apt-get not found; install ${missing[*]} by hand"
    # Keep package scripts from starting services during the install (removed afterwards).
    local policy=/usr/sbin/policy-rc.d added_policy=0
    if [[ ! -e $policy ]]; then
      as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
      added_policy=1
    fi
    log "apt: installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" </dev/null >/dev/null
    if [[ $added_policy == 1 ]]; then as_root rm -f "$policy"; fi
  fi
  stop_prometheus_service
  command -v promtool >/dev/null || die "promtool not found after installing prometheus"
  command -v kcat >/dev/null || die "kcat not found after installing it"
  command -v openssl >/dev/null || die "openssl not found after installing it"
  log "promtool: $(promtool --version 2>&1 | head -n1)"
  log "kcat: $(kcat -V 2>&1 | head -n1)"
}

# ---------------------------------------------------------------- kustomize
find_kustomize() {
  if command -v kustomize >/dev/null; then command -v kustomize; return; fi
  local candidate
  for candidate in "${GOBIN:-}/kustomize" "$HOME/go/bin/kustomize"; do
    [[ -x $candidate ]] && { printf '%s' "$candidate"; return; }
  done
  if command -v go >/dev/null; then
    candidate="$(go_bin_dir)/kustomize"
    [[ -x $candidate ]] && printf '%s' "$candidate"
  fi
  return 0
}

install_kustomize() {
  local bin
  bin=$(find_kustomize)
  if [[ -n $bin ]] && "$bin" version 2>/dev/null | grep '^v5\.' >/dev/null; then
    log "kustomize: $("$bin" version) already at $bin"
    return
  fi
  command -v go >/dev/null || die "go not found: it is needed to install kustomize"
  log "kustomize: go install sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  GOTOOLCHAIN=local go install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION"
  bin="$(go_bin_dir)/kustomize"
  [[ -x $bin ]] || die "kustomize not found at $bin after go install"
  log "kustomize: $("$bin" version) installed at $bin"
}

# ---------------------------------------------------------------- docker compose plugin
install_compose_plugin() {
  # The docker CLI may come later (scripts/with-docker.sh installs docker.io); the plugin is
  # built now either way, so that the compose tests find it.
  local plugin_dir=/usr/local/lib/docker/cli-plugins
  if [[ $(id -u) -ne 0 ]]; then plugin_dir="${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins"; fi
  if [[ -x $plugin_dir/docker-compose ]] || docker compose version >/dev/null 2>&1; then
    log "docker compose: already installed"
    return
  fi
  command -v go >/dev/null || die "go not found: it is needed to build the docker compose plugin"
  log "docker compose: building github.com/docker/compose/v5/cmd@$COMPOSE_VERSION (a few minutes)"
  mkdir -p "$plugin_dir"
  (
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    cd "$work"
    printf 'module replygate.local/composeplugin\n\ngo 1.24\n' > go.mod
    GOTOOLCHAIN=local go get "github.com/docker/compose/v5/cmd@$COMPOSE_VERSION" >/dev/null 2>&1 \
      || GOTOOLCHAIN=local go get "github.com/docker/compose/v5/cmd@$COMPOSE_VERSION"
    GOTOOLCHAIN=local CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/docker/compose/v5/internal.Version=$COMPOSE_VERSION" \
      -o docker-compose github.com/docker/compose/v5/cmd
    install -m 0755 docker-compose "$plugin_dir/docker-compose"
  )
  "$plugin_dir/docker-compose" version >/dev/null 2>&1 || die "docker compose does not run after install"
  log "docker compose: $("$plugin_dir/docker-compose" version 2>&1 | head -n1) installed at $plugin_dir"
}

install_apt_packages
install_kustomize
install_compose_plugin
log "done"
