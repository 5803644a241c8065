"""`replygate topics`: create every topic with its configured partitions, idempotently."""

from __future__ import annotations

import asyncio
import sys

from streams.broker.options import aiokafka_options
from streams.broker.ready import KafkaNotReady, create_errors, describe, retry, wait_for_leaders
from streams.core.batch import deadline_topic
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
    # Deadline events: internal, read with the inputs, timed by the broker like them.
    specs[deadline_topic(settings)] = dict(INPUT_CONFIG)
    output = {"max.message.bytes": str(settings.max_output_bytes)}
    for name in ("corrections", "toolresults", "dlq"):
        specs[settings.topic(name)] = dict(output)
    for platform in settings.platforms:
        specs[settings.delivery_topic(platform)] = dict(output)
    return specs


class TopicsRefused(Exception):
    """The broker refused to create some topics (a policy, a bad config); the message names them."""


async def create_topics(settings: Settings) -> list[str]:
    """Create the missing topics and wait for their leaders; return the names created.

    An existing topic is left as it is, also one that another worker created a moment ago. On a
    fresh broker the answers that mean "not yet" are retried within a bound (`KafkaNotReady`).
    """
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(**aiokafka_options(settings))
    await admin.start()
    try:
        existing = set(await retry(admin.list_topics, "the topic list"))
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
        if not new:
            return []
        response = await retry(lambda: admin.create_topics(new), "creating topics")
        refused = create_errors(response.topic_errors)
        if refused:
            raise TopicsRefused(
                "the broker refused to create "
                + "; ".join(f"{name} ({why})" for name, why in sorted(refused.items()))
            )
        await wait_for_leaders(admin, [t.name for t in new])
        return [t.name for t in new]
    finally:
        await admin.close()


def run_topics(settings: Settings) -> int:
    """`replygate topics`: 0 when every topic exists, 1 with one line saying why not."""
    from aiokafka.errors import KafkaError

    try:
        created = asyncio.run(create_topics(settings))
    except (KafkaError, KafkaNotReady, TopicsRefused, OSError) as exc:
        print(
            f"replygate topics: cannot create the topics on {settings.kafka_bootstrap_servers}: "
            f"{describe(exc)}",
            file=sys.stderr,
        )
        return 1
    for name in sorted(topic_specs(settings)):
        print(f"{'created' if name in created else 'exists '} {name}")
    return 0
