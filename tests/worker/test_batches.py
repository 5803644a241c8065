"""`streams.worker.batches.take_batches` on a real Faust stream over an in-memory channel.

No broker: a channel delivers events to the stream the way a topic's conductor does.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import faust
import pytest
from faust.types import EventT

from streams.worker.batches import take_batches

LONG = 30.0  # a batch that waited for this would time the test out


@pytest.fixture
async def app() -> AsyncIterator[faust.App]:
    app = faust.App("take-batches", broker="kafka://127.0.0.1:1", store="memory://")
    app.flow_control.resume()  # what the consumer does when it starts
    yield app


async def put(channel: Any, values: Sequence[int]) -> None:
    """Each value as the raw bytes of its digits, as the worker's inputs come."""
    for value in values:
        await channel.send(value=str(value).encode())


def values(events: Sequence[EventT[Any]]) -> list[int]:
    return [int(event.value) for event in events]


async def test_a_batch_closes_once_everything_queued_is_in_it(app: faust.App) -> None:
    channel = app.channel()
    stream = app.stream(channel)
    await put(channel, [1, 2, 3])
    batches = take_batches(stream, 500, LONG)
    # Faust's take_events waits the whole `within` for a batch that is not full.
    first = await asyncio.wait_for(anext(batches), 5)
    assert values(first) == [1, 2, 3]
    await put(channel, [4])
    assert values(await asyncio.wait_for(anext(batches), 5)) == [4]
    await batches.aclose()


async def test_a_batch_holds_at_most_max_events(app: faust.App) -> None:
    channel = app.channel()
    stream = app.stream(channel)
    await put(channel, list(range(12)))
    batches = take_batches(stream, 5, LONG)
    got = [values(await asyncio.wait_for(anext(batches), 5)) for _ in range(3)]
    assert got == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11]]
    await batches.aclose()


async def test_events_are_acknowledged_only_after_their_batch(app: faust.App) -> None:
    channel = app.channel()
    stream: Any = app.stream(channel)
    acked: list[int] = []
    ack = stream.ack

    async def recording_ack(event: EventT[Any]) -> bool:
        acked.append(int(event.value))
        result: bool = await ack(event)
        return result

    stream.ack = recording_ack
    await put(channel, list(range(7)))
    seen: list[list[int]] = []
    batches = take_batches(stream, 4, LONG)
    async for events in batches:
        assert acked == [v for batch in seen for v in batch]  # none of this batch yet
        seen.append(values(events))
        if len(seen) == 2:
            break
    assert seen == [[0, 1, 2, 3], [4, 5, 6]]
    await batches.aclose()
    assert acked == list(range(7))  # the last batch's too, once it is left


async def test_closing_restores_the_stream(app: faust.App) -> None:
    channel = app.channel()
    stream: Any = app.stream(channel)
    processors = list(stream._processors)
    await put(channel, [1])
    batches = take_batches(stream, 10, LONG)
    assert stream.enable_acks
    await asyncio.wait_for(anext(batches), 5)
    assert not stream.enable_acks  # acknowledged by take_batches, after each batch
    assert batches in stream._active_agens  # the stream closes it when it stops
    await batches.aclose()
    assert stream.enable_acks
    assert stream._processors == processors


async def test_a_batch_closes_once_its_values_reach_max_bytes(app: faust.App) -> None:
    """Large records make small batches, so a backlog of costly records commits a few at a time."""
    channel = app.channel()
    stream = app.stream(channel)
    await put(channel, [1, 22, 333, 4444, 5])  # values of 1, 2, 3, 4 and 1 bytes
    batches = take_batches(stream, 500, LONG, max_bytes=3)
    got = [values(await asyncio.wait_for(anext(batches), 5)) for _ in range(3)]
    assert got == [[1, 22], [333], [4444]]  # the event that reaches the size closes the batch
    assert values(await asyncio.wait_for(anext(batches), 5)) == [5]
    await batches.aclose()
