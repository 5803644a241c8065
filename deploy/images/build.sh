#!/usr/bin/env bash
# Builds the stack's images from local parts only (no container registry is needed):
#   debian base   debootstrap (minbase) of Debian bookworm from the mirror apt already uses,
#                 `docker import`ed
#   kafka         the base + Debian's openjdk-17-jre-headless + the Maven Central jars the
#                 local broker uses (.kafka-local/lib, resolved by kafka-local.sh), KRaft
#   replygate     the repository's Dockerfile on the base (Debian's python3, a venv from PyPI)
#   prometheus    the base + Debian's prometheus package
# Each image carries a label with the hash of its inputs (files, base image id, mirror); an
# image whose label matches is not rebuilt. Writes the image names to .images/images.env
# (KAFKA_IMAGE=..., read by tests/support/containers.py and usable with `docker compose --env-file`)
# and what it did, with timings, to .images/logs/build.log. See README.md beside this file.
#
#   deploy/images/build.sh            build what changed
#   deploy/images/build.sh --force    rebuild everything
# Env: DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR (default: from /etc/apt/sources.list*),
#      IMAGES_DIR (<repo>/.images). Needs root (debootstrap) and a running Docker engine
#      (scripts/with-docker.sh starts one).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
IMAGES_DIR=${IMAGES_DIR:-$REPO/.images}
RELEASE=bookworm
FORCE=0
[[ ${1:-} == --force ]] && FORCE=1

BASE_IMAGE=replygate-local/debian:$RELEASE
KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$REPO/deploy/kafka-local/pom.xml")
KAFKA_IMAGE=replygate-local/kafka:$KAFKA_VERSION
REPLYGATE_IMAGE=replygate:local
PROMETHEUS_IMAGE=replygate-local/prometheus:debian
LABEL=replygate.inputs

log() {
  printf 'build-images: %s\n' "$*" >&2
  [[ -d $IMAGES_DIR/logs ]] && printf '%s %s\n' "$(date -u +%FT%TZ)" "$*" >>"$IMAGES_DIR/logs/build.log"
  return 0
}
die() { log "ERROR: $*"; exit 1; }
now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------- inputs
# The first URI apt uses for suite $1 (deb822 .sources and one-line .list formats).
apt_uri_for() {
  local suite=$1 f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -r $f ]] || continue
    awk -v suite="$suite" '
      /^[[:space:]]*#/ { next }
      /^deb[[:space:]]/ {                       # one-line: deb [opts] URI SUITE COMPONENTS
        i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        if ($(i + 1) == suite) { print $i; exit }
        next
      }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (j = 2; j <= NF; j++) if ($j == suite) hit = 1 }
      /^[[:space:]]*$/ { if (hit && uri != "") { print uri; exit } uri = ""; hit = 0 }
      END { if (hit && uri != "") print uri }
    ' "$f"
  done | head -n1
}

# sha256 of every file under the given paths (sorted), then of the extra words
inputs_hash() {
  local paths=() words=()
  while (($#)) && [[ $1 != -- ]]; do paths+=("$1"); shift; done
  [[ ${1:-} == -- ]] && shift
  words=("$@")
  {
    # paths relative to the checkout: every worktree of the same files names the same inputs
    find "${paths[@]}" -type f ! -path '*/__pycache__/*' ! -name '*.py[cod]' -print0 \
      | LC_ALL=C sort -z | xargs -0 -r sha256sum | sed "s#  $REPO/#  #"
    printf '%s\n' "${words[@]}"
  } | sha256sum | cut -c1-32
}

image_label() { docker image inspect -f "{{ index .Config.Labels \"$LABEL\" }}" "$1" 2>/dev/null || true; }
image_id() { docker image inspect -f '{{ .Id }}' "$1"; }

up_to_date() {
  if [[ $FORCE == 0 && $(image_label "$1") == "$2" ]]; then
    log "$1: up to date"
    return 0
  fi
  return 1
}

# docker build with the classic builder (BuildKit's frontend image cannot be pulled here)
build() {
  local tag=$1 hash=$2 context=$3 dockerfile=$4 t0 out
  shift 4
  up_to_date "$tag" "$hash" && return 0
  t0=$(now)
  out=$IMAGES_DIR/logs/${tag//[\/:]/_}.log
  log "$tag: building (log: $out)"
  if ! DOCKER_BUILDKIT=0 docker build --force-rm --label "$LABEL=$hash" --label "$LABEL.tag=$tag" -t "$tag" \
    -f "$dockerfile" "$@" "$context" >"$out" 2>&1; then
    tail -n 40 "$out" >&2
    die "$tag: docker build failed (log: $out)"
  fi
  # the previous builds of this tag, untagged now (the current build's stages stay: its cache)
  local id
  for id in $(docker images -q --no-trunc -f dangling=true -f "label=$LABEL.tag=$tag"); do
    [[ $(image_label "$id") == "$hash" ]] || docker rmi "$id" >/dev/null 2>&1 || true
  done
  log "$tag: built in $(elapsed "$t0")s"
}

# ---------------------------------------------------------------- images
build_base() {
  local mirror security hash root t0 host_cas=()
  # The host's own CAs (what apt and pip trust here, e.g. a TLS-inspecting egress proxy's) go
  # into the base too, so that builds on it reach PyPI the way the host does.
  mapfile -t host_cas < <(find /usr/local/share/ca-certificates -name '*.crt' 2>/dev/null | sort)
  mirror=${DEBIAN_MIRROR:-$(apt_uri_for "$RELEASE")}
  security=${DEBIAN_SECURITY_MIRROR:-$(apt_uri_for "$RELEASE-security")}
  [[ -n $mirror ]] || die "no Debian mirror for $RELEASE in /etc/apt/sources.list*; set DEBIAN_MIRROR"
  [[ -n $security ]] || security=$mirror-security
  hash=$(inputs_hash "$HERE/base" "${host_cas[@]}" -- "$RELEASE" "$mirror" "$security")
  up_to_date "$BASE_IMAGE" "$hash" && return 0
  command -v debootstrap >/dev/null || {
    log "installing debootstrap (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap \
      </dev/null >/dev/null || die "apt-get install debootstrap failed"
  }
  t0=$(now)
  root=$IMAGES_DIR/rootfs
  rm -rf "$root"
  mkdir -p "$IMAGES_DIR/debootstrap-cache"
  log "$BASE_IMAGE: debootstrap $RELEASE from $mirror"
  if ! debootstrap --variant=minbase --include=ca-certificates --cache-dir="$IMAGES_DIR/debootstrap-cache" \
    "$RELEASE" "$root" "$mirror" >"$IMAGES_DIR/logs/debootstrap.log" 2>&1; then
    tail -n 40 "$IMAGES_DIR/logs/debootstrap.log" >&2
    die "debootstrap failed (log: $IMAGES_DIR/logs/debootstrap.log)"
  fi
  printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
    "$mirror" "$RELEASE" "$mirror" "$RELEASE" "$security" "$RELEASE" >"$root/etc/apt/sources.list"
  cp "$HERE/base/apt-docker.conf" "$root/etc/apt/apt.conf.d/90docker"
  cp "$HERE/base/dpkg-slim.cfg" "$root/etc/dpkg/dpkg.cfg.d/90slim"
  install -m 0755 "$HERE/base/policy-rc.d" "$root/usr/sbin/policy-rc.d"
  if ((${#host_cas[@]})); then
    cp "${host_cas[@]}" "$root/usr/local/share/ca-certificates/"
    chroot "$root" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed in the base tree"
  fi
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*.log \
    "$root"/tmp/*
  # files only: packages' scripts expect the directories (java's wants /usr/share/man/man1)
  find "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/info -type f ! -name copyright -delete
  mkdir -p "$root"/usr/share/man/man1
  tar --numeric-owner -C "$root" -c . | docker import \
    --change "LABEL $LABEL=$hash" --change 'ENV LANG=C.UTF-8' --change 'CMD ["bash"]' \
    - "$BASE_IMAGE" >/dev/null
  rm -rf "$root"
  log "$BASE_IMAGE: debootstrapped and imported in $(elapsed "$t0")s"
}

build_kafka() {
  local lib=$REPO/.kafka-local/lib ctx=$IMAGES_DIR/kafka-context hash
  bash "$REPO/deploy/kafka-local/kafka-local.sh" jars
  hash=$(inputs_hash "$HERE/kafka" "$lib/.resolved" -- "$(image_id "$BASE_IMAGE")")
  up_to_date "$KAFKA_IMAGE" "$hash" && return 0
  rm -rf "$ctx"
  mkdir -p "$ctx/libs"
  cp -l "$lib"/*.jar "$ctx/libs/" 2>/dev/null || cp "$lib"/*.jar "$ctx/libs/"
  cp "$HERE"/kafka/* "$ctx/"
  build "$KAFKA_IMAGE" "$hash" "$ctx" "$ctx/Dockerfile" --build-arg "BASE_IMAGE=$BASE_IMAGE"
  rm -rf "$ctx"
}

build_replygate() {
  local hash
  hash=$(inputs_hash "$REPO/Dockerfile" "$REPO/.dockerignore" "$REPO/pyproject.toml" \
    "$REPO/README.md" "$REPO/schemas" "$REPO/streams" "$REPO/replygate" -- "$(image_id "$BASE_IMAGE")")
  build "$REPLYGATE_IMAGE" "$hash" "$REPO" "$REPO/Dockerfile" --build-arg "BASE_IMAGE=$BASE_IMAGE"
}

build_prometheus() {
  local hash
  hash=$(inputs_hash "$HERE/prometheus" -- "$(image_id "$BASE_IMAGE")")
  build "$PROMETHEUS_IMAGE" "$hash" "$HERE/prometheus" "$HERE/prometheus/Dockerfile" \
    --build-arg "BASE_IMAGE=$BASE_IMAGE"
}

main() {
  docker info >/dev/null 2>&1 || die "no Docker engine answers (run under scripts/with-docker.sh)"
  mkdir -p "$IMAGES_DIR/logs"
  exec 9>"$IMAGES_DIR/.lock"
  flock -w 1200 9 || die "another build.sh is busy with $IMAGES_DIR"
  local t0
  t0=$(now)
  build_base
  build_kafka
  build_replygate
  build_prometheus
  printf 'BASE_IMAGE=%s\nKAFKA_IMAGE=%s\nREPLYGATE_IMAGE=%s\nPROMETHEUS_IMAGE=%s\n' \
    "$BASE_IMAGE" "$KAFKA_IMAGE" "$REPLYGATE_IMAGE" "$PROMETHEUS_IMAGE" >"$IMAGES_DIR/images.env"
  log "images ready in $(elapsed "$t0")s ($IMAGES_DIR/images.env)"
}

main
