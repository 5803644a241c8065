#!/usr/bin/env bash
# Run a command against a Kafka broker: KAFKA_BOOTSTRAP_SERVERS if set, else the local one,
# started here and stopped afterwards (a broker that was already running is left running).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
kafka="$here/deploy/kafka-local/kafka-local.sh"
started=0
if [[ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" ]]; then
  if ! bash "$kafka" status >/dev/null 2>&1; then
    bash "$kafka" up
    started=1
  fi
  export KAFKA_BOOTSTRAP_SERVERS="127.0.0.1:${KAFKA_PORT:-9092}"
fi
export REPLYGATE_KAFKA_BOOTSTRAP_SERVERS="${REPLYGATE_KAFKA_BOOTSTRAP_SERVERS:-$KAFKA_BOOTSTRAP_SERVERS}"
stop() { if [[ $started == 1 && -z "${KEEP_KAFKA:-}" ]]; then bash "$kafka" down; fi; }
trap stop EXIT
"$@"
