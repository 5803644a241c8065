#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and kubectl from the Go
# module k8s.io/kubernetes into $K8S_LOCAL_CACHE/bin-$K8S_VERSION (skipped when present: a cold
# build is ~10 CPU-minutes and 3 GB of Go build cache, so the binaries are kept across clusters).
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-1.34.4}   # 1.34: the last release whose kubelet accepts cgroup v1 by default
CACHE=${K8S_LOCAL_CACHE:-$HOME/.cache/replygate/k8s-local}
BIN=$CACHE/bin-$K8S_VERSION
CMDS=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl)
export PATH=$PATH:/usr/local/go/bin

have_all() { for c in "${CMDS[@]}"; do [ -x "$BIN/$c" ] || return 1; done; }
have_all && exit 0
command -v go >/dev/null || { echo "build-kube: go is required (Go >= 1.24)" >&2; exit 1; }

SRC=$CACHE/src-$K8S_VERSION
mkdir -p "$SRC" "$BIN.tmp"
cd "$SRC"
go mod download "k8s.io/kubernetes@v$K8S_VERSION"
KMOD=$(go env GOMODCACHE)/k8s.io/kubernetes@v$K8S_VERSION
# A wrapper module: the k8s.io/* staging modules are replaced by their published v0.x releases.
{ printf 'module local/k8sbins\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S_VERSION"
  sed -n "s#^\t\(k8s.io/[a-z-]*\) => ./staging/src/.*#\t\1 => \1 v0.${K8S_VERSION#1.}#p" "$KMOD/go.mod"
  echo ')'; } > go.mod
{ echo '//go:build tools'; echo 'package tools'; echo 'import ('
  for c in "${CMDS[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done; echo ')'; } > tools.go
go mod tidy
MINOR=${K8S_VERSION#1.}; MINOR=${MINOR%%.*}
go build -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR \
  -X k8s.io/component-base/version.gitTreeState=clean" \
  -o "$BIN.tmp/" $(for c in "${CMDS[@]}"; do echo "k8s.io/kubernetes/cmd/$c"; done)
rm -rf "$BIN" && mv "$BIN.tmp" "$BIN"
