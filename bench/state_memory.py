"""A worker's memory with a million finished turns in state, on the RocksDB store.

The turns' state is written straight to the `turns` changelog (the values a worker writes for a
delivered turn), then a fresh worker (empty data directory, RocksDB) recovers the table,
rebuilds its expiry index over every turn and reports ready; its peak resident set (VmHWM) is
read after that. Writing the changelog directly stands for a million turns the worker judged:
the gate's cost is measured elsewhere, and this measures what the state costs to hold.

RATIO worker_peak_rss_mb = the worker's peak RSS in MB; target < 250 (BENCH_STATE_TURNS, default
1,000,000).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from aiokafka import AIOKafkaProducer
from replygate_dev.demo import free_port

from bench.common import ratio, say
from bench.kafka import Deployment, wait_ready
from streams.core.state import written

PARTITIONS = 4
READY_BOUND_SECONDS = 1800.0


async def _write_state(servers: str, topic: str, turns: int, inputs: str) -> None:
    """The changelog records of `turns` delivered turns, spread over the partitions."""
    now = datetime.now(UTC)
    producer = AIOKafkaProducer(
        bootstrap_servers=servers, linger_ms=20, max_batch_size=1 << 20, acks=1
    )
    await producer.start()
    try:
        pending = []
        for i in range(turns):
            partition = i % PARTITIONS
            state = written(None, f"{inputs}:{partition}:{i}", now, None, "delivered")
            future = await producer.send(
                topic, state.encode(), key=f"t-{i}".encode(), partition=partition
            )
            pending.append(future)
            if len(pending) >= 20_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


def run() -> None:
    turns = int(os.environ.get("BENCH_STATE_TURNS", "1000000"))
    say(f"\n== state_memory: {turns:,} finished turns in state, RocksDB store ==")
    dep = Deployment(partitions=PARTITIONS, env={"REPLYGATE_STORE": "rocksdb://"})
    dep.create_topics()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            port = free_port()
            first = dep.start_worker(Path(tmp) / "w0", REPLYGATE_METRICS_PORT=str(port))
            try:
                wait_ready(port, first, 300, poll=0.5)  # the worker creates the changelog topic
            finally:
                first.stop()
            started = time.monotonic()
            changelog = dep.changelog()
            asyncio.run(_write_state(dep.servers, changelog, turns, dep.topic("replies_raw")))
            say(f"  changelog written in {time.monotonic() - started:.0f} s")
            port = free_port()
            worker = dep.start_worker(Path(tmp) / "w1", REPLYGATE_METRICS_PORT=str(port))
            try:
                seconds = wait_ready(port, worker, READY_BOUND_SECONDS, poll=0.5)
                time.sleep(5)  # the expiry index is rebuilt at the first batch or scan
                peak = worker.peak_rss_mb()
                say(f"  ready in {seconds:.0f} s; RSS now {worker.rss_mb():.0f} MB")
            finally:
                worker.stop()
    finally:
        dep.cleanup()
    ratio("worker_peak_rss_mb", peak)
