"""Broker-side helpers for the benchmarks: deployments, a worker subprocess, produce and watch.

Every deployment has its own topic prefix and consumer group, so benchmarks share the local
broker with other users safely; `Deployment.cleanup()` deletes exactly the topics it made.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from replygate_dev.demo import free_port

from streams.broker.ready import caught_up, create_errors, group_offsets, retry, wait_for_leaders
from streams.broker.topology import Topology

# The copy agents' output, a topic of the deployment that replygate itself never uses.
PASSTHROUGH_OUTPUT = "passthrough.out"

REPO = Path(__file__).resolve().parent.parent


def bootstrap() -> str:
    return (
        os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        or os.environ.get("REPLYGATE_KAFKA_BOOTSTRAP_SERVERS")
        or f"127.0.0.1:{os.environ.get('KAFKA_PORT', '9092')}"
    )


@dataclass
class Deployment:
    """One isolated replygate deployment on the shared broker: its own prefix, group, topics."""

    partitions: int = 4
    prefix: str = field(default_factory=lambda: f"bench{uuid.uuid4().hex[:8]}.")
    servers: str = field(default_factory=bootstrap)
    env: dict[str, str] = field(default_factory=dict)
    _topology: Topology | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def app_id(self) -> str:
        return self.prefix.rstrip(".") + "-gate"

    def settings(self, **changes: Any) -> Any:
        from streams.settings import Settings

        return Settings(
            kafka_bootstrap_servers=self.servers,
            topic_prefix=self.prefix,
            app_id=self.app_id,
            partitions=self.partitions,
            **changes,
        )

    def topology(self) -> Topology:
        """Built once: building the settings costs ~1 ms, and the load generators name a topic
        per record (at 820 records/s that starved the latency bench's own event loop)."""
        if self._topology is None:
            self._topology = Topology.of(self.settings())
        return self._topology

    def topic(self, logical: str) -> str:
        return self.topology().named(logical).name

    def input_topics(self) -> list[str]:
        topology = self.topology()
        return [topology.replies.name, topology.toolcalls.name]

    def output_topics(self) -> list[str]:
        return [t.name for t in self.topology().outputs()]

    def passthrough_output(self) -> str:
        """The bare copy agents' one output topic (bench.passthrough, bench.faust_passthrough)."""
        return self.topology().own(PASSTHROUGH_OUTPUT)

    def changelog(self) -> str:
        return self.topology().changelog.name

    def create_topics(self) -> None:
        """What `replygate topics` does (input topics with LogAppendTime), before producing."""
        from streams.broker.topology import create_topics

        settings = self.settings()
        asyncio.run(create_topics(Topology.of(settings), settings))

    def worker_env(self, data_dir: Path, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": self.servers,
            "REPLYGATE_TOPIC_PREFIX": self.prefix,
            "REPLYGATE_APP_ID": self.app_id,
            "REPLYGATE_PARTITIONS": str(self.partitions),
            "REPLYGATE_DATA_DIR": str(data_dir),
            "REPLYGATE_METRICS_PORT": str(free_port()),
            # No deadline events during a run: every invalid reply stays pending.
            "REPLYGATE_CORRECTION_DEADLINE_SECONDS": "3600",
            "PYTHONUNBUFFERED": "1",
            **self.env,
            **extra,
        }

    def start_worker(self, workdir: Path, app: str | None = None, **extra: str) -> Worker:
        """`replygate worker`, or (with `app`) Faust's own worker on that app module."""
        workdir.mkdir(parents=True, exist_ok=True)
        log = workdir / "worker.log"
        handle = log.open("wb")
        command = (
            ["-m", "streams.cli", "worker"] if app is None else ["-m", "faust", "-A", app, "worker"]
        )
        proc = subprocess.Popen(
            [sys.executable, *command, "--loglevel", "info"],
            cwd=REPO,
            env=self.worker_env(workdir / "data", **extra),
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        handle.close()
        return Worker(proc, log)

    def cleanup(self) -> None:
        """Delete this deployment's topics (its prefix and its app id's internal topics)."""
        asyncio.run(delete_topics(self.servers, self.topology().namespaces()))


@dataclass
class Worker:
    """A `replygate worker` subprocess."""

    proc: subprocess.Popen[bytes]
    log: Path

    def peak_rss_mb(self) -> float:
        """VmHWM (the kernel's peak resident set) of the worker process, in MiB."""
        return _status_kib(self.proc.pid, "VmHWM") / 1024

    def rss_mb(self) -> float:
        return _status_kib(self.proc.pid, "VmRSS") / 1024

    def cpu_seconds(self) -> float:
        """User + system CPU time the worker process has used so far."""
        return cpu_seconds(self.proc.pid)

    def stop(self, timeout: float = 30.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def ready(port: int) -> bool:
    """Whether a worker's `/readyz` on `port` answers 200."""
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def wait_ready(port: int, worker: Worker, bound: float, poll: float = 0.05) -> float:
    """Seconds until the worker is ready; an error if it dies or takes longer than `bound`."""
    started = time.monotonic()
    while not ready(port):
        if not worker.alive() or time.monotonic() - started > bound:
            raise RuntimeError(f"worker never ready\n{worker.tail()}")
        time.sleep(poll)
    return time.monotonic() - started


def cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, field_name: str) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return float(line.split()[1])
    except OSError:
        pass
    return 0.0


async def create_topic(servers: str, name: str, partitions: int) -> None:
    """One plain topic, with its leaders elected before anyone produces to it."""
    from aiokafka.admin import NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=servers)
    await admin.start()
    try:
        response = await retry(lambda: admin.create_topics([NewTopic(name, partitions, 1)]), name)
        refused = create_errors(response.topic_errors)
        if refused:
            raise RuntimeError(f"the broker refused to create {name}: {refused[name]}")
        await wait_for_leaders(admin, [name])
    finally:
        await admin.close()


async def delete_topics(servers: str, prefixes: Sequence[str]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=servers)
    await admin.start()
    try:
        names = [t for t in await admin.list_topics() if t.startswith(tuple(prefixes))]
        if names:
            await admin.delete_topics(names)
    except Exception as exc:  # cleanup is best effort; a leftover topic is harmless
        print(f"  (topic cleanup failed: {type(exc).__name__})")
    finally:
        await admin.close()


async def produce_all(
    servers: str, records: Iterable[tuple[str, bytes, bytes]], linger_ms: int = 5
) -> None:
    """Send (topic, key, value) triples as fast as the producer batches them, then flush."""
    producer = AIOKafkaProducer(
        bootstrap_servers=servers, linger_ms=linger_ms, acks="all", max_batch_size=256 * 1024
    )
    await producer.start()
    try:
        futures = [await producer.send(t, v, key=k) for t, k, v in records]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


@dataclass
class Seen:
    """Output records observed: (topic, record timestamp ms, wall time seen, value)."""

    records: list[tuple[str, int, float, bytes]] = field(default_factory=list)

    def first_last_ms(self) -> tuple[int, int]:
        stamps = [r[1] for r in self.records]
        return min(stamps), max(stamps)


def from_start(*topics: str, servers: str, fetch_max_wait_ms: int = 100) -> AIOKafkaConsumer:
    """A consumer that reads `topics` from their start in no group: how a bench watches what
    the workers wrote."""
    return AIOKafkaConsumer(
        *topics,
        bootstrap_servers=servers,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        group_id=None,
        metadata_max_age_ms=1000,
        fetch_max_wait_ms=fetch_max_wait_ms,
    )


async def watch(
    servers: str,
    topics: Sequence[str],
    expected: int,
    timeout: float,
    keep_values: bool = False,
    alive: Callable[[], bool] | None = None,
) -> Seen:
    """Read `topics` from the start until `expected` records are seen, the timeout passes, or
    `alive()` says the process under test has exited."""
    consumer = from_start(*topics, servers=servers)
    await consumer.start()
    seen = Seen()
    deadline = time.monotonic() + timeout
    try:
        while len(seen.records) < expected and time.monotonic() < deadline:
            if alive is not None and not alive():
                break
            batch = await consumer.getmany(timeout_ms=200, max_records=10_000)
            now = time.time()
            for tp, messages in batch.items():
                seen.records.extend(
                    (tp.topic, m.timestamp, now, m.value if keep_values else b"") for m in messages
                )
    finally:
        await consumer.stop()
    return seen


async def group_at_end(servers: str, group: str, topics: Sequence[str]) -> bool:
    """Whether the consumer group has committed every partition of `topics` to its end.

    A topic whose partitions metadata does not show yet is not at its end; a broker without a
    coordinator for the group yet is waited for (bounded) rather than crashed on.
    """
    consumer = AIOKafkaConsumer(bootstrap_servers=servers, enable_auto_commit=False)
    admin = AIOKafkaAdminClient(bootstrap_servers=servers)
    await consumer.start()
    await admin.start()
    try:
        partitions = {
            t: consumer.partitions_for_topic(t) or await _partitions(consumer, t) for t in topics
        }
        if not all(partitions.values()):
            return False
        parts = [TopicPartition(t, p) for t, ps in partitions.items() for p in sorted(ps)]
        ends = await consumer.end_offsets(parts)
        return caught_up(ends, await group_offsets(admin, group))
    finally:
        await consumer.stop()
        await admin.close()


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> set[int]:
    await consumer._client.force_metadata_update()
    return consumer.partitions_for_topic(topic) or set()


async def wait_group_at_end(
    servers: str, group: str, topics: Sequence[str], timeout: float = 30.0
) -> float | None:
    """Seconds until the group's commits reach the end of `topics`, or None on timeout."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if await group_at_end(servers, group, topics):
            return time.monotonic() - started
        await asyncio.sleep(0.2)
    return None
