"""The Faust app: a thin Kafka shell around `streams.pipeline.Gate` and `streams.turns`.

Run it with `replygate worker` (or `faust -A streams.app worker`). Input topics are keyed by
conversation, so a turn's pending and finished state live on its conversation's partition and
one worker handles its reply, correction, cancel and deadline.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import faust
import orjson
from aiokafka import AIOKafkaProducer
from faust.types import EventT, StreamT

from schemas.errors import Issue
from schemas.records import Context
from streams.kafka_config import aiokafka_options, faust_broker_options
from streams.metrics_hooks import WorkerMetrics
from streams.pipeline import Decision, Gate, PendingTurn, Source
from streams.settings import Settings, load_settings
from streams.turns import Step, on_cancel, on_deadline, on_reply, prior_state

log = logging.getLogger("replygate.worker")


def source_id(source: Source) -> str:
    """A record's identity in turn state: topic, partition and offset."""
    return f"{source.topic}:{source.partition}:{source.offset}"


RecordHandler = Callable[[Source, bytes], Awaitable[None]]


class PriorState:
    """One record's view of its turn's prior state, looked up once."""

    def __init__(
        self,
        lookup: Callable[[str, str], tuple[PendingTurn | None, str | None]],
        source_key: str,
    ) -> None:
        self.lookup = lookup
        self.source_key = source_key
        self.cache: dict[str, tuple[PendingTurn | None, str | None]] = {}

    def state(self, turn_id: str) -> tuple[PendingTurn | None, str | None]:
        if turn_id not in self.cache:
            self.cache[turn_id] = self.lookup(turn_id, self.source_key)
        return self.cache[turn_id]

    def context(self, turn_id: str) -> Context | None:
        """The first attempt's context, for a correction that comes without one."""
        pending = self.state(turn_id)[0]
        return pending.stored_context() if pending is not None else None


def start_shutdown_watchdog(seconds: float) -> threading.Timer:
    """Exit the process if shutdown takes longer than `seconds`; committed work is safe."""

    def expire() -> None:
        log.error("shutdown took longer than %.0f s; exiting", seconds)
        os._exit(1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


class GateApp(faust.App):
    """A Faust app that makes sure replygate's own topics exist before it subscribes."""

    replygate_settings: Settings

    async def on_first_start(self) -> None:
        from aiokafka.errors import KafkaConnectionError

        from streams.topics import create_topics

        settings = self.replygate_settings
        try:
            created = await create_topics(settings)
        except KafkaConnectionError:
            security = settings.kafka_security
            log.error(
                "cannot connect or authenticate to Kafka at %s as %r (%s %s): check kafka_security",
                settings.kafka_bootstrap_servers,
                security.sasl_username,
                security.protocol,
                security.sasl_mechanism,
            )
            raise
        if created:
            log.info("created topics: %s", ", ".join(sorted(created)))
        await super().on_first_start()


def create_app(settings: Settings) -> faust.App:
    """Build the app, its topics, tables, agents and timers from one settings object."""
    app = GateApp(
        settings.app_id,
        store=settings.store,
        processing_guarantee=settings.processing_guarantee,
        topic_partitions=settings.partitions,
        topic_replication_factor=settings.replication_factor,
        datadir=str(settings.data_dir),
        key_serializer="raw",
        value_serializer="raw",
        web_port=settings.web_port,
        web_enabled=False,
        consumer_auto_offset_reset="earliest",
        # A killed worker's partitions move after 10 s, not Faust's default minute.
        broker_session_timeout=10.0,
        broker_heartbeat_interval=3.0,
        broker_commit_every=1000,
        producer_max_request_size=settings.max_output_bytes,
        broker_commit_interval=0.5,
        stream_wait_empty=False,
        table_standby_replicas=0,
        worker_redirect_stdouts=False,
        **faust_broker_options(settings),
    )
    app.replygate_settings = settings
    gate = Gate(settings)
    metrics = WorkerMetrics(settings, gate)
    n = settings.partitions
    input_config = {"message.timestamp.type": "LogAppendTime"}

    replies_topic = app.topic(settings.topic("replies_raw"), partitions=n, config=input_config)
    toolcalls_topic = app.topic(settings.topic("toolcalls_raw"), partitions=n, config=input_config)
    control_topic = app.topic(settings.topic("turns_control"), partitions=n, config=input_config)
    deadlines_topic = app.topic(f"{settings.app_id}-deadlines", partitions=n, internal=True)
    outputs: dict[str, faust.TopicT] = {}

    # Keys and values are bytes (orjson values), so they read back the same after recovery.
    pending_table = app.Table(
        "pending-turns", default=None, partitions=n, key_type=bytes, value_type=bytes
    )
    finished_table = app.Table(
        "finished-turns", default=None, partitions=n, key_type=bytes, value_type=bytes
    )

    def output_topic(name: str) -> faust.TopicT:
        topic = outputs.get(name)
        if topic is None:
            config = {"max.message.bytes": str(settings.max_output_bytes)}
            topic = outputs[name] = app.topic(name, partitions=n, config=config)
        return topic

    async def send(decision: Decision) -> None:
        if decision.output is None or decision.topic is None:
            return
        await output_topic(decision.topic).send(
            key=decision.key, value=orjson.dumps(decision.output)
        )
        metrics.sent(decision)

    def state_before(turn_id: str, source_key: str) -> tuple[PendingTurn | None, str | None]:
        key = turn_id.encode()
        finished, pending = finished_table.get(key), pending_table.get(key)
        return prior_state(
            orjson.loads(finished) if finished else None,
            orjson.loads(pending) if pending else None,
            source_key,
        )

    async def apply(
        step: Step,
        turn_id: str | None,
        source: Source,
        pending_before: PendingTurn | None = None,
        decision: Decision | None = None,
    ) -> None:
        """Send first, then store: a crash in between replays the identical records."""
        for emitted in step.emit:
            await send(emitted)
        if turn_id is not None:
            key = turn_id.encode()
            origin = source_id(source)
            if isinstance(step.pending, PendingTurn):
                entry = {**step.pending.as_dict(), "partition": source.partition, "source": origin}
                pending_table[key] = orjson.dumps(entry)
            elif step.pending is None:
                pending_table.pop(key, None)
            if step.finished is not None:
                before = pending_before.as_dict() if pending_before is not None else None
                finished_table[key] = orjson.dumps(
                    {"outcome": step.finished, "source": origin, "pending": before}
                )
        metrics.step(step, source.topic, decision)

    def source_of(event: EventT[bytes]) -> Source:
        message = event.message
        stamp = datetime.fromtimestamp(message.timestamp, UTC) if message.timestamp else None
        return Source(message.topic, message.partition, message.offset, stamp, message.key)

    async def on_reply_record(source: Source, raw: bytes) -> None:
        now = source.timestamp or datetime.now(UTC)
        prior = PriorState(state_before, source_id(source))
        decision = gate.process_reply(raw, source, now, context_for=prior.context)
        turn_id = decision.turn.turn_id if decision.turn else None
        pending, finished = prior.state(turn_id) if turn_id is not None else (None, None)
        step = on_reply(gate, decision, pending, finished, now)
        await apply(step, turn_id, source, pending, decision)
        metrics.processed(source.topic, decision)

    async def on_tool_record(source: Source, raw: bytes) -> None:
        decision = gate.process_tool_call(raw, source)
        await send(decision)
        metrics.tool(decision)
        metrics.processed(source.topic, decision)

    async def on_control_record(source: Source, raw: bytes) -> None:
        parsed = gate.parse_control(raw, source)
        if isinstance(parsed, Decision):
            await send(parsed)
            metrics.step(Step("dead_letter"), source.topic)
            return
        pending, finished = state_before(parsed.turn_id, source_id(source))
        await apply(on_cancel(pending, finished), parsed.turn_id, source, pending)

    async def on_deadline_record(source: Source, raw: bytes) -> None:
        turn_id = orjson.loads(raw)["turn_id"]
        pending, finished = state_before(turn_id, source_id(source))
        step = on_deadline(gate, pending, finished, datetime.now(UTC))
        await apply(step, turn_id, source, pending)

    async def consume(stream: StreamT[bytes], handle: RecordHandler) -> None:
        """One record at a time; a record that fails in our code is a dead letter, never a stop."""
        async for event in stream.events():
            started = time.perf_counter()
            source = source_of(event)
            try:
                await handle(source, event.value)
            except Exception as exc:
                # the type only: an exception's text could quote the record
                log.error("record %s failed: %s", source_id(source), type(exc).__name__)
                issue = Issue("$", "processing_error", f"the gate failed: {type(exc).__name__}")
                await send(gate.dead_letter(event.value, source, "processing_error", [issue], 0))
                metrics.step(Step("dead_letter"), source.topic)
            metrics.latency(source.topic, time.perf_counter() - started)

    @app.agent(replies_topic)
    async def replies(stream: StreamT[bytes]) -> None:
        await consume(stream, on_reply_record)

    @app.agent(toolcalls_topic)
    async def toolcalls(stream: StreamT[bytes]) -> None:
        await consume(stream, on_tool_record)

    @app.agent(control_topic)
    async def control(stream: StreamT[bytes]) -> None:
        await consume(stream, on_control_record)

    @app.agent(deadlines_topic)
    async def deadlines(stream: StreamT[bytes]) -> None:
        await consume(stream, on_deadline_record)

    # Deadline events are triggers, idempotent by design, and sent outside any transaction:
    # under exactly_once a send from a timer would open a transaction no event ever commits.
    deadline_events: dict[str, AIOKafkaProducer] = {}

    @app.task
    async def start_deadline_events() -> None:
        producer = AIOKafkaProducer(**aiokafka_options(settings), acks="all")
        await producer.start()
        deadline_events["producer"] = producer

    @app.on_before_shutdown.connect
    def stop_deadline_events(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        del sender, args, signal, kwargs
        producer = deadline_events.pop("producer", None)
        if producer is not None:
            app.loop.create_task(producer.stop())

    @app.timer(interval=settings.deadline_scan_interval_seconds)
    async def scan_deadlines() -> None:
        """Expired pending turns become deadline events on their own partition.

        Only partitions this worker owns now: after a rebalance the new owner scans them, and
        under exactly_once a send for a partition without its transaction producer would fail.
        """
        producer = deadline_events.get("producer")
        if producer is None:
            return
        now = datetime.now(UTC)
        owned = {
            tp.partition
            for tp in app.assignor.assigned_actives()
            if tp.topic == deadlines_topic.get_topic_name()
        }
        count = 0
        for key, raw in list(pending_table.items()):
            if not raw:
                continue
            entry = orjson.loads(raw)
            if entry["partition"] not in owned:
                continue
            count += 1
            if datetime.fromisoformat(entry["deadline"]) <= now:
                await producer.send(
                    deadlines_topic.get_topic_name(),
                    orjson.dumps({"turn_id": key.decode()}),
                    key=entry["conversation_id"].encode(),
                    partition=entry["partition"],
                )
        metrics.pending(count)

    @app.timer(interval=5.0)
    async def report_lag() -> None:
        await metrics.report_lag(app)

    @app.on_before_shutdown.connect
    def bound_shutdown(sender: Any, /, *args: Any, signal: Any, **kwargs: Any) -> None:
        """A stopping worker that hangs (Faust can, on a stuck agent) is ended after a bound."""
        del sender, args, signal, kwargs
        start_shutdown_watchdog(settings.shutdown_timeout_seconds)

    @app.task
    async def serve_metrics() -> None:
        recovery = app.tables.recovery  # type: ignore[attr-defined]  # untyped in Faust's TableManagerT
        metrics.serve(ready=lambda: not app.rebalancing and recovery.completed.is_set())

    if settings.corrector.enabled:
        from streams.corrector import register_corrector

        register_corrector(app, settings)

    app.gate = gate  # type: ignore[attr-defined]
    return app


settings = load_settings()
app = create_app(settings)
