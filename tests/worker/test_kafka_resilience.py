"""Crashes, rebalances and broker outages: one outcome per turn, nothing lost, nothing leaked.

Each test kills a worker with SIGKILL at one chosen point of a batch (`streams.ops.failpoints`),
checks that it did die there, lets a clean worker finish the stream and reads every output
topic: every turn has exactly one outcome of the right kind, no two different outcomes, no
dead letter, no secret; where the kill fell after a durable write, replay must have happened.
`make crash N=...` repeats random kills.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.crash_harness import CrashRun, turn_records, wait_killed
from tests.support.kafka import (
    REPO,
    Deployment,
    PrivateBroker,
    batch_sizes,
    collect,
    metric,
    publish,
)
from tests.support.samples import raw_reply

pytestmark = pytest.mark.kafka

PLATFORM_TOPIC = "delivery.im"


# One worker dies at each point in turn, each while it recovers from the kill before; a slice
# of turns per kill. Every point is a gap between two durable steps of a batch.
KILLS = (
    "before_state_write@2",  # nothing of the batch is durable
    "after_state_write@2",  # state durable, no output sent yet
    "mid_outputs@2",  # half the batch's outputs acknowledged
    "after_outputs@2",  # all outputs acknowledged, input not committed
    "pending_state_written@1",  # correction requests not yet sent
)
# Kills after which the next worker must find its own state writes again.
REPLAYED = {"after_state_write", "mid_outputs", "after_outputs", "pending_state_written"}


@pytest.mark.parametrize(
    ("kills", "store"),
    [
        (KILLS, "memory://"),
        (("after_state_write@2", "after_outputs@2"), "rocksdb://"),  # the RocksDB store too
    ],
)
def test_a_kill_at_each_point_loses_nothing(
    tmp_path: Path, kills: tuple[str, ...], store: str
) -> None:
    env = {"REPLYGATE_STORE": store}
    run = CrashRun(tmp_path, ",".join(kills), total=100 * len(kills), env=env)
    report = run.run()
    assert report.sound, report.line() + run.deployment.log_tail()
    assert report.corrected > 0, f"no correction got through: {report.line()}"
    for k, point in enumerate(kills):
        if point.split("@")[0] in REPLAYED:
            assert run.replays_after(k) > 0, f"no replay after the kill at {point}: {report.line()}"


def test_a_kill_while_a_deadline_fires_sends_one_notice(tmp_path: Path) -> None:
    """The failure notice's state is durable when the worker dies; the next one re-sends it."""
    run = CrashRun(tmp_path, "deadline_state_written@1", corrections=False, deadline_seconds=6)
    report = run.run()
    assert report.sound, report.line() + run.deployment.log_tail()
    assert report.replayed > 0, report.line()


@pytest.mark.parametrize("point", ["revoke_before_commit", "partitions_revoked"])
def test_a_kill_during_a_rebalance_with_two_workers(tmp_path: Path, point: str) -> None:
    """A second worker joins; the first dies while its partitions are being taken away: before
    the revoke commits what they handled (the next owners read it again), or after."""
    run = CrashRun(tmp_path, point, total=1200)
    d = run.deployment
    d.create_topics()
    first = d.start_worker(tmp_path, REPLYGATE_FAILPOINT=point, **run.base_env)
    try:
        asyncio.run(publish(d.settings(), d.topic("replies.raw"), turn_records(0, run.total)))
        delivery = d.topic(PLATFORM_TOPIC)
        delivered = asyncio.run(collect([delivery], lambda r: len(r) >= 150, timeout=120))
        assert len(delivered) >= 150 and first.poll() is None, d.log_tail()  # still working
        d.start_worker(tmp_path, **run.base_env)
        assert wait_killed(first, 90), f"no rebalance reached the first worker\n{d.log_tail()}"
        from tests.support.crash_harness import cancel_records, correction_records

        asyncio.run(publish(d.settings(), d.topic("turns.control"), cancel_records(0, run.total)))
        asyncio.run(publish(d.settings(), d.topic("replies.raw"), correction_records(0, run.total)))
        report = run.finish()
    finally:
        d.stop_all()
    assert report.sound, report.line() + d.log_tail()
    print(f"rebalance kill: {report.line()}")


def test_exactly_once_is_refused_at_start(tmp_path: Path) -> None:
    """No option that half works: the worker says why and points to at_least_once."""
    env = {**os.environ, "REPLYGATE_PROCESSING_GUARANTEE": "exactly_once"}
    done = subprocess.run(
        [sys.executable, "-m", "streams.cli", "worker"],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "exactly_once is refused" in done.stderr and "at_least_once" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("stop", ["sigterm", "sigkill"])
def test_a_broker_stopped_for_20_seconds_mid_stream(tmp_path: Path, stop: str) -> None:
    """Transport errors are retried, never dead letters; nothing is acknowledged unwritten.
    The broker is our own (its port, its data under tmp_path): stopped cleanly, or SIGKILLed
    (no clean shutdown: it recovers its logs when it comes back), for 20 s while the worker
    has records in flight; every turn still has exactly one outcome."""
    broker = PrivateBroker(tmp_path / "broker")
    broker.up()
    deployment = Deployment(partitions=2, bootstrap_servers=broker.bootstrap)
    total = 2000
    try:
        deployment.create_topics()
        deployment.start_worker(tmp_path)
        delivery = deployment.topic(PLATFORM_TOPIC)
        asyncio.run(
            publish(deployment.settings(), deployment.topic("replies.raw"), _valid(0, total))
        )
        asyncio.run(
            collect([delivery], lambda r: len(r) >= 200, timeout=90, servers=broker.bootstrap)
        )
        if stop == "sigkill":
            broker.kill()
        else:
            broker.down()
        time.sleep(20)
        broker.up()
        more = _valid(total, total + 100)
        asyncio.run(publish(deployment.settings(), deployment.topic("replies.raw"), more))
        records = asyncio.run(
            collect(
                [delivery, deployment.topic("replies.dlq")],
                lambda r: len({orjson.loads(v)["delivery_id"] for _t, _k, v in r}) >= total + 100,
                timeout=240,
                settle=2,
                servers=broker.bootstrap,
            )
        )
        assert all(proc.poll() is None for proc in deployment.workers), deployment.log_tail()
    finally:
        deployment.stop_all()
        broker.down(purge=True)
    dead = [r for r in records if r[0].endswith("replies.dlq")]
    assert not dead, f"transport errors reached the DLQ: {dead[:2]}"
    seen: dict[str, set[bytes]] = defaultdict(set)
    for _topic, _key, value in records:
        seen[orjson.loads(value)["delivery_id"]].add(value)
    assert set(seen) == {f"v-{i}" for i in range(total + 100)}, deployment.log_tail()
    assert all(len(values) == 1 for values in seen.values()), "two different outcomes"


def _valid(start: int, stop: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"c-{i % 7}", raw_reply(turn_id=f"v-{i}", conversation_id=f"c-{i % 7}"))
        for i in range(start, stop)
    ]


# Replies of 1 MiB, about 2 s of masking each.
BIG_RECORDS = 12


def test_large_costly_records_are_judged_one_batch_each(tmp_path: Path) -> None:
    """1 MiB replies came several to a batch and held the event loop past the session timeout,
    and the worker lost its group. A batch now closes at `batch_max_bytes`, so each goes alone
    (with the cap at 64 MiB this test failed, "0 of 2 batches")."""
    d = Deployment(partitions=6)
    d.create_topics()
    worker = d.start_worker(tmp_path)
    try:
        delivered = _deliver_big_replies(d, BIG_RECORDS)
        alive = worker.poll() is None
        batches, single = batch_sizes(worker, 1)
    finally:
        d.stop_all()
    assert alive, d.log_tail()
    assert delivered == {f"t-big-{i}" for i in range(BIG_RECORDS)}
    assert batches >= BIG_RECORDS and single == batches, f"{single:.0f} of {batches:.0f} batches"


def test_a_batch_longer_than_the_session_timeout_keeps_the_group(tmp_path: Path) -> None:
    """A batch with a large record is judged in a thread, so the group heartbeat goes on. With an
    8 MiB cap and the broker's shortest session (6 s) a batch of 1 MiB replies (eight, one per
    partition in a fetch: 9-14 s) takes longer than the session; judged in the loop, such a
    batch lost the group. (With a 4 MiB cap a quiet machine judged a batch in 4-6 s.)"""
    d = Deployment(partitions=8, loglevel="info")  # aiokafka says "Joined group" at info
    d.create_topics()
    worker = d.start_worker(
        tmp_path,
        REPLYGATE_BATCH_MAX_BYTES=str(8 * 1024 * 1024),
        REPLYGATE_SESSION_TIMEOUT_SECONDS="6",
    )
    port = worker.metrics_port  # type: ignore[attr-defined]
    count = 16
    try:
        delivered = _deliver_big_replies(d, count)
        time.sleep(6)  # a lost session shows at the next heartbeat
        alive = worker.poll() is None
        batches, single = batch_sizes(worker, 1)
        off_loop = metric(port, "replygate_batches_off_loop_total")
        waited = metric(port, "replygate_processing_seconds_sum") / metric(
            port, "replygate_processing_seconds_count"
        )
    finally:
        d.stop_all()
    log = d.logs[0].read_text(errors="replace")
    assert alive, d.log_tail()
    assert delivered == {f"t-big-{i}" for i in range(count)}
    assert off_loop == batches, f"{off_loop:.0f} of {batches:.0f} batches judged off the loop"
    # The path meant: a record waits for its whole batch, so a mean over 6 s means some batch
    # took longer than the session.
    assert waited > 6, f"{waited:.1f} s a record; {single:.0f} of {batches:.0f} batches single"
    assert log.count("Joined group") == 1, d.log_tail(200)  # the first join, no rejoin


def test_a_kill_after_a_batch_judged_off_the_loop_is_written(tmp_path: Path) -> None:
    """A batch judged in the thread goes through the same durable steps: killed once its state is
    written, the next worker replays it and sends each reply once."""
    d = Deployment(partitions=2)
    d.create_topics()
    first = d.start_worker(tmp_path, REPLYGATE_FAILPOINT="after_state_write")
    try:
        _produce_big_replies(d, 3)
        assert wait_killed(first, 120), f"the kill point was not reached\n{d.log_tail()}"
        second = d.start_worker(tmp_path)
        delivered = asyncio.run(
            collect(
                [d.topic("delivery.im")],
                lambda r: len({orjson.loads(v)["turn_id"] for _t, _k, v in r}) >= 3,
                timeout=240,
                settle=3,
            )
        )
        off_loop = metric(second.metrics_port, "replygate_batches_off_loop_total")  # type: ignore[attr-defined]
    finally:
        d.stop_all()
    turns = [orjson.loads(v)["turn_id"] for _t, _k, v in delivered]
    assert sorted(turns) == [f"t-big-{i}" for i in range(3)], d.log_tail()
    assert off_loop > 0 and "replayed" in d.logs[1].read_text(errors="replace"), d.log_tail()


def _produce_big_replies(d: Deployment, count: int) -> None:
    """`count` replies of 1 MiB of URLs with userinfo: about 2 s of masking each."""
    from tests.hostile import one_line, reply, text_segment
    from tests.support.samples import im_text

    text = im_text([text_segment(one_line("https://a:b@"))])
    records = [
        (f"c-big-{i}", reply({"text": text}, turn_id=f"t-big-{i}", conversation_id=f"c-big-{i}"))
        for i in range(count)
    ]
    asyncio.run(publish(d.settings(), d.topic("replies.raw"), records))


def _deliver_big_replies(d: Deployment, count: int) -> set[str]:
    """Produce `count` big replies (`_produce_big_replies`); the turn ids delivered."""
    _produce_big_replies(d, count)
    delivered = asyncio.run(
        collect(
            [d.topic("delivery.im")],
            lambda r: len({orjson.loads(v)["turn_id"] for _t, _k, v in r}) >= count,
            timeout=240,
        )
    )
    return {orjson.loads(v)["turn_id"] for _t, _k, v in delivered}
