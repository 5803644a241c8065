"""`replygate deliveries` on the real broker: each delivery once on stdout, across a SIGKILL.

The reader runs as a subprocess, as an endpoint runs it. A failpoint (`REPLYGATE_FAILPOINT`)
kills it at a chosen point; the test checks that it died there (SIGKILL, and its log line),
then restarts it and reads what it hands on.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.deliveries_support import delivery, invalid_delivery
from tests.kafka_support import REPO, Deployment, produce

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(120)]

GROUP = "endpoint-test"
WAIT_SECONDS = 60.0


class Reader:
    """One `replygate deliveries im` process; its stdout lines are collected as they come."""

    def __init__(self, deployment: Deployment, tmp: Path, log: str, **env: str) -> None:
        self.log = tmp / log
        with self.log.open("wb") as handle:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "streams.cli",
                    "deliveries",
                    "im",
                    "--from-beginning",
                    "--group",
                    GROUP,
                    "--state",
                    str(tmp / "seen.sqlite"),
                ],
                cwd=REPO,
                env=deployment.worker_env(tmp, **env),
                stdout=subprocess.PIPE,
                stderr=handle,
            )
        self.lines: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(orjson.loads(line))

    def ids(self) -> list[str]:
        return [line["delivery_id"] for line in self.lines]

    def wait_for_lines(self, count: int) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        while len(self.lines) < count and self.proc.poll() is None:
            assert time.monotonic() < deadline, self.stderr()
            time.sleep(0.05)

    def end(self, sig: int = signal.SIGTERM) -> int:
        """Stop it (or wait for it to die) and return its exit status."""
        if sig and self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(WAIT_SECONDS)
        self._thread.join(10)
        return code

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


def committed(deployment: Deployment, topic: str) -> int:
    """The group's committed offset on the topic's one partition (-1: none)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def ask() -> int:
        consumer = AIOKafkaConsumer(bootstrap_servers=deployment.bootstrap_servers, group_id=GROUP)
        await consumer.start()
        try:
            offset = await consumer.committed(TopicPartition(topic, 0))
            return -1 if offset is None else offset
        finally:
            await consumer.stop()

    return asyncio.run(ask())


def wait_for_commit(deployment: Deployment, topic: str, offset: int, reader: Reader) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while committed(deployment, topic) < offset:
        assert reader.proc.poll() is None and time.monotonic() < deadline, reader.stderr()
        time.sleep(0.2)


def test_each_delivery_is_handed_on_once_across_a_kill_and_restarts(tmp_path: Path) -> None:
    deployment = Deployment(partitions=1)
    deployment.env["REPLYGATE_PLATFORMS"] = '["im"]'
    deployment.create_topics()
    topic = deployment.topic("delivery.im")
    ids = [f"t-{n}" for n in range(1, 6)]
    records: list[tuple[str, Any]] = [
        ("c-1", delivery("t-1")),
        ("c-1", delivery("t-2")),
        ("c-1", invalid_delivery("t-bad")),  # closed, but its message breaks the contract
        ("c-1", b'{"delivery_id": "t-x", "not": "a delivery"'),  # written by hand: not JSON
        ("c-1", delivery("t-2")),  # a repeat, as a worker's crash sends it
        ("c-1", delivery("t-3")),
        ("c-1", delivery("t-4")),
        ("c-1", delivery("t-4")),
        ("c-1", delivery("t-5")),
    ]
    asyncio.run(produce(topic, records))

    # 1. Killed right after the third hand-off's id is recorded, before any offset commit.
    first = Reader(deployment, tmp_path, "first.log", REPLYGATE_FAILPOINT="endpoint_recorded@3")
    assert first.end(sig=0) == -signal.SIGKILL, first.stderr()
    assert "failpoint endpoint_recorded: SIGKILL" in first.stderr()
    assert first.ids() == ids[:3]
    assert committed(deployment, topic) == -1  # handed on, but no offset committed

    # 2. The restart re-reads the batch: the recorded ids drop their records, the rest goes on.
    second = Reader(deployment, tmp_path, "second.log")
    second.wait_for_lines(2)
    wait_for_commit(deployment, topic, len(records), second)
    assert second.end() == 0, second.stderr()
    assert second.ids() == ids[3:]
    assert first.lines + second.lines == [delivery(i) for i in ids]
    log = second.stderr()
    assert "handed on 2," in log and "invalid 2" in log, log
    assert "not_json" in log and "invalid_uri" in log

    # 3. After a clean stop, a repeat that comes later (a gate replaying) is dropped by its id.
    asyncio.run(produce(topic, [("c-1", delivery("t-1")), ("c-1", delivery("t-6"))]))
    third = Reader(deployment, tmp_path, "third.log")
    third.wait_for_lines(1)
    wait_for_commit(deployment, topic, len(records) + 2, third)
    assert third.end() == 0, third.stderr()
    assert third.ids() == ["t-6"]
    assert "handed on 1, repeats dropped 1, invalid 0" in third.stderr()


def test_a_kill_between_hand_off_and_record_repeats_that_one_delivery_once(
    tmp_path: Path,
) -> None:
    """The documented window: the line is out, its id not yet committed in SQLite."""
    deployment = Deployment(partitions=1)
    deployment.env["REPLYGATE_PLATFORMS"] = '["im"]'
    deployment.create_topics()
    topic = deployment.topic("delivery.im")
    ids = ["t-1", "t-2", "t-3"]
    asyncio.run(produce(topic, [("c-1", delivery(i)) for i in ids]))

    first = Reader(deployment, tmp_path, "first.log", REPLYGATE_FAILPOINT="endpoint_handed_on@2")
    assert first.end(sig=0) == -signal.SIGKILL, first.stderr()
    assert "failpoint endpoint_handed_on: SIGKILL" in first.stderr()
    second = Reader(deployment, tmp_path, "second.log")
    second.wait_for_lines(2)
    wait_for_commit(deployment, topic, len(ids), second)
    assert second.end() == 0, second.stderr()
    # t-2 again, identical, with its delivery id: never lost, repeated at most this once.
    assert first.ids() == ["t-1", "t-2"] and second.ids() == ["t-2", "t-3"]
    assert first.lines[1] == second.lines[0]
