"""`streams.worker.faust_fixes`: no stream record is handed on before the end-of-rebalance seek.

These drive Faust's own `Recovery.on_recovery_completed` on a `GateApp` consumer with no broker:
the seek, the fetcher start and the assignment are stubbed, the order of the rest is Faust's.
Before the fix, the input partition is in the fetch set while the seek runs and when the stream
buffers are emptied, so what the fetcher hands on then is lost (issue 10).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka.structs import RecordMetadata, TopicPartition
from faust.types import TP

from streams.core.batch import Write
from streams.settings import BoundsSettings, KafkaSettings, Settings, WorkerSettings
from streams.worker.app import GateApp, app_options
from streams.worker.faust_fixes import heartbeat_interval
from streams.worker.store import TurnStore

INPUT = TP("inputs", 0)


@pytest.fixture
def app() -> Iterator[GateApp]:
    app = GateApp("faust-fixes", broker="kafka://127.0.0.1:1", store="memory://")
    app.topic(INPUT.topic, partitions=1)
    app.Table("turns", partitions=1)
    yield app


def changelog(app: GateApp) -> TP:
    return TP(app.tables["turns"].changelog_topic.get_topic_name(), 0)


def fetched(app: GateApp) -> set[TP]:
    return set(app.consumer._get_active_partitions())  # type: ignore[attr-defined]


def start_rebalance(app: GateApp) -> None:
    """What Faust does from the assignment to the changelog restore: all paused, then the
    changelog resumed and the flow on (recovery.py:448-453)."""
    consumer: Any = app.consumer
    consumer.assignment = lambda: {INPUT, changelog(app)}
    app.on_rebalance_start()
    consumer._set_active_tps({INPUT, changelog(app)})
    consumer.pause_partitions({INPUT, changelog(app)})
    consumer.resume_partitions({changelog(app)})
    consumer.resume_flow()


async def test_inputs_are_fetched_only_after_the_seek_and_the_buffer_clear(app: GateApp) -> None:
    consumer: Any = app.consumer
    seen: dict[str, set[TP]] = {}

    async def seek() -> None:
        seen["seek"] = fetched(app)

    clear = app.flow_control.clear

    def emptied() -> None:
        seen["clear"] = fetched(app)
        clear()

    async def started() -> None: ...

    fetcher: Any = app._fetcher
    consumer.perform_seek = seek
    app.flow_control.clear = emptied  # type: ignore[method-assign]
    fetcher.maybe_start = started
    start_rebalance(app)
    await app.tables.recovery.on_recovery_completed(app.consumer_generation_id)  # type: ignore[attr-defined]
    assert INPUT not in seen["seek"], "the fetcher may hand on input records during the seek"
    assert INPUT not in seen["clear"], "input records handed on are thrown away by the clear"
    assert INPUT in fetched(app) and not app.rebalancing


def test_outside_a_rebalance_a_resume_is_immediate(app: GateApp) -> None:
    consumer: Any = app.consumer
    consumer._set_active_tps({INPUT})
    consumer.pause_partitions({INPUT})
    consumer.resume_partitions({INPUT})
    assert INPUT in fetched(app)


def test_a_rebalance_that_pauses_again_cancels_the_held_resume(app: GateApp) -> None:
    """A new rebalance pauses every partition; the old one's held resume must not undo that."""
    consumer: Any = app.consumer
    start_rebalance(app)
    consumer.resume_partitions({INPUT})  # the end of recovery (recovery.py:649)
    assert INPUT not in fetched(app)
    consumer.pause_partitions({INPUT, changelog(app)})  # the next rebalance's assignment
    consumer.resume_flow()  # its changelog restore
    assert INPUT not in fetched(app)


async def test_a_fetch_sees_the_live_set_and_an_empty_one_as_none(app: GateApp) -> None:
    """aiokafka returns every partition's records for a false `partitions` (fetcher.py:1221);
    a fetch that began with the changelog in the set must return none once it is paused."""
    consumer: Any = app.consumer
    asked: list[Any] = []

    async def getmany(partitions: Any, timeout: float) -> dict[TP, list[Any]]:
        asked.append(partitions)
        return {}

    consumer._thread.getmany = getmany
    live = {changelog(app)}
    await consumer._getmany(active_partitions=live, timeout=1.0)
    seen = asked[0]
    live.discard(changelog(app))  # the changelog paused after the restore (recovery.py:475)
    assert seen and changelog(app) not in seen and INPUT not in seen
    live.add(INPUT)  # a partition resumed while the fetch waits is fetched at once
    assert INPUT in seen


# `deliver_inline`: the hand-on of each fetched record runs its first step in the fetcher's own
# task; only a hand-on that has to wait goes through Faust's `wait_first` (four tasks).


async def test_a_hand_on_that_does_not_wait_runs_inline_and_closes_the_flow_wait(
    app: GateApp,
) -> None:
    consumer: Any = app.consumer
    ran_in: list[object] = []

    async def hand_on() -> str:
        ran_in.append(asyncio.current_task())
        return "delivered"

    suspended = consumer.suspend_flow.wait()
    result = await consumer.wait_first(hand_on(), suspended)
    assert ran_in == [asyncio.current_task()]  # no task of its own
    assert len(result.done) == 1 and result.results == ["delivered"] and not result.stopped
    assert inspect.getcoroutinestate(suspended) == inspect.CORO_CLOSED


async def test_a_hand_on_that_waits_is_driven_to_its_end(app: GateApp) -> None:
    consumer: Any = app.consumer
    room = asyncio.get_running_loop().create_future()
    steps: list[str] = []

    async def hand_on() -> str:
        steps.append("full")
        steps.append(await room)
        return "delivered"

    waiting = asyncio.ensure_future(consumer.wait_first(hand_on(), consumer.suspend_flow.wait()))
    await asyncio.sleep(0.01)
    assert steps == ["full"] and not waiting.done()
    room.set_result("room")
    result = await asyncio.wait_for(waiting, 5)
    assert steps == ["full", "room"]
    assert result.results == ["delivered"] and not result.stopped


async def test_a_waiting_hand_on_gives_way_to_a_flow_suspension(app: GateApp) -> None:
    consumer: Any = app.consumer
    never = asyncio.get_running_loop().create_future()
    outcome: list[str] = []

    async def hand_on() -> None:
        try:
            await never
        except asyncio.CancelledError:
            outcome.append("cancelled")
            raise

    waiting = asyncio.ensure_future(consumer.wait_first(hand_on(), consumer.suspend_flow.wait()))
    await asyncio.sleep(0.01)
    consumer.suspend_flow.set()
    result = await asyncio.wait_for(waiting, 5)
    await asyncio.sleep(0)
    assert result.results == [True] and outcome == ["cancelled"]


async def test_a_hand_on_that_fails_at_once_raises_as_faust_would(app: GateApp) -> None:
    consumer: Any = app.consumer

    async def hand_on() -> None:
        raise ValueError("undecodable")

    suspended = consumer.suspend_flow.wait()
    with pytest.raises(ValueError, match="undecodable"):
        await consumer.wait_first(hand_on(), suspended)
    assert inspect.getcoroutinestate(suspended) == inspect.CORO_CLOSED


def test_heartbeats_come_every_quarter_second_at_most_so_a_rebalance_is_heard_at_once() -> None:
    assert heartbeat_interval(10.0) == 0.25
    assert heartbeat_interval(0.6) == pytest.approx(0.2)  # a third of a short session timeout
    settings = Settings(session_timeout_seconds=10.0)
    options = app_options(
        settings.group(KafkaSettings),
        settings.group(WorkerSettings),
        settings.group(BoundsSettings),
    )
    assert options["broker_heartbeat_interval"] == 0.25
    assert options["broker_session_timeout"] == 10.0


# `read_own_writes`: a partition kept through a rebalance is not read again from where the last
# restore stopped. Faust's own `Recovery` bookkeeping, no broker: the acknowledgements
# (aiokafka's RecordMetadata) are built here.


def kept_partition(app: GateApp, read_up_to: int) -> tuple[Any, TP]:
    """The changelog partition as Faust's recovery leaves it after restoring up to
    `read_up_to`, the worker's `TurnStore` on it."""
    table = app.tables["turns"]
    recovery: Any = app.tables.recovery  # type: ignore[attr-defined]  # untyped in Faust
    tp = changelog(app)
    recovery.add_active(table, tp)
    recovery.active_offsets[tp] = read_up_to
    return recovery, tp


def acked(tp: TP, *offsets: int) -> list[RecordMetadata]:
    """The producer's acknowledgements: aiokafka's TopicPartition, not Faust's TP."""
    kafka_tp = TopicPartition(tp.topic, tp.partition)
    return [RecordMetadata(tp.topic, tp.partition, kafka_tp, n, -1, -1, -1) for n in offsets]


def write(n: int) -> Write:
    return Write(0, f"t-{n}".encode(), None)


def test_own_changelog_writes_need_no_restore_when_the_partition_is_kept(app: GateApp) -> None:
    recovery, tp = kept_partition(app, read_up_to=9)
    TurnStore(app.tables["turns"]).apply([write(1), write(2)], acked(tp, 10, 11))
    recovery.active_highwaters[tp] = 11  # the next rebalance: nothing but our own writes
    assert recovery.active_offsets[tp] == 11
    assert not recovery.need_recovery()


def test_a_write_by_another_worker_in_between_is_restored(app: GateApp) -> None:
    """Offset 11 is not ours (a worker that owned the partition before, still writing): the
    restore reads from it, as Faust would have."""
    recovery, tp = kept_partition(app, read_up_to=9)
    TurnStore(app.tables["turns"]).apply([write(1), write(2)], acked(tp, 10, 12))
    recovery.active_highwaters[tp] = 12
    assert recovery.active_offsets[tp] == 10
    assert recovery.active_remaining()[tp] == 2
