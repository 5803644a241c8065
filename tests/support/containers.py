"""Containers for the tests: the images built locally and a Kafka broker from them.

No container registry is reachable, so every image comes from `deploy/images/build.sh` (a
debootstrapped Debian base, Kafka from the local broker's jars, replygate from the Dockerfile,
Prometheus from Debian's package); it rebuilds only what changed. testcontainers pulls an
image only when it is missing, so the local names just work; its Ryuk reaper image cannot be
pulled, so Ryuk is off and every fixture removes what it started.

There is no skip here: without a Docker engine these fixtures fail, naming the way to get one
(`make test` runs the suite under scripts/with-docker.sh, which starts `dockerd`).
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from testcontainers.core.container import DockerContainer
from testcontainers.core.network import Network
from testcontainers.core.wait_strategies import LogMessageWaitStrategy

from tests.support.kafka import free_port

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "deploy" / "images" / "build.sh"
IMAGES_ENV = REPO / ".images" / "images.env"
KAFKA_ALIAS = "kafka"  # the broker's name on a test network, as in docker-compose.yml
NO_ENGINE = (
    "no Docker engine answers: run the suite with `make test` (scripts/with-docker.sh starts "
    "dockerd, installing Debian's docker.io when it is missing)"
)


def docker() -> str:
    """The docker CLI, and an engine that answers; a loud failure otherwise (never a skip)."""
    cli = shutil.which("docker")
    if cli is None:
        pytest.fail(NO_ENGINE)
    if subprocess.run([cli, "info"], capture_output=True, timeout=60).returncode != 0:
        pytest.fail(NO_ENGINE)
    return cli


@functools.cache
def images() -> dict[str, str]:
    """Build the local images (cached: an image whose inputs did not change is kept).

    Returns KAFKA_IMAGE, REPLYGATE_IMAGE, PROMETHEUS_IMAGE and BASE_IMAGE by name.
    """
    docker()
    proc = subprocess.run(
        ["bash", str(BUILD)], capture_output=True, text=True, timeout=1800, check=False
    )
    if proc.returncode != 0:
        pytest.fail(f"deploy/images/build.sh failed:\n{proc.stdout}\n{proc.stderr}")
    pairs = (line.split("=", 1) for line in IMAGES_ENV.read_text().splitlines() if "=" in line)
    return {key: value for key, value in pairs}


async def _metadata(servers: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=servers, request_timeout_ms=5000)
    await admin.start()
    try:
        await admin.list_topics()
    finally:
        await admin.close()


def wait_for_metadata(servers: str, timeout: float = 60.0) -> None:
    """Until the broker answers a METADATA request from the host."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            asyncio.run(_metadata(servers))
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class KafkaBroker(DockerContainer):
    """A single-node KRaft broker from the local Kafka image, on its own Docker network.

    Two listeners, as in docker-compose.yml: PLAINTEXT (`kafka:9092`) for containers on the
    network and for the broker itself (transaction markers go there), HOST for clients on this
    machine, published on a free loopback port and advertised as `127.0.0.1:<port>`.
    """

    def __init__(self, image: str) -> None:
        super().__init__(image)
        self.host_port = free_port()
        self.network = Network()
        self.with_bind_ports(9094, self.host_port)
        self.with_envs(
            KAFKA_LISTENERS="PLAINTEXT://:9092,CONTROLLER://:9093,HOST://:9094",
            KAFKA_ADVERTISED_LISTENERS=(
                f"PLAINTEXT://{KAFKA_ALIAS}:9092,HOST://127.0.0.1:{self.host_port}"
            ),
            KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=(
                "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,HOST:PLAINTEXT"
            ),
        )
        self.waiting_for(LogMessageWaitStrategy("Kafka Server started").with_startup_timeout(120))

    @property
    def bootstrap(self) -> str:
        """For clients on this machine."""
        return f"127.0.0.1:{self.host_port}"

    def start(self) -> KafkaBroker:
        self.network.create()
        self.with_network(self.network).with_network_aliases(KAFKA_ALIAS)
        super().start()
        wait_for_metadata(self.bootstrap)
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        try:
            super().stop(force, delete_volume)
        finally:
            self.network.remove()


@pytest.fixture(scope="module")
def kafka_container() -> Iterator[KafkaBroker]:
    """A Kafka broker in a container, from the locally built image."""
    broker = KafkaBroker(images()["KAFKA_IMAGE"]).start()
    try:
        yield broker
    finally:
        broker.stop()
