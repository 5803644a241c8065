"""The Faust app: a thin Kafka shell around `streams.core.batch.TurnBatch`.

Run it with `replygate worker` (or `faust -A streams.app worker`). Input topics are keyed by
conversation, so a turn's state lives on its conversation's partition and one worker handles
its reply, correction, cancel and deadline. One agent reads all inputs in batches; a batch's
state is durable before its outputs are sent, and both before its input is acknowledged.
`create_app` is the one place the settings are cut into the groups each part takes.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from faust.exceptions import ConsumerNotStarted
from faust.types import EventT, StreamT

from schemas.contract import ReplyContract
from streams.broker.options import faust_broker_options, fetch_options
from streams.broker.topology import TURNS_TABLE, Topology
from streams.core.batch import TurnBatch
from streams.core.pipeline import Gate
from streams.errors import ConfigError
from streams.files.stage import DiskFiles
from streams.ops import failpoints
from streams.policy.apply import WorkerPolicy, settings_gates, wait_ready
from streams.policy.follower import PolicyFollower
from streams.policy.metrics import PolicyMetrics
from streams.settings import (
    EXACTLY_ONCE_REFUSED,
    BoundsSettings,
    FileSettings,
    GateSettings,
    KafkaSettings,
    Settings,
    TurnSettings,
    WorkerSettings,
)
from streams.worker.batch_flow import BatchFlow, source_of
from streams.worker.batches import take_batches
from streams.worker.consumer import InLoopApp
from streams.worker.deadlines import DeadlineScan
from streams.worker.faust_fixes import fix_consumer, guard_offsets, heartbeat_interval
from streams.worker.metrics_hooks import WorkerMetrics, worker_metrics
from streams.worker.offsets import OffsetWatch
from streams.worker.sender import Out, Sender, fail_stop, send_now
from streams.worker.settling import settling
from streams.worker.store import StoredIndex, TurnStore
from streams.worker.topics import OutputTopics, create_at_start
from streams.worker.warmup import warm_up

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


class GateApp(InLoopApp):
    """A Faust app whose consumer keeps its offsets whole (`guard_offsets`) and that runs
    `startup` (replygate's own topics made, its ACLs checked) before it subscribes."""

    def __init__(
        self, *args: Any, startup: Callable[[], Awaitable[None]] | None = None, **options: Any
    ) -> None:
        self.startup = startup
        # input offsets the consumer skipped (never committed; the worker stops on them)
        self.holes: list[str] = []
        # (topic, partition) -> log start offset, for partitions the group never committed
        self.log_starts: dict[tuple[str, int], int] = {}
        # looks up the log starts of assigned partitions (`OffsetWatch.learn_assigned_log_starts`)
        self.learn_log_starts: Callable[[Iterable[Any]], Awaitable[None]] | None = None
        # reads the turn changelog into a RocksDB store before the group is joined (`warm_up`)
        self.warm: Callable[[], Awaitable[Any]] | None = None
        super().__init__(*args, **options)

    def _new_consumer(self) -> Any:
        consumer = super()._new_consumer()
        guard_offsets(consumer, self.holes, self.log_starts)
        fix_consumer(consumer)
        return consumer

    async def _on_partitions_revoked(self, revoked: set[Any]) -> None:
        """Faust's revoke (wait for the batches in flight, commit what they handled), once the
        revoked partitions' starts are known (`learn_unknown_starts`)."""
        if not self.should_stop:  # Faust's revoke does nothing while stopping
            if revoked:
                failpoints.hit("revoke_before_commit")
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
        if unknown and self.learn_log_starts is not None:
            await self.learn_log_starts(unknown)

    async def on_first_start(self) -> None:
        if self.startup is not None:
            await self.startup()
        await super().on_first_start()  # makes the table directories
        if self.warm is not None:
            await self.warm()
        # What the start made lives as long as the process: out of every later collection.
        # Faust runs full ones in each rebalance (a revoke's `wait_empty`, RocksDB's reassignment),
        # 0.2-0.8 s each over these objects on a loaded box, with the event loop stalled.
        gc.freeze()


class Worker:
    """The worker's parts, composed: a batch's flow (`BatchFlow`), the offset guard
    (`OffsetWatch`), the deadline scan (`DeadlineScan`) and output topic declaration
    (`OutputTopics`), around one turn store and its index of pending turns."""

    def __init__(
        self,
        app: GateApp,
        gate: Gate,
        topology: Topology,
        kafka: KafkaSettings,
        knobs: WorkerSettings,
        turns: TurnSettings,
        metrics: WorkerMetrics,
        table: Any,
        policy: WorkerPolicy | None = None,
        policy_metrics: PolicyMetrics | None = None,
    ) -> None:
        self.app = app
        self.metrics = metrics
        # what judges (docs/policy.md): the settings file until a bundle is taken at a boundary
        self.policy = policy or WorkerPolicy(settings_gates(gate), None)
        self.tenant_header = knobs.policy_tenant_header
        self.in_batch = False
        inputs = [t.name for t in topology.gate_inputs()]
        self.inputs = frozenset(inputs)
        self.offsets = OffsetWatch(app, inputs, kafka, knobs.stall_seconds)
        store = TurnStore(table)
        # the turn index's one owner: each part below gets the view it needs
        self.index = StoredIndex(store, turns.state_keep)
        sender = Sender(
            self._send,
            knobs.send_timeout_seconds,
            send_now=send_now(lambda: app.producer._ensure_producer()),  # type: ignore[attr-defined]
        )
        self.flow = BatchFlow(
            TurnBatch(
                gate, store.get, self.index.for_batch(), self.offsets.committed_input, self.policy
            ),
            store,
            self.index,
            table.changelog_topic.get_topic_name(),
            sender,
            OutputTopics(app, topology, kafka.partitions),
            metrics,
            load_version=self.policy.load,
            audit_topic=topology.audit.name if knobs.audit else None,
            policy_metrics=policy_metrics,
        )
        self.deadlines = DeadlineScan(
            app,
            self.index.pending_now,
            topology.deadlines.name,
            self._acked,
            metrics.pending,
        )

    async def _send(self, *args: Any) -> Any:
        return await self.app.producer.send(*args)

    async def _acked(self, record: Out) -> Any:
        return await (
            await self._send(record.topic, record.key, record.value, record.partition, None, None)
        )

    async def handle(self, events: Sequence[EventT[bytes]]) -> None:
        """One batch: a new policy version taken at its boundary, its offsets checked before
        anything of it is judged, then its flow."""
        started = time.perf_counter()
        self.in_batch = True
        try:
            self.at_boundary()
            self.index.refresh()
            header = self.tenant_header
            records = [(source_of(event, header), event.value) for event in events]
            self.offsets.check(records)
            result = await self.flow.run(records)
        finally:
            self.in_batch = False
        self.metrics.batch(result, len(records), time.perf_counter() - started)

    def at_boundary(self) -> None:
        """Between batches: the newest loaded policy versions, if new, judge from now on."""
        if self.policy.at_batch_boundary():
            shadow = self.policy.shadow_version
            log.info("policy %s applied (shadow %s)", self.policy.version, shadow or "none")

    def idle(self) -> None:
        """The idle timer: a version is applied without traffic too, so `policy status` and
        the metrics show it (never while a batch is judged: a batch has one active version)."""
        if not self.in_batch:
            self.at_boundary()

    async def assigned(self, partitions: Iterable[Any]) -> None:
        """A new assignment: the index and the offset bookkeeping are stale, and the log
        starts of never-committed partitions are learned before anything commits."""
        assigned = list(partitions)
        self.index.stale({tp.partition for tp in assigned if tp.topic in self.inputs})
        self.offsets.reset()
        await self.offsets.learn_assigned_log_starts(assigned)


def app_options(
    kafka: KafkaSettings, knobs: WorkerSettings, bounds: BoundsSettings
) -> dict[str, Any]:
    """`InLoopApp` options of the worker (faust.App's and the consumer's fetch wait); the
    benchmark's bare Faust copy agent uses the same ones, so the two differ only in what their
    agents do."""
    return dict(
        fetch=fetch_options(knobs),
        store=knobs.store,
        processing_guarantee="at_least_once",
        topic_partitions=kafka.partitions,
        topic_replication_factor=kafka.replication_factor,
        datadir=str(knobs.data_dir),
        key_serializer="raw",
        value_serializer="raw",
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        # A killed worker's partitions move after this, not Faust's default minute.
        broker_session_timeout=knobs.session_timeout_seconds,
        # A rebalance (a worker joined, left or was declared dead) reaches the others at their
        # next heartbeat: every second rather than every third of the session timeout.
        broker_heartbeat_interval=heartbeat_interval(knobs.session_timeout_seconds),
        broker_commit_every=1000,
        broker_commit_interval=0.5,
        producer_max_request_size=bounds.max_output_bytes,
        producer_linger=knobs.producer_linger_ms / 1000.0,
        producer_max_batch_size=knobs.producer_max_batch_bytes,
        # Wait for in-flight batches on revoke, so their acknowledgements can be committed.
        stream_wait_empty=True,
        table_standby_replicas=knobs.standby_replicas,
        worker_redirect_stdouts=False,
        **faust_broker_options(kafka),
    )


def create_app(settings: Settings, contracts: dict[str, ReplyContract]) -> GateApp:
    """Build the app from one settings object, cut here into the group each part takes, and
    the deployment's contract registry (`streams.settings.contracts.build_registry`), both
    made once by the caller. The one place `exactly_once` is refused."""
    kafka, knobs = settings.group(KafkaSettings), settings.group(WorkerSettings)
    if knobs.processing_guarantee == "exactly_once":
        raise ConfigError(EXACTLY_ONCE_REFUSED)
    knobs.data_dir.mkdir(parents=True, exist_ok=True)
    topology = Topology.of(settings)
    app = GateApp(
        kafka.app_id,
        startup=lambda: create_at_start(topology, kafka),
        **app_options(kafka, knobs, settings.group(BoundsSettings)),
    )
    inputs = app.topic(*(t.name for t in topology.gate_inputs()), partitions=kafka.partitions)
    files = DiskFiles.from_settings(settings.group(FileSettings))
    gate = Gate(settings.group(GateSettings), files, contracts)
    metrics = worker_metrics(settings, gate)
    policy, policy_metrics = worker_policy(settings, topology, gate, files, metrics)
    worker = Worker(
        app,
        gate,
        topology,
        kafka,
        knobs,
        settings.group(TurnSettings),
        metrics,
        table := turns_table(app, topology, kafka.partitions),
        policy,
        policy_metrics,
    )
    app.learn_log_starts = worker.offsets.learn_assigned_log_starts

    async def warm() -> None:
        # /livez answers while the warm-up reads. Faust's recovery service is made here, in the
        # loop, first: made by the server's thread at a /readyz, it never started (a worker
        # probed during its warm-up hung for good at "Recovery: Starting").
        assert app.tables.recovery is not None  # type: ignore[attr-defined]
        worker.metrics.serve(ready=lambda: not settling(app))
        await warm_up(table.data, table.changelog_topic.get_topic_name(), kafka.partitions, kafka)

    app.warm = warm
    add_gate_agent(app, inputs, worker, knobs)
    add_policy_follower(app, worker)
    add_timers(app, worker, knobs.deadline_scan_interval_seconds)
    add_rebalance_handlers(app, worker)
    add_shutdown_bound(app, worker, knobs.shutdown_timeout_seconds)
    add_metrics_server(app, worker)
    if settings.corrector.enabled:
        from streams.worker.corrector import register_corrector

        register_corrector(app, settings.corrector, topology, kafka.partitions, gate.masker)
    return app


def worker_policy(
    settings: Settings, topology: Topology, gate: Gate, files: DiskFiles, served: WorkerMetrics
) -> tuple[WorkerPolicy, PolicyMetrics]:
    """The worker's policy: its settings file (the gate) until the follower brings a bundle
    from the policy topic; the follower reports as `<host>-<pid>`; its metrics are served
    with the worker's."""
    registry = served.metrics.registry
    metrics = PolicyMetrics(registry, settings.platforms, tuple(gate.contracts))
    follower = PolicyFollower(
        settings.group(KafkaSettings),
        topology,
        settings.group(GateSettings),
        files,
        f"{socket.gethostname()}-{os.getpid()}",
        metrics,
    )
    return WorkerPolicy(settings_gates(gate), follower), metrics


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


def add_gate_agent(app: GateApp, inputs: Any, worker: Worker, knobs: WorkerSettings) -> None:
    """The one agent: input batches through `Worker.handle`, or the process stops."""
    batches = (knobs.batch_max_records, knobs.batch_max_wait_seconds, knobs.batch_max_bytes)

    @app.agent(inputs, name="replygate-gate")
    async def gate(stream: StreamT[bytes]) -> None:
        await policy_ready(worker)
        async for events in take_batches(stream, *batches):
            try:
                await worker.handle(events)
            except BaseException as exc:
                # Leaving this loop runs take_batches' `finally`, which acknowledges the whole
                # batch: an exception, or a cancel at shutdown, must not commit unsent work.
                fail_stop(f"a batch did not finish ({type(exc).__name__}); a restart reads it")


# How long the agent waits for the policy topic before it says so (and waits on).
POLICY_WAIT_SECONDS = 30.0


def add_policy_follower(app: GateApp, worker: Worker) -> None:
    """The policy follower runs beside the agent; every second, between batches, a version
    it loaded is applied (`Worker.idle`)."""
    follower = worker.policy.follower
    if follower is None:
        return

    @app.task
    async def follow_policy() -> None:
        await follower.run()

    @app.timer(interval=1.0)
    async def apply_policy() -> None:
        worker.idle()


async def policy_ready(worker: Worker) -> None:
    """Before the first batch: the policy topic read to its end, so no record is judged under
    a version already replaced; a topic that cannot be read is said every 30 s."""
    while not await wait_ready(worker.policy, POLICY_WAIT_SECONDS):
        log.warning("policy topic not read yet; the first batch waits for it")


def add_timers(app: GateApp, worker: Worker, scan_interval_seconds: float) -> None:
    """The deadline scan; and every 5 s the lag metric and the stalled-partition check."""

    @app.timer(interval=scan_interval_seconds)
    async def scan_deadlines() -> None:
        await worker.deadlines.scan()

    @app.timer(interval=5.0)
    async def report_lag() -> None:
        await worker.metrics.report_lag(app, worker.offsets.committed_input)
        await worker.offsets.check_progress()


def add_rebalance_handlers(app: GateApp, worker: Worker) -> None:
    """A rebalance makes the pending index and offset bookkeeping stale (`Worker.assigned`)."""

    @app.on_partitions_assigned.connect
    async def stale_index(sender: Any, /, *args: Any, **kwargs: Any) -> None:
        del sender, kwargs
        await worker.assigned(args[0] if args else set())

    @app.on_partitions_revoked.connect
    async def revoked(sender: Any, /, *args: Any, **kwargs: Any) -> None:
        del sender, kwargs
        if args and args[0]:  # the first join revokes nothing; that is no kill point
            failpoints.hit("partitions_revoked")
        worker.index.stale()


def add_shutdown_bound(app: GateApp, worker: Worker, timeout_seconds: float) -> None:
    """A stopping worker that hangs (Faust can, on a stuck agent) is ended after a bound."""

    @app.on_before_shutdown.connect
    def bound_shutdown(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        del sender, args, signal, kwargs
        start_shutdown_watchdog(timeout_seconds)
        worker.offsets.close(app.loop)


def add_metrics_server(app: GateApp, worker: Worker) -> None:
    """/metrics, /livez and /readyz; ready once no rebalance or recovery is under way."""

    @app.task
    async def serve_metrics() -> None:
        worker.metrics.serve(ready=lambda: not settling(app))
