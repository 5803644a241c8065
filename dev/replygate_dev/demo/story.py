"""One demo run, step by step: the broker reached, the worker started, every sample fed and
its outcome awaited, then a burst of valid replies timed.

`Demo.main` is the story: each step is a method that takes the shared clients, so a new part
of the story is one more step (its own module when it is long) called there.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from replygate_dev.demo.outcomes import Tracker
from replygate_dev.demo.policy import PolicyStory, policy_story
from replygate_dev.demo.processes import (
    free_port,
    log_tail,
    read_rss,
    scrape_outcomes,
    start_local_broker,
    start_worker,
    stop_worker,
    worker_env,
)
from replygate_dev.demo.samples import Part, Sample, llm_script, with_demo_contract
from replygate_dev.scripted_llm import ScriptedLLM
from streams.broker.ready import caught_up, group_offsets, retry
from streams.broker.topology import Topology
from streams.client import AgentClient, input_record
from streams.settings import Settings

PARTITIONS: Final = 2
BURST: Final = 1000
WORKER_START_SECONDS: Final = 60.0
OUTCOMES_SECONDS: Final = 30.0


@dataclass
class Figures:
    total_seconds: float = 0.0
    startup_seconds: float = 0.0
    samples_seconds: float = 0.0
    burst: int = 0
    burst_seconds: float = 0.0
    rss: int = 0
    rss_peak: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    expected_outcomes: Counter[str] = field(default_factory=Counter)
    worker_exit: int | None = None

    @property
    def records_per_second(self) -> float:
        return self.burst / self.burst_seconds if self.burst_seconds > 0 else 0.0


class DemoFailed(Exception):
    """The demo could not run (broker, worker); the message says what to do."""


class Demo:
    """One run: settings with a fresh prefix, the scripted corrector, one worker, the samples."""

    def __init__(self, settings: Settings, samples: list[Sample], root: Path, console: Any):
        run = uuid.uuid4().hex[:10]
        self.settings = with_demo_contract(settings).model_copy(
            update={
                "topic_prefix": f"demo{run}.",
                "app_id": f"demo{run}-gate",
                "partitions": PARTITIONS,
            }
        )
        self.run = run
        self.samples = samples
        self.root = root
        self.console = console
        self.topology = Topology.of(self.settings)
        self.tracker = Tracker(self.settings, samples)
        self.figures = Figures()
        self.log_path = root / "worker.log"
        self.metrics_port = free_port()
        self.worker: subprocess.Popen[bytes] | None = None
        self.produced = 0
        self.created_topics = False
        self.fed = False
        self.policy: PolicyStory | None = None

    # -- Kafka helpers

    async def check_broker(self) -> None:
        """Reach the broker; a local one that is down is started from the checkout's script."""
        try:
            await self._reach_broker()
        except DemoFailed:
            if not start_local_broker(self.settings.kafka_bootstrap_servers):
                raise
            await self._reach_broker()

    async def _reach_broker(self) -> None:
        from aiokafka.admin import AIOKafkaAdminClient

        from streams.broker.options import aiokafka_options

        servers = self.settings.kafka_bootstrap_servers
        admin = AIOKafkaAdminClient(**aiokafka_options(self.settings), request_timeout_ms=5000)
        try:
            await asyncio.wait_for(admin.start(), 10)
            await asyncio.wait_for(admin.list_topics(), 10)
        except Exception as exc:
            raise DemoFailed(
                f"cannot reach Kafka at {servers} ({type(exc).__name__}). Start the local "
                "broker with `make kafka-up` (or point REPLYGATE_KAFKA_BOOTSTRAP_SERVERS at one)."
            ) from None
        finally:
            with contextlib.suppress(Exception):
                await admin.close()

    async def delete_topics(self) -> None:
        """Our own topics only: every name starts with this run's unique `demo<hex>`."""
        from aiokafka.admin import AIOKafkaAdminClient

        from streams.broker.options import aiokafka_options

        admin = AIOKafkaAdminClient(**aiokafka_options(self.settings))
        try:
            await asyncio.wait_for(admin.start(), 10)
            mine = [t for t in await admin.list_topics() if t.startswith(f"demo{self.run}")]
            if mine:
                await asyncio.wait_for(admin.delete_topics(mine), 15)
        except Exception as exc:  # tidying up must not fail the demo
            self.console.print(f"[yellow]could not delete the demo topics: {exc!r}[/]")
        finally:
            with contextlib.suppress(Exception):
                await admin.close()

    async def all_processed(self, admin: Any, consumer: Any, seconds: float) -> bool:
        """Whether the worker's group has committed past the end of every input partition.

        A fresh broker has no group coordinator until asked for one: that wait is bounded by
        `seconds` (`KafkaNotReady` past it), as is a new partition's wait for its leader.
        """
        from aiokafka.structs import TopicPartition

        tps = [
            TopicPartition(topic.name, p)
            for topic in self.topology.inputs()
            for p in range(self.settings.partitions)
        ]
        ends = await retry(lambda: consumer.end_offsets(tps), "the input topics' end", seconds)
        committed = await group_offsets(admin, self.settings.app_id, seconds)
        return caught_up(ends, committed)

    def check_worker(self) -> None:
        if self.worker is not None and self.worker.poll() is not None:
            raise DemoFailed(
                f"the worker exited with {self.worker.returncode}:\n{log_tail(self.log_path)}"
            )

    async def wait_processed(self, admin: Any, consumer: Any, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not await self.all_processed(admin, consumer, max(deadline - time.monotonic(), 1)):
            self.check_worker()
            if time.monotonic() > deadline:
                raise DemoFailed(
                    f"the worker did not process its input within {seconds:g} s:\n"
                    + log_tail(self.log_path)
                )
            await asyncio.sleep(0.2)

    async def read(self, consumer: Any) -> None:
        while True:
            batch = await consumer.getmany(timeout_ms=200)
            for tp, messages in batch.items():
                for message in messages:
                    self.tracker.add(tp.topic, message.value)

    # -- the story

    async def main(self, progress: Any) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.admin import AIOKafkaAdminClient

        from streams.broker.options import aiokafka_options
        from streams.broker.topology import Topology, create_topics

        started = time.perf_counter()
        self.created_topics = True
        await create_topics(Topology.of(self.settings), self.settings)
        options = aiokafka_options(self.settings)
        watched = list(self.tracker.logical)
        consumer = AIOKafkaConsumer(
            *watched,
            **options,
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            metadata_max_age_ms=1000,
        )
        producer = AgentClient(self.settings)  # what an agent service uses
        admin = AIOKafkaAdminClient(**options)
        await consumer.start()
        await producer.start()
        await admin.start()
        reader = asyncio.create_task(self.read(consumer))
        try:
            await self.start(producer, admin, consumer, progress, started)
            await self.feed(producer, admin, consumer, progress)
            await self.burst(producer, admin, consumer, progress)
            assert self.worker is not None
            self.figures.rss, self.figures.rss_peak = read_rss(self.worker.pid)
            try:
                self.figures.outcomes = scrape_outcomes(self.metrics_port)
            except OSError as exc:
                self.console.print(f"[yellow]could not read the worker's metrics: {exc!r}[/]")
            self.policy = await policy_story(
                self.settings, producer, self.root, self.metrics_port, self.check_worker
            )
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            for stop in (consumer.stop, producer.stop, admin.close):
                with contextlib.suppress(Exception):
                    await stop()

    async def start(
        self, producer: Any, admin: Any, consumer: Any, progress: Any, started: float
    ) -> None:
        """Start the worker and wait until it has processed a harmless warm-up cancel."""
        task = progress.add_task("worker starting", total=1)
        script = llm_script(self.samples)
        self.llm = ScriptedLLM(script).start()
        env = worker_env(self.settings, self.root, self.llm.base_url, self.metrics_port)
        self.log_handle = self.log_path.open("wb")
        self.worker = start_worker(env, self.root, self.log_handle)
        await producer.cancel(f"warmup-{self.run}", "warmup")
        await self.wait_processed(admin, consumer, WORKER_START_SECONDS)
        self.figures.startup_seconds = time.perf_counter() - started
        progress.update(task, completed=1, description="worker ready")

    async def produce(self, producer: Any, sample: Sample, part: Part) -> None:
        for _ in range(part.times):
            if part.record is not None:
                meta = await producer.send(part.record)
            else:  # a hostile sample: its bytes as they are, on the client's own producer
                meta = await producer.producer.send_and_wait(
                    self.topology.named(part.topic).name, part.value, key=part.key
                )
            self.tracker.produced(sample, part, meta.partition, meta.offset)
            self.produced += 1

    async def feed(self, producer: Any, admin: Any, consumer: Any, progress: Any) -> None:
        """Every sample's records, then wait for their outcomes and for the worker to settle."""
        began = time.perf_counter()
        self.fed = True
        total = sum(p.times for s in self.samples for p in s.parts)
        produced = progress.add_task("records produced", total=total)
        seen = progress.add_task("outcomes seen", total=len(self.samples))
        waiting: list[tuple[Sample, Part]] = []
        for sample in self.samples:
            for part in sample.parts:
                if self.tracker.ready(part, sample):
                    await self.produce(producer, sample, part)
                else:
                    waiting.append((sample, part))
        deadline = time.monotonic() + OUTCOMES_SECONDS
        while True:
            for item in list(waiting):
                if self.tracker.ready(item[1], item[0]):
                    await self.produce(producer, *item)
                    waiting.remove(item)
            settled = sum(self.tracker.settled(s) for s in self.samples)
            progress.update(produced, completed=self.produced)
            progress.update(seen, completed=settled)
            if (settled == len(self.samples) and not waiting) or time.monotonic() > deadline:
                break
            self.check_worker()
            await asyncio.sleep(0.1)
        await self.wait_processed(admin, consumer, OUTCOMES_SECONDS)
        await asyncio.sleep(0.5)  # the last outputs of the last records
        progress.update(seen, completed=sum(self.tracker.settled(s) for s in self.samples))
        self.figures.samples_seconds = time.perf_counter() - began

    async def burst(self, producer: Any, admin: Any, consumer: Any, progress: Any) -> None:
        """Throughput: BURST valid replies at once, timed from first send to last delivery."""
        task = progress.add_task("burst deliveries", total=BURST)
        text = orjson.dumps({"segments": [{"type": "text", "data": {"text": "Burst reply."}}]})
        records = [
            input_record(
                {
                    "turn_id": f"burst-{i:05d}",
                    "conversation_id": f"c-burst-{i % 64}",
                    "platform": "im",
                    "contract": "im.segments.v1",
                    "attempt": 0,
                    "output": {"text": text.decode()},
                    "produced_at": "2026-11-30T12:00:00Z",
                }
            )
            for i in range(BURST)
        ]
        began = time.perf_counter()
        futures = [await producer.submit(record) for record in records]
        await asyncio.gather(*futures)
        deadline = time.monotonic() + OUTCOMES_SECONDS
        while self.tracker.burst_delivered < BURST and time.monotonic() < deadline:
            self.check_worker()
            progress.update(task, completed=self.tracker.burst_delivered)
            await asyncio.sleep(0.05)
        progress.update(task, completed=self.tracker.burst_delivered)
        self.figures.burst = self.tracker.burst_delivered
        self.figures.burst_seconds = max(self.tracker.last_burst_at - began, 1e-9)
        await self.wait_processed(admin, consumer, OUTCOMES_SECONDS)

    def stop(self) -> None:
        """Stop the worker and the scripted endpoint (idempotent)."""
        if self.worker is not None and self.figures.worker_exit is None:
            self.figures.worker_exit = stop_worker(self.worker)
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.stop()
        handle = getattr(self, "log_handle", None)
        if handle is not None:
            handle.close()
