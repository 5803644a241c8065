"""A worker warms its RocksDB copy of the turn changelog before it joins, and a kill in the
middle of that costs nothing: no finished turn is judged twice (streams/worker/warmup.py).

A first worker judges TURNS replies and stops. Their late duplicates and NEW fresh turns wait in
the input. A second worker, on an empty disk, is SIGKILLed at the warm-up's first written batch
(`warmup_step@1`: one changelog partition written with its offset, the other not). A third starts
on that same disk: its warm-up resumes from the persisted offsets (it reads some of the
changelog, not all), it joins, drops every duplicate and delivers the fresh turns once.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.crash_harness import wait_killed
from tests.support.kafka import Deployment, bootstrap, collect, metric, publish, readyz
from tests.support.samples import raw_reply

pytestmark = pytest.mark.kafka

TURNS = 400
NEW = 100
ENV = {"REPLYGATE_STORE": "rocksdb://", "REPLYGATE_SESSION_TIMEOUT_SECONDS": "6"}
WARMED = re.compile(r"turn state warmed before joining: (\d+) changelog records")


def replies(start: int, stop: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"c-{i % 9}", raw_reply(turn_id=f"w-{i}", conversation_id=f"c-{i % 9}"))
        for i in range(start, stop)
    ]


def delivered(records: list[tuple[str, bytes | None, bytes]]) -> Counter[str]:
    return Counter(orjson.loads(v)["delivery_id"] for _t, _k, v in records)


async def changelog_span(d: Deployment) -> int:
    """How many offsets the turn changelog holds (an upper bound of its records)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from streams.broker.topology import Topology

    topic = Topology.of(d.settings()).changelog.name
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap(), group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(d.partitions)]
        ends, starts = await consumer.end_offsets(tps), await consumer.beginning_offsets(tps)
    finally:
        await consumer.stop()
    return sum(ends.values()) - sum(starts.values())


def probed_until_ready(port: int, seconds: float) -> int | None:
    """/readyz every 0.1 s until it says 200 or `seconds` pass; its last answer."""
    deadline, status = time.monotonic() + seconds, None
    while status != 200 and time.monotonic() < deadline:
        status = readyz(port)
        time.sleep(0.1)
    return status


def warmed(log: Path) -> list[int]:
    return [int(n) for n in WARMED.findall(log.read_text(errors="replace"))]


def test_a_kill_during_the_warm_up_judges_no_finished_turn_twice(tmp_path: Path) -> None:
    d = Deployment(partitions=2, loglevel="info")  # the warm-up says what it read at info
    d.create_topics()
    disk = str(tmp_path / "second-disk")
    try:
        first = d.start_worker(tmp_path, **ENV)
        asyncio.run(publish(d.settings(), d.topic("replies.raw"), replies(0, TURNS)))
        done = asyncio.run(
            collect(
                [d.topic("delivery.im")],
                lambda r: len(delivered(r)) >= TURNS,
                timeout=180,
                settle=2,
            )
        )
        assert len(delivered(done)) == TURNS, d.log_tail()
        first.terminate()
        assert first.wait(60) == 0, d.log_tail()
        written = asyncio.run(changelog_span(d))
        # late duplicates of every finished turn, and fresh turns behind them
        late = replies(0, TURNS) + replies(TURNS, TURNS + NEW)
        asyncio.run(publish(d.settings(), d.topic("replies.raw"), late))

        second = d.start_worker(
            tmp_path, REPLYGATE_DATA_DIR=disk, REPLYGATE_FAILPOINT="warmup_step@1", **ENV
        )
        assert wait_killed(second, 120), f"the warm-up was not killed\n{d.log_tail()}"
        assert "failpoint warmup_step: SIGKILL" in d.logs[-1].read_text(errors="replace")

        third = d.start_worker(tmp_path, REPLYGATE_DATA_DIR=disk, **ENV)
        port: int = third.metrics_port  # type: ignore[attr-defined]
        # probed from its first moment, as a kubelet does: it answers and becomes ready
        assert probed_until_ready(port, 120) == 200, d.log_tail()
        records = asyncio.run(
            collect(
                [d.topic("delivery.im")],
                lambda r: len(delivered(r)) >= TURNS + NEW,
                timeout=180,
                settle=3,
            )
        )
        dropped = metric(port, "replygate_outcomes_total", outcome="duplicate_dropped")
    finally:
        d.stop_all()
    counts = delivered(records)
    assert set(counts) == {f"w-{i}" for i in range(TURNS + NEW)}, d.log_tail()
    assert set(counts.values()) == {1}, "a finished turn was delivered again"
    assert dropped == TURNS, f"{dropped} duplicates dropped\n{d.log_tail()}"
    # the third resumed where the killed warm-up's persisted offsets stopped: part, not all
    (read,) = warmed(d.logs[-1])
    assert 0 < read < written, f"the restart read {read} of {written} changelog records"
