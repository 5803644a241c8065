"""`replygate topics`: create every topic with its configured partitions, idempotently."""

from __future__ import annotations

import asyncio

from streams.kafka_config import aiokafka_options
from streams.settings import Settings

# Input topics use the broker's clock: a replay sees the same timestamps, and a producer
# cannot move a correction before its deadline.
INPUT_CONFIG = {"message.timestamp.type": "LogAppendTime"}


def topic_specs(settings: Settings) -> dict[str, dict[str, str]]:
    """Every topic replygate reads or writes, with its topic-level config."""
    specs: dict[str, dict[str, str]] = {
        settings.topic(name): dict(INPUT_CONFIG)
        for name in ("replies_raw", "toolcalls_raw", "turns_control")
    }
    output = {"max.message.bytes": str(settings.max_output_bytes)}
    for name in ("corrections", "toolresults", "dlq"):
        specs[settings.topic(name)] = dict(output)
    for platform in settings.platforms:
        specs[settings.delivery_topic(platform)] = dict(output)
    return specs


async def create_topics(settings: Settings) -> list[str]:
    """Create the missing topics; return the names created (an existing one is left as it is)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(**aiokafka_options(settings))
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        wanted = topic_specs(settings)
        new = [
            NewTopic(
                name,
                num_partitions=settings.partitions,
                replication_factor=settings.replication_factor,
                topic_configs=config,
            )
            for name, config in wanted.items()
            if name not in existing
        ]
        if new:
            await admin.create_topics(new)
        return [t.name for t in new]
    finally:
        await admin.close()


def run_topics(settings: Settings) -> int:
    created = asyncio.run(create_topics(settings))
    for name in sorted(topic_specs(settings)):
        print(f"{'created' if name in created else 'exists '} {name}")
    return 0
