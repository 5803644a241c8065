# syntax=docker/dockerfile:1
# replygate worker image: `docker build -t replygate .`
#   docker run --rm replygate worker        (default)
#   docker run --rm replygate topics
# Runs as uid 10001 and works with a read-only root filesystem: mount writable
# /var/lib/replygate/data (Faust's data dir) and /tmp, as docker-compose.yml and the
# Kubernetes Deployment do.
ARG PYTHON_IMAGE=python:3.11-slim

# ---- builder: the wheel and its dependencies, installed into a venv -------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
# Compilers only here, for a dependency without a wheel for this platform.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/replygate
WORKDIR /src
COPY pyproject.toml README.md ./
COPY schemas ./schemas
COPY streams ./streams
RUN /opt/replygate/bin/pip install --upgrade pip wheel \
 && /opt/replygate/bin/pip wheel --no-deps --wheel-dir /wheels . \
 && /opt/replygate/bin/pip install /wheels/*.whl \
 && /opt/replygate/bin/python -m compileall -q /opt/replygate/lib

# ---- runtime --------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="replygate" \
      org.opencontainers.image.description="Validates, masks and delivers LLM replies on Kafka" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN groupadd --system --gid 10001 replygate \
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
# 9108: /metrics, /livez, /readyz. 6066: Faust's own web server.
EXPOSE 9108 6066
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/livez' % os.environ.get('REPLYGATE_METRICS_PORT', '9108'), timeout=2)"]
ENTRYPOINT ["replygate"]
CMD ["worker"]
