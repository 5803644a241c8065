"""The cluster tests' shared fixtures: the in-cluster broker and the local overlay, applied once.

`make test-k8s` (deploy/k8s-local/test.sh) brings the cluster up with the images loaded and sets
KUBECONFIG, PATH and KAFKA_BOOTSTRAP_SERVERS (the broker pod's listener on the pod bridge).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from tests.k8s.kube import KAFKA_NAMESPACE, LOCAL, REPO, kubectl, wait_for, wait_ready
from tests.k8s.prometheus import Prometheus
from tests.support.kafka import bootstrap

BROKER_SECONDS = 180.0


async def _broker_answers() -> bool:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap(), request_timeout_ms=3000)
    try:
        await admin.start()
        await admin.list_topics()
    except Exception:
        return False
    finally:
        await admin.close()
    return True


@pytest.fixture(scope="session")
def broker() -> str:
    """The project's Kafka image as a pod, answering on 10.244.0.1:9094."""
    kubectl("apply", "-k", str(LOCAL / "kafka"))
    kubectl(
        "-n",
        KAFKA_NAMESPACE,
        "rollout",
        "status",
        "deployment/kafka",
        "--timeout=180s",
        timeout=200,
    )
    wait_for("the broker pod to answer", lambda: asyncio.run(_broker_answers()), BROKER_SECONDS)
    return bootstrap()


@pytest.fixture(scope="session")
def workers(broker: str) -> str:
    """The local overlay applied: the topics Job complete and 2 Ready workers."""
    kubectl("apply", "-k", str(LOCAL))
    kubectl(
        "-n",
        "replygate",
        "wait",
        "--for=condition=complete",
        "job/replygate-topics",
        "--timeout=240s",
        timeout=260,
    )
    wait_ready(2)
    return broker


# The scale test runs while Prometheus scrapes; the Prometheus checks read what it scraped.
ORDER = (
    "test_overlay",
    "test_scale",
    "test_prometheus",
    "test_autoscale",
    "test_lag_autoscale",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.stem
        return ORDER.index(name) if name in ORDER else len(ORDER)

    items.sort(key=rank)


@pytest.fixture(scope="session")
def prometheus(workers: str) -> Iterator[tuple[Prometheus, float]]:
    """Prometheus on the host, discovering the worker pods through the API server and scraping
    them from the first test that asks for it; yields it with the time it started (the range
    the checks query)."""
    prom = Prometheus.start(REPO / ".run" / "k8s-prometheus")
    try:
        yield prom, time.time()
    finally:
        prom.stop()
