"""Helpers for tests against the real broker: workers as subprocesses, produce and collect."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from replygate_dev.demo import free_port

T = TypeVar("T")

REPO = Path(__file__).resolve().parents[2]


def bootstrap() -> str:
    value = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not value:
        raise RuntimeError(
            "KAFKA_BOOTSTRAP_SERVERS is not set: run the suite with `make test`, which starts "
            "the local broker (deploy/kafka-local/kafka-local.sh up)"
        )
    return value


@dataclass
class Deployment:
    """One isolated replygate deployment on the shared broker: its own prefix and group."""

    prefix: str = field(default_factory=lambda: f"t{uuid.uuid4().hex[:10]}.")
    partitions: int = 2
    bootstrap_servers: str = field(default_factory=lambda: bootstrap())
    env: dict[str, str] = field(default_factory=dict)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    loglevel: str = "warn"

    @property
    def app_id(self) -> str:
        return self.prefix.rstrip(".") + "-gate"

    def topic(self, name: str) -> str:
        return self.prefix + name

    def worker_env(self, tmp: Path, **extra: str) -> dict[str, str]:
        env = {
            **os.environ,
            "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": self.bootstrap_servers,
            "REPLYGATE_TOPIC_PREFIX": self.prefix,
            "REPLYGATE_APP_ID": self.app_id,
            "REPLYGATE_PARTITIONS": str(self.partitions),
            "REPLYGATE_DATA_DIR": str(tmp / f"data-{len(self.workers)}"),
            "REPLYGATE_METRICS_PORT": str(free_port()),
            "PYTHONUNBUFFERED": "1",
            **self.env,
            **extra,
        }
        return env

    def start_worker(self, tmp: Path, **extra: str) -> subprocess.Popen[bytes]:
        env = self.worker_env(tmp, **extra)
        log = tmp / f"worker-{len(self.workers)}.log"
        handle = log.open("wb")
        proc = subprocess.Popen(
            [sys.executable, "-m", "streams.cli", "worker", "--loglevel", self.loglevel],
            cwd=REPO,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        proc.metrics_port = int(env["REPLYGATE_METRICS_PORT"])  # type: ignore[attr-defined]
        self.workers.append(proc)
        self.logs.append(log)
        return proc

    def settings(self, **changes: Any) -> Any:
        from streams.settings import Settings

        return Settings(
            kafka_bootstrap_servers=self.bootstrap_servers,
            topic_prefix=self.prefix,
            app_id=self.app_id,
            partitions=self.partitions,
            **changes,
        )

    def create_topics(self) -> None:
        """What `replygate topics` does, before anything is produced (no auto-created topics)."""
        from streams.broker.topology import Topology, create_topics

        settings = self.settings()
        asyncio.run(create_topics(Topology.of(settings), settings))

    def stop_all(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        for proc in self.workers:
            if proc.poll() is None:
                proc.send_signal(sig)
        for proc in self.workers:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)

    def log_tail(self, lines: int = 60) -> str:
        out = []
        for log in self.logs:
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {log.name}\n" + "\n".join(text))
        return "\n".join(out)


async def produce(
    topic: str,
    records: Iterable[tuple[str | None, Any]],
    servers: str | None = None,
    client: Mapping[str, Any] | None = None,
) -> None:
    """Send (key, value) pairs; a bytes value goes as it is, anything else as orjson.

    `client`: more AIOKafkaProducer options, e.g. SASL (`PrivateBroker.sasl_client`).
    """
    producer = AIOKafkaProducer(
        bootstrap_servers=servers or bootstrap(), linger_ms=5, acks="all", **(client or {})
    )
    await producer.start()
    try:
        futures = []
        for key, value in records:
            data = value if isinstance(value, bytes) else orjson.dumps(value)
            futures.append(
                await producer.send(topic, data, key=key.encode() if key is not None else None)
            )
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def publish(
    settings: Any, topic: str, records: Iterable[tuple[str | None, Any]]
) -> list[Any]:
    """Input records as an agent service sends them: through `AgentClient`, which keys each one
    by its own id and picks its topic (both checked against the pair given here). A bytes value
    (a hostile record that no client would send) goes as it is, with the given key, to `topic`.
    Returns each record's metadata (topic, partition, offset), in order."""
    from streams.client import AgentClient, input_record, record_key

    sent: list[Any] = []
    async with AgentClient(settings) as agent:
        for key, value in records:
            if isinstance(value, bytes):
                future = await agent.producer.send(
                    topic, value, key=key.encode() if key is not None else None
                )
            else:
                record = input_record(value)
                assert agent.topic_of(record) == topic, (topic, value)
                assert key is not None and record_key(record) == key.encode(), (key, value)
                future = await agent.submit(record)
            sent.append(future)
        return list(await asyncio.gather(*sent))


async def read_from_start(
    topics: Iterable[str],
    until: Callable[[list[T]], bool],
    row: Callable[[str, Any], T],
    timeout: float = 60.0,
    settle: float = 0.0,
    **options: Any,
) -> list[T]:
    """Read topics from the beginning, one `row(topic, message)` each, until `until(rows)` is
    true (then `settle` more seconds) or `timeout`; `options` go to the AIOKafkaConsumer."""
    consumer = AIOKafkaConsumer(
        *topics,
        **{
            "bootstrap_servers": bootstrap(),
            "auto_offset_reset": "earliest",
            "enable_auto_commit": False,
            "group_id": None,
            "metadata_max_age_ms": 1000,
            **options,
        },
    )
    await consumer.start()
    rows: list[T] = []
    deadline = time.monotonic() + timeout
    settled_at: float | None = None
    try:
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=250)
            for tp, messages in batch.items():
                rows.extend(row(tp.topic, m) for m in messages)
            if settled_at is None and until(rows):
                settled_at = time.monotonic() + settle
            if settled_at is not None and time.monotonic() >= settled_at:
                break
    finally:
        await consumer.stop()
    return rows


async def collect(
    topics: Iterable[str],
    until: Any,
    timeout: float = 60.0,
    settle: float = 0.0,
    isolation: str = "at_least_once",
    servers: str | None = None,
    client: Mapping[str, Any] | None = None,
) -> list[tuple[str, bytes | None, bytes]]:
    """Read topics from the beginning until `until(records)` is true (then `settle` more seconds).

    Under exactly_once only committed transactions count (read_committed), as an endpoint reads.
    `client`: more AIOKafkaConsumer options, e.g. SASL (`PrivateBroker.sasl_client`).
    """
    return await read_from_start(
        topics,
        until,
        lambda topic, m: (topic, m.key, m.value),
        timeout,
        settle,
        bootstrap_servers=servers or bootstrap(),
        isolation_level="read_committed" if isolation == "exactly_once" else "read_uncommitted",
        **(client or {}),
    )


def by_topic(records: list[tuple[str, bytes | None, bytes]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for topic, _key, value in records:
        out.setdefault(topic, []).append(orjson.loads(value))
    return out


@dataclass
class PrivateBroker:
    """A second local broker of our own (its own port and data), sharing the jar cache."""

    home: Path
    port: int = field(default_factory=free_port)
    # A SASL_PLAINTEXT listener (PLAIN, SCRAM-SHA-256/512) on this port; None: no SASL listener.
    sasl_port: int | None = None
    sasl_user: str = "replygate"
    sasl_password: str = "replygate-secret"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        if self.sasl_port is None:
            raise RuntimeError("this PrivateBroker has no SASL listener (sasl_port=None)")
        return f"127.0.0.1:{self.sasl_port}"

    def sasl_client(self, mechanism: str, password: str | None = None) -> dict[str, Any]:
        """aiokafka options for a client of the SASL listener (our own password by default)."""
        return {
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism,
            "sasl_plain_username": self.sasl_user,
            "sasl_plain_password": self.sasl_password if password is None else password,
        }

    def _sasl_env(self) -> dict[str, str]:
        if self.sasl_port is None:
            return {}
        return {
            "KAFKA_SASL_PORT": str(self.sasl_port),
            "KAFKA_SASL_USER": self.sasl_user,
            "KAFKA_SASL_PASSWORD": self.sasl_password,
        }

    def _run(self, *args: str, **env: str) -> None:
        subprocess.run(
            ["bash", str(REPO / "deploy/kafka-local/kafka-local.sh"), *args],
            env={
                **os.environ,
                "KAFKA_LOCAL_HOME": str(self.home),
                "KAFKA_LIB_DIR": str(REPO / ".kafka-local" / "lib"),
                "KAFKA_PORT": str(self.port),
                "KAFKA_CONTROLLER_PORT": str(free_port()),
                "KAFKA_CDS": "0",
                **self._sasl_env(),
                **env,
            },
            check=True,
            timeout=180,
        )

    def up(self, **env: str) -> None:
        self._run("up", **env)

    def down(self, purge: bool = False) -> None:
        self._run("down", *(["--purge"] if purge else []))

    def kill(self) -> None:
        """SIGKILL the broker (no clean shutdown: its logs are recovered at the next `up`) and
        wait until it is gone."""
        pid = int((self.home / "kafka.pid").read_text().strip())
        os.kill(pid, signal.SIGKILL)
        while _alive(pid):
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


class ExplodingContract:
    """A registered contract whose validation raises: the worker must dead-letter, not stop."""

    name = "boom.v1"

    def validate(self, reply: Any, context: Any) -> Any:
        raise RuntimeError("boom")

    def json_schema(self) -> dict[str, Any]:
        return {}

    def instructions(self) -> str:
        return ""

    def notice_message(self, text: str) -> dict[str, Any]:
        return {"text": text}


BOOM_CONTRACT = ExplodingContract()


def batch_sizes(worker: subprocess.Popen[bytes], at_most: int) -> tuple[float, float]:
    """A running worker's batches so far, and how many of them held at most `at_most` records
    (`replygate_batch_records`; `at_most` is one of its bucket bounds)."""
    port: int = worker.metrics_port  # type: ignore[attr-defined]
    total = metric(port, "replygate_batch_records_count")
    return total, metric(port, "replygate_batch_records_bucket", le=f"{float(at_most)}")


def metric(port: int, name: str, **labels: str) -> float:
    """Sum of a metric's samples whose labels include `labels` (0 if none yet)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
    except OSError:
        return 0.0
    total = 0.0
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                total += sample.value
    return total


async def collect_messages(
    topics: Iterable[str], until: Any, timeout: float = 60.0, settle: float = 0.0
) -> list[Any]:
    """`collect`, keeping whole consumer records (topic, partition, key, value, headers)."""
    return await read_from_start(topics, until, lambda _topic, m: m, timeout, settle)


def worker_exit(proc: subprocess.Popen[bytes], timeout: float = 90.0) -> int | None:
    """The exit status of a worker expected to stop by itself (None: still running)."""
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


def readyz(port: int) -> int | None:
    """A worker's /readyz status, or None when nothing listens on its metrics port."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None  # nothing listens


def wait_ready(workers: list[Any], seconds: float = 120.0) -> None:
    """Until every worker answers /readyz (no rebalance under way), twice a few seconds apart."""
    deadline = time.monotonic() + seconds
    steady = 0
    while steady < 2 and time.monotonic() < deadline:
        ready = all(readyz(w.metrics_port) == 200 for w in workers)
        steady = steady + 1 if ready else 0
        time.sleep(3 if ready else 0.5)
    assert steady >= 2, "the workers did not become ready"
