"""A namespace with the Service `replygate-metrics` and service links on (Kubernetes' default):
every pod gets its link variables, `REPLYGATE_METRICS_PORT=tcp://...` among them. The endpoint
and the agent client start and work there as anywhere (real broker, real processes)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from tests.core.test_settings_links_files import METRICS_SERVICE_LINKS
from tests.support.deliveries import Reader, delivery
from tests.support.kafka import Deployment, collect, produce

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(120)]


def test_the_endpoint_runs_beside_the_metrics_service(tmp_path: Path) -> None:
    deployment = Deployment(partitions=1)
    deployment.env.update(REPLYGATE_PLATFORMS='["im"]')
    deployment.create_topics()
    asyncio.run(produce(deployment.topic("delivery.im"), [("c-1", delivery("t-1"))]))
    deployment.env.update(METRICS_SERVICE_LINKS)  # over the free port worker_env picks
    reader = Reader(deployment, tmp_path, "reader.log", "links")
    reader.wait_for_lines(1)
    assert reader.end() == 0, reader.stderr()
    assert reader.ids() == ["t-1"]
    assert "error" not in reader.stderr()


def test_the_agent_client_runs_beside_the_metrics_service(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from streams.client import AgentClient

    deployment = Deployment(partitions=1)
    deployment.create_topics()
    for name, value in METRICS_SERVICE_LINKS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("REPLYGATE_KAFKA_BOOTSTRAP_SERVERS", deployment.bootstrap_servers)
    monkeypatch.setenv("REPLYGATE_TOPIC_PREFIX", deployment.prefix)

    async def send() -> None:
        async with AgentClient() as agent:  # settings from the environment, as in a pod
            await agent.reply("t-1", "c-1", text="hello", platform="im", contract="text.plain.v1")

    asyncio.run(send())
    topic = deployment.topic("replies.raw")
    (record,) = asyncio.run(collect([topic], lambda got: len(got) >= 1, timeout=30))
    assert record[1] == b"c-1" and orjson.loads(record[2])["turn_id"] == "t-1"
