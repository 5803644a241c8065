# replygate: `make demo` runs the main job, `make test` the whole suite, from a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
KAFKA_PORT ?= 9092
export KAFKA_PORT

.PHONY: install tools images kafka-up kafka-down test test-unit test-k8s k8s-up k8s-down lint demo bench bench-smoke crash clean

$(VENV)/.installed: pyproject.toml dev/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[worker,test,dev,bench]' -e ./dev
	touch $@

install: $(VENV)/.installed

tools:
	bash scripts/install-tools.sh

kafka-up:
	bash deploy/kafka-local/kafka-local.sh up

kafka-down:
	bash deploy/kafka-local/kafka-local.sh down

# The stack's images, from local parts only (deploy/images/build.sh; cached by input hash).
images:
	bash scripts/with-docker.sh bash deploy/images/build.sh

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

# A Docker engine (started here when none answers) for the container tests, and the local
# JVM broker for the rest; tests/support/containers.py builds the images it needs. Two pytest
# processes, a file each at a time: the Kafka tests mostly wait on the broker and the workers.
PYTEST_ARGS ?= -n 2 --dist loadfile
test: install tools lint
	bash scripts/with-docker.sh bash scripts/with-kafka.sh \
	  $(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# The Python-only tests: the venv and nothing else (no root, no apt, no Go, no Docker, no
# broker, no JVM). Leaves out the real-broker tests (-m kafka), the deployment tests
# (tests/deploy: images, kustomize, promtool, a pip build) and the bench smoke run.
UNIT_ARGS ?= -m "not kafka" --ignore=tests/deploy --ignore=tests/bench
test-unit: install
	$(PY) -m pytest -q -p no:cacheprovider $(UNIT_ARGS)

# The cluster tests (tests/k8s) on a local single-node Kubernetes cluster (deploy/k8s-local):
# images built and loaded, the cluster up, the tests, the cluster down (KEEP_CLUSTER=1 keeps it).
test-k8s: install tools
	bash scripts/with-docker.sh bash deploy/k8s-local/test.sh

k8s-up:
	bash scripts/with-docker.sh bash deploy/k8s-local/cluster-up.sh

k8s-down:
	bash deploy/k8s-local/cluster-down.sh

demo: install
	bash scripts/with-kafka.sh $(VENV)/bin/replygate demo

bench: install
	bash scripts/with-kafka.sh $(PY) -m bench

# Every benchmark once with tiny sizes: fails unless each prints its RATIO lines (bench/smoke.py).
bench-smoke: install
	bash scripts/with-kafka.sh $(PY) -m bench.smoke

# Crash soak: N runs of random SIGKILLs at the worker's failpoints (`make crash N=20`).
N ?= 5
crash: install
	bash scripts/with-kafka.sh $(PY) -m tests.support.crash_harness $(N)

clean:
	bash deploy/kafka-local/kafka-local.sh down || true
	bash deploy/k8s-local/cluster-down.sh --purge || true
	rm -rf $(VENV) .run .images
