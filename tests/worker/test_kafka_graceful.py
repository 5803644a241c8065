"""A planned rebalance repeats nothing: a worker joining mid-stream, or one stopped with SIGTERM
(as a pod's termination sends) while the other keeps working.

The workers hand partitions over with everything they handled committed, so the output topics
hold no repeated delivery and no worker handles an input record again (no "replayed" line). A
crash (SIGKILL) may repeat; see test_kafka_resilience.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.crash_harness import CrashRun, cancel_records, correction_records, turn_records
from tests.support.kafka import Deployment, collect, metric, publish
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka

TOTAL = 1200
# the join test's turns, 50 every half second: 20 s or more for the second worker to join in
JOIN_TOTAL = 2000


def reading(worker: subprocess.Popen[bytes]) -> bool:
    return metric(worker.metrics_port, "replygate_records_in_total") > 0  # type: ignore[attr-defined]


def group_members(d: Deployment) -> int:
    """Members of the workers' consumer group once it is stable (0 while it rebalances)."""
    from aiokafka.admin import AIOKafkaAdminClient

    from streams.broker.options import aiokafka_options

    async def describe() -> tuple[str, list[Any]]:
        admin = AIOKafkaAdminClient(**aiokafka_options(d.settings()))
        await admin.start()
        try:
            response = (await admin.describe_consumer_groups([d.app_id]))[0]
        finally:
            await admin.close()
        _error, _group, state, _kind, _protocol, members, *_ = response.groups[0]
        return state, members

    state, members = asyncio.run(describe())
    return len(members) if state == "Stable" else 0


def test_a_worker_stopped_with_sigterm_mid_stream_repeats_nothing(tmp_path: Path) -> None:
    run = CrashRun(tmp_path, failpoint="", total=TOTAL, partitions=4)
    d = run.deployment
    d.create_topics()
    leaving = d.start_worker(tmp_path, **run.base_env)
    staying = d.start_worker(tmp_path, **run.base_env)
    try:
        # both in the group first: each then owns input partitions (the join is the next test)
        wait_for("both workers in the group", lambda: group_members(d) == 2, 120, detail=d.log_tail)
        asyncio.run(publish(d.settings(), d.topic("replies.raw"), turn_records(0, TOTAL)))
        asyncio.run(publish(d.settings(), d.topic("turns.control"), cancel_records(0, TOTAL)))
        wait_for(
            "both workers reading",
            lambda: reading(leaving) and reading(staying),
            120,
            detail=d.log_tail,
        )
        delivery = d.topic("delivery.im")
        asyncio.run(collect([delivery], lambda r: len(r) >= 150, timeout=120))
        assert leaving.poll() is None, d.log_tail()
        leaving.send_signal(signal.SIGTERM)
        assert leaving.wait(60) == 0, d.log_tail()
        # sent after the stop, so only the staying worker can handle them: the takeover
        asyncio.run(publish(d.settings(), d.topic("replies.raw"), correction_records(0, TOTAL)))
        report = run.finish()
    finally:
        d.stop_all()
    assert report.sound, report.line() + d.log_tail()
    assert report.corrected > 0, report.line()
    assert (report.repeats, report.replayed, report.restarts) == (0, 0.0, 0), report.line()


def test_a_worker_joining_mid_stream_repeats_nothing(tmp_path: Path) -> None:
    run = CrashRun(tmp_path, failpoint="", total=JOIN_TOTAL, partitions=4)
    d = run.deployment
    d.create_topics()
    first = d.start_worker(tmp_path, **run.base_env)
    chunks = [(i, min(i + 50, JOIN_TOTAL)) for i in range(0, JOIN_TOTAL, 50)]
    joined = threading.Event()

    def send(start: int, stop: int) -> None:
        asyncio.run(publish(d.settings(), d.topic("replies.raw"), turn_records(start, stop)))
        asyncio.run(publish(d.settings(), d.topic("turns.control"), cancel_records(start, stop)))

    def trickle() -> None:
        """Turns keep coming until the second worker has joined and read some."""
        while chunks and not joined.is_set():
            send(*chunks.pop(0))
            time.sleep(0.5)

    try:
        wait_for(
            "the first worker in the group", lambda: group_members(d) == 1, 120, detail=d.log_tail
        )
        publisher = threading.Thread(target=trickle)
        publisher.start()
        try:
            asyncio.run(collect([d.topic("delivery.im")], lambda r: len(r) >= 20, timeout=120))
            second = d.start_worker(tmp_path, **run.base_env)
            wait_for(
                "a reading joiner",
                lambda: group_members(d) == 2 and reading(second),
                120,
                detail=d.log_tail,
            )
        finally:
            joined.set()
            publisher.join()
        assert chunks, "the join came after the last turn: not mid-stream"
        for chunk in chunks:
            send(*chunk)
        corrections = correction_records(0, JOIN_TOTAL)
        asyncio.run(publish(d.settings(), d.topic("replies.raw"), corrections))
        report = run.finish()
        assert reading(first) and first.poll() is None, d.log_tail()
    finally:
        d.stop_all()
    assert report.sound, report.line() + d.log_tail()
    assert report.corrected > 0, report.line()
    assert (report.repeats, report.replayed, report.restarts) == (0, 0.0, 0), report.line()
