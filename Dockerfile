# replygate worker image: `docker build -t replygate .`
#   docker run --rm replygate worker        (default)
#   docker run --rm replygate topics
# Debian bookworm's python3 (3.11) and a venv with replygate from PyPI. BASE_IMAGE is any
# Debian bookworm image: the upstream one by default, the local debootstrapped one in
# `make test` (deploy/images/build.sh passes --build-arg BASE_IMAGE=...).
# Runs as uid 10001 and works with a read-only root filesystem: mount writable
# /var/lib/replygate/data (Faust's data dir) and /tmp, as docker-compose.yml and the
# Kubernetes Deployment do. SIGTERM stops it within REPLYGATE_SHUTDOWN_TIMEOUT_SECONDS.
ARG BASE_IMAGE=debian:bookworm-slim

# ---- builder: the package and its dependencies, installed into a venv -----------------
FROM ${BASE_IMAGE} AS builder
ARG DEBIAN_FRONTEND=noninteractive
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PYTHONDONTWRITEBYTECODE=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/replygate
WORKDIR /src
# Dependencies first, from pyproject.toml alone (a layer kept while only the sources change).
COPY pyproject.toml ./
RUN mkdir -p schemas streams && touch README.md schemas/__init__.py streams/__init__.py \
 && /opt/replygate/bin/pip install -q --upgrade pip \
 && /opt/replygate/bin/pip install -q ".[worker]" \
 && /opt/replygate/bin/pip uninstall -q -y replygate \
 && rm -rf schemas streams README.md build
COPY README.md ./
COPY schemas ./schemas
COPY streams ./streams
COPY replygate ./replygate
RUN /opt/replygate/bin/pip install -q --no-deps . \
 && /opt/replygate/bin/python -m compileall -q /opt/replygate/lib

# ---- runtime --------------------------------------------------------------------------
FROM ${BASE_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
LABEL org.opencontainers.image.title="replygate" \
      org.opencontainers.image.description="Validates, masks and delivers LLM replies on Kafka" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 replygate \
 && useradd --system --uid 10001 --gid replygate --no-create-home \
      --home-dir /var/lib/replygate --shell /usr/sbin/nologin replygate \
 && mkdir -p /var/lib/replygate/data /var/lib/replygate/workspaces /var/lib/replygate/media \
 && chown -R 10001:10001 /var/lib/replygate
COPY --from=builder /opt/replygate /opt/replygate
ENV PATH=/opt/replygate/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/var/lib/replygate \
    REPLYGATE_DATA_DIR=/var/lib/replygate/data \
    REPLYGATE_WORKSPACES_ROOT=/var/lib/replygate/workspaces \
    REPLYGATE_MEDIA_ROOT=/var/lib/replygate/media \
    REPLYGATE_METRICS_PORT=9108
WORKDIR /var/lib/replygate
USER 10001:10001
# 9108: /metrics, /livez, /readyz (Faust's own web server is off).
EXPOSE 9108
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/livez' % os.environ.get('REPLYGATE_METRICS_PORT', '9108'), timeout=2)"]
ENTRYPOINT ["replygate"]
CMD ["worker"]
