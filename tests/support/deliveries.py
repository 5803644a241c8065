"""For the endpoint tests: deliveries as the gate writes them, and `replygate deliveries` run."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from schemas.html_answer import ASSISTANT_HTML_V1
from schemas.im_segments import IM_SEGMENTS_V1
from tests.support.kafka import REPO, Deployment

# A GitHub token of the right shape (not a real one): masked wherever it would be logged.
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def delivery(
    turn_id: str, text: str = "hello", platform: str = "im", **changes: Any
) -> dict[str, Any]:
    """A valid `im.segments.v1` Delivery for `turn_id`; `changes` replace its fields."""
    record: dict[str, Any] = {
        "delivery_id": turn_id,
        "turn_id": turn_id,
        "conversation_id": "c-1",
        "platform": platform,
        "contract": IM_SEGMENTS_V1.name,
        "kind": "reply",
        "message": {"segments": [{"type": "text", "data": {"text": text}}]},
        "preview": text,
        "corrected": False,
        "masked": [],
        "notices": [],
        "delivered_at": "2026-11-30T12:00:01Z",
    }
    record.update(changes)
    return record


def invalid_delivery(turn_id: str) -> dict[str, Any]:
    """A closed Delivery whose message breaks its contract, with a secret in what is logged."""
    message = {"html": "<p>hi</p>", "citations": [], "rag_fragments_used": [SECRET]}
    return delivery(turn_id, contract=ASSISTANT_HTML_V1.name, message=message)


WAIT_SECONDS = 60.0


class Reader:
    """One `replygate deliveries im [--from-beginning]` process of a test deployment.

    Its stdout lines are collected as they come (a thread); its log is a file in `tmp`.
    """

    def __init__(
        self,
        deployment: Deployment,
        tmp: Path,
        log: str,
        group: str,
        from_beginning: bool = True,
        args: Sequence[str] = (),
        **env: str,
    ) -> None:
        self.deployment, self.group = deployment, group
        self.log = tmp / log
        with self.log.open("wb") as handle:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streams.cli", "deliveries", "im",
                 *(["--from-beginning"] if from_beginning else []),
                 "--group", group, "--state", str(tmp / f"{group}.sqlite"), *args],
                cwd=REPO,
                env=deployment.worker_env(tmp, **env),
                stdout=subprocess.PIPE,
                stderr=handle,
            )  # fmt: skip
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
        self.wait_for(lambda: len(self.lines) >= count)

    def wait_for(self, done: Callable[[], bool]) -> None:
        """Until `done()`, or the reader stops."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not done() and self.proc.poll() is None:
            self._give_up_after(deadline)
            time.sleep(0.05)

    def wait_for_commit(self, topic: str) -> None:
        """Until the group's commits reach the end of every partition of `topic`."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not asyncio.run(caught_up_on(self.deployment, topic, self.group)):
            if self.proc.poll() is not None:
                raise AssertionError(f"the reader stopped\n{self.stderr()}")
            self._give_up_after(deadline)
            time.sleep(0.2)

    def _give_up_after(self, deadline: float) -> None:
        """A bound on waiting (a hung reader fails the test), not a measure of speed."""
        if time.monotonic() >= deadline:
            raise TimeoutError(f"the reader did not get there in {WAIT_SECONDS} s\n{self.stderr()}")

    def end(self, sig: int = signal.SIGTERM) -> int:
        """Stop it (sig 0: wait for it to die on its own) and return its exit status."""
        if sig and self.proc.poll() is None:
            self.proc.send_signal(sig)
        code = self.proc.wait(WAIT_SECONDS)
        self._thread.join(10)
        return code

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")


async def committed_offsets(deployment: Deployment, topic: str, group: str) -> dict[int, int]:
    """The group's committed offset per partition of `topic` (-1: none)."""
    from aiokafka import TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    from streams.broker.ready import group_offsets

    admin = AIOKafkaAdminClient(bootstrap_servers=deployment.bootstrap_servers)
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
        committed = await group_offsets(admin, group)
    finally:
        await admin.close()
    out = {}
    for entry in described[0]["partitions"]:
        done = committed.get(TopicPartition(topic, entry["partition"]))
        out[entry["partition"]] = -1 if done is None else done.offset
    return out


async def caught_up_on(deployment: Deployment, topic: str, group: str) -> bool:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from streams.broker.ready import caught_up

    committed = await committed_offsets(deployment, topic, group)
    consumer = AIOKafkaConsumer(bootstrap_servers=deployment.bootstrap_servers)
    await consumer.start()
    try:
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in committed])
    finally:
        await consumer.stop()
    return caught_up(
        {tp.partition: end for tp, end in ends.items()},
        {p: o for p, o in committed.items() if o >= 0},
    )
