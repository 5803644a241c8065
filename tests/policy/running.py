"""Real worker processes judging under published policy bundles: the steps the policy's broker
tests share (tests/policy/test_kafka_*.py). A deployment of its own on the local broker, bundles
written to files and published with `replygate policy`'s own code, input records sent with
headers (a tenant), and every output and audit topic read from its start."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from streams.broker.topology import Topology
from tests.support.kafka import Deployment, collect, metric, wait_ready

# The output topics a turn's outcome can be on, and the audit records (logical names).
DELIVERY, CORRECTIONS, DLQ = "delivery.im", "corrections", "dlq"
READY_SECONDS = 300.0
REPLAY_LINE = re.compile(r"replayed (\d+) input records")

Row = tuple[str, bytes | None, bytes]


@dataclass
class Sent:
    """One input record: a JSON record (sent as a client would, keyed by its conversation or
    task) or raw bytes (sent as they are, with `key`), on `topic`, with `headers`."""

    value: dict[str, Any] | bytes
    topic: str = "replies_raw"
    key: str | None = None
    headers: Sequence[tuple[str, bytes]] = ()


@dataclass
class PolicyDeployment:
    """One isolated deployment: its topics made (policy, status and audit too), its workers."""

    tmp: Path
    partitions: int = 1
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.d = Deployment(partitions=self.partitions, loglevel="info")
        self.d.create_topics()
        self.topology = Topology.of(self.d.settings())
        self.base_env = {
            # no deadline falls during a test unless the test sets one
            "REPLYGATE_CORRECTION_DEADLINE_SECONDS": "3600",
            "REPLYGATE_SESSION_TIMEOUT_SECONDS": "6",
            **self.env,
        }

    # ---- topics ---------------------------------------------------------------------------

    def topic(self, logical: str) -> str:
        return self.topology.named(logical).name

    @property
    def audit_topic(self) -> str:
        return self.topology.audit.name

    # ---- bundles --------------------------------------------------------------------------

    def bundle(self, name: str, text: str, files: dict[str, str] | None = None) -> Path:
        """A bundle file (and the files it names, beside it)."""
        folder = self.tmp / "bundles"
        folder.mkdir(exist_ok=True)
        for file_name, body in (files or {}).items():
            (folder / file_name).write_text(body, encoding="utf-8")
        path = folder / f"{name}.toml"
        path.write_text(text, encoding="utf-8")
        return path

    @staticmethod
    def version(path: Path) -> str:
        from streams.policy.bundle import read_bundle

        return read_bundle(path).version

    def policy(self, action: str, path: Path | None = None, shadow: bool = False) -> list[str]:
        """`replygate policy ACTION` with the CLI's own code (publish checks the bundle first)."""
        from streams.policy.topic import perform

        return asyncio.run(perform(action, self.d.settings(), path, shadow))

    def write_policy_record(self, key: str, value: bytes) -> None:
        """A record written straight to the policy topic, as another tool might."""
        from streams.policy.topic import write

        asyncio.run(write(self.d.settings(), self.topology.policy, [(key, value)]))

    def policy_latest(self) -> dict[str, bytes]:
        from streams.policy.topic import read_latest

        return asyncio.run(read_latest(self.d.settings(), self.topology.policy))

    # ---- workers --------------------------------------------------------------------------

    def start(self, **env: str) -> subprocess.Popen[bytes]:
        return self.d.start_worker(self.tmp, **{**self.base_env, **env})

    def start_ready(self, count: int = 1, **env: str) -> list[subprocess.Popen[bytes]]:
        workers = [self.start(**env) for _ in range(count)]
        # a liveness bound: a group of new workers on a loaded 2-core machine can take minutes
        wait_ready(workers, READY_SECONDS)
        return workers

    def log(self, worker: subprocess.Popen[bytes]) -> str:
        return self.d.logs[self.d.workers.index(worker)].read_text(errors="replace")

    def replayed(self, worker: subprocess.Popen[bytes]) -> int:
        """Input records this worker judged again and found its own state write for."""
        return sum(int(m.group(1)) for m in REPLAY_LINE.finditer(self.log(worker)))

    def stop(self) -> None:
        self.d.stop_all(signal.SIGTERM)

    def tail(self) -> str:
        return self.d.log_tail()

    # ---- metrics --------------------------------------------------------------------------

    @staticmethod
    def metric(worker: subprocess.Popen[bytes], name: str, **labels: str) -> float:
        return metric(worker.metrics_port, name, **labels)  # type: ignore[attr-defined]

    def wait_metric(
        self,
        worker: subprocess.Popen[bytes],
        name: str,
        value: float,
        seconds: float = 180.0,
        **labels: str,
    ) -> None:
        """Until the worker's metric is `value`; fails naming it (a liveness bound, no speed
        claim: the switch time is measured by `make bench`)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.metric(worker, name, **labels) == value:
                return
            if worker.poll() is not None:
                break
            time.sleep(0.2)
        got = self.metric(worker, name, **labels)
        raise AssertionError(f"{name}{labels} is {got}, not {value}\n{self.tail()}")

    def wait_active(self, workers: Iterable[subprocess.Popen[bytes]], version: str) -> None:
        for worker in workers:
            self.wait_metric(worker, "replygate_policy_info", 1, role="active", version=version)

    def wait_shadow(self, workers: Iterable[subprocess.Popen[bytes]], version: str) -> None:
        for worker in workers:
            self.wait_metric(worker, "replygate_policy_info", 1, role="shadow", version=version)

    # ---- input and output -----------------------------------------------------------------

    def send(self, records: Iterable[Sent]) -> None:
        """Every record, in order, in one producer session (one flush, as a burst arrives)."""
        asyncio.run(self._send(list(records)))

    async def _send(self, records: list[Sent]) -> None:
        from streams.client import input_record, record_key

        producer = AIOKafkaProducer(
            bootstrap_servers=self.d.bootstrap_servers, linger_ms=20, acks="all"
        )
        await producer.start()
        try:
            futures = []
            for sent in records:
                if isinstance(sent.value, bytes):
                    data = sent.value
                    key = None if sent.key is None else sent.key.encode()
                else:
                    data = orjson.dumps(sent.value)
                    key = record_key(input_record(sent.value))
                futures.append(
                    await producer.send(
                        self.topic(sent.topic), data, key=key, headers=list(sent.headers)
                    )
                )
            await asyncio.gather(*futures)
        finally:
            await producer.stop()

    def read(
        self, until: Callable[[dict[str, list[dict[str, Any]]]], bool], timeout: float = 120.0
    ) -> dict[str, list[dict[str, Any]]]:
        """Every record of the outputs and the audit topic (by logical name: `delivery.im`,
        `corrections`, `dlq`, `audit`), read until `until` holds, then 3 s
        more for anything that would come after (a repeat, a second outcome)."""
        names = {self.topic(n): n for n in (DELIVERY, CORRECTIONS, DLQ)}
        names[self.audit_topic] = "audit"

        def grouped(rows: list[Row]) -> dict[str, list[dict[str, Any]]]:
            out: dict[str, list[dict[str, Any]]] = {n: [] for n in names.values()}
            for topic, _key, value in rows:
                out[names[topic]].append(orjson.loads(value) if value.startswith(b"{") else {})
            return out

        rows = asyncio.run(collect(list(names), lambda r: until(grouped(r)), timeout, settle=3))
        self.raw = rows
        return grouped(rows)

    def raw_values(self, logical: str) -> list[bytes]:
        """The bytes of every record last read from one topic (by logical name, or `audit`)."""
        name = self.audit_topic if logical == "audit" else self.topic(logical)
        return [value for topic, _key, value in self.raw if topic == name]


def by_turn(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        out.setdefault(str(record.get("turn_id")), []).append(record)
    return out


def killed(worker: subprocess.Popen[bytes], seconds: float = 120.0) -> bool:
    """Whether the worker died by SIGKILL (its armed failpoint) within `seconds`."""
    try:
        worker.wait(seconds)
    except subprocess.TimeoutExpired:
        return False
    return worker.returncode == -signal.SIGKILL
