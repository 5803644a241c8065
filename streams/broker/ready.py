"""Bounded waits for what a fresh broker makes lazily: group coordinators and topic leaders.

A broker that has just started has no `__consumer_offsets` topic until the first FindCoordinator
asks for it, and a topic that has just been created has no leader for a moment. Kafka answers
those moments with retriable errors (GroupCoordinatorNotAvailable, CoordinatorLoadInProgress,
LeaderNotAvailable, ...). Whoever asks retries them here, for a bounded time, and past the bound
gets one `KafkaNotReady` naming what it waited for and the broker's last answer, never a
traceback from the middle of aiokafka.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from streams.errors import RuntimeFailure

DEFAULT_SECONDS: Final = 30.0
PAUSE_SECONDS: Final = 0.2
TOPIC_ALREADY_EXISTS: Final = 36

T = TypeVar("T")
K = TypeVar("K")


class KafkaNotReady(RuntimeFailure):
    """The broker kept answering "not yet" past the bound; the message says what and why."""


def retriable(exc: BaseException) -> bool:
    """Whether asking again may succeed: Kafka's own retriable errors, and timeouts."""
    from aiokafka.errors import KafkaError, KafkaTimeoutError

    if isinstance(exc, KafkaTimeoutError | TimeoutError):
        return True
    return isinstance(exc, KafkaError) and bool(exc.retriable)


def describe(exc: BaseException) -> str:
    """The error's class name and Kafka's text, on one line (never a traceback)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    name = type(exc).__name__
    return text if text.startswith(name) else f"{name}: {text}".rstrip(": ")


async def retry(
    call: Callable[[], Awaitable[T]],
    what: str,
    seconds: float = DEFAULT_SECONDS,
    pause: float = PAUSE_SECONDS,
) -> T:
    """`await call()` until it answers, retrying retriable errors for at most `seconds`.

    A non-retriable error goes up unchanged; the last retriable one, past the bound, becomes
    `KafkaNotReady` (chained, for whoever wants the detail).
    """
    deadline = time.monotonic() + seconds
    while True:
        try:
            return await call()
        except Exception as exc:
            if not retriable(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise KafkaNotReady(
                    f"{what}: the broker still answered {describe(exc)} after {seconds:g} s"
                ) from exc
        await asyncio.sleep(pause)


async def group_offsets(admin: Any, group: str, seconds: float = DEFAULT_SECONDS) -> Any:
    """A consumer group's committed offsets, once the broker has a coordinator for the group.

    An unknown group answers `{}`; a broker without a coordinator yet (a fresh one) is waited
    for, within the bound.
    """

    async def ask() -> Any:
        return await admin.list_consumer_group_offsets(group)

    return await retry(ask, f"the committed offsets of consumer group {group!r}", seconds)


def caught_up(ends: Mapping[K, int], committed: Mapping[K, Any]) -> bool:
    """Whether a group's commits reach the end of every partition that holds records.

    `committed` maps a partition to an offset or an `OffsetAndMetadata` (absent: nothing yet).
    """
    for tp, end in ends.items():
        done = committed.get(tp)
        offset = getattr(done, "offset", done)
        if end > 0 and (offset is None or offset < end):
            return False
    return True


def create_errors(topic_errors: Iterable[Sequence[Any]]) -> dict[str, str]:
    """Per topic, why the broker refused to create it; an existing topic is no error (a race)."""
    from aiokafka.errors import for_code

    refused: dict[str, str] = {}
    for entry in topic_errors:
        name, code = str(entry[0]), int(entry[1])
        if code in (0, TOPIC_ALREADY_EXISTS):
            continue
        detail = str(entry[2]) if len(entry) > 2 and entry[2] else ""
        refused[name] = f"{for_code(code).__name__}{': ' + detail if detail else ''}"
    return refused


def leaderless(described: Iterable[Mapping[str, Any]], names: Iterable[str]) -> list[str]:
    """The topics among `names` that metadata does not show yet with a leader on each partition."""
    ready = {
        str(t["topic"])
        for t in described
        if t.get("error_code", 0) == 0
        and t.get("partitions")
        and all(p.get("error_code", 0) == 0 and p.get("leader", -1) >= 0 for p in t["partitions"])
    }
    return sorted(set(names) - ready)


async def wait_for_leaders(
    admin: Any, names: Sequence[str], seconds: float = DEFAULT_SECONDS
) -> None:
    """Return once every topic in `names` has a leader on each partition (bounded)."""
    wanted = sorted(names)
    deadline = time.monotonic() + seconds
    while True:
        described = await retry(lambda: admin.describe_topics(wanted), "topic metadata", seconds)
        missing = leaderless(described, wanted)
        if not missing:
            return
        if time.monotonic() + PAUSE_SECONDS > deadline:
            raise KafkaNotReady(
                f"topics without a leader after {seconds:g} s: {', '.join(missing)}"
            )
        await asyncio.sleep(PAUSE_SECONDS)
