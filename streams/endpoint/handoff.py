"""Where an endpoint hands a delivery on: one JSON line on a stream, or a POST to a webhook.

A hand-off returns only once the delivery is taken (the line is flushed, the webhook answered
2xx); until then the delivery's id is not recorded and its offset not committed. The webhook is
retried with capped exponential backoff, each try with the same `Idempotency-Key` (the
delivery id), so a receiver that honours the key sees the delivery once even when an answer was
lost on the way back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, Final, Protocol

import orjson

log = logging.getLogger("replygate.deliveries")

IDEMPOTENCY_HEADER: Final = "Idempotency-Key"


class HandOff(Protocol):
    """Takes one delivery (its id and its JSON line); returns when it is taken."""

    async def __call__(self, delivery_id: str, line: bytes) -> None: ...


class Stopped(Exception):
    """The endpoint is stopping: a hand-off still retrying gives up (nothing is recorded)."""


def delivery_line(record: Any) -> bytes:
    """A delivery as one compact JSON line (no line break inside: orjson escapes them)."""
    return orjson.dumps(record) + b"\n"


@dataclass
class StreamHandOff:
    """One JSON line per delivery on a binary stream (standard output), flushed each time."""

    stream: IO[bytes]

    async def __call__(self, delivery_id: str, line: bytes) -> None:
        self.stream.write(line)
        self.stream.flush()


def backoff(first: float, cap: float, jitter: float = 0.2) -> Iterator[float]:
    """Waits between tries: `first`, doubling up to `cap`, each spread by up to ±`jitter`."""
    delay = first
    while True:
        yield delay * (1 + random.uniform(-jitter, jitter))
        delay = min(cap, delay * 2)


@dataclass
class WebhookHandOff:
    """POSTs each delivery to `url` until it answers 2xx; `stop` ends the retries."""

    url: str
    timeout_seconds: float
    first_backoff_seconds: float
    max_backoff_seconds: float
    stop: asyncio.Event
    client: Any = None  # an httpx.AsyncClient, made on first use

    async def __call__(self, delivery_id: str, line: bytes) -> None:
        import httpx

        if self.client is None:
            self.client = httpx.AsyncClient(timeout=self.timeout_seconds, follow_redirects=False)
        headers = {"Content-Type": "application/json", IDEMPOTENCY_HEADER: delivery_id}
        waits = backoff(self.first_backoff_seconds, self.max_backoff_seconds)
        for attempt in range(1, 1 << 62):
            if self.stop.is_set():
                raise Stopped(delivery_id)
            try:
                # Streamed and never read: the answer's body, however large, is not taken in.
                async with self.client.stream(
                    "POST", self.url, content=line, headers=headers
                ) as response:
                    status = response.status_code
                if 200 <= status < 300:
                    return
                why = f"HTTP {status}"
            except httpx.HTTPError as exc:
                why = type(exc).__name__
            wait = next(waits)
            log.warning("webhook try %d: %s; again in %.1f s", attempt, why, wait)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop.wait(), wait)
        raise Stopped(delivery_id)  # pragma: no cover - 2**62 tries

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
