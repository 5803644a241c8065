#!/usr/bin/env bash
# Builds Prometheus from its Go module into $K8S_LOCAL_CACHE/bin-prometheus-$PROMETHEUS_VERSION
# (skipped when present), with the Kubernetes service discovery as its only discovery: Debian's
# prometheus package is built without kubernetes_sd_configs, which the cluster tests use.
# Build tags `remove_all_sd,enable_kubernetes_sd` (the module's plugins/) leave out the cloud
# discoveries; no web UI assets are embedded (the API is all the tests read).
#   deploy/k8s-local/build-prometheus.sh       prints the binary's path
set -euo pipefail
# Prometheus 3.x.y is published to the Go module proxy as v0.3xx.y (v0.316.0: Prometheus 3.16.0)
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-0.316.0}
CACHE=${K8S_LOCAL_CACHE:-$HOME/.cache/replygate/k8s-local}
OUT=$CACHE/bin-prometheus-$PROMETHEUS_VERSION
export PATH=$PATH:/usr/local/go/bin
if [[ ! -x $OUT/prometheus ]]; then
  command -v go >/dev/null || { echo "build-prometheus: go is required (the module's go.mod asks for 1.26)" >&2; exit 1; }
  SRC=$CACHE/src-prometheus-$PROMETHEUS_VERSION
  mkdir -p "$SRC" "$OUT"
  cd "$SRC"
  go mod download "github.com/prometheus/prometheus@v$PROMETHEUS_VERSION"
  MOD=$(go env GOMODCACHE)/github.com/prometheus/prometheus@v$PROMETHEUS_VERSION
  # A wrapper module with Prometheus' own dependency versions and checksums. No `go mod tidy`:
  # it would fetch every discovery's cloud SDKs; -mod=mod fetches only what this build imports.
  printf 'module local/prometheus\n\ngo 1.26\n\nrequire github.com/prometheus/prometheus v%s\n' "$PROMETHEUS_VERSION" >go.mod
  cp "$MOD/go.sum" go.sum && chmod 644 go.sum
  go mod download -json "github.com/prometheus/prometheus@v$PROMETHEUS_VERSION" |
    awk -F'"' -v m="github.com/prometheus/prometheus v$PROMETHEUS_VERSION" \
      '$2 == "Sum" { print m " " $4 } $2 == "GoModSum" { print m "/go.mod " $4 }' >>go.sum
  CGO_ENABLED=0 go build -mod=mod -tags remove_all_sd,enable_kubernetes_sd -ldflags "-s -w \
    -X github.com/prometheus/common/version.Version=$(<"$MOD/VERSION") \
    -X github.com/prometheus/common/version.Branch=module-proxy" \
    -o "$OUT/prometheus.tmp" github.com/prometheus/prometheus/cmd/prometheus
  mv "$OUT/prometheus.tmp" "$OUT/prometheus"
fi
printf '%s\n' "$OUT/prometheus"
