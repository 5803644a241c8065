"""What turn state costs: bytes per finished and per pending turn, and a worker's memory with a
million finished turns.

Part 1, what a worker writes: a worker (memory store) judges valid replies and invalid ones (each
asks for a correction and stays pending), turn ids as agents make them (UUIDs); once the group
has committed past them, later records let it settle the finished turns. The turn changelog is
then read to its end and the last value of each turn measured (key + value bytes).

Part 2, a million finished turns: their settled values (what part 1's worker wrote for a finished
turn, built by the same code, `streams.core.state.settled`) are written straight to the turn
changelog, then a fresh worker (empty data directory, RocksDB) recovers the table, rebuilds its
expiry index over every turn and reports ready; its peak resident set (VmHWM) is read after that.
Writing the changelog directly stands for a million turns the worker judged: the gate's cost is
measured elsewhere, and this measures what the state costs to hold.

RATIO finished_turn_state_bytes, pending_turn_state_bytes (target <= 100 for a finished turn);
worker_peak_rss_mb = the worker's peak RSS in MB with a million finished turns; target < 250
(BENCH_STATE_TURNS, default 1,000,000).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from replygate_dev.demo import free_port

from bench.common import median, ratio, say
from bench.kafka import Deployment, produce_all, wait_ready, watch
from bench.recovery import im_reply
from streams.core.state import TurnState, settled

PARTITIONS = 4
READY_BOUND_SECONDS = 1800.0
MEASURED_TURNS = 400  # part 1: finished turns (and a quarter as many pending)


def settled_value(at: datetime, outcome: str = "delivered") -> bytes:
    """A finished turn's value once settled, as the worker writes it."""
    return settled(TurnState("finished", "x:0:0", at.isoformat(), outcome=outcome)).encode()


def turn_id(i: int) -> str:
    """Turn ids as agents make them: a UUID (36 characters), deterministic per i."""
    return str(uuid.UUID(int=i + (1 << 120)))


async def write_settled(servers: str, topic: str, turns: int, partitions: int) -> None:
    """The changelog records of `turns` finished, settled turns, spread over the partitions."""
    value = settled_value(datetime.now(UTC))
    producer = AIOKafkaProducer(
        bootstrap_servers=servers, linger_ms=50, max_batch_size=1 << 20, acks=1
    )
    await producer.start()
    try:
        pending = []
        for i in range(turns):
            future = await producer.send(
                topic, value, key=turn_id(i).encode(), partition=i % partitions
            )
            pending.append(future)
            if len(pending) >= 50_000:
                await asyncio.gather(*pending)
                pending.clear()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


async def last_values(servers: str, topic: str, partitions: int) -> dict[bytes, bytes | None]:
    """The changelog read to its end: the last value of each key (None: a tombstone)."""
    consumer = AIOKafkaConsumer(bootstrap_servers=servers, enable_auto_commit=False, group_id=None)
    await consumer.start()
    try:
        parts = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(parts)
        ends = await consumer.end_offsets(parts)
        await consumer.seek_to_beginning(*parts)
        values: dict[bytes, bytes | None] = {}
        while any([await consumer.position(tp) < ends[tp] for tp in parts]):
            for records in (await consumer.getmany(timeout_ms=1000, max_records=10_000)).values():
                for r in records:
                    if r.key is not None:
                        values[r.key] = r.value
        return values
    finally:
        await consumer.stop()


def _invalid(turn: str, conversation: str) -> bytes:
    record = orjson.loads(im_reply(turn, conversation))
    record["output"] = {"text": "Here is the answer in prose, which the contract refuses."}
    return orjson.dumps(record)


def _sizes(values: dict[bytes, bytes | None], keys: list[bytes]) -> Iterator[tuple[str, int]]:
    for key in keys:
        value = values.get(key)
        if value is not None:
            state = TurnState.decode(value)
            kind = "settled" if state.is_settled else state.status
            yield kind, len(key) + len(value)


def measure_turn_bytes(dep: Deployment, workdir: Path) -> tuple[float, float]:
    """(bytes per finished turn, bytes per pending turn), as a real worker leaves them."""
    port = free_port()
    worker = dep.start_worker(workdir, REPLYGATE_METRICS_PORT=str(port))
    topic = dep.topic("replies_raw")
    finished = [turn_id(i) for i in range(MEASURED_TURNS)]
    pending = [turn_id(10**6 + i) for i in range(MEASURED_TURNS // 4)]
    try:
        wait_ready(port, worker, 300, poll=0.5)
        records = [
            (topic, f"c-{i % 64}".encode(), im_reply(t, f"c-{i % 64}"))
            for i, t in enumerate(finished)
        ]
        records += [
            (topic, f"c-{i % 64}".encode(), _invalid(t, f"c-{i % 64}"))
            for i, t in enumerate(pending)
        ]
        asyncio.run(produce_all(dep.servers, records))
        outputs = [dep.topic("delivery.im"), dep.topic("corrections")]
        seen = asyncio.run(watch(dep.servers, outputs, len(records), 120, alive=worker.alive))
        if len(seen.records) < len(records):
            raise RuntimeError(f"{len(seen.records)}/{len(records)} outputs\n{worker.tail()}")
        keys = [t.encode() for t in finished]
        deadline = time.monotonic() + 90
        while True:  # later records, once the group committed past these, let them settle
            time.sleep(1.5)
            nudge = [
                (topic, f"n{p}".encode(), im_reply(f"nudge-{time.time()}-{p}", f"n{p}"))
                for p in range(PARTITIONS * 4)
            ]
            asyncio.run(produce_all(dep.servers, nudge))
            time.sleep(1.0)
            values = asyncio.run(last_values(dep.servers, dep.changelog(), PARTITIONS))
            kinds = [k for k, _ in _sizes(values, keys)]
            if kinds.count("settled") == len(keys) or time.monotonic() > deadline:
                break
    finally:
        worker.stop()
    done = [n for k, n in _sizes(values, keys) if k == "settled"]
    waiting = [n for k, n in _sizes(values, [t.encode() for t in pending]) if k == "pending"]
    say(
        f"  {len(done)} of {len(keys)} finished turns settled, {len(waiting)} pending; bytes "
        f"(key + value) per finished turn {min(done, default=0)}-{max(done, default=0)}, per "
        f"pending turn {min(waiting, default=0)}-{max(waiting, default=0)}"
    )
    if len(done) < len(keys) or not waiting:
        raise RuntimeError(f"the turns did not settle\n{worker.tail()}")
    return median(done), median(waiting)


def measure_rss(dep: Deployment, workdir: Path, turns: int) -> float:
    """The peak RSS (MB) of a fresh RocksDB worker with `turns` settled turns in the changelog."""
    port = free_port()
    first = dep.start_worker(workdir / "w0", REPLYGATE_METRICS_PORT=str(port))
    try:
        wait_ready(port, first, 300, poll=0.5)  # the worker creates the changelog topic
    finally:
        first.stop()
    started = time.monotonic()
    asyncio.run(write_settled(dep.servers, dep.changelog(), turns, PARTITIONS))
    say(f"  {turns:,} settled turns written to the changelog in {time.monotonic() - started:.0f} s")
    port = free_port()
    worker = dep.start_worker(workdir / "w1", REPLYGATE_METRICS_PORT=str(port))
    try:
        seconds = wait_ready(port, worker, READY_BOUND_SECONDS, poll=0.5)
        time.sleep(5)  # the expiry index is rebuilt at the first batch or scan
        peak = worker.peak_rss_mb()
        say(f"  ready in {seconds:.1f} s; RSS now {worker.rss_mb():.0f} MB, peak {peak:.0f} MB")
    finally:
        worker.stop()
    return peak


def run() -> None:
    turns = int(os.environ.get("BENCH_STATE_TURNS", "1000000"))
    say(f"\n== state_memory: bytes per turn; {turns:,} finished turns in state, RocksDB store ==")
    with tempfile.TemporaryDirectory() as tmp:
        dep = Deployment(partitions=PARTITIONS)
        dep.create_topics()
        try:
            finished, pending = measure_turn_bytes(dep, Path(tmp) / "bytes")
        finally:
            dep.cleanup()
        ratio("finished_turn_state_bytes", finished)
        ratio("pending_turn_state_bytes", pending)
        dep = Deployment(partitions=PARTITIONS, env={"REPLYGATE_STORE": "rocksdb://"})
        dep.create_topics()
        try:
            peak = measure_rss(dep, Path(tmp) / "rss", turns)
        finally:
            dep.cleanup()
    ratio("worker_peak_rss_mb", peak)
