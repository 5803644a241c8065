"""replygate with real containers, images built here from local parts (tests/support/containers.py).

- a worker process on the host against a Kafka broker in a container (testcontainers);
- the replygate image: non-root, read-only root, ready on /readyz, delivers, stops cleanly on
  SIGTERM within its shutdown bound;
- `docker compose up` of the stack (broker, topics job, worker, Prometheus) with the local
  images: records in through the published port, deliveries out, outcomes in Prometheus.

The rest of the suite runs on the local JVM broker; these never skip: no engine is a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from testcontainers.core.container import DockerContainer

from tests.support.containers import KAFKA_ALIAS, KafkaBroker, docker, images, wait_for_metadata
from tests.support.containers import kafka_container as kafka_container  # the fixture
from tests.support.kafka import REPO, Deployment, by_topic, collect, free_port, produce
from tests.support.samples import GITHUB_PAT, im_text, raw_reply
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka

Records = list[tuple[str, bytes | None, bytes]]


def replies(tag: str) -> list[tuple[str | None, Any]]:
    """Two valid replies, one with a secret, one invalid twice, one that is not JSON."""
    leaking = im_text([{"type": "text", "data": {"text": f"here: {GITHUB_PAT}"}}])
    invalid = {"text": f"prose for {tag}"}
    return [
        (f"c-{tag}-1", raw_reply(turn_id=f"{tag}-valid", conversation_id=f"c-{tag}-1")),
        (
            f"c-{tag}-2",
            raw_reply(
                turn_id=f"{tag}-leaky", conversation_id=f"c-{tag}-2", output={"text": leaking}
            ),
        ),
        (
            f"c-{tag}-3",
            raw_reply(turn_id=f"{tag}-twice", conversation_id=f"c-{tag}-3", output=invalid),
        ),
        (
            f"c-{tag}-3",
            raw_reply(
                turn_id=f"{tag}-twice", conversation_id=f"c-{tag}-3", output=invalid, attempt=1
            ),
        ),
        (f"c-{tag}-4", b'{"turn_id": "broken", ' + GITHUB_PAT.encode()),
    ]


def delivered(topic: str, *turns: str) -> Callable[[Records], bool]:
    def done(records: Records) -> bool:
        ids = {orjson.loads(v).get("turn_id") for t, _, v in records if t == topic}
        return set(turns) <= ids

    return done


def check_deliveries(records: Records, delivery_topic: str, dlq_topic: str, tag: str) -> None:
    assert GITHUB_PAT.encode() not in b"".join(v for _, _, v in records)
    topics = by_topic(records)
    by_turn = {d["turn_id"]: d for d in topics.get(delivery_topic, [])}
    assert by_turn[f"{tag}-valid"]["kind"] == "reply"
    assert by_turn[f"{tag}-leaky"]["masked"]
    assert by_turn[f"{tag}-twice"]["kind"] == "failure_notice"
    assert [x["reason"] for x in topics.get(dlq_topic, [])] == ["not_json"]


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


# ------------------------------------------------------------------ worker on the host
def test_worker_flow_on_the_container_broker(kafka_container: KafkaBroker, tmp_path: Path) -> None:
    deployment = Deployment(partitions=2, bootstrap_servers=kafka_container.bootstrap)
    deployment.create_topics()
    deployment.start_worker(tmp_path, REPLYGATE_CORRECTION_DEADLINE_SECONDS="30")
    t = deployment.topic
    servers = kafka_container.bootstrap
    try:
        asyncio.run(produce(t("replies.raw"), replies("host"), servers=servers))
        records = asyncio.run(
            collect(
                [t("delivery.im"), t("replies.dlq")],
                delivered(t("delivery.im"), "host-valid", "host-leaky", "host-twice"),
                timeout=120,
                settle=2,
                servers=servers,
            )
        )
    finally:
        deployment.stop_all()
        print(deployment.log_tail())
    check_deliveries(records, t("delivery.im"), t("replies.dlq"), "host")


# ------------------------------------------------------------------ the replygate image
SHUTDOWN_BOUND = 15  # REPLYGATE_SHUTDOWN_TIMEOUT_SECONDS in the container


@pytest.fixture
def image_worker(kafka_container: KafkaBroker) -> Iterator[tuple[DockerContainer, str, int]]:
    """The replygate image as compose runs it: non-root, read-only root, tmpfs for its data."""
    image = images()["REPLYGATE_IMAGE"]
    prefix = f"img{uuid.uuid4().hex[:8]}."
    env = {
        "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": f"{KAFKA_ALIAS}:9092",
        "REPLYGATE_TOPIC_PREFIX": prefix,
        "REPLYGATE_APP_ID": prefix.rstrip(".") + "-gate",
        "REPLYGATE_PARTITIONS": "2",
        "REPLYGATE_SHUTDOWN_TIMEOUT_SECONDS": str(SHUTDOWN_BOUND),
    }
    hardening = {
        "read_only": True,
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
    }
    network = kafka_container.network.name
    topics = subprocess.run(
        [docker(), "run", "--rm", "--network", network, "--read-only", "--cap-drop", "ALL",
         *(arg for k, v in env.items() for arg in ("-e", f"{k}={v}")), image, "topics"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert topics.returncode == 0, topics.stdout + topics.stderr
    port = free_port()
    worker = (
        DockerContainer(image)
        .with_command("worker")
        .with_envs(**env)
        .with_network(kafka_container.network)
        .with_bind_ports(9108, port)
        .with_kwargs(**hardening)
        .with_tmpfs_mount("/tmp")
        # the option string goes to docker as it is: the data dir belongs to the worker's uid
        .with_tmpfs_mount("/var/lib/replygate/data", "uid=10001,gid=10001")
    )
    worker.start()
    try:
        yield worker, prefix, port
    finally:
        out, err = worker.get_logs()
        print((out + err).decode(errors="replace")[-4000:])
        worker.stop()


def test_replygate_image_runs_non_root_is_ready_delivers_and_stops_on_sigterm(
    image_worker: tuple[DockerContainer, str, int], kafka_container: KafkaBroker
) -> None:
    worker, prefix, port = image_worker
    wrapped = worker.get_wrapped_container()
    assert wrapped.attrs["Config"]["User"] == "10001:10001"
    code, out = wrapped.exec_run(["id", "-u"])
    assert (code, out.strip()) == (0, b"10001")

    wait_for("/readyz", lambda: http_status(f"http://127.0.0.1:{port}/readyz") == 200, 120)
    servers = kafka_container.bootstrap
    turn = raw_reply(turn_id="image-valid", conversation_id="c-image")
    asyncio.run(produce(prefix + "replies.raw", [("c-image", turn)], servers=servers))
    records = asyncio.run(
        collect(
            [prefix + "delivery.im"],
            delivered(prefix + "delivery.im", "image-valid"),
            timeout=90,
            servers=servers,
        )
    )
    assert [orjson.loads(v)["turn_id"] for _, _, v in records] == ["image-valid"]

    # SIGTERM; docker would SIGKILL (exit 137) only after the bound and a margin
    wrapped.stop(timeout=SHUTDOWN_BOUND + 15)
    wrapped.reload()
    state = wrapped.attrs["State"]
    assert state["Status"] == "exited"
    assert (state["ExitCode"], state["OOMKilled"]) == (0, False)


# ------------------------------------------------------------------ docker compose
COMPOSE = REPO / "docker-compose.yml"
COMPOSE_TLS = REPO / "docker-compose.tls.yml"
SERVICES = ("kafka", "topics", "worker", "prometheus")  # Grafana: no image here (test_deploy)


class Stack:
    """`docker compose` on docker-compose.yml (plus `overrides`) with the local images and
    free loopback ports."""

    def __init__(self, *overrides: Path, **env: str) -> None:
        self.files = [arg for path in (COMPOSE, *overrides) for arg in ("-f", str(path))]
        self.project = f"rgtest{uuid.uuid4().hex[:8]}"
        self.kafka_port = free_port()
        self.worker_port = free_port()
        self.prometheus_port = free_port()
        local = images()
        self.env = {
            "KAFKA_IMAGE": local["KAFKA_IMAGE"],
            "REPLYGATE_IMAGE": local["REPLYGATE_IMAGE"],
            "PROMETHEUS_IMAGE": local["PROMETHEUS_IMAGE"],
            "KAFKA_HOST_PORT": str(self.kafka_port),
            "WORKER_METRICS_PORT": str(self.worker_port),
            "PROMETHEUS_PORT": str(self.prometheus_port),
            "GRAFANA_PORT": str(free_port()),
            **env,
        }

    def run(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [docker(), "compose", "-p", self.project, *self.files, *args],
            cwd=REPO,
            env={**os.environ, **self.env},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.kafka_port}"

    def outcomes(self) -> dict[str, float]:
        query = urllib.parse.urlencode({"query": "sum by (outcome) (replygate_outcomes_total)"})
        url = f"http://127.0.0.1:{self.prometheus_port}/api/v1/query?{query}"
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                body = json.load(response)
        except OSError:
            return {}
        return {r["metric"]["outcome"]: float(r["value"][1]) for r in body["data"]["result"]}


def up(stack: Stack, *services: str) -> Iterator[Stack]:
    """The stack's `services` up for a test, and down (volumes too) after it."""
    try:
        done = stack.run("up", "-d", "--no-build", "--pull", "never", *services)
        assert done.returncode == 0, done.stdout + done.stderr + stack.run("logs").stdout[-6000:]
        yield stack
    finally:
        print(stack.run("logs", "--tail", "40").stdout)
        down = stack.run("down", "-v", "--remove-orphans", "--timeout", "30")
        assert down.returncode == 0, down.stdout + down.stderr


@pytest.fixture
def stack() -> Iterator[Stack]:
    yield from up(Stack(), *SERVICES)


@pytest.fixture
def tls_stack(tmp_path: Path) -> Iterator[Stack]:
    """docker-compose.tls.yml over the stack, with certificates made as its header says."""
    tls = tmp_path / "tls"
    env = {"KAFKA_TLS_DIR": str(tls), "KAFKA_TLS_SAN": "DNS:kafka,DNS:localhost"}
    certs = subprocess.run(
        ["bash", str(REPO / "deploy/kafka-local/kafka-local.sh"), "certs"],
        env={**os.environ, **env, "KAFKA_TLS_SHARED": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert certs.returncode == 0, certs.stderr
    yield from up(Stack(COMPOSE_TLS, KAFKA_TLS_DIR=str(tls)), "kafka", "topics", "worker")


def send_and_check(stack: Stack, tag: str) -> None:
    """`replies(tag)` in through the host port; each outcome out as `check_deliveries` wants."""
    wait_for_metadata(stack.bootstrap, timeout=120)
    asyncio.run(produce("replies.raw", replies(tag), servers=stack.bootstrap))
    turns = (f"{tag}-valid", f"{tag}-leaky", f"{tag}-twice")
    records = asyncio.run(
        collect(
            ["delivery.im", "replies.dlq"],
            delivered("delivery.im", *turns),
            timeout=180,
            settle=2,
            servers=stack.bootstrap,
        )
    )
    check_deliveries(records, "delivery.im", "replies.dlq", tag)


def test_compose_stack_delivers_and_prometheus_counts_the_outcomes(stack: Stack) -> None:
    send_and_check(stack, "compose")

    # Prometheus scrapes the worker every 15 s (deploy/prometheus/prometheus.yml)
    def counted() -> bool:
        seen = stack.outcomes()
        return seen.get("delivered", 0) >= 2 and seen.get("dead_letter", 0) >= 1

    wait_for("replygate_outcomes_total in Prometheus", counted, 120)
    seen = stack.outcomes()
    assert seen["delivered"] == 2 and seen["failure_notice"] == 1 and seen["dead_letter"] == 1


def test_compose_tls_override_the_worker_reaches_the_broker_only_through_mutual_tls(
    tls_stack: Stack,
) -> None:
    """The topics job and the worker are given only the mutual-TLS listener (a client
    certificate from the CA required), so a delivery proves the handshake; their environment
    names the secret files, never their content."""
    config = tls_stack.run("config", "--format", "json")
    assert config.returncode == 0, config.stderr
    services = json.loads(config.stdout)["services"]
    for name in ("topics", "worker"):
        env = services[name]["environment"]
        assert env["REPLYGATE_KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9095"
        assert env["REPLYGATE_KAFKA_SECURITY__PROTOCOL"] == "SSL"
        assert not any("BEGIN" in str(value) for value in env.values())
    send_and_check(tls_stack, "tls")
