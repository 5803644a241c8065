"""`replygate deliveries` on the real broker: each delivery once on stdout, across a SIGKILL.

The reader runs as a subprocess, as an endpoint runs it. A failpoint (`REPLYGATE_FAILPOINT`)
kills it at a chosen point; the test checks that it died there (SIGKILL, and its log line),
then restarts it and reads what it hands on.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.deliveries_support import Reader, committed_offsets, delivery, invalid_delivery
from tests.kafka_support import Deployment, produce

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(120)]

GROUP = "endpoint-test"


def one_partition() -> tuple[Deployment, str]:
    """A deployment whose delivery topic has one partition (its order is the order written).

    A killed reader holds its partition until its session times out: 6 s, the broker's least.
    """
    deployment = Deployment(partitions=1)
    deployment.env.update(REPLYGATE_PLATFORMS='["im"]', REPLYGATE_SESSION_TIMEOUT_SECONDS="6")
    deployment.create_topics()
    return deployment, deployment.topic("delivery.im")


def test_each_delivery_is_handed_on_once_across_a_kill_and_restarts(tmp_path: Path) -> None:
    deployment, topic = one_partition()
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
    first = Reader(
        deployment, tmp_path, "first.log", GROUP, REPLYGATE_FAILPOINT="endpoint_recorded@3"
    )
    assert first.end(sig=0) == -signal.SIGKILL, first.stderr()
    assert "failpoint endpoint_recorded: SIGKILL" in first.stderr()
    assert first.ids() == ids[:3]
    # handed on, but nothing of the batch committed: only where the group started
    assert asyncio.run(committed_offsets(deployment, topic, GROUP)) == {0: 0}

    # 2. The restart re-reads the batch: the recorded ids drop their records, the rest goes on.
    second = Reader(deployment, tmp_path, "second.log", GROUP)
    second.wait_for_lines(2)
    second.wait_for_commit(topic)
    assert second.end() == 0, second.stderr()
    assert second.ids() == ids[3:]
    assert first.lines + second.lines == [delivery(i) for i in ids]
    log = second.stderr()
    assert "handed on 2," in log and "invalid 2" in log, log
    assert "not_json" in log and "invalid_uri" in log

    # 3. After a clean stop, a repeat that comes later (a gate replaying) is dropped by its id.
    asyncio.run(produce(topic, [("c-1", delivery("t-1")), ("c-1", delivery("t-6"))]))
    third = Reader(deployment, tmp_path, "third.log", GROUP)
    third.wait_for_lines(1)
    third.wait_for_commit(topic)
    assert third.end() == 0, third.stderr()
    assert third.ids() == ["t-6"]
    assert "handed on 1, repeats dropped 1, invalid 0" in third.stderr()


def test_a_new_group_starts_at_the_newest_delivery_and_keeps_its_place(tmp_path: Path) -> None:
    """Without --from-beginning: what came before is skipped, what comes after a stop is not."""
    deployment, topic = one_partition()
    asyncio.run(produce(topic, [("c-1", delivery("t-old"))]))
    first = Reader(deployment, tmp_path, "first.log", GROUP, from_beginning=False)
    first.wait_for_commit(topic)  # its start is committed before it reads anything
    assert first.end() == 0, first.stderr()
    asyncio.run(produce(topic, [("c-1", delivery("t-new"))]))
    second = Reader(deployment, tmp_path, "second.log", GROUP, from_beginning=False)
    second.wait_for_lines(1)
    second.wait_for_commit(topic)
    assert second.end() == 0, second.stderr()
    assert first.ids() == [] and second.ids() == ["t-new"]


def test_a_kill_between_hand_off_and_record_repeats_that_one_delivery_once(
    tmp_path: Path,
) -> None:
    """The documented window: the line is out, its id not yet committed in SQLite."""
    deployment, topic = one_partition()
    ids = ["t-1", "t-2", "t-3"]
    asyncio.run(produce(topic, [("c-1", delivery(i)) for i in ids]))

    first = Reader(
        deployment, tmp_path, "first.log", GROUP, REPLYGATE_FAILPOINT="endpoint_handed_on@2"
    )
    assert first.end(sig=0) == -signal.SIGKILL, first.stderr()
    assert "failpoint endpoint_handed_on: SIGKILL" in first.stderr()
    second = Reader(deployment, tmp_path, "second.log", GROUP)
    second.wait_for_lines(2)
    second.wait_for_commit(topic)
    assert second.end() == 0, second.stderr()
    # t-2 again, identical, with its delivery id: never lost, repeated at most this once.
    assert first.ids() == ["t-1", "t-2"] and second.ids() == ["t-2", "t-3"]
    assert first.lines[1] == second.lines[0]
