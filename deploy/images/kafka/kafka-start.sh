#!/bin/bash
# Start the single-node broker: defaults from /opt/kafka/config/server.properties, then each
# KAFKA_FOO_BAR variable as foo.bar (as the upstream apache/kafka image: `___` is `-`, `__`
# is `_`), storage formatted on first start with CLUSTER_ID.
set -euo pipefail
conf=/var/lib/kafka/server.properties
cp /opt/kafka/config/server.properties "$conf"
while IFS='=' read -r name value; do
  case $name in
    KAFKA_HEAP_OPTS | KAFKA_JVM_OPTS | KAFKA_OPTS | KAFKA_VERSION | KAFKA_LOG4J_OPTS) continue ;;
    KAFKA_*) ;;
    *) continue ;;
  esac
  key=${name#KAFKA_}
  key=${key,,}
  key=${key//___/-}
  key=${key//__/@}
  key=${key//_/.}
  key=${key//@/_}
  grep -v "^${key//./\\.}=" "$conf" >"$conf.tmp" || true
  printf '%s=%s\n' "$key" "$value" >>"$conf.tmp"
  mv "$conf.tmp" "$conf"
done < <(env)
logdirs=$(sed -n 's/^log\.dirs=//p' "$conf" | cut -d, -f1)
java_opts=(-XX:TieredStopAtLevel=1
  -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties -cp '/opt/kafka/libs/*')
if [[ ! -f $logdirs/meta.properties ]]; then
  java -Xmx256m "${java_opts[@]}" kafka.tools.StorageTool format \
    -t "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" -c "$conf" --ignore-formatted
fi
# shellcheck disable=SC2086 # word lists
exec java ${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m} ${KAFKA_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20} \
  "${java_opts[@]}" kafka.Kafka "$conf"
