#!/bin/bash
# As upstream's script of the same name (compose health checks call it by this path).
exec java -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.level=OFF \
  -Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties -cp '/opt/kafka/libs/*' \
  org.apache.kafka.tools.BrokerApiVersionsCommand "$@"
