"""Reading the audit topic: every partition from its start, each record checked against the
closed `AuditRecord`, kept when it matches the filters; up to the current end, or on and on.

A record that is not an audit record is skipped and counted, never shown: the audit topic is
only as trustworthy as the principals that may write it, and a reader must not print
whatever it holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from schemas.audit import AuditRecord
from streams.broker.topology import Topology
from streams.policy.topic import require_topics
from streams.settings import KafkaSettings

CONNECT_SECONDS: Final = 15.0
POLL_MS: Final = 500


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """Each field set must equal the record's; unset fields match anything."""

    turn_id: str | None = None
    conversation_id: str | None = None
    platform: str | None = None
    outcome: str | None = None
    policy_version: str | None = None

    def matches(self, record: AuditRecord) -> bool:
        return all(
            wanted is None or getattr(record, name) == wanted
            for name, wanted in (
                ("turn_id", self.turn_id),
                ("conversation_id", self.conversation_id),
                ("platform", self.platform),
                ("outcome", self.outcome),
                ("policy_version", self.policy_version),
            )
        )


@dataclass
class AuditCounts:
    """What a read saw: records shown, records that did not match, values that were not
    audit records."""

    shown: int = 0
    other: int = 0
    invalid: int = 0


def parse(value: bytes | None) -> AuditRecord | None:
    """An audit record, or None for anything that is not one."""
    if value is None:
        return None
    try:
        return AuditRecord.model_validate_json(value)
    except ValidationError:
        return None


async def read_audit(
    kafka: KafkaSettings,
    topology: Topology,
    wanted: AuditFilter,
    follow: bool,
    counts: AuditCounts,
) -> AsyncIterator[AuditRecord]:
    """The matching audit records of every partition, from the start; without `follow`, up
    to the end each partition had when the read began."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from streams.broker.options import aiokafka_options

    options: dict[str, Any] = {
        **aiokafka_options(kafka),
        "enable_auto_commit": False,
        "group_id": None,
        "isolation_level": "read_committed",
    }
    name = topology.audit.name
    await require_topics(kafka, (topology.audit,))
    count = await _partitions(kafka, name)
    if not count:
        return
    consumer = AIOKafkaConsumer(**options)
    await asyncio.wait_for(consumer.start(), CONNECT_SECONDS)
    try:
        parts = [TopicPartition(name, n) for n in range(count)]
        consumer.assign(parts)
        await consumer.seek_to_beginning(*parts)
        ends = await consumer.end_offsets(parts)
        while True:
            if not follow and await _all_read(consumer, ends):
                return
            batches = await consumer.getmany(*parts, timeout_ms=POLL_MS)
            for tp in sorted(batches, key=lambda t: t.partition):
                for message in batches[tp]:
                    if not follow and message.offset >= ends[tp]:
                        continue
                    record = parse(message.value)
                    if record is None:
                        counts.invalid += 1
                    elif wanted.matches(record):
                        counts.shown += 1
                        yield record
                    else:
                        counts.other += 1
    finally:
        await consumer.stop()


async def _partitions(kafka: KafkaSettings, name: str) -> int:
    """The topic's partition count (0: it does not exist yet)."""
    from aiokafka.admin import AIOKafkaAdminClient

    from streams.broker.options import aiokafka_options
    from streams.broker.partitions import partition_counts

    admin = AIOKafkaAdminClient(**aiokafka_options(kafka))
    await asyncio.wait_for(admin.start(), CONNECT_SECONDS)
    try:
        return (await partition_counts(admin, [name])).get(name, 0)
    finally:
        await admin.close()


async def _all_read(consumer: Any, ends: dict[Any, int]) -> bool:
    """Whether every partition's position has reached the end it had at the start."""
    for tp, end in ends.items():
        if await consumer.position(tp) < end:
            return False
    return True
