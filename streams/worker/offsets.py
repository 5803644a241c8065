"""The worker's guard on its input offsets: no record skipped, no owned partition stuck.

Faust has been seen to hand on records with a hole between them, to leave a partition
unfetched, or to hold its commit behind a record it skipped; each is met here by stopping the
worker before anything is acknowledged, so its restart reads the records again. The consumer's
side of the guard (a hole is never committed, a never-committed partition commits from its log
start) is in `streams.worker.faust_fixes.guard_offsets`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from streams.broker.options import aiokafka_options
from streams.core.decision import Source
from streams.settings import KafkaSettings
from streams.worker.sender import fail_stop
from streams.worker.settling import settling
from streams.worker.stalls import Key, Stalls

log = logging.getLogger("replygate.worker")

# The bound on looking up where newly assigned, never-committed partitions start.
LOG_START_SECONDS = 5.0


class OffsetWatch:
    """The input partitions' offsets as this worker reads and commits them.

    `app` is the `GateApp`: its consumer's assignment and committed offsets, the holes its
    consumer kept and the log starts it commits from. `inputs`: the gate's input topics.
    """

    def __init__(
        self, app: Any, inputs: Iterable[str], kafka: KafkaSettings, stall_seconds: float
    ) -> None:
        self.app = app
        self.inputs = frozenset(inputs)
        self.kafka = kafka
        self.last: dict[Key, int] = {}
        self.stalls = Stalls(stall_seconds)
        self.offsets_client: Any = None
        self.admin_client: Any = None

    def committed_input(self, topic: str, partition: int) -> int | None:
        """The group's committed offset of an input partition, as this consumer last committed
        or found it (None before any): records below it are never read again."""
        committed: dict[Any, int] = self.app.consumer._committed_offset  # Faust's own record
        return committed.get((topic, partition))

    def reset(self) -> None:
        """A new assignment: offsets and stall clocks start again."""
        self.last.clear()
        self.stalls.reset()

    def check(self, records: Sequence[tuple[Source, bytes]]) -> None:
        """Stop, before acknowledging anything, when the consumer skipped input records.

        Within one assignment a partition's offsets follow one another (the inputs have no
        transaction markers). A hole means Faust fetched records and did not hand them on; it
        is never committed (`guard_offsets`), so the restart reads them again. A hole before
        the first record of an assignment holds the commit back, and `check_progress` restarts
        the worker when the commit stays behind.
        """
        if self.app.holes:
            fail_stop(f"the consumer skipped {self.app.holes[0]}; a restart reads them again")
        last = self.last
        now = time.monotonic()  # the whole batch was read at once
        for source, _raw in records:
            key = (source.topic, source.partition)
            before = last.get(key)
            if before is not None and source.offset > before + 1:
                fail_stop(
                    f"the consumer skipped offsets {before + 1}..{source.offset - 1} of "
                    f"{source.topic}:{source.partition}; a restart reads them again"
                )
            if before is None or source.offset > before:
                last[key] = source.offset
                self.stalls.read(key, now)

    async def check_progress(self) -> None:
        """Stop when an owned input partition is stuck (`streams.worker.stalls`): records
        waiting and none read, or records read and the commit not moving, for `stall_seconds`.
        """
        app = self.app
        if settling(app):
            return
        now = time.monotonic()
        owned = self._owned(app.consumer.assignment())
        if not owned:
            return
        ends = await (await self._offsets()).end_offsets(owned)
        committed = await self.learn_log_starts(owned)
        for tp, end in ends.items():
            key = (tp.topic, tp.partition)
            mark = committed.get(tp, app.log_starts.get(key, 0))
            read = self.last.get(key, -1) + 1
            stuck = self.stalls.check(key, end, read, mark, now)
            if stuck is not None:
                fail_stop(stuck)

    async def learn_assigned_log_starts(self, assigned: Iterable[Any]) -> None:
        """`learn_log_starts` for every newly assigned partition, bounded: the rebalance waits
        for it, and a stop must not hang on it. Every one, not only the gate's inputs: the
        corrector's requests commit through the same guard, and a partition whose log start is
        unknown never commits (a new owner would ask the model again for every request). If it
        fails, those partitions commit nothing until the watchdog's own look-up answers."""
        tps = _aiokafka_tps(assigned)
        try:
            await asyncio.wait_for(self.learn_log_starts(tps), LOG_START_SECONDS)
        except Exception as exc:
            log.warning("log start offsets not known yet (%s)", type(exc).__name__)

    async def learn_log_starts(self, tps: list[Any]) -> dict[Any, int]:
        """Look up where never-committed partitions start, so their first commit may go out
        (`guard_offsets`); returns the committed offsets of the others."""
        committed = await self._committed(tps)
        never = [tp for tp in tps if tp not in committed]
        if never:
            starts = await (await self._offsets()).beginning_offsets(never)
            self.app.log_starts.update({(tp.topic, tp.partition): n for tp, n in starts.items()})
        return committed

    def close(self, loop: asyncio.AbstractEventLoop) -> None:
        """Stop the look-up clients on the app's loop (at shutdown; they hold connections)."""
        if self.offsets_client is not None:
            loop.create_task(self.offsets_client.stop())
        if self.admin_client is not None:
            loop.create_task(self.admin_client.close())

    def _owned(self, tps: Iterable[Any]) -> list[Any]:
        """The input partitions among `tps`, as aiokafka's own TopicPartitions."""
        return _aiokafka_tps(tp for tp in tps if tp.topic in self.inputs)

    async def _committed(self, tps: list[Any]) -> dict[Any, int]:
        """The group's committed offsets, as the broker has them."""
        from aiokafka.admin import AIOKafkaAdminClient

        if self.admin_client is None:
            client = AIOKafkaAdminClient(**aiokafka_options(self.kafka))
            await client.start()
            self.admin_client = client
        offsets = await self.admin_client.list_consumer_group_offsets(
            self.kafka.app_id, partitions=tps
        )
        return {tp: meta.offset for tp, meta in offsets.items() if meta.offset >= 0}

    async def _offsets(self) -> Any:
        """A plain client for log start and end offsets: Faust's own consumer answers through
        its fetch thread, a second per question."""
        from aiokafka import AIOKafkaConsumer

        if self.offsets_client is None:
            client = AIOKafkaConsumer(**aiokafka_options(self.kafka))
            await client.start()
            self.offsets_client = client
        return self.offsets_client


def _aiokafka_tps(tps: Iterable[Any]) -> list[Any]:
    """Faust's TopicPartitions as aiokafka's own (its clients want those)."""
    from aiokafka import TopicPartition

    return [TopicPartition(tp.topic, tp.partition) for tp in tps]
