#!/usr/bin/env bash
# Builds prometheus-adapter (the External metrics API that feeds the workers' lag to the
# HorizontalPodAutoscaler) from its Go module into $K8S_LOCAL_CACHE/bin-prometheus-adapter-$V
# (skipped when present), with the adapter's own dependency versions and checksums (its
# go.sum). v0.12.0 is built on k8s.io v0.30 libraries: its main calls custom-metrics-apiserver's
# Run with a stop channel, which v1.31 (the first for k8s.io v0.31) replaced by a context, and
# custom-metrics-apiserver v1.30 does not compile against k8s.io/apiserver v0.31 or later. So it
# shares no Go build cache with build-kube.sh; the external metrics API it serves is the same.
#   deploy/k8s-local/build-prometheus-adapter.sh       prints the binary's path
set -euo pipefail
ADAPTER_VERSION=${ADAPTER_VERSION:-0.12.0}
CACHE=${K8S_LOCAL_CACHE:-$HOME/.cache/replygate/k8s-local}
OUT=$CACHE/bin-prometheus-adapter-$ADAPTER_VERSION
export PATH=$PATH:/usr/local/go/bin
if [[ ! -x $OUT/prometheus-adapter ]]; then
  command -v go >/dev/null || { echo "build-prometheus-adapter: go is required (Go >= 1.24)" >&2; exit 1; }
  SRC=$CACHE/src-prometheus-adapter-$ADAPTER_VERSION
  mkdir -p "$SRC" "$OUT"
  cd "$SRC"
  go mod download "sigs.k8s.io/prometheus-adapter@v$ADAPTER_VERSION"
  MOD=$(go env GOMODCACHE)/sigs.k8s.io/prometheus-adapter@v$ADAPTER_VERSION
  # A wrapper module with the adapter's own requirements and checksums; -mod=mod fetches only
  # what this build imports (no `go mod tidy`: it would fetch every test dependency too).
  { printf 'module local/prometheusadapter\n\ngo 1.24.0\n\nrequire sigs.k8s.io/prometheus-adapter v%s\n\n' "$ADAPTER_VERSION"
    sed -n '/^require (/,/^)/p' "$MOD/go.mod"; } >go.mod
  cp "$MOD/go.sum" go.sum && chmod 644 go.sum
  go mod download -json "sigs.k8s.io/prometheus-adapter@v$ADAPTER_VERSION" |
    awk -F'"' -v m="sigs.k8s.io/prometheus-adapter v$ADAPTER_VERSION" \
      '$2 == "Sum" { print m " " $4 } $2 == "GoModSum" { print m "/go.mod " $4 }' >>go.sum
  go build -mod=mod -ldflags "-s -w" -o "$OUT/prometheus-adapter.tmp" sigs.k8s.io/prometheus-adapter/cmd/adapter
  mv "$OUT/prometheus-adapter.tmp" "$OUT/prometheus-adapter"
fi
printf '%s\n' "$OUT/prometheus-adapter"
