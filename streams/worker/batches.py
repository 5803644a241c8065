"""Batches of input events that close when everything fetched so far is in them.

Faust's `Stream.take_events` closes a batch only when it is full or its wait is over. Under a
backlog the stream stands still while a batch is handled, then waits `within` again: only the
events Faust hands on in that time make the next batch (a small part of it), and each
batch pays two awaited round trips (state, then outputs). A longer wait makes bigger batches
but holds a lone record back for all of it. `take_batches` also closes a batch as soon as the
stream's buffer is empty: a lone record goes at once, and a backlog fills batches up to the wait.

A batch also closes once its records' bytes reach `max_bytes`: a large hostile record costs
seconds of CPU (bench/README.md), and a batch's input is committed only once all of it is
judged, written and sent.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from faust.types import EventT


def take_batches(
    stream: Any, max_: int, within: float, max_bytes: int = sys.maxsize
) -> AsyncGenerator[Sequence[EventT[bytes]], None]:
    """Faust 0.15.3's `take_events` (faust/streams.py:455-555) with two more closing rules
    (everything fetched is in the batch; its values have reached `max_bytes`).

    Unchanged from it: the stream stands still while a batch is handled, at most `max_` events
    a batch, each event acknowledged once the batch's handling has returned or raised (the
    `finally`), and the generator registered with the stream, which closes it when it stops.
    """
    batches = _take(stream, max_, within, max_bytes)
    stream._active_agens.add(batches)
    return batches


async def _take(
    stream: Any, max_: int, within: float, max_bytes: int
) -> AsyncGenerator[Sequence[EventT[bytes]], None]:
    events: list[EventT[bytes]] = []
    size = 0  # bytes of the events' values
    full = asyncio.Event()
    consumed = asyncio.Event()
    consuming: asyncio.Future[None] | None = None
    queue = stream.channel.queue
    acks_enabled: bool = stream.enable_acks

    async def add(value: Any) -> Any:
        nonlocal consuming, size
        try:
            if consuming is not None:
                try:
                    await consuming
                finally:
                    consuming = None
            event = stream.current_event
            if event is None:
                raise RuntimeError("take_batches found current_event is None")
            events.append(event)
            size += len(event.value or b"")
            if len(events) >= max_ or size >= max_bytes:
                full.set()
                consumed.clear()  # the batch is full: wait until this one is taken
                await stream.wait(consumed)
            elif queue.empty():
                full.set()  # everything fetched so far is in the batch
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            stream.log.exception("Error adding to take buffer: %r", exc)
            await stream.crash(exc)
        return value

    stream.enable_acks = False  # acknowledged here, after the batch is handled
    stream.add_processor(add)
    stream._enable_passive(aiter(stream.channel))
    try:
        while not stream.should_stop:
            await stream.wait_for_stopped(full, timeout=within)
            if not events:
                continue
            taken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            consuming = taken  # the next event waits until this batch is acknowledged
            try:
                yield list(events)
            finally:
                for event in events:
                    await stream.ack(event)
                events.clear()
                size = 0
                if not taken.done():
                    taken.set_result(None)
                full.clear()
                consumed.set()
    finally:
        stream.enable_acks = acks_enabled
        stream._processors.remove(add)
