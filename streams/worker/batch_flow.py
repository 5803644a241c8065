"""One input batch through the worker: judged, its turns' state written, its outputs sent.

The order is the delivery guarantee: the state is durable before the outputs are sent, and
both before `take_batches` acknowledges the input (docs/delivery.md). A send that keeps
failing stops the process instead (`streams.worker.sender.fail_stop`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

from faust.types import EventT

from schemas.records import record_json
from streams.core.batch import BatchResult, TurnBatch
from streams.core.decision import Source
from streams.core.trace import trace_of
from streams.core.versions import VersionMissing
from streams.ops import failpoints
from streams.policy.apply import tenant_of
from streams.policy.metrics import PolicyMetrics
from streams.policy.recorded import audited, disagreed
from streams.worker.metrics_hooks import WorkerMetrics
from streams.worker.sender import Out, Sender
from streams.worker.store import StoredIndex, TurnStore
from streams.worker.topics import OutputTopics

log = logging.getLogger("replygate.worker")

# A batch holding a record this large is judged off the event loop (`BatchFlow._judge`).
OFF_LOOP_RECORD_BYTES = 64 * 1024


# A batch is judged again at most this many times for versions it needs that were not loaded
# (each try loads one; a batch rarely spans more than the active and one older version).
MAX_VERSION_LOADS = 16


def source_of(event: EventT[bytes], tenant_header: str | None = None) -> Source:
    """Where a record came from, as the gate and the turn state name it; its tenant is the
    value of the `policy_tenant_header` header (`streams.policy.apply.tenant_of`)."""
    message = event.message
    stamp = datetime.fromtimestamp(message.timestamp, UTC) if message.timestamp else None
    headers = message.headers
    tenant = tenant_of(_pairs(headers), tenant_header) if tenant_header and headers else None
    return Source(
        message.topic,
        message.partition,
        message.offset,
        stamp,
        message.key,
        trace_of(headers),
        tenant,
    )


def _pairs(headers: object) -> list[tuple[str, bytes]]:
    """Faust gives headers as a mapping or as (name, value) pairs."""
    items = headers.items() if isinstance(headers, dict) else headers
    return [(k, v) for k, v in items if isinstance(k, str) and isinstance(v, bytes)]  # type: ignore[attr-defined]


@dataclass
class BatchFlow:
    """`run`: judge a batch, then write its state, then send its outputs, all acknowledged."""

    batch: TurnBatch
    store: TurnStore
    index: StoredIndex
    changelog: str
    sender: Sender
    outputs: OutputTopics
    metrics: WorkerMetrics
    judge: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="replygate-judge")
    )
    # loads a policy version a batch needs (`WorkerPolicy.load`); None: the settings file only
    load_version: Callable[[str], Awaitable[None]] | None = None
    # the audit topic (None: `audit` off), and the policy metrics (shadow disagreements)
    audit_topic: str | None = None
    policy_metrics: PolicyMetrics | None = None

    async def run(self, records: list[tuple[Source, bytes]]) -> BatchResult:
        result = await self._judge(records)
        if result.replayed:  # said before any kill point, so a crash test sees every replay
            log.warning(
                "replayed %d input records that found their own state write", result.replayed
            )
        failpoints.hit("before_state_write")
        await self._write_state(result)
        failpoints.hit("after_state_write")
        if any(j.step.expired for j in result.judged):
            failpoints.hit("deadline_state_written")
        if any(j.step.pending is not None for j in result.judged):
            failpoints.hit("pending_state_written")
        if any(j.step.stream is not None for j in result.judged):
            failpoints.hit("chunk_state_written")
        await self._send_outputs(result)
        failpoints.hit("after_outputs")
        return result

    async def _judge(self, records: list[tuple[Source, bytes]]) -> BatchResult:
        """`TurnBatch.run`; in the judging thread when a record is large, so that heartbeats,
        commits and a rebalance's wait go on while the gate spends seconds on it. Other batches
        stay in the loop: the thread costs backlog throughput in GIL hand-offs (bench/README.md,
        "Large records judged off the event loop"). Meanwhile the index is lent to the thread
        (`StoredIndex.lent`): the loop reads only its pending turns (the deadline scan).
        """
        now = datetime.now(UTC)
        for _ in range(MAX_VERSION_LOADS):
            try:
                return await self._judge_once(records, now)
            except VersionMissing as missing:
                if self.load_version is None:
                    raise
                await self.load_version(missing.version)  # then the batch is judged again
        raise RuntimeError("a batch needs more policy versions than can be loaded for it")

    async def _judge_once(self, records: list[tuple[Source, bytes]], now: datetime) -> BatchResult:
        if max((len(raw or b"") for _source, raw in records), default=0) < OFF_LOOP_RECORD_BYTES:
            return self.batch.run(records, now)
        self.metrics.metrics.batch_off_loop()
        with self.index.lent():
            loop = asyncio.get_running_loop()
            judged = loop.run_in_executor(self.judge, self.batch.run, records, now)
            try:
                return await asyncio.shield(judged)
            finally:
                if not judged.done():  # cancelled (a stop): the thread reads the index still
                    await asyncio.wait([judged])

    async def _write_state(self, result: BatchResult) -> None:
        writes = result.writes
        if not writes:
            return
        records = [Out(self.changelog, w.key, w.value, w.partition) for w in writes]
        offsets = await self.sender.send_all(records)
        self.store.apply(writes, offsets)
        self.index.apply(writes)

    async def _send_outputs(self, result: BatchResult) -> None:
        records = [
            Out(d.topic, d.key, record_json(d.output), send.partition, send.trace)
            for send in result.sends
            if (d := send.decision).output is not None and d.topic is not None
        ]
        records += self._policy_records(result)
        await self.outputs.declare(r.topic for r in records)
        if failpoints.armed("mid_outputs") and len(records) > 1:
            half = len(records) // 2
            await self.sender.send_all(records[:half])
            failpoints.hit("mid_outputs")
            records = records[half:]
        await self.sender.send_all(records)

    def _policy_records(self, result: BatchResult) -> list[Out]:
        """The batch's audit records (when `audit` is on), sent with its outputs; and the
        shadow's disagreements counted."""
        if self.policy_metrics is not None:
            for seen in disagreed(result.judged):
                self.policy_metrics.disagreement(seen.platform, seen.contract, seen.kind)
        if self.audit_topic is None:
            return []
        return [Out(self.audit_topic, a.key, a.value) for a in audited(result.judged)]
