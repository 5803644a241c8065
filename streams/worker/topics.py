"""The worker's topics: every topic of the topology made before it subscribes, and an output
topic not known ahead (a new platform's) declared when a batch first sends to it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from streams.broker.options import aiokafka_options, identity
from streams.broker.topology import Topology
from streams.settings import KafkaSettings
from streams.worker.sender import fail_stop, refuse_start

log = logging.getLogger("replygate.worker")


async def create_at_start(topology: Topology, kafka: KafkaSettings) -> None:
    """Create the topology's missing topics and check this part's ACLs, or stop with one line:
    Faust would subscribe to a missing topic and wait without a word."""
    from aiokafka.errors import KafkaConnectionError

    from streams.broker.partitions import PartitionsDiffer
    from streams.broker.ready import KafkaNotReady
    from streams.broker.refusals import client_errors, preflight
    from streams.broker.topology import TopicsRefused, create_topics

    servers = kafka.kafka_bootstrap_servers
    with client_errors() as seen:  # the cause goes into the one line below
        try:
            created = await create_topics(topology, kafka)
        except KafkaConnectionError as exc:
            fail_stop(
                f"cannot connect or authenticate to Kafka at {servers} "
                f"{identity(kafka.kafka_security)}: {seen.cause() or str(exc)[:300]}; "
                "check kafka_bootstrap_servers and kafka_security"
            )
        except (KafkaNotReady, TopicsRefused) as exc:
            fail_stop(f"Kafka at {servers}: {exc}")
        except PartitionsDiffer as exc:
            refuse_start(str(exc))
    if created:
        log.info("created topics: %s", ", ".join(sorted(created)))
    refused = await preflight(aiokafka_options(kafka), "worker", kafka.app_id)
    if refused is not None:
        fail_stop(refused)


@dataclass
class OutputTopics:
    """Output topics declared with our partitions and size limit at their first send: a new
    platform's delivery topic exists before a record goes to it."""

    app: Any
    topology: Topology
    partitions: int
    declared: set[str] = field(default_factory=set)

    async def declare(self, names: Iterable[str]) -> None:
        for name in set(names) - self.declared:
            await self._declare(name)

    async def _declare(self, name: str) -> None:
        from streams.broker.refusals import denied, is_denied

        config = self.topology.output(name).config
        topic = self.app.topic(name, partitions=self.partitions, config=config)
        try:
            await topic.declare()
        except Exception as exc:
            if is_denied(exc):
                fail_stop(denied("create", "topic", name, "worker"))
            raise
        self.declared.add(name)
