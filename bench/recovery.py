"""Time to ready must not grow with turns finished before the state horizon.

Two deployments, one with 2,000 and one with 200,000 finished turns. A worker judges them, the
horizon (60 s here) passes, a tick record per partition makes the worker expire them all
(tombstones), the bench waits until the broker has removed every record of those turns from
the changelog (read, not guessed from offsets), and then a fresh worker (empty data
directory, memory store) is timed from start to `/readyz`.

RATIO recovery_seconds_ratio = time to ready (200,000) / time to ready (2,000); target <= 1.5.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from replygate_dev.demo import free_port

from bench.common import fmt, median, ratio, say
from bench.kafka import Deployment, Worker, produce_all, wait_ready, watch

# Long enough that a reply is not too old (`turn_expired`) by the time 200,000 are appended.
HORIZON_SECONDS = float(os.environ.get("BENCH_RECOVERY_HORIZON", "60"))
SIZES = tuple(int(n) for n in os.environ.get("BENCH_RECOVERY_SIZES", "2000,200000").split(","))
# the ticks that roll the changelog's segments while the broker cleans it
TICK_SECONDS = float(os.environ.get("BENCH_RECOVERY_TICK", "10"))
PARTITIONS = 4
EXPIRY_SECONDS = 300.0
# Compaction drops the expired turns once their segments roll, and their tombstones after
# `delete.retention.ms` (one horizon); retention (2 horizons) deletes whatever is left.
CLEANUP_SECONDS = 2 * HORIZON_SECONDS + 60 + 120


def im_reply(turn: str, conversation: str) -> bytes:
    """A valid `im.segments.v1` RawReply, as the recovery and rebalance benches send it."""
    text = orjson.dumps({"segments": [{"type": "text", "data": {"text": f"done {turn}"}}]})
    return orjson.dumps(
        {
            "turn_id": turn,
            "conversation_id": conversation,
            "platform": "im",
            "contract": "im.segments.v1",
            "attempt": 0,
            "output": {"text": text.decode()},
            "produced_at": datetime.now(UTC).isoformat(),
        }
    )


def _settings_env(port: int) -> dict[str, str]:
    return {
        "REPLYGATE_STATE_HORIZON_SECONDS": str(HORIZON_SECONDS),
        "REPLYGATE_STATE_CLOCK_SKEW_SECONDS": "0",
        "REPLYGATE_METRICS_PORT": str(port),
    }


def _scrape(port: int, name: str) -> float:
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    except httpx.HTTPError:
        return 0.0
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(name) and not line.startswith("#")
    )


async def _ticks(dep: Deployment, round_no: int) -> None:
    """One fresh turn on each partition: broker time moves on, old turns expire."""
    topic = dep.topic("replies_raw")
    records = [
        (topic, f"tick-{p}".encode(), im_reply(f"tick-{round_no}-{p}", f"k{p}"))
        for p in range(PARTITIONS * 4)
    ]
    await produce_all(dep.servers, records)


async def _changelog_left(dep: Deployment) -> tuple[int, int]:
    """(records of the benchmark's turns, all records) a recovery would read from the turn
    changelog now. Offsets say nothing here: compaction keeps the log's start offset, and the
    cleaner merges what is left into its first segment."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=dep.servers,
        enable_auto_commit=False,
        group_id=None,
        auto_offset_reset="earliest",  # "latest" races the seek below
    )
    await consumer.start()
    try:
        topic = dep.changelog()
        parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(parts)
        ends = await consumer.end_offsets(parts)
        await consumer.seek_to_beginning(*parts)
        turns = total = 0
        deadline = time.monotonic() + 120
        while any([await consumer.position(tp) < ends[tp] for tp in parts]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the changelog {topic} was not read to its end in 120 s")
            for records in (await consumer.getmany(timeout_ms=1000, max_records=10_000)).values():
                total += len(records)
                turns += sum(1 for r in records if r.key is not None and r.key.startswith(b"t-"))
        return turns, total
    finally:
        await consumer.stop()


def _expire_all(dep: Deployment, port: int, n: int) -> int:
    """Ticks until the worker has tombstoned all n turns; returns the next tick number."""
    deadline = time.monotonic() + EXPIRY_SECONDS
    tick = 0
    while _scrape(port, "replygate_expired_turns_total") < n and time.monotonic() < deadline:
        asyncio.run(_ticks(dep, tick))
        tick += 1
        time.sleep(0.1)  # each tick is a batch; a batch expires at most 1,000 turns
    expired = _scrape(port, "replygate_expired_turns_total")
    if expired < n:
        raise RuntimeError(f"only {expired:,.0f} of {n:,} turns expired in {EXPIRY_SECONDS:.0f} s")
    return tick


def _wait_for_cleanup(dep: Deployment, tick: int) -> None:
    """Waits until no record of the benchmark's turns is left in the changelog (compacted
    away, tombstones dropped `delete.retention.ms` later); ticks keep rolling segments, as the
    active one is never cleaned. Timing a recovery earlier times the broker's cleaner, not the
    worker."""
    started = time.monotonic()
    first: int | None = None
    while True:
        # a tick each 10 s rolls a segment (`segment.ms` is horizon / 7)
        asyncio.run(_ticks(dep, tick))
        tick += 1
        time.sleep(TICK_SECONDS)
        turns, total = asyncio.run(_changelog_left(dep))
        first = turns if first is None else first
        waited = time.monotonic() - started
        if turns == 0:
            say(
                f"  changelog cleaned up in {waited:.0f} s ({first:,} records of the turns at "
                f"the first look, none now; {total:,} records of ticks left)"
            )
            return
        if waited > CLEANUP_SECONDS:
            raise RuntimeError(f"{turns:,} records of the turns left after {waited:.0f} s")


def _fill_and_expire(dep: Deployment, n: int, workdir: Path) -> None:
    """n finished turns, all expired and gone from the changelog."""
    port = free_port()
    worker = dep.start_worker(workdir / "fill", **_settings_env(port))
    try:
        topic = dep.topic("replies_raw")
        records = [
            (topic, f"c-{i % 997}".encode(), im_reply(f"t-{i}", f"c-{i % 997}")) for i in range(n)
        ]
        asyncio.run(produce_all(dep.servers, records))
        delivery = [dep.topic("delivery.im")]
        seen = asyncio.run(watch(dep.servers, delivery, n, 600, alive=worker.alive))
        if len(seen.records) < n:
            raise RuntimeError(f"only {len(seen.records)} of {n} delivered\n{worker.tail()}")
        time.sleep(HORIZON_SECONDS + 1)
        _wait_for_cleanup(dep, _expire_all(dep, port, n))
    finally:
        worker.stop()


def _time_to_ready(dep: Deployment, workdir: Path) -> float:
    port = free_port()
    worker: Worker = dep.start_worker(workdir, **_settings_env(port))
    try:
        return wait_ready(port, worker, 300)
    finally:
        worker.stop()


def run(rounds: int = int(os.environ.get("BENCH_RECOVERY_ROUNDS", "2"))) -> float:
    say("\nrecovery_seconds_ratio: time to ready with expired turns in the changelog")
    results: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in SIZES:
            dep = Deployment(partitions=PARTITIONS)
            dep.create_topics()
            try:
                _fill_and_expire(dep, n, Path(tmp) / f"n{n}")
                results[n] = [
                    _time_to_ready(dep, Path(tmp) / f"n{n}-ready{r}") for r in range(rounds)
                ]
                say(f"  {n:,} turns: time to ready {fmt(results[n], 2)} s")
            finally:
                dep.cleanup()
    value = median(results[SIZES[1]]) / median(results[SIZES[0]])
    ratio("recovery_seconds_ratio", value)
    return value


if __name__ == "__main__":
    run()
