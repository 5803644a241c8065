#!/usr/bin/env bash
# Local single-node Apache Kafka broker (KRaft, broker+controller in one JVM)
# from jars resolved from Maven Central. See README.md beside this file.
#
#   kafka-local.sh up            start (idempotent) and wait until it answers
#   kafka-local.sh down [--purge] stop (idempotent); --purge also deletes data
#   kafka-local.sh status        print running / not running (exit 0 / 3)
#   kafka-local.sh wait          wait until a running broker answers
#   kafka-local.sh jars          only resolve the jar cache (KAFKA_LIB_DIR)
#   kafka-local.sh certs         only make the TLS certificates (KAFKA_TLS_DIR)
#
# Env: KAFKA_PORT (9092), KAFKA_CONTROLLER_PORT (KAFKA_PORT+1),
#      KAFKA_LOCAL_HOME (<repo>/.kafka-local), KAFKA_LIB_DIR (KAFKA_LOCAL_HOME/lib: the jar
#      cache, shareable between brokers), KAFKA_HEAP ("-Xms256m -Xmx512m"),
#      KAFKA_SASL_PORT (unset: no SASL listener), KAFKA_SASL_USER (replygate),
#      KAFKA_SASL_PASSWORD (replygate-secret), KAFKA_SSL_PORT (unset: no mutual-TLS
#      listener), KAFKA_SASL_SSL_PORT (unset: no SCRAM-over-TLS listener), KAFKA_TLS_DIR
#      (KAFKA_LOCAL_HOME/tls: CA, server and client certificates, made here when missing),
#      KAFKA_TLS_SAN (DNS:localhost), KAFKA_TLS_CLIENT_CN (KAFKA_SASL_USER),
#      KAFKA_AUTHORIZER (0; 1: StandardAuthorizer), KAFKA_START_TIMEOUT (90),
#      KAFKA_PROBE (auto|kcat|java), KAFKA_PURGE (1: down also purges),
#      KAFKA_JVM_OPTS (JVM flags besides the heap), KAFKA_CDS (1: class-data
#      sharing archive, 0: off), JAVA_HOME.
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true

SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$SCRIPT_DIR/../.." && pwd)

KAFKA_LOCAL_HOME=${KAFKA_LOCAL_HOME:-$REPO_ROOT/.kafka-local}
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-$((KAFKA_PORT + 1))}
KAFKA_HEAP=${KAFKA_HEAP:--Xms256m -Xmx512m}
# C1 only (TieredStopAtLevel=1): about half the CPU and 2 s less to start on a
# 2-core machine, lower RSS; peak throughput is lower, which tests don't feel.
# Drop it from KAFKA_JVM_OPTS to benchmark the broker.
KAFKA_JVM_OPTS=${KAFKA_JVM_OPTS:--XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent -XX:TieredStopAtLevel=1 -Djava.awt.headless=true}
KAFKA_CDS=${KAFKA_CDS:-1}
KAFKA_SASL_PORT=${KAFKA_SASL_PORT:-}
KAFKA_SASL_USER=${KAFKA_SASL_USER:-replygate}
KAFKA_SASL_PASSWORD=${KAFKA_SASL_PASSWORD:-replygate-secret}
KAFKA_SSL_PORT=${KAFKA_SSL_PORT:-}
KAFKA_SASL_SSL_PORT=${KAFKA_SASL_SSL_PORT:-}
KAFKA_TLS_DIR=${KAFKA_TLS_DIR:-$KAFKA_LOCAL_HOME/tls}
KAFKA_TLS_SAN=${KAFKA_TLS_SAN:-DNS:localhost}
KAFKA_TLS_CLIENT_CN=${KAFKA_TLS_CLIENT_CN:-$KAFKA_SASL_USER}
KAFKA_TLS_DAYS=${KAFKA_TLS_DAYS:-30}
KAFKA_AUTHORIZER=${KAFKA_AUTHORIZER:-0}
KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-90}
KAFKA_PROBE=${KAFKA_PROBE:-auto}

LIB_DIR=${KAFKA_LIB_DIR:-$KAFKA_LOCAL_HOME/lib}
DATA_DIR=$KAFKA_LOCAL_HOME/data
LOG_DIRS=$DATA_DIR/kraft
LOGS_DIR=$DATA_DIR/logs
OUT_LOG=$LOGS_DIR/kafka.out
SERVER_LOG=$LOGS_DIR/server.log
PROPS=$KAFKA_LOCAL_HOME/server.properties
PID_FILE=$KAFKA_LOCAL_HOME/kafka.pid
POM=$SCRIPT_DIR/pom.xml
TEMPLATE=$SCRIPT_DIR/server.properties.in
LOG4J=$SCRIPT_DIR/log4j2.properties

if [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then JAVA=$JAVA_HOME/bin/java; else JAVA=java; fi

log() { printf 'kafka-local: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { printf '%s' "${EPOCHREALTIME/,/.}"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# ---------------------------------------------------------------- process
# pid of the broker this script started, if it is still alive (else empty)
broker_pid() {
  [[ -f $PID_FILE ]] || return 0
  local pid
  pid=$(<"$PID_FILE")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  # guard against pid reuse: it must be our kafka.Kafka with our properties
  if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -F "kafka.Kafka $PROPS" >/dev/null; then
    printf '%s' "$pid"
  fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# ---------------------------------------------------------------- probe
# One METADATA round trip against the PLAINTEXT listener. kcat (librdkafka)
# answers in milliseconds; the fallback, Kafka's own TopicCommand (Admin
# listTopics = METADATA), costs a JVM start (~1-2 s) per try.
probe_kind() {
  case $KAFKA_PROBE in
    kcat | java) printf '%s' "$KAFKA_PROBE" ;;
    auto) if command -v kcat >/dev/null 2>&1; then printf kcat; else printf java; fi ;;
    *) die "KAFKA_PROBE must be auto, kcat or java (got '$KAFKA_PROBE')" ;;
  esac
}

probe() {
  port_open "$KAFKA_PORT" || return 1
  if [[ $(probe_kind) == kcat ]]; then
    kcat -b "127.0.0.1:$KAFKA_PORT" -L -m 3 -q 2>/dev/null | grep ' 1 brokers:' >/dev/null
  else
    local cfg=$KAFKA_LOCAL_HOME/probe.properties
    [[ -f $cfg ]] || printf 'request.timeout.ms=3000\ndefault.api.timeout.ms=4000\n' >"$cfg"
    "$JAVA" -Xms32m -Xmx128m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp "$LIB_DIR/*" \
      -Dlog4j2.level=OFF -Dlog4j2.StatusLogger.level=OFF \
      org.apache.kafka.tools.TopicCommand --bootstrap-server "127.0.0.1:$KAFKA_PORT" \
      --command-config "$cfg" --list >/dev/null 2>&1
  fi
}

# wait until the broker answers; $1 = pid to watch (may be empty)
wait_ready() {
  local pid=${1:-} deadline=$((SECONDS + KAFKA_START_TIMEOUT))
  while ((SECONDS < deadline)); do
    if probe; then return 0; fi
    if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
      log "broker process $pid exited before answering"
      show_log_tail
      return 1
    fi
    sleep 0.2
  done
  log "broker did not answer a METADATA request on 127.0.0.1:$KAFKA_PORT within ${KAFKA_START_TIMEOUT}s"
  show_log_tail
  return 1
}

file_size() { stat -c %s "$1" 2>/dev/null || echo 0; }

# byte offsets of the logs when this start began (show only what it wrote)
LOG_MARK_OUT=0
LOG_MARK_SERVER=0
mark_logs() {
  LOG_MARK_OUT=$(file_size "$OUT_LOG")
  LOG_MARK_SERVER=$(file_size "$SERVER_LOG")
}

show_log_tail() {
  local f off
  for f in "$OUT_LOG" "$SERVER_LOG"; do
    [[ -s $f ]] || continue
    if [[ $f == "$OUT_LOG" ]]; then off=$LOG_MARK_OUT; else off=$LOG_MARK_SERVER; fi
    (($(file_size "$f") >= off)) || off=0 # rotated meanwhile
    (($(file_size "$f") > off)) || continue
    log "---- last 50 lines of $f (this start) ----"
    tail -c "+$((off + 1))" "$f" | tail -n 50 >&2
  done
}

# ---------------------------------------------------------------- setup
resolve_jars() {
  local stamp want
  want=$(sha256sum "$POM" | cut -d' ' -f1)
  stamp=$LIB_DIR/.resolved
  if [[ -f $stamp && $(<"$stamp") == "$want" ]]; then return 0; fi
  command -v mvn >/dev/null 2>&1 || die "mvn not found (needed once to resolve the Kafka jars into $LIB_DIR)"
  log "resolving Kafka jars with Maven into $LIB_DIR (first time only)"
  local t0 tmp
  t0=$(now)
  tmp=$KAFKA_LOCAL_HOME/lib.tmp.$$
  rm -rf "$tmp"
  if ! mvn -q -B -f "$POM" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$tmp" >"$KAFKA_LOCAL_HOME/mvn.log" 2>&1; then
    rm -rf "$tmp"
    tail -n 50 "$KAFKA_LOCAL_HOME/mvn.log" >&2
    die "mvn dependency:copy-dependencies failed (log: $KAFKA_LOCAL_HOME/mvn.log)"
  fi
  printf '%s\n' "$want" >"$tmp/.resolved"
  rm -rf "$LIB_DIR"
  mv "$tmp" "$LIB_DIR"
  log "jars resolved in $(elapsed "$t0")s ($(find "$LIB_DIR" -name '*.jar' | wc -l) jars)"
}

check_password() {
  # must survive a Java properties file, a JAAS string and --add-scram [..]
  [[ $KAFKA_SASL_USER =~ ^[A-Za-z0-9._-]+$ ]] || die "KAFKA_SASL_USER may only contain [A-Za-z0-9._-]"
  [[ $KAFKA_SASL_PASSWORD =~ ^[A-Za-z0-9._@%+:-]+$ ]] || die "KAFKA_SASL_PASSWORD may only contain [A-Za-z0-9._@%+:-]"
}

# whether the template lines tagged "#$1# " are on
tag_on() {
  case $1 in
    sasl) [[ -n $KAFKA_SASL_PORT ]] ;;
    tls) [[ -n $KAFKA_SSL_PORT || -n $KAFKA_SASL_SSL_PORT ]] ;;
    ssl) [[ -n $KAFKA_SSL_PORT ]] ;;
    sasl_ssl) [[ -n $KAFKA_SASL_SSL_PORT ]] ;;
    acl) [[ $KAFKA_AUTHORIZER == 1 ]] ;;
    *) die "server.properties.in: unknown line tag '#$1#'" ;;
  esac
}

# extra listeners: $1 = bind (127.0.0.1) or advertised (localhost: the name in the
# server certificate, so a TLS client that checks host names can reach it)
extra_listeners() {
  local tls_host=127.0.0.1 out=""
  [[ $1 == advertised ]] && tls_host=localhost
  [[ -z $KAFKA_SASL_PORT ]] || out+=",SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT"
  [[ -z $KAFKA_SSL_PORT ]] || out+=",SSL://$tls_host:$KAFKA_SSL_PORT"
  [[ -z $KAFKA_SASL_SSL_PORT ]] || out+=",SASL_SSL://$tls_host:$KAFKA_SASL_SSL_PORT"
  printf '%s' "$out"
}

render_properties() {
  local listeners advertised line tag out
  listeners=$(extra_listeners bind)
  advertised=$(extra_listeners advertised)
  out=$PROPS.tmp.$$
  : >"$out"
  while IFS= read -r line || [[ -n $line ]]; do
    if [[ $line =~ ^#([a-z_]+)#\ (.*)$ ]]; then
      tag=${BASH_REMATCH[1]}
      tag_on "$tag" || continue
      line=${BASH_REMATCH[2]}
    fi
    line=${line//@KAFKA_PORT@/$KAFKA_PORT}
    line=${line//@KAFKA_CONTROLLER_PORT@/$KAFKA_CONTROLLER_PORT}
    line=${line//@LISTENERS@/$listeners}
    line=${line//@ADVERTISED_LISTENERS@/$advertised}
    line=${line//@KAFKA_SASL_USER@/$KAFKA_SASL_USER}
    line=${line//@KAFKA_SASL_PASSWORD@/$KAFKA_SASL_PASSWORD}
    line=${line//@KAFKA_TLS_DIR@/$KAFKA_TLS_DIR}
    line=${line//@KAFKA_LOG_DIRS@/$LOG_DIRS}
    printf '%s\n' "$line" >>"$out"
  done <"$TEMPLATE"
  mv "$out" "$PROPS"
}

# ---------------------------------------------------------------- TLS
# A private CA, the broker's certificate (KAFKA_TLS_SAN) and a client certificate
# (CN=KAFKA_TLS_CLIENT_CN, the principal on the mutual-TLS listener), made once with
# openssl: PEM files Kafka reads as they are (ssl.keystore.type=PEM). Keys stay 0600.
tls_issue() { # name subject extension-line
  local dir=$KAFKA_TLS_DIR
  printf '%s\n' "$3" >"$dir/$1.ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$dir/$1.key" -out "$dir/$1.csr" -subj "$2" 2>/dev/null
  openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -days "$KAFKA_TLS_DAYS" -out "$dir/$1.pem" -extfile "$dir/$1.ext" 2>/dev/null
  rm -f "$dir/$1.csr" "$dir/$1.ext"
}

make_tls() {
  tag_on tls || return 0
  command -v openssl >/dev/null 2>&1 || die "openssl not found (needed for the TLS listeners)"
  [[ $KAFKA_TLS_CLIENT_CN =~ ^[A-Za-z0-9._-]+$ ]] || die "KAFKA_TLS_CLIENT_CN may only contain [A-Za-z0-9._-]"
  local dir=$KAFKA_TLS_DIR want
  want="$KAFKA_TLS_SAN|$KAFKA_TLS_CLIENT_CN"
  if [[ -s $dir/server.keystore.pem && -s $dir/client.pem && $(cat "$dir/.made" 2>/dev/null) == "$want" ]] &&
    openssl x509 -checkend 3600 -noout -in "$dir/server.pem" >/dev/null 2>&1; then
    return 0
  fi
  log "making a CA, a server (${KAFKA_TLS_SAN}) and a client (CN=$KAFKA_TLS_CLIENT_CN) certificate in $dir"
  mkdir -p "$dir"
  chmod 700 "$dir"
  (
    umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$dir/ca.key" -out "$dir/ca.pem" -days "$KAFKA_TLS_DAYS" -subj "/CN=kafka-local-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    tls_issue server "/CN=kafka-local-broker" "subjectAltName=$KAFKA_TLS_SAN"
    tls_issue client "/CN=$KAFKA_TLS_CLIENT_CN" "extendedKeyUsage=clientAuth"
    cat "$dir/server.key" "$dir/server.pem" >"$dir/server.keystore.pem"
  ) || die "openssl could not make the certificates in $dir"
  chmod 644 "$dir/ca.pem" "$dir/server.pem" "$dir/client.pem"
  printf '%s\n' "$want" >"$dir/.made"
}

# Kafka Uuid: 16 random bytes, URL-safe base64 without padding; Kafka itself
# never hands out one starting with '-' (it would read as a CLI flag).
random_cluster_id() {
  local id
  while :; do
    id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    [[ $id != -* ]] && break
  done
  printf '%s' "$id"
}

scram_fingerprint() { printf '%s:%s' "$KAFKA_SASL_USER" "$KAFKA_SASL_PASSWORD" | sha256sum | cut -c1-16; }

format_storage() {
  if [[ -f $LOG_DIRS/meta.properties ]]; then
    if [[ -n $KAFKA_SASL_PORT$KAFKA_SASL_SSL_PORT && -f $DATA_DIR/.scram && $(<"$DATA_DIR/.scram") != "$(scram_fingerprint)" ]]; then
      log "WARNING: SCRAM credentials were set at format time for another KAFKA_SASL_USER/PASSWORD;" \
        "PLAIN uses the new ones, SCRAM the old ones. Run '$0 down --purge' to re-format."
    fi
    return 0
  fi
  local id
  id=$(random_cluster_id)
  log "formatting $LOG_DIRS (cluster id $id)"
  # SCRAM credentials can only be bootstrapped here; add them always so that
  # turning on KAFKA_SASL_PORT later needs no re-format (but a new password does).
  "$JAVA" -Xmx256m -cp "$LIB_DIR/*" -Dlog4j2.configurationFile="$LOG4J" -Dkafka.logs.dir="$LOGS_DIR" \
    kafka.tools.StorageTool format -t "$id" -c "$PROPS" --ignore-formatted \
    --add-scram "SCRAM-SHA-256=[name=$KAFKA_SASL_USER,password=$KAFKA_SASL_PASSWORD]" \
    --add-scram "SCRAM-SHA-512=[name=$KAFKA_SASL_USER,password=$KAFKA_SASL_PASSWORD]" \
    >>"$OUT_LOG" 2>&1 || { show_log_tail; die "kafka-storage format failed"; }
  scram_fingerprint >"$DATA_DIR/.scram"
}

# ---------------------------------------------------------------- CDS
# AppCDS (Java 17 dynamic archive): the first broker run records the classes
# it loaded and writes $LIB_DIR/kafka-<key>.jsa when it exits cleanly (on
# `down`, ~5 s extra once); later starts map it and start ~2x faster. The key
# covers the JVM build and the jar set, so a new JDK or new jars make a new
# archive; a stale or broken one only costs a warning in kafka.out.
cds_archive() {
  local jvm real
  real=$(readlink -f "$(command -v "$JAVA")")
  jvm=$(dirname "$(dirname "$real")")/lib/server/libjvm.so
  printf '%s/kafka-%s.jsa' "$LIB_DIR" \
    "$( { printf '%s\n' "$real"; stat -L -c '%s %Y' "$jvm" 2>/dev/null; cat "$LIB_DIR/.resolved"; } | sha256sum | cut -c1-12)"
}

# JVM flags for CDS (one per line)
cds_opts() {
  [[ $KAFKA_CDS == 1 ]] || return 0
  local jsa
  jsa=$(cds_archive)
  if [[ -s $jsa ]]; then
    printf '%s\n' "-XX:SharedArchiveFile=$jsa"
  else
    rm -f "$LIB_DIR"/kafka-*.jsa "$LIB_DIR"/kafka-*.jsa.tmp
    printf '%s\n' "-XX:ArchiveClassesAtExit=$jsa.tmp" "-Xlog:cds=error,cds+dynamic=error"
  fi
}

# after a clean exit, keep the archive the broker wrote; else drop it
cds_finish() {
  local clean=$1 tmp
  for tmp in "$LIB_DIR"/kafka-*.jsa.tmp; do
    [[ -e $tmp ]] || continue
    if [[ $clean == 1 && -s $tmp ]]; then mv -f "$tmp" "${tmp%.tmp}"; else rm -f "$tmp"; fi
  done
}

# ---------------------------------------------------------------- commands
# serialize up/down on one KAFKA_LOCAL_HOME (fd 9; the broker must not inherit it)
lock() {
  command -v flock >/dev/null 2>&1 || return 0
  exec 9>"$KAFKA_LOCAL_HOME/.lock"
  flock -w 180 9 || die "another kafka-local.sh is busy with $KAFKA_LOCAL_HOME"
}

cmd_up() {
  mkdir -p "$KAFKA_LOCAL_HOME"
  lock

  local pid
  pid=$(broker_pid)
  if [[ -n $pid ]]; then
    if ! grep -q "^listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT," "$PROPS"; then
      die "a broker from this script (pid $pid) runs with other ports (see $PROPS); run '$0 down' first"
    fi
    if probe; then
      log "already running (pid $pid) on 127.0.0.1:$KAFKA_PORT"
      return 0
    fi
    log "broker pid $pid is running but not answering yet; waiting"
    wait_ready "$pid" || die "running broker (pid $pid) does not answer"
    log "ready on 127.0.0.1:$KAFKA_PORT (pid $pid)"
    return 0
  fi
  rm -f "$PID_FILE"
  local p
  for p in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT" ${KAFKA_SASL_PORT:+"$KAFKA_SASL_PORT"} \
    ${KAFKA_SSL_PORT:+"$KAFKA_SSL_PORT"} ${KAFKA_SASL_SSL_PORT:+"$KAFKA_SASL_SSL_PORT"}; do
    if port_open "$p"; then die "port $p on 127.0.0.1 is already in use by a process not started by this script"; fi
  done

  command -v "$JAVA" >/dev/null 2>&1 || die "java not found (Java 17+ needed)"
  check_password
  resolve_jars
  mkdir -p "$LOG_DIRS" "$LOGS_DIR"
  mark_logs
  printf '==== kafka-local.sh up %s\n' "$(date -Is)" >>"$OUT_LOG"
  make_tls
  render_properties
  format_storage

  local t0 cds=()
  mapfile -t cds < <(cds_opts)
  t0=$(now)
  # shellcheck disable=SC2086 # KAFKA_HEAP / KAFKA_JVM_OPTS are word lists
  nohup "$JAVA" $KAFKA_HEAP $KAFKA_JVM_OPTS "${cds[@]}" \
    -Dlog4j2.configurationFile="$LOG4J" -Dkafka.logs.dir="$LOGS_DIR" \
    -cp "$LIB_DIR/*" kafka.Kafka "$PROPS" >>"$OUT_LOG" 2>&1 </dev/null 9>&- &
  pid=$!
  printf '%s\n' "$pid" >"$PID_FILE"
  log "started broker pid $pid (log: $SERVER_LOG); waiting up to ${KAFKA_START_TIMEOUT}s"
  if ! wait_ready "$pid"; then
    stop_pid "$pid" 10 >/dev/null 2>&1 || true
    cds_finish 0
    rm -f "$PID_FILE"
    die "broker failed to start"
  fi
  log "ready on 127.0.0.1:$KAFKA_PORT$(extra_listeners advertised)$([[ $KAFKA_AUTHORIZER == 1 ]] && printf ' (authorizer on)') in $(elapsed "$t0")s (pid $pid, probe $(probe_kind))"
}

# SIGTERM, wait up to $2 seconds, then SIGKILL; returns 1 if it had to kill
stop_pid() {
  local pid=$1 grace=$2 i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  log "broker pid $pid still alive after ${grace}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

cmd_down() {
  local purge=${KAFKA_PURGE:-0}
  while (($#)); do
    case $1 in
      --purge) purge=1 ;;
      *) die "down: unknown argument '$1'" ;;
    esac
    shift
  done
  [[ -d $KAFKA_LOCAL_HOME ]] || { log "not running"; return 0; }
  lock
  local pid t0
  pid=$(broker_pid)
  if [[ -n $pid ]]; then
    t0=$(now)
    if stop_pid "$pid" 30; then cds_finish 1; else cds_finish 0; fi
    log "stopped broker pid $pid in $(elapsed "$t0")s"
  else
    log "not running"
  fi
  rm -f "$PID_FILE"
  if [[ $purge == 1 ]]; then
    rm -rf "$DATA_DIR" "$PROPS"
    log "purged $DATA_DIR (jar cache in $LIB_DIR kept)"
  fi
}

cmd_status() {
  local pid
  pid=$(broker_pid)
  if [[ -n $pid ]]; then
    if probe; then
      echo "running (pid $pid, 127.0.0.1:$KAFKA_PORT)"
    else
      echo "running (pid $pid, 127.0.0.1:$KAFKA_PORT) but not answering"
    fi
    return 0
  fi
  echo "not running"
  return 3
}

cmd_wait() {
  local pid t0
  pid=$(broker_pid)
  [[ -n $pid ]] || die "not running (start it with: $0 up)"
  t0=$(now)
  wait_ready "$pid" || die "broker does not answer"
  log "ready on 127.0.0.1:$KAFKA_PORT after $(elapsed "$t0")s"
}

# only the certificates (KAFKA_TLS_DIR, KAFKA_TLS_SAN, KAFKA_TLS_CLIENT_CN), e.g. for the
# TLS Compose override; KAFKA_TLS_SHARED=1 makes the keys readable by the containers' users
cmd_certs() {
  KAFKA_SSL_PORT=${KAFKA_SSL_PORT:-certs}
  make_tls
  if [[ ${KAFKA_TLS_SHARED:-0} == 1 ]]; then
    chmod 755 "$KAFKA_TLS_DIR"
    chmod 644 "$KAFKA_TLS_DIR/client.key" "$KAFKA_TLS_DIR/server.key" "$KAFKA_TLS_DIR/server.keystore.pem"
  fi
  log "certificates in $KAFKA_TLS_DIR: ca.pem, server.keystore.pem, client.pem, client.key"
}

cmd_jars() {
  mkdir -p "$KAFKA_LOCAL_HOME"
  lock
  resolve_jars
}

case ${1:-} in
  up) shift; cmd_up "$@" ;;
  jars) shift; cmd_jars ;;
  certs) shift; cmd_certs ;;
  down) shift; cmd_down "$@" ;;
  status) shift; cmd_status "$@" ;;
  wait) shift; cmd_wait "$@" ;;
  *)
    echo "usage: $0 {up|down [--purge]|status|wait|jars|certs}" >&2
    exit 2
    ;;
esac
