"""Work-arounds for two faust-streaming 0.15.3 faults that lose input records after a rebalance.

1. At the end of a rebalance, `Recovery.on_recovery_completed` (faust/tables/recovery.py:649-660)
   puts the stream partitions back in the fetch set, awaits `perform_seek` (one committed-offset
   request per assigned partition), and only then calls `flow_control.resume()`, which empties
   every stream's buffer (mode/utils/queues.py:97-101). The fetcher runs all that time (it was
   started for the changelog restore), so records it hands on during the seek are read past and
   thrown away: the agent sees a hole ("the consumer skipped offsets").
2. Faust hands its live set of fetched partitions to aiokafka's fetch, which waits up to a
   second (faust/transport/consumer.py:795-805, aiokafka/consumer/fetcher.py:1221). When the
   set empties meanwhile (the changelog paused after the restore, recovery.py:475), aiokafka
   reads the empty set as "every partition" and consumes stream records that Faust then drops
   as not fetched (consumer.py:757-764): a partition whose records never come ("no record of").

And one cost: Faust hands each fetched record to the streams through `Service.wait_first`
(consumer.py:1220), which wraps the hand-on and three events in four tasks and cancels three:
several event-loop turns per record (bench/README.md), though the hand-on almost never waits
(`deliver_inline`).

Besides, the offsets Faust commits are kept whole (`guard_offsets`): a hole it would skip, a
commit one past the mark, a partition paused for good on a full buffer.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Coroutine, Generator, Iterable, Mapping
from typing import Any

from mode.services import WaitResults


def fix_consumer(consumer: Any) -> None:
    """The work-arounds and the hand-on fast path, on the consumer `faust.App._new_consumer`
    made."""
    resume_streams_after_seek(consumer)
    fetch_only_active(consumer)
    deliver_inline(consumer)


def deliver_inline(consumer: Any) -> None:
    """`wait_first` that first runs a coroutine's first step itself: done there (the stream
    buffer had room), it returns at once, as Faust's own would; otherwise Faust's `wait_first`
    drives the rest against the same events, so a hand-on blocked on a full buffer still gives
    way to a flow suspension or a stop."""
    wait_first = consumer.wait_first

    async def first(*coros: Any, timeout: Any = None) -> WaitResults:
        head = coros[0] if coros else None
        if not asyncio.iscoroutine(head):
            result: WaitResults = await wait_first(*coros, timeout=timeout)
            return result
        rest = coros[1:]
        try:
            waiting = head.send(None)
        except StopIteration as stop:
            _close(rest)
            if consumer._stopped.is_set() or consumer._crashed.is_set():
                return WaitResults([], [], True)
            return WaitResults([head], [stop.value], False)
        except BaseException:
            _close(rest)
            raise
        driven: WaitResults = await wait_first(_rest_of(head, waiting), *rest, timeout=timeout)
        return driven

    consumer.wait_first = first


def _close(coros: Iterable[Any]) -> None:
    """Close coroutines never started (Faust builds `suspend_flow.wait()` for every record)."""
    for coro in coros:
        if asyncio.iscoroutine(coro):
            coro.close()


async def _rest_of(coro: Coroutine[Any, Any, Any], waiting: Any) -> Any:
    """The rest of a coroutine whose first step already ran and yielded `waiting`, as a native
    coroutine: mode's `wait_first` takes only an `Awaitable`, which `_resume`'s generator-based
    coroutine is not (handing it over crashed the fetcher)."""
    return await _resume(coro, waiting)


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], waiting: Any) -> Generator[Any, Any, Any]:
    """A generator, so each future the coroutine yields reaches the driving task unchanged
    (that task then wakes on it) and whatever the task sends or throws goes back in."""
    while True:
        try:
            sent = yield waiting
        except BaseException as exc:  # a cancellation (or close) goes on into the coroutine
            try:
                waiting = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                waiting = coro.send(sent)
            except StopIteration as stop:
                return stop.value


class Fetching:
    """Faust's live set of fetched partitions as aiokafka's fetch sees it, never false: empty
    means none (nothing is returned until the fetch times out), not every partition."""

    __slots__ = ("tps",)

    def __init__(self, tps: Iterable[Any]) -> None:
        self.tps = tps

    def __contains__(self, tp: object) -> bool:
        return tp in self.tps

    def __bool__(self) -> bool:
        return True


def fetch_only_active(consumer: Any) -> None:
    """Fetch through `Fetching`, so a fetch waiting while the set empties returns nothing."""
    thread = consumer._thread

    async def getmany(active_partitions: set[Any] | None, timeout: float) -> Any:
        live = None if active_partitions is None else Fetching(active_partitions)
        return await thread.getmany(live, timeout)

    consumer._getmany = getmany


def resume_streams_after_seek(consumer: Any) -> None:
    """Keep stream partitions out of the fetch set until Faust's rebalance has sought them to
    their committed offsets and emptied the stream buffers; the next `resume_flow` (the line
    after the buffers are emptied) lets them in, so the first record handed on is the
    committed one.

    During a rebalance Faust resumes only changelog partitions before that point; a stream
    partition resumed while `app.rebalancing` is the end-of-recovery call (recovery.py:316 or
    :649). Outside a rebalance nothing changes; a partition Faust pauses again (a rebalance
    that interrupts this one) is no longer held.
    """
    resume_partitions = consumer.resume_partitions
    pause_partitions = consumer.pause_partitions
    resume_flow = consumer.resume_flow
    held: set[Any] = set()

    def hold_streams(tps: Iterable[Any]) -> None:
        now = set(tps)
        if consumer.app.rebalancing:
            streams = {tp for tp in now if not consumer._is_changelog_tp(tp)}
            if streams:
                held.clear()
                held.update(streams)
                now -= streams
        resume_partitions(now)

    def pause(tps: Iterable[Any]) -> None:
        paused = set(tps)
        held.difference_update(paused)
        pause_partitions(paused)

    def release_streams() -> None:
        resume_flow()
        if held:
            tps = set(held)
            held.clear()
            resume_partitions(tps)

    consumer.resume_partitions = hold_streams
    consumer.pause_partitions = pause
    consumer.resume_flow = release_streams


# How often a member heartbeats at most: the others learn of a rebalance (a worker joined,
# left, or was declared dead after the session timeout) only at their next heartbeat, and until
# then the moving partitions wait. Kafka's rule of thumb (a third of the session timeout) made
# that up to 3.3 s of every rebalance pause at the default 10 s; a second, up to 1 s. A
# heartbeat is one small request to the group coordinator.
HEARTBEAT_MAX_SECONDS = 0.25


def heartbeat_interval(session_timeout_seconds: float) -> float:
    """Seconds between heartbeats: a third of the session timeout, at most a quarter second."""
    return min(HEARTBEAT_MAX_SECONDS, session_timeout_seconds / 3)


def guard_offsets(
    consumer: Any, holes: list[str], log_starts: Mapping[tuple[str, int], int]
) -> None:
    """The consumer's side of the worker's offset guard (`streams.worker.offsets`): a hole in
    what it hands on is kept in `holes`, never committed; a commit starts exactly at the
    committed offset, or at the log start of a partition the group never committed; and a
    partition is never paused for a full stream buffer."""
    keep_holes(consumer, holes)
    commit_from_the_mark(consumer, log_starts)
    never_pause_for_buffer(consumer)


def keep_holes(consumer: Any, holes: list[str]) -> None:
    """Faust records offsets missing between two fetched records as a "gap" it acknowledges
    itself (meant for transaction markers). replygate's inputs have none, so a hole means
    records were fetched and not handed on; committing past it would lose them."""

    async def keep_hole(tp: Any, offset_from: int, offset_to: int) -> None:
        holes.append(f"{tp.topic}:{tp.partition} offsets {offset_from}..{offset_to - 1}")

    consumer._add_gap = keep_hole


def commit_from_the_mark(consumer: Any, log_starts: Mapping[tuple[str, int], int]) -> None:
    """Faust commits past a one-record hole at the head of what was acknowledged (its check is
    off by one): a commit must start exactly at the committed offset. A partition the group
    never committed starts at its log start, which the worker looks up on assignment
    (`OffsetWatch.learn_assigned_log_starts`); until then nothing of it is committed."""
    new_offset = consumer._new_offset

    def contiguous_new_offset(tp: Any) -> int | None:
        acked = consumer._acked[tp]
        committed = consumer._committed_offset.get(tp)
        start = committed if committed is not None else log_starts.get(tp[:2])
        if acked and (start is None or min(acked) > start):
            return None
        result: int | None = new_offset(tp)
        return result

    consumer._new_offset = contiguous_new_offset


def never_pause_for_buffer(consumer: Any) -> None:
    """Faust takes a partition out of the fetch set when a stream's buffer is nearly full and
    puts it back on a pressure-drop callback that its blocking path never registers: the
    partition then stays paused for good. The blocking put into the stream's queue is
    back-pressure enough."""
    consumer.on_buffer_full = _ignore
    consumer.on_buffer_drop = _ignore


def _ignore(tp: Any) -> None:
    del tp


def read_own_writes(recovery: Any, written: Iterable[Any]) -> None:
    """Count this worker's acknowledged changelog records (`written`: their RecordMetadata)
    as read by the table's recovery, while they directly follow what it has read.

    Faust's recovery re-reads a partition kept through a rebalance from where its last restore
    stopped (`Recovery.active_offsets`; the memory store persists no offset), so every rebalance
    read again all this worker had written since: 40% of a leave's restore in the rebalance
    bench, and hours of writes on a long-lived worker. A record right after the last one read
    is one the store already holds; a gap (someone else wrote to the partition) stops the
    advance, and the next restore reads from there as before.
    """
    offsets = recovery.active_offsets
    for meta in sorted(written, key=lambda m: m.offset):
        tp = meta.topic_partition
        last = offsets.get(tp)
        if last is not None and meta.offset == last + 1:
            offsets[tp] = meta.offset
