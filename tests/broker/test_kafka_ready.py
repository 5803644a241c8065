"""Bounded waits on a fresh broker (streams/broker/ready.py), and `replygate topics` on them."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiokafka.errors import (
    GroupCoordinatorNotAvailableError,
    KafkaTimeoutError,
    LeaderNotAvailableError,
    TopicAuthorizationFailedError,
)
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streams.broker.ready import (
    KafkaNotReady,
    caught_up,
    create_errors,
    describe,
    group_offsets,
    leaderless,
    retriable,
    retry,
)
from streams.broker.topology import Topology, create_topics
from streams.settings import Settings
from tests.support.kafka import REPO, bootstrap, free_port


def failing(
    times: int, exc: Exception, value: Any = "ok"
) -> tuple[Callable[[], Awaitable[Any]], list[int]]:
    """A call that raises `exc` the first `times` times, then answers `value`; and its count."""
    calls: list[int] = []

    async def call() -> Any:
        calls.append(1)
        if len(calls) <= times:
            raise exc
        return value

    return call, calls


def test_retriable_errors_are_kafkas_own_and_timeouts() -> None:
    assert retriable(GroupCoordinatorNotAvailableError())
    assert retriable(LeaderNotAvailableError())
    assert retriable(KafkaTimeoutError())
    assert retriable(TimeoutError())
    assert not retriable(TopicAuthorizationFailedError())
    assert not retriable(ValueError("no"))


async def test_a_coordinator_that_is_not_there_yet_is_waited_for() -> None:
    call, calls = failing(3, GroupCoordinatorNotAvailableError("Unable to get coordinator id"))
    assert await retry(call, "offsets", seconds=60, pause=0) == "ok"
    assert len(calls) == 4


async def test_an_error_that_will_not_go_away_is_raised_at_once() -> None:
    call, calls = failing(3, TopicAuthorizationFailedError())
    with pytest.raises(TopicAuthorizationFailedError):
        await retry(call, "offsets", seconds=60, pause=0)
    assert len(calls) == 1


async def test_past_the_bound_one_message_says_what_was_awaited_and_the_last_answer() -> None:
    call, _ = failing(10**9, GroupCoordinatorNotAvailableError("Unable to get coordinator id"))
    with pytest.raises(KafkaNotReady) as caught:
        await retry(call, "the committed offsets of consumer group 'g'", seconds=0, pause=0)
    message = str(caught.value)
    assert message.startswith("the committed offsets of consumer group 'g': the broker still")
    assert "GroupCoordinatorNotAvailableError" in message and "\n" not in message
    assert isinstance(caught.value.__cause__, GroupCoordinatorNotAvailableError)


class FreshAdmin:
    """An admin client of a broker that has no group coordinator for the first `misses` asks."""

    def __init__(self, misses: int, offsets: dict[TopicPartition, OffsetAndMetadata]) -> None:
        self.misses = misses
        self.offsets = offsets
        self.asked: list[str] = []

    async def list_consumer_group_offsets(self, group: str) -> dict[TopicPartition, Any]:
        self.asked.append(group)
        if len(self.asked) <= self.misses:
            raise GroupCoordinatorNotAvailableError(f"Unable to get coordinator id for {group}")
        return self.offsets


async def test_group_offsets_wait_for_the_coordinator_of_a_fresh_broker() -> None:
    tp = TopicPartition("in", 0)
    admin = FreshAdmin(2, {tp: OffsetAndMetadata(5, "")})
    assert await group_offsets(admin, "demo-gate") == {tp: OffsetAndMetadata(5, "")}
    assert admin.asked == ["demo-gate"] * 3


def test_a_group_is_caught_up_when_its_commits_reach_every_non_empty_end() -> None:
    a, b = TopicPartition("in", 0), TopicPartition("in", 1)
    assert caught_up({a: 3, b: 0}, {a: OffsetAndMetadata(3, "")})
    assert caught_up({a: 3}, {a: 4})
    assert not caught_up({a: 3, b: 1}, {a: OffsetAndMetadata(3, "")})
    assert not caught_up({a: 3}, {a: 2})
    assert not caught_up({a: 3}, {})


def test_create_errors_name_refused_topics_and_accept_existing_ones() -> None:
    answer = [("a", 0, None), ("b", 36, "Topic 'b' already exists."), ("c", 37, "bad count")]
    assert create_errors(answer) == {"c": "InvalidPartitionsError: bad count"}
    assert create_errors([("d", 29)]) == {"d": "TopicAuthorizationFailedError"}


def test_a_topic_is_ready_once_every_partition_has_a_leader() -> None:
    described = [
        {"topic": "a", "error_code": 0, "partitions": [{"error_code": 0, "leader": 1}]},
        {"topic": "b", "error_code": 0, "partitions": [{"error_code": 5, "leader": -1}]},
        {"topic": "c", "error_code": 3, "partitions": []},
        {"topic": "d", "error_code": 0, "partitions": []},
    ]
    assert leaderless(described, ["a", "b", "c", "d", "e"]) == ["b", "c", "d", "e"]


def test_describe_is_one_line_with_the_error_class() -> None:
    assert describe(GroupCoordinatorNotAvailableError("no coordinator")) == (
        "GroupCoordinatorNotAvailableError: [Error 15] GroupCoordinatorNotAvailableError: "
        "no coordinator"
    )
    assert describe(OSError("line one\nline two")) == "OSError: line one"
    assert describe(TimeoutError()) == "TimeoutError"


def test_topics_without_a_broker_is_one_clear_line_not_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "streams.cli", "topics"],
        cwd=REPO,
        env={**os.environ, "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": f"127.0.0.1:{free_port()}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "replygate topics: error: cannot create the topics on 127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stdout + done.stderr


async def _leaders_then_delete(settings: Settings) -> list[str]:
    """The topics still without a leader; then the test's own topics are deleted."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap_servers)
    await admin.start()
    names = sorted(Topology.of(settings).for_creation())
    try:
        return leaderless(await admin.describe_topics(names), names)
    finally:
        await admin.delete_topics(names)
        await admin.close()


@pytest.mark.kafka
def test_created_topics_have_leaders_when_create_topics_returns() -> None:
    # its own app id too: the deadlines topic is named by the app, not the prefix
    run = f"t{uuid.uuid4().hex[:10]}"
    settings = Settings(
        kafka_bootstrap_servers=bootstrap(), topic_prefix=f"{run}.", app_id=run, partitions=2
    )
    created = asyncio.run(create_topics(Topology.of(settings), settings))
    assert sorted(created) == sorted(Topology.of(settings).for_creation())
    assert asyncio.run(create_topics(Topology.of(settings), settings)) == []
    assert asyncio.run(_leaders_then_delete(settings)) == []
