"""The Faust app: a thin Kafka shell around `streams.core.batch.TurnBatch`.

Run it with `replygate worker` (or `faust -A streams.app worker`). Input topics are keyed by
conversation, so a turn's state lives on its conversation's partition and one worker handles
its reply, correction, cancel and deadline. One agent reads all inputs in batches; a batch's
state is durable before its outputs are sent, and both before its input is acknowledged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, NoReturn

import orjson
from faust.exceptions import ConsumerNotStarted
from faust.types import EventT, StreamT

from schemas.records import record_json
from streams.broker.options import (
    aiokafka_options,
    faust_broker_options,
    fetch_options,
    identity,
)
from streams.broker.topology import TURNS_TABLE, Topology
from streams.core.batch import BatchResult, TurnBatch
from streams.core.pipeline import Gate, Source
from streams.core.state import TurnIndex
from streams.core.trace import trace_of
from streams.files.stage import DiskFiles
from streams.ops import failpoints
from streams.settings import EXACTLY_ONCE_REFUSED, ConfigError, Settings
from streams.worker.batches import take_batches
from streams.worker.consumer import InLoopApp
from streams.worker.faust_fixes import fix_consumer, heartbeat_interval
from streams.worker.metrics_hooks import WorkerMetrics
from streams.worker.sender import Out, Sender, fail_stop, send_now
from streams.worker.stalls import Stalls
from streams.worker.store import TurnStore

log = logging.getLogger("replygate.worker")


def start_shutdown_watchdog(seconds: float) -> threading.Timer:
    """Exit the process if shutdown takes longer than `seconds`; committed work is safe."""

    def expire() -> None:
        log.error("shutdown took longer than %.0f s; exiting", seconds)
        os._exit(1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def refuse_start(reason: str) -> NoReturn:
    """Exit 2 at start, with one line: the deployment is set up wrong, and a restart would
    not help (unlike `fail_stop`'s exit 1)."""
    # fd 2 itself: Faust's worker has put a logger in place of sys.stderr
    os.write(2, f"replygate worker: error: {reason}\n".encode())
    logging.shutdown()
    os._exit(2)


def _ignore(tp: Any) -> None:
    del tp


class GateApp(InLoopApp):
    """A Faust app that makes sure replygate's own topics exist before it subscribes."""

    replygate_settings: Settings
    # input offsets the consumer skipped (never committed; the worker stops on them)
    holes: list[str]
    # (topic, partition) -> log start offset, for input partitions the group never committed
    log_starts: dict[tuple[str, int], int]
    # looks up the log starts of input partitions (`Worker.learn_assigned_log_starts`)
    learn_log_starts: Callable[[Iterable[Any]], Awaitable[None]]

    def _new_consumer(self) -> Any:
        """Faust's consumer, except that a hole in the offsets it hands on is never committed.

        Faust records offsets missing between two fetched records as a "gap" it acknowledges
        itself (meant for transaction markers). replygate's inputs have none, so a hole means
        records were fetched and not handed on; committing past it would lose them. The hole
        stays uncommitted, and the worker stops when it meets it (`Worker._check_offsets`).
        """
        consumer = super()._new_consumer()

        async def keep_hole(tp: Any, offset_from: int, offset_to: int) -> None:
            self.holes.append(f"{tp.topic}:{tp.partition} offsets {offset_from}..{offset_to - 1}")

        consumer._add_gap = keep_hole  # type: ignore[attr-defined]  # Faust's private hook
        # Faust also takes a partition out of the fetch set when a stream's buffer is nearly
        # full and puts it back on a pressure-drop callback that its blocking path never
        # registers: the partition then stays paused for good. The blocking put into the
        # stream's queue is back-pressure enough, so partitions are never paused for it.
        # Faust commits past a one-record hole at the head of what was acknowledged (its check
        # is off by one); a commit must start exactly at the committed offset.
        new_offset = consumer._new_offset  # type: ignore[attr-defined]

        # A partition the group never committed starts at its log start, which the worker
        # looks up on assignment (`Worker.learn_log_starts`); until then nothing of it is committed.
        def contiguous_new_offset(tp: Any) -> int | None:
            acked = consumer._acked[tp]  # type: ignore[attr-defined]
            committed = consumer._committed_offset.get(tp)  # type: ignore[attr-defined]
            start = committed if committed is not None else self.log_starts.get(tp[:2])
            if acked and (start is None or min(acked) > start):
                return None
            result: int | None = new_offset(tp)
            return result

        consumer._new_offset = contiguous_new_offset  # type: ignore[attr-defined]
        consumer.on_buffer_full = _ignore  # type: ignore[method-assign]
        consumer.on_buffer_drop = _ignore  # type: ignore[method-assign]
        fix_consumer(consumer)
        return consumer

    async def _on_partitions_revoked(self, revoked: set[Any]) -> None:
        """Faust's revoke (wait for the batches in flight, commit what they handled), once the
        revoked partitions' starts are known (`learn_unknown_starts`)."""
        if not self.should_stop:  # Faust's revoke does nothing while stopping
            await self.learn_unknown_starts(revoked)
        await super()._on_partitions_revoked(revoked)

    async def _stop_consumer(self) -> None:
        """Faust's stop (wait for the batches in flight, commit what they handled, then leave
        the group), once the owned partitions' starts are known (`learn_unknown_starts`)."""
        if self._consumer is not None:
            with contextlib.suppress(ConsumerNotStarted):
                await self.learn_unknown_starts(self._consumer.assignment())
        await super()._stop_consumer()

    async def learn_unknown_starts(self, tps: Iterable[Any]) -> None:
        """Look up where never-committed partitions start if that is not known yet: the commit
        of what they handled needs it, and a rebalance or stop right after an assignment can
        come before the assignment's own look-up has answered."""
        committed = self.consumer._committed_offset  # type: ignore[attr-defined]
        unknown = [tp for tp in tps if committed.get(tp) is None]
        unknown = [tp for tp in unknown if tuple(tp[:2]) not in self.log_starts]
        if unknown:
            await self.learn_log_starts(unknown)

    async def on_first_start(self) -> None:
        from aiokafka.errors import KafkaConnectionError

        from streams.broker.partitions import PartitionsDiffer
        from streams.broker.ready import KafkaNotReady
        from streams.broker.refusals import client_errors, preflight
        from streams.broker.topology import TopicsRefused, create_topics

        settings = self.replygate_settings
        security = settings.kafka_security
        with client_errors() as seen:  # the cause goes into the one line below
            try:
                created = await create_topics(settings)
            except KafkaConnectionError as exc:
                fail_stop(
                    f"cannot connect or authenticate to Kafka at "
                    f"{settings.kafka_bootstrap_servers} {identity(security)}: "
                    f"{seen.cause() or str(exc)[:300]}; check kafka_bootstrap_servers and "
                    "kafka_security"
                )
            except (KafkaNotReady, TopicsRefused) as exc:
                fail_stop(f"Kafka at {settings.kafka_bootstrap_servers}: {exc}")
            except PartitionsDiffer as exc:
                refuse_start(str(exc))
        if created:
            log.info("created topics: %s", ", ".join(sorted(created)))
        refused = await preflight(aiokafka_options(settings), "worker", settings.app_id)
        if refused is not None:
            fail_stop(refused)
        await super().on_first_start()


def settling(app: Any) -> bool:
    """Whether a rebalance or the table's recovery is under way: the one test for it."""
    recovery = app.tables.recovery  # untyped in Faust's TableManagerT
    return bool(app.rebalancing or not recovery.completed.is_set())


def source_of(event: EventT[bytes]) -> Source:
    message = event.message
    stamp = datetime.fromtimestamp(message.timestamp, UTC) if message.timestamp else None
    headers = message.headers
    return Source(
        message.topic, message.partition, message.offset, stamp, message.key, trace_of(headers)
    )


# A deadline event not yet processed is sent again after this long (it may have been lost).
DEADLINE_RESEND_SECONDS = 10.0
# The bound on looking up where newly assigned, never-committed partitions start.
LOG_START_SECONDS = 5.0
# A batch holding a record this large is judged off the event loop (`Worker._judge`).
OFF_LOOP_RECORD_BYTES = 64 * 1024


class Worker:
    """One batch at a time: judge, write the turns' state, send the outputs, then acknowledge.

    `take_batches` acknowledges a batch's events only when this returns, so nothing is
    committed before every state write and output it caused is acknowledged by the broker. A
    send that keeps failing stops the process instead (`streams.worker.sender.fail_stop`).
    """

    def __init__(self, app: GateApp, settings: Settings, table: Any) -> None:
        self.app = app
        self.settings = settings
        self.topology = Topology.of(settings)
        self.gate = Gate(settings, DiskFiles.from_settings(settings))
        self.metrics = WorkerMetrics(settings, self.gate)
        self.store = TurnStore(table)
        self.changelog = table.changelog_topic.get_topic_name()
        self.index = TurnIndex(settings.state_keep)
        self.index_fresh = False
        self.batch = TurnBatch(self.gate, self.store.get, self.index, self._committed_input)
        self.judge = ThreadPoolExecutor(1, thread_name_prefix="replygate-judge")
        self.judging_off_loop = False
        self.sender = Sender(
            self._send,
            settings.send_timeout_seconds,
            send_now=send_now(lambda: app.producer._ensure_producer()),  # type: ignore[attr-defined]
        )
        self.declared: set[str] = set()
        self.last_offsets: dict[tuple[str, int], int] = {}
        self.offsets_client: Any = None
        self.admin_client: Any = None
        self.stalls = Stalls(settings.stall_seconds)
        # turn key -> monotonic time before which its deadline event is not sent again
        self.deadline_sent: dict[bytes, float] = {}

    def _committed_input(self, topic: str, partition: int) -> int | None:
        """The group's committed offset of an input partition, as this consumer last committed
        or found it (None before any): records below it are never read again."""
        committed: dict[Any, int] = self.app.consumer._committed_offset  # type: ignore[attr-defined]
        return committed.get((topic, partition))

    async def _send(self, *args: Any) -> Any:
        return await self.app.producer.send(*args)

    async def _acked(self, record: Out) -> Any:
        return await (
            await self._send(record.topic, record.key, record.value, record.partition, None, None)
        )

    def refresh_index(self) -> None:
        """After a rebalance, find the pending turns and expiry order in the recovered store."""
        if not self.index_fresh:
            self.index.rebuild(self.store.items())
            self.index_fresh = True

    async def handle(self, events: Sequence[EventT[bytes]]) -> None:
        started = time.perf_counter()
        self.refresh_index()
        records = [(source_of(event), event.value) for event in events]
        self._check_offsets(records)
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
        self.metrics.batch(result, len(records), time.perf_counter() - started)

    async def _judge(self, records: list[tuple[Source, bytes]]) -> BatchResult:
        """`TurnBatch.run`; in the judging thread when a record is large, so that heartbeats,
        commits and a rebalance's wait go on while the gate spends seconds on it. Other batches
        stay in the loop: the thread costs backlog throughput in GIL hand-offs (figures:
        bench/README.md, "Large records judged off the event loop"). Meanwhile the loop reads
        only the index's pending turns (`scan_deadlines`), the thread only its expiry order.
        """
        now = datetime.now(UTC)
        if max((len(raw or b"") for _source, raw in records), default=0) < OFF_LOOP_RECORD_BYTES:
            return self.batch.run(records, now)
        self.metrics.metrics.batch_off_loop()
        self.judging_off_loop = True
        try:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self.judge, self.batch.run, records, now)
        finally:
            self.judging_off_loop = False

    def _check_offsets(self, records: Sequence[tuple[Source, bytes]]) -> None:
        """Stop, before acknowledging anything, when the consumer skipped input records.

        Within one assignment a partition's offsets follow one another (the inputs have no
        transaction markers). A hole means Faust fetched records and did not hand them on; it
        is never committed (`GateApp._new_consumer`), so the restart reads them again. A hole
        before the first record of an assignment holds the commit back, and `check_progress`
        restarts the worker when the commit stays behind.
        """
        if self.app.holes:
            fail_stop(f"the consumer skipped {self.app.holes[0]}; a restart reads them again")
        last = self.last_offsets
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
        from aiokafka import TopicPartition

        now = time.monotonic()
        inputs = {topic.name for topic in self.topology.gate_inputs()}
        owned = [TopicPartition(tp.topic, tp.partition) for tp in app.consumer.assignment()]
        owned = [tp for tp in owned if tp.topic in inputs]
        if not owned:
            return
        ends = await (await self._offsets()).end_offsets(owned)
        committed = await self.learn_log_starts(owned)
        for tp, end in ends.items():
            key = (tp.topic, tp.partition)
            mark = committed.get(tp, app.log_starts.get(key, 0))
            read = self.last_offsets.get(key, -1) + 1
            stuck = self.stalls.check(key, end, read, mark, now)
            if stuck is not None:
                fail_stop(stuck)

    async def learn_assigned_log_starts(self, assigned: Iterable[Any]) -> None:
        """`learn_log_starts` for newly assigned input partitions, bounded: the rebalance
        waits for it, and a stop must not hang on it. If it fails, those partitions commit
        nothing until the watchdog's own look-up answers."""
        from aiokafka import TopicPartition

        inputs = {topic.name for topic in self.topology.gate_inputs()}
        tps = [TopicPartition(tp.topic, tp.partition) for tp in assigned if tp.topic in inputs]
        try:
            await asyncio.wait_for(self.learn_log_starts(tps), LOG_START_SECONDS)
        except Exception as exc:
            log.warning("log start offsets not known yet (%s)", type(exc).__name__)

    async def learn_log_starts(self, tps: list[Any]) -> dict[Any, int]:
        """Look up where never-committed partitions start, so their first commit may go out
        (`GateApp._new_consumer`); returns the committed offsets of the others."""
        committed = await self._committed(tps)
        never = [tp for tp in tps if tp not in committed]
        if never:
            starts = await (await self._offsets()).beginning_offsets(never)
            self.app.log_starts.update({(tp.topic, tp.partition): n for tp, n in starts.items()})
        return committed

    async def _committed(self, tps: list[Any]) -> dict[Any, int]:
        """The group's committed offsets, as the broker has them."""
        from aiokafka.admin import AIOKafkaAdminClient

        if self.admin_client is None:
            client = AIOKafkaAdminClient(**aiokafka_options(self.settings))
            await client.start()
            self.admin_client = client
        offsets = await self.admin_client.list_consumer_group_offsets(
            self.settings.app_id, partitions=tps
        )
        return {tp: meta.offset for tp, meta in offsets.items() if meta.offset >= 0}

    async def _offsets(self) -> Any:
        """A plain client for log start and end offsets: Faust's own consumer answers through
        its fetch thread, a second per question."""
        from aiokafka import AIOKafkaConsumer

        if self.offsets_client is None:
            client = AIOKafkaConsumer(**aiokafka_options(self.settings))
            await client.start()
            self.offsets_client = client
        return self.offsets_client

    async def _write_state(self, result: BatchResult) -> None:
        writes = result.writes
        if not writes:
            return
        records = [Out(self.changelog, w.key, w.value, w.partition) for w in writes]
        offsets = await self.sender.send_all(records)
        self.store.apply(writes, offsets)
        for write in writes:
            self.index.note(write.partition, write.key, write.state)

    async def _send_outputs(self, result: BatchResult) -> None:
        records = [
            Out(d.topic, d.key, record_json(d.output), send.partition, send.trace)
            for send in result.sends
            if (d := send.decision).output is not None and d.topic is not None
        ]
        for topic in {r.topic for r in records} - self.declared:
            await self._declare(topic)
        if failpoints.armed("mid_outputs") and len(records) > 1:
            half = len(records) // 2
            await self.sender.send_all(records[:half])
            failpoints.hit("mid_outputs")
            records = records[half:]
        await self.sender.send_all(records)

    async def _declare(self, name: str) -> None:
        """An output topic (a new platform's, say) exists with our partitions and size limit."""
        from streams.broker.refusals import denied, is_denied

        config = self.topology.output(name).config
        topic = self.app.topic(name, partitions=self.settings.partitions, config=config)
        try:
            await topic.declare()
        except Exception as exc:
            if is_denied(exc):
                fail_stop(denied("create", "topic", name, "worker"))
            raise
        self.declared.add(name)

    async def scan_deadlines(self) -> None:
        """Expired pending turns become deadline events on their own partition.

        Only partitions this worker owns now: after a rebalance the new owner scans them. The
        events are idempotent triggers; one not processed yet is sent again after a while.
        """
        app = self.app
        if settling(app):
            return
        if self.judging_off_loop and not self.index_fresh:
            return  # no rebuild under the judging thread (`handle` rebuilds it first anyway)
        self.refresh_index()
        topic = self.topology.deadlines.name
        owned = {tp.partition for tp in app.assignor.assigned_actives() if tp.topic == topic}
        now, clock = datetime.now(UTC), time.monotonic()
        due: list[Out] = []
        count = 0
        for key, (partition, pending) in list(self.index.pending.items()):
            if partition not in owned:
                continue
            count += 1
            resend_at = self.deadline_sent.get(key, 0.0)
            if datetime.fromisoformat(pending.deadline) <= now and clock >= resend_at:
                event = orjson.dumps({"turn_id": key.decode()})
                due.append(Out(topic, pending.conversation_id.encode(), event, partition))
                self.deadline_sent[key] = clock + DEADLINE_RESEND_SECONDS
        self.metrics.pending(count)
        for key in [k for k in self.deadline_sent if k not in self.index.pending]:
            del self.deadline_sent[key]
        for outcome in await asyncio.gather(*map(self._acked, due), return_exceptions=True):
            if isinstance(outcome, BaseException):  # sent again after DEADLINE_RESEND_SECONDS
                log.warning("deadline event not sent (%s)", type(outcome).__name__)


def app_options(settings: Settings) -> dict[str, Any]:
    """`InLoopApp` options of the worker (faust.App's and the consumer's fetch wait); the
    benchmark's bare Faust copy agent uses the same ones, so the two differ only in what their
    agents do."""
    return dict(
        fetch=fetch_options(settings),
        store=settings.store,
        processing_guarantee="at_least_once",
        topic_partitions=settings.partitions,
        topic_replication_factor=settings.replication_factor,
        datadir=str(settings.data_dir),
        key_serializer="raw",
        value_serializer="raw",
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        # A killed worker's partitions move after this, not Faust's default minute.
        broker_session_timeout=settings.session_timeout_seconds,
        # A rebalance (a worker joined, left or was declared dead) reaches the others at their
        # next heartbeat: every second rather than every third of the session timeout.
        broker_heartbeat_interval=heartbeat_interval(settings.session_timeout_seconds),
        broker_commit_every=1000,
        broker_commit_interval=0.5,
        producer_max_request_size=settings.max_output_bytes,
        producer_linger=settings.producer_linger_ms / 1000.0,
        producer_max_batch_size=settings.producer_max_batch_bytes,
        # Wait for in-flight batches on revoke, so their acknowledgements can be committed.
        stream_wait_empty=True,
        table_standby_replicas=0,
        worker_redirect_stdouts=False,
        **faust_broker_options(settings),
    )


def create_app(settings: Settings) -> GateApp:
    """Build the app from one settings object; each part below gets only what it needs."""
    if settings.processing_guarantee == "exactly_once":
        raise ConfigError(EXACTLY_ONCE_REFUSED)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    app = GateApp(settings.app_id, **app_options(settings))
    app.replygate_settings = settings
    app.holes = []
    app.log_starts = {}
    topology = Topology.of(settings)
    inputs = app.topic(*(t.name for t in topology.gate_inputs()), partitions=settings.partitions)
    worker = Worker(app, settings, turns_table(app, topology, settings.partitions))
    app.learn_log_starts = worker.learn_assigned_log_starts
    add_gate_agent(
        app,
        inputs,
        worker,
        settings.batch_max_records,
        settings.batch_max_wait_seconds,
        settings.batch_max_bytes,
    )
    add_timers(app, worker, settings.deadline_scan_interval_seconds)
    add_rebalance_handlers(app, worker)
    add_shutdown_bound(app, worker, settings.shutdown_timeout_seconds)
    add_metrics_server(app, worker)
    if settings.corrector.enabled:
        from streams.worker.corrector import register_corrector

        register_corrector(app, settings)
    return app


# RocksDB keeps a database per partition. Faust's defaults (three 64 MiB write buffers and a
# 2 GiB block cache each) let a worker's memory grow with its state: a million finished turns
# held 310 MB. These bound each partition's database to about 20 MiB of memory.
ROCKSDB_OPTIONS: dict[str, int] = {
    "write_buffer_size": 4 * 1024 * 1024,
    "max_write_buffer_number": 2,
    "block_cache_size": 8 * 1024 * 1024,
    "block_cache_compressed_size": 4 * 1024 * 1024,
}


def turns_table(app: GateApp, topology: Topology, partitions: int) -> Any:
    """The turn state table, its changelog configured as the topology says."""
    rocksdb = str(app.conf.store).startswith("rocksdb")
    # Keys and values are bytes (orjson values), so they read back the same after recovery.
    return app.Table(
        TURNS_TABLE,
        default=None,
        partitions=partitions,
        key_type=bytes,
        value_type=bytes,
        extra_topic_configs=dict(topology.changelog.config),
        options=dict(ROCKSDB_OPTIONS) if rocksdb else None,
    )


def add_gate_agent(
    app: GateApp,
    inputs: Any,
    worker: Worker,
    max_records: int,
    max_wait_seconds: float,
    max_bytes: int,
) -> None:
    """The one agent: input batches through `Worker.handle`, or the process stops."""

    @app.agent(inputs, name="replygate-gate")
    async def gate(stream: StreamT[bytes]) -> None:
        async for events in take_batches(stream, max_records, max_wait_seconds, max_bytes):
            try:
                await worker.handle(events)
            except BaseException as exc:
                # Leaving this loop runs take_batches' `finally`, which acknowledges the whole
                # batch: an exception, or a cancel at shutdown, must not commit unsent work.
                fail_stop(f"a batch did not finish ({type(exc).__name__}); a restart reads it")


def add_timers(app: GateApp, worker: Worker, scan_interval_seconds: float) -> None:
    """The deadline scan; and every 5 s the lag metric and the stalled-partition check."""

    @app.timer(interval=scan_interval_seconds)
    async def scan_deadlines() -> None:
        await worker.scan_deadlines()

    @app.timer(interval=5.0)
    async def report_lag() -> None:
        await worker.metrics.report_lag(app)
        await worker.check_progress()


def add_rebalance_handlers(app: GateApp, worker: Worker) -> None:
    """A rebalance makes the pending index and offset bookkeeping stale; on assignment the
    log starts of never-committed partitions are learned before anything commits."""

    @app.on_partitions_assigned.connect
    async def stale_index(sender: Any, /, *args: Any, **kwargs: Any) -> None:
        del sender, kwargs
        worker.index_fresh = False
        worker.last_offsets.clear()
        worker.stalls.reset()
        await worker.learn_assigned_log_starts(args[0] if args else set())

    @app.on_partitions_revoked.connect
    async def revoked(sender: Any, /, *args: Any, **kwargs: Any) -> None:
        del sender, kwargs
        if args and args[0]:  # the first join revokes nothing; that is no kill point
            failpoints.hit("partitions_revoked")
        worker.index_fresh = False


def add_shutdown_bound(app: GateApp, worker: Worker, timeout_seconds: float) -> None:
    """A stopping worker that hangs (Faust can, on a stuck agent) is ended after a bound."""

    @app.on_before_shutdown.connect
    def bound_shutdown(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        del sender, args, signal, kwargs
        start_shutdown_watchdog(timeout_seconds)
        if worker.offsets_client is not None:
            app.loop.create_task(worker.offsets_client.stop())
        if worker.admin_client is not None:
            app.loop.create_task(worker.admin_client.close())


def add_metrics_server(app: GateApp, worker: Worker) -> None:
    """/metrics, /livez and /readyz; ready once no rebalance or recovery is under way."""

    @app.task
    async def serve_metrics() -> None:
        worker.metrics.serve(ready=lambda: not settling(app))
