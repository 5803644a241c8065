"""`streams.worker.sender.send_now` on the real broker: an enqueued batch goes out at once.

The producer lingers 60 s here, far past the bound on each wait, so an acknowledgement that comes
at all came from `send_now`; without it the same send is still lingering (both asserted).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient

from streams.worker.sender import Out, Sender, send_now
from tests.support.kafka import bootstrap

pytestmark = pytest.mark.kafka

LINGER_MS = 60_000


async def test_a_sent_batch_is_acknowledged_without_waiting_for_the_linger() -> None:
    topic = f"t{uuid.uuid4().hex[:10]}.send-now"
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap(), acks="all", linger_ms=LINGER_MS)
    await producer.start()
    try:
        await producer.partitions_for(topic)  # auto-created; metadata ready before the clock

        async def send(*args: Any) -> asyncio.Future[Any]:
            topic_, key, value, partition, _ts, _headers = args
            future: asyncio.Future[Any] = await producer.send(
                topic_, value, key=key, partition=partition
            )
            return future

        lingering = await send(topic, b"k", b"held", 0, None, None)
        await asyncio.sleep(0.5)
        assert not lingering.done()  # the producer really lingers

        sender = Sender(send, timeout_seconds=30, send_now=send_now(lambda: producer))
        records = [Out(topic, b"k", f"v{i}".encode(), 0) for i in range(3)]
        metadata = await asyncio.wait_for(sender.send_all(records), 20)
        assert [m.offset for m in metadata] == [1, 2, 3]
        assert lingering.done()  # it was in the same open batch
    finally:
        await producer.stop()
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap())
        await admin.start()
        try:
            await admin.delete_topics([topic])
        finally:
            await admin.close()
