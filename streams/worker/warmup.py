"""The local RocksDB copy of the turn changelog, brought near its end before the worker joins.

Faust restores a changelog partition inside the rebalance, one record at a time through its
recovery queue (1,000-7,000 records a second here): a worker joining a deployment with a million
finished turns held its partitions for minutes while the group waited. Read before the worker
joins, outside the group, in fetched batches written through the store's own
`apply_changelog_batch` (what Faust's recovery calls, persisted offsets included), the same
records cost a fraction, and no partition waits for them: Faust's recovery then starts from the
persisted offsets and reads only the tail written since (bench/README.md, `rebalance_1m`).

A kill at any moment is safe: a batch is written before its offset, so a restart reads from
the last persisted offset again and applies the same records in the same order (a changelog
prefix applied twice is the same state). Nothing is judged before the worker joins.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from streams.broker.options import aiokafka_options
from streams.ops import failpoints
from streams.settings import KafkaSettings
from streams.worker.store import apply_changelog

log = logging.getLogger("replygate.worker")

# A pass that read this few records leaves the rest to Faust's recovery (a second of it at most).
TAIL_RECORDS = 2_000
# Passes at most: each reads what was written during the one before it.
PASSES = 3
# Bytes fetched per partition and per request: a batch written at once is bounded by these.
PARTITION_FETCH_BYTES = 1024 * 1024
FETCH_BYTES = 8 * 1024 * 1024
# The warm-up gives up after this long; what is left Faust's recovery reads in the group.
BOUND_SECONDS = 1800.0


@dataclass(frozen=True, slots=True)
class Warmed:
    """What a warm-up read: changelog records written to the store, passes, and seconds."""

    records: int
    passes: int
    seconds: float


def keeps_state(store: Any) -> bool:
    """A store whose partitions persist with their changelog offset (RocksDB): only those can be
    warmed; the memory store is restored in full by Faust whatever was read before."""
    return hasattr(store, "_db_for_partition") and hasattr(store, "persisted_offset")


async def warm_up(
    store: Any,
    topic: str,
    partitions: int,
    kafka: KafkaSettings,
    bound_seconds: float = BOUND_SECONDS,
) -> Warmed:
    """Read every partition of changelog `topic` from the store's persisted offset towards its
    end, in passes, until a pass reads at most TAIL_RECORDS or the bound has passed."""
    if not keeps_state(store):
        return Warmed(0, 0, 0.0)
    from aiokafka import AIOKafkaConsumer, TopicPartition

    started = time.monotonic()
    consumer = AIOKafkaConsumer(
        **aiokafka_options(kafka),
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=PARTITION_FETCH_BYTES,
        fetch_max_bytes=FETCH_BYTES,
    )
    await consumer.start()
    records = passes = 0
    try:
        if topic not in await consumer.topics():  # a first start: Faust makes it when it joins
            return Warmed(0, 0, time.monotonic() - started)
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        while passes < PASSES and time.monotonic() - started < bound_seconds:
            passes += 1
            read = await _one_pass(consumer, store, tps, started + bound_seconds)
            records += read
            if read <= TAIL_RECORDS:
                break
    finally:
        await consumer.stop()
    warmed = Warmed(records, passes, time.monotonic() - started)
    log.info(
        "turn state warmed before joining: %d changelog records in %d pass(es), %.1f s",
        warmed.records,
        warmed.passes,
        warmed.seconds,
    )
    return warmed


async def _one_pass(consumer: Any, store: Any, tps: list[Any], deadline: float) -> int:
    """Every partition from its persisted offset to the end it had when the pass began."""
    ends = await consumer.end_offsets(tps)
    todo = {}
    for tp in tps:
        persisted = store.persisted_offset(tp)
        start = 0 if persisted is None else persisted + 1
        if start < ends[tp]:
            if persisted is None:
                await consumer.seek_to_beginning(tp)
            else:
                consumer.seek(tp, start)
            todo[tp] = ends[tp]
    read = 0
    while todo and time.monotonic() < deadline:
        fetched = await consumer.getmany(*todo, timeout_ms=1000)
        for tp, messages in fetched.items():
            kept = [m for m in messages if m.offset < todo.get(tp, 0)]
            if kept:
                apply_changelog(store, ((tp, m.partition, m.offset, m.key, m.value) for m in kept))
                read += len(kept)
                failpoints.hit("warmup_step")
        for tp in list(todo):
            if await consumer.position(tp) >= todo[tp]:
                del todo[tp]
        await asyncio.sleep(0)
    return read
