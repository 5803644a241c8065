#!/usr/bin/env bash
# `make test-k8s`: the images (deploy/images/build.sh), and beside them Prometheus and
# prometheus-adapter (build-prometheus.sh, build-prometheus-adapter.sh), the local cluster with
# the images loaded (cluster-up.sh), the cluster tests (tests/k8s), then the
# cluster down again (KEEP_CLUSTER=1 leaves it up for another run). Run under
# scripts/with-docker.sh, as root.
#   deploy/k8s-local/test.sh [PYTEST ARGS...]
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
cd "$REPO"
t0=$SECONDS
# Prometheus with the Kubernetes discovery and prometheus-adapter (cached), built beside the
# images; the adapter shares no build cache with the kube binaries, so nothing waits for them
PROM_OUT=$(mktemp)
{ bash "$HERE/build-prometheus.sh" && bash "$HERE/build-prometheus-adapter.sh" >/dev/null; } >"$PROM_OUT" &
prom_build=$!
bash deploy/images/build.sh
# shellcheck disable=SC1091
source .images/images.env
down() { [[ -n ${KEEP_CLUSTER:-} ]] || bash "$HERE/cluster-down.sh"; }
trap down EXIT
K8S_LOCAL_PROMETHEUS_ADAPTER=0 bash "$HERE/cluster-up.sh" "$REPLYGATE_IMAGE" "$KAFKA_IMAGE"
eval "$(bash "$HERE/cluster-up.sh" --env)"
export K8S_LOCAL_TESTS=1 KAFKA_BOOTSTRAP_SERVERS=10.244.0.1:9094
export REPLYGATE_IMAGE KAFKA_IMAGE K8S_CONTAINERD=/run/replygate-k8s/containerd.sock
wait "$prom_build" || { echo "test-k8s: build-prometheus.sh or build-prometheus-adapter.sh failed" >&2; exit 1; }
# again, now that the adapter is built: starts it (and leaves what runs alone)
bash "$HERE/cluster-up.sh"
PROMETHEUS_BIN=$(<"$PROM_OUT")
rm -f "$PROM_OUT"
export PROMETHEUS_BIN
status=0
rm -f .run/k8s-*-report.txt   # this run's figures only
.venv/bin/python -m pytest -q -p no:cacheprovider -o testpaths=tests/k8s tests/k8s "$@" || status=$?
# what the tests measured (the scale test's outcomes, the autoscalers' timelines)
for report in .run/k8s-*-report.txt; do
  if [[ -f $report ]]; then printf '%s: %s\n' "$report" "$(<"$report")" >&2; fi
done
printf 'test-k8s: %ss in all\n' "$((SECONDS - t0))" >&2
exit "$status"
