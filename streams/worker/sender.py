"""Sends that count only once the broker acknowledged them: awaited, retried, or the worker stops.

A Kafka error is never a dead letter: the batch's sends are retried until `send_timeout_seconds`,
then the process exits without acknowledging its input, so the next owner replays it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from streams.broker.refusals import denied, is_denied
from streams.errors import EXIT_FAILED, EXIT_USAGE, error_line

log = logging.getLogger("replygate.worker")

# Faust's producer send: (topic, key, value, partition, timestamp, headers) -> delivery future.
SendFn = Callable[..., Awaitable[Awaitable[Any]]]


@dataclass(frozen=True, slots=True)
class Out:
    """One record to send; `partition` None lets the producer choose by key."""

    topic: str
    key: bytes | None
    value: bytes | None
    partition: int | None = None
    # Kafka headers (name, value): an output's trace context (`streams.core.trace`)
    headers: tuple[tuple[str, bytes], ...] = ()


def fail_stop(reason: str) -> NoReturn:
    """Exit 1 at once: no finally block may acknowledge a batch that was not written, and an
    expected condition (no broker) ends in one line, not a traceback: the log's, and the
    command line's own error line on standard error."""
    log.critical("stopping the worker: %s", reason)
    _exit_with(reason, EXIT_FAILED)


def refuse_start(reason: str) -> NoReturn:
    """Exit 2 at start, with one line: the deployment is set up wrong, and a restart would
    not help (unlike `fail_stop`'s exit 1)."""
    _exit_with(reason, EXIT_USAGE)


def _exit_with(reason: str, status: int) -> NoReturn:
    """The error line on fd 2 itself (Faust's worker has put a logger in place of
    `sys.stderr`, shut down here first), then out without any finally block."""
    logging.shutdown()
    os.write(2, f"{error_line('worker', reason)}\n".encode())
    os._exit(status)


def send_now(producer: Callable[[], Any]) -> Callable[[], None]:
    """Put what is enqueued on the wire now, not after the producer's linger.

    aiokafka holds a partition's batch up to `linger` for more records; a worker batch is
    whole once enqueued and its acknowledgements are awaited, so the wait is pure delay (twice
    a batch: state, then outputs). This closes the accumulator's open batches and wakes its
    sender, the first half of aiokafka's own `flush_for_commit`; `producer` returns the
    started `AIOKafkaProducer`. A later send to a partition whose batch is closed waits until
    the sender has taken that batch, as with a full one.
    """

    def now() -> None:
        accumulator = producer()._message_accumulator
        for batches in accumulator._batches.values():
            for batch in batches:
                batch._builder.close()
        if not accumulator._waiter_future.done():
            accumulator._waiter_future.set_result(None)

    return now


@dataclass
class Sender:
    send: SendFn
    timeout_seconds: float
    backoff_seconds: float = 0.5
    # called once a round is enqueued (see `send_now`); None leaves it to the producer's linger
    send_now: Callable[[], None] | None = None

    async def send_all(self, records: Sequence[Out]) -> list[Any]:
        """Send every record and await every acknowledgement; return their metadata in order."""
        results: list[Any] = [None] * len(records)
        todo = list(range(len(records)))
        deadline = time.monotonic() + self.timeout_seconds
        while todo:
            remaining = deadline - time.monotonic()
            try:
                outcomes = await asyncio.wait_for(
                    self._round([records[i] for i in todo]), remaining
                )
            except TimeoutError:
                fail_stop(
                    f"sends unacknowledged for {self.timeout_seconds:.0f} s; "
                    "its unacknowledged input will be replayed"
                )
            failed = [
                i for i, o in zip(todo, outcomes, strict=True) if isinstance(o, BaseException)
            ]
            for i, outcome in zip(todo, outcomes, strict=True):
                results[i] = outcome
            for i in failed:  # the ACLs will not change while we retry: say what is missing
                if is_denied(results[i]):
                    fail_stop(denied("write to", "topic", records[i].topic, "worker"))
            if failed:
                error = type(results[failed[0]]).__name__
                log.warning("%d of %d sends failed (%s); retrying", len(failed), len(todo), error)
                await asyncio.sleep(min(self.backoff_seconds, max(0.0, remaining)))
            todo = failed
        return results

    async def _round(self, records: Sequence[Out]) -> list[Any]:
        """Enqueue in order (per-key order holds), then await every acknowledgement."""
        futures: list[Awaitable[Any]] = []
        for record in records:
            try:
                futures.append(
                    await self.send(
                        record.topic,
                        record.key,
                        record.value,
                        record.partition,
                        None,
                        list(record.headers) or None,
                    )
                )
            except Exception as exc:  # a send refused at once counts as a failed send
                futures.append(_failed(exc))
        if self.send_now is not None:
            self.send_now()
        return list(await asyncio.gather(*futures, return_exceptions=True))


async def _failed(exc: Exception) -> Any:
    raise exc
