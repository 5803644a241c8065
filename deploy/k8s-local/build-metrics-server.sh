#!/usr/bin/env bash
# Builds metrics-server (the resource metrics API the HorizontalPodAutoscaler reads) from its Go
# module into $K8S_LOCAL_CACHE/bin-$K8S_VERSION (skipped when present). Its k8s.io libraries
# are pinned to the cluster's release, so the Go build cache of build-kube.sh serves most of it.
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-1.34.4}
METRICS_SERVER_VERSION=${METRICS_SERVER_VERSION:-0.8.0}
CACHE=${K8S_LOCAL_CACHE:-$HOME/.cache/replygate/k8s-local}
BIN=$CACHE/bin-$K8S_VERSION
export PATH=$PATH:/usr/local/go/bin
[[ -x $BIN/metrics-server ]] && exit 0

SRC=$CACHE/src-metrics-server-$METRICS_SERVER_VERSION
mkdir -p "$SRC" "$BIN"
cd "$SRC"
go mod download "sigs.k8s.io/metrics-server@v$METRICS_SERVER_VERSION"
MOD=$(go env GOMODCACHE)/sigs.k8s.io/metrics-server@v$METRICS_SERVER_VERSION
{ printf 'module local/metricsserver\n\ngo 1.24.0\n\nrequire sigs.k8s.io/metrics-server v%s\n\nreplace (\n' "$METRICS_SERVER_VERSION"
  sed -n "s#^\t\(k8s.io/\(api\|apimachinery\|apiserver\|client-go\|component-base\|kms\|metrics\|component-helpers\|kubelet\)\) v0\.[0-9.]*\$#\t\1 => \1 v0.${K8S_VERSION#1.}#p" "$MOD/go.mod"
  echo ')'; } >go.mod
printf '//go:build tools\npackage tools\nimport _ "sigs.k8s.io/metrics-server/cmd/metrics-server"\n' >tools.go
go mod tidy
go build -ldflags "-s -w" -o "$BIN/metrics-server.tmp" sigs.k8s.io/metrics-server/cmd/metrics-server
mv "$BIN/metrics-server.tmp" "$BIN/metrics-server"
