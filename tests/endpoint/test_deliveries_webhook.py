"""`replygate deliveries --webhook`: a real HTTP server that refuses the first tries."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest

from schemas.registry import CONTRACTS
from streams.endpoint.dedup import SeenIds
from streams.endpoint.deliveries import Endpoint
from streams.endpoint.handoff import IDEMPOTENCY_HEADER, Stopped, WebhookHandOff
from streams.settings import Settings
from tests.support.deliveries import delivery

REFUSALS = (503, 500)  # the answers to the first two tries of each delivery, then 204


class Receiver(ThreadingHTTPServer):
    """Keeps every POST (its key and body) and refuses the first tries of each key."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.tries: list[tuple[str, int, bytes]] = []
        self.lock = threading.Lock()
        self.always_refuse = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"

    def answer(self, key: str, body: bytes) -> int:
        with self.lock:
            earlier = sum(1 for k, _, _ in self.tries if k == key)
            status = 503 if self.always_refuse else (*REFUSALS, 204)[min(earlier, len(REFUSALS))]
            self.tries.append((key, status, body))
        return status


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        status = self.server.answer(self.headers.get(IDEMPOTENCY_HEADER, ""), body)
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(5)


def webhook(url: str, stop: asyncio.Event) -> WebhookHandOff:
    return WebhookHandOff(url, 5.0, 0.01, 0.05, stop)


@pytest.mark.timeout(60)
async def test_each_delivery_is_posted_until_accepted_with_the_same_key(
    tmp_path: Path, receiver: Receiver
) -> None:
    stop = asyncio.Event()
    hook = webhook(receiver.url, stop)
    seen = SeenIds(tmp_path / "seen.sqlite", 3600)
    reader = Endpoint(Settings(), "im", seen, hook, CONTRACTS, stop=stop)
    ids = [f"t-{n}" for n in range(4)]
    try:
        for number, turn in enumerate([*ids, ids[1]]):  # the last one is a repeat
            await reader.handle(orjson.dumps(delivery(turn)), f"delivery.im[0]@{number}")
    finally:
        await hook.close()

    keys = [key for key, _, _ in receiver.tries]
    # Every delivery, in order, each tried until accepted; none skipped, the repeat not posted.
    assert keys == [turn for turn in ids for _ in range(len(REFUSALS) + 1)]
    statuses = [status for _, status, _ in receiver.tries]
    assert statuses == [*REFUSALS, 204] * len(ids)
    for key, _, body in receiver.tries:
        assert orjson.loads(body) == delivery(key)  # each try carries the whole delivery
    assert all(turn in seen for turn in ids)
    assert (reader.counts.handed_on, reader.counts.repeats) == (len(ids), 1)


@pytest.mark.timeout(60)
async def test_a_stop_ends_the_retries_and_records_nothing(
    tmp_path: Path, receiver: Receiver
) -> None:
    receiver.always_refuse = True
    stop = asyncio.Event()
    hook = webhook(receiver.url, stop)
    seen = SeenIds(tmp_path / "seen.sqlite", 3600)
    reader = Endpoint(Settings(), "im", seen, hook, CONTRACTS, stop=stop)

    async def stop_after_three_tries() -> None:
        while len(receiver.tries) < 3:
            await asyncio.sleep(0.01)
        stop.set()

    try:
        stopper = asyncio.create_task(stop_after_three_tries())
        with pytest.raises(Stopped):
            await reader.handle(orjson.dumps(delivery("t-down")), "delivery.im[0]@0")
        await stopper
    finally:
        await hook.close()
    assert "t-down" not in seen  # handed on again, with the same key, by the next run
    assert reader.counts.handed_on == 0
    assert {key for key, _, _ in receiver.tries} == {"t-down"}


@pytest.mark.timeout(60)
async def test_a_refused_connection_is_retried_too(
    receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing listens at first (connection refused); the delivery goes once a server answers."""
    caplog.set_level(logging.WARNING, "replygate.deliveries")
    closed = Receiver()
    url = closed.url
    closed.server_close()  # the port is free: every connection is refused
    hook = webhook(url, asyncio.Event())
    task = asyncio.create_task(hook("t-late", b"{}\n"))
    while len([r for r in caplog.records if "ConnectError" in r.getMessage()]) < 2:
        await asyncio.sleep(0.01)
    assert not task.done()  # two refused tries, and still trying: no hand-off yet
    hook.url = receiver.url
    await task
    await hook.close()
    assert [key for key, _, _ in receiver.tries] == ["t-late"] * (len(REFUSALS) + 1)
