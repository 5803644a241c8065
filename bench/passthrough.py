"""The baseline worker: a bare aiokafka consume -> produce loop in one process, no processing.

Run as `python -m bench.passthrough SERVERS GROUP OUTPUT_TOPIC EXPECTED INPUT_TOPIC...`. It uses
the worker's client settings (its fetch wait, acks=all, its producer linger, batch and request
sizes from `Settings`, commits every 0.5 s of what is acknowledged), copies each record's key
and value to OUTPUT_TOPIC, and exits once EXPECTED records are copied and their offsets committed.
"""

from __future__ import annotations

import asyncio
import sys
import time

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from streams.broker.options import fetch_options
from streams.settings import load_settings

COMMIT_INTERVAL = 0.5


async def passthrough(
    servers: str, group: str, output: str, expected: int, inputs: list[str]
) -> None:
    # The worker's fetch wait and producer batching (its settings, the same REPLYGATE_*
    # environment).
    settings = load_settings()
    consumer = AIOKafkaConsumer(
        *inputs,
        bootstrap_servers=servers,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **fetch_options(settings),
    )
    producer = AIOKafkaProducer(
        bootstrap_servers=servers,
        acks="all",
        linger_ms=settings.producer_linger_ms,
        max_batch_size=settings.producer_max_batch_bytes,
        max_request_size=settings.max_output_bytes,
    )
    await producer.start()
    await consumer.start()
    copied = 0
    last_commit = time.monotonic()
    pending: list[asyncio.Future[object]] = []
    try:
        while copied < expected:
            batch = await consumer.getmany(timeout_ms=500)
            for messages in batch.values():
                for m in messages:
                    pending.append(await producer.send(output, m.value, key=m.key))
                    copied += 1
            if time.monotonic() - last_commit >= COMMIT_INTERVAL or copied >= expected:
                # Commit only what is acknowledged: at-least-once, as the worker does.
                await asyncio.gather(*pending)
                pending.clear()
                await consumer.commit()
                last_commit = time.monotonic()
    finally:
        await consumer.stop()
        await producer.stop()


def main(argv: list[str]) -> int:
    servers, group, output, expected, *inputs = argv
    asyncio.run(passthrough(servers, group, output, int(expected), inputs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
