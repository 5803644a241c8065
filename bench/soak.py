"""The longest time without any outcome while workers are killed and stopped every minute.

Two worker processes on the local broker, in the production store (RocksDB, one standby
replica: what deploy/k8s runs), serve valid replies at RATE a second over 4 partitions. Every
INTERVAL seconds one of them, in turn, is SIGKILLed (a crash) or SIGTERMed (a leave), then
started again on the same data directory (a pod restarted with its volume), for SECONDS in all.
The pause is the longest time between two consecutive outcomes (delivery records' timestamps,
set by the workers' producers), across all partitions: what an operator's dashboard shows as
"nothing delivered". At the end the delivery topic is read whole: every reply sent must have
exactly one outcome (none lost, no turn with two different deliveries), and no delivery may be
repeated but after a crash, else the bench fails. Identical copies of a delivery after a
SIGKILL (at-least-once: a receiver drops them by delivery_id) are counted and printed by the
window they fall in, as is the workers' peak RSS.

RATIO soak_longest_pause_s: target <= 12 s.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from replygate_dev.demo import free_port

from bench.common import fmt, ratio, say
from bench.kafka import Deployment, Worker, from_start, wait_ready
from bench.rebalance import HORIZON_ENV, PARTITIONS, READY_BOUND, Traffic, session_timeout

RATE = float(os.environ.get("BENCH_SOAK_RATE", "400"))
SECONDS = float(os.environ.get("BENCH_SOAK_SECONDS", "600"))
INTERVAL = float(os.environ.get("BENCH_SOAK_INTERVAL", "60"))
# a directory to keep every worker start's log in (for reading where a pause went); unset: none
LOGS = os.environ.get("BENCH_SOAK_LOGS", "")
DRAIN_BOUND = 180.0  # seconds for every reply sent to reach its outcome after the traffic stops


@dataclass
class Tally:
    """The delivery topic read whole: each reply's distinct deliveries (by a digest of the
    record) and when each copy of each was written."""

    stamps: dict[tuple[int, int], list[int]] = field(default_factory=dict)  # (n, digest) -> ms
    first_ms: dict[int, int] = field(default_factory=dict)  # reply n -> its first delivery

    def add(self, value: bytes, timestamp: int) -> None:
        n = int(orjson.loads(value)["delivery_id"][2:])  # delivery ids are the turns': t-<n>
        self.stamps.setdefault((n, hash(value)), []).append(timestamp)
        self.first_ms[n] = min(timestamp, self.first_ms.get(n, timestamp))

    def lost(self, sent: set[int]) -> list[int]:
        return sorted(sent - self.first_ms.keys())

    def conflicting(self) -> list[int]:
        """Replies with two different deliveries: two outcomes for one turn."""
        kinds = Counter(n for n, _digest in self.stamps)
        return sorted(n for n, count in kinds.items() if count > 1)

    def repeat_ms(self) -> list[int]:
        """When each identical copy after a delivery's first was written."""
        return [t for copies in self.stamps.values() for t in sorted(copies)[1:]]


async def read_outcomes(dep: Deployment, sent: set[int], bound: float) -> Tally:
    """Read the delivery topic from its start until every reply in `sent` has an outcome and the
    topic's end (as it was then) is reached, or `bound` seconds pass."""
    consumer = from_start(dep.topic("delivery.im"), servers=dep.servers)
    await consumer.start()
    tally = Tally()
    deadline = time.monotonic() + bound
    try:
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500, max_records=10_000)
            for messages in batch.values():
                for m in messages:
                    if m.value is not None:
                        tally.add(m.value, m.timestamp)
            if tally.lost(sent):
                continue
            assigned = consumer.assignment()
            ends = await consumer.end_offsets(list(assigned))
            positions = {tp: await consumer.position(tp) for tp in assigned}
            if all(positions[tp] >= end for tp, end in ends.items()):
                break
    finally:
        await consumer.stop()
    return tally


def longest_gaps(stamps: Sequence[int], bounds: Sequence[int]) -> list[float]:
    """The longest time without an outcome (seconds) in each window between consecutive
    `bounds` (ms): a window's edges count as outcomes, so a pause that spans an edge is split
    there and a window with no outcome at all is one gap."""
    ordered = sorted(stamps)
    gaps = []
    for start, end in itertools.pairwise(bounds):
        inside = [start, *(t for t in ordered if start <= t <= end), end]
        gaps.append(max(b - a for a, b in itertools.pairwise(inside)) / 1000)
    return gaps


def in_windows(stamps: Sequence[int], bounds: Sequence[int]) -> list[int]:
    """How many of `stamps` (ms) fall in each window between consecutive `bounds`."""
    return [sum(1 for t in stamps if start <= t < end) for start, end in itertools.pairwise(bounds)]


@dataclass
class Pool:
    """The soak's workers by slot, each restarted on its slot's data directory (a pod on its
    volume); every start logs to a directory of its own."""

    dep: Deployment
    home: Path
    workers: list[Worker] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    starts: int = 0

    def start(self, slot: int) -> None:
        port = free_port()
        worker = self.dep.start_worker(
            self.home / f"w{slot}-{self.starts}",
            REPLYGATE_METRICS_PORT=str(port),
            REPLYGATE_DATA_DIR=str(self.home / f"w{slot}-data"),
        )
        self.starts += 1
        if slot < len(self.workers):
            self.workers[slot] = worker
        else:
            self.workers.append(worker)
        wait_ready(port, worker, READY_BOUND, poll=0.2)

    def end(self, slot: int, kill: bool) -> None:
        worker = self.workers[slot]
        self.peak_rss_mb = max(self.peak_rss_mb, worker.peak_rss_mb())
        if kill:
            worker.proc.kill()
            worker.proc.wait(10)
        else:
            worker.stop()

    def close(self) -> None:
        for worker in self.workers:
            if worker.alive():
                self.peak_rss_mb = max(self.peak_rss_mb, worker.peak_rss_mb())
            worker.stop()


def _events(pool: Pool, started: float) -> list[tuple[int, bool]]:
    """Every INTERVAL seconds until SECONDS: worker (i % 2) killed (even i) or stopped (odd i),
    then started again on its data. Each event's wall time (ms) and whether it was a kill."""
    events: list[tuple[int, bool]] = []
    while (at := started + (len(events) + 1) * INTERVAL) < started + SECONDS:
        time.sleep(max(0.0, at - time.monotonic()))
        slot, kill = len(events) % 2, len(events) % 2 == 0
        events.append((int(time.time() * 1000), kill))
        pool.end(slot, kill)
        pool.start(slot)
        say(
            f"  {time.monotonic() - started:5.0f} s: worker {slot} "
            f"{'SIGKILLed' if kill else 'SIGTERMed'} at {at - started:.0f} s, started again "
            "and ready"
        )
    time.sleep(max(0.0, started + SECONDS - time.monotonic()))
    return events


def run() -> float:
    say(
        f"\n== soak: {RATE:g} replies/s on {PARTITIONS} partitions, 2 workers (RocksDB, 1 "
        f"standby), one killed or stopped every {INTERVAL:g} s for {SECONDS:g} s (session "
        f"timeout {session_timeout():g} s)"
    )
    dep = Deployment(partitions=PARTITIONS, env=dict(HORIZON_ENV))
    dep.create_topics()
    traffic = Traffic(dep, rate=RATE)
    with tempfile.TemporaryDirectory(prefix="rg-bench-soak-") as tmp:
        pool = Pool(dep, Path(tmp))
        try:
            pool.start(0)
            pool.start(1)
            traffic.start()
            time.sleep(5)  # both serving
            start_ms, started = int(time.time() * 1000), time.monotonic()
            events = _events(pool, started)
            end_ms = int(time.time() * 1000)
            traffic.close()
            with traffic.lock:
                sent = set(traffic.sent)
            tally = asyncio.run(read_outcomes(dep, sent, DRAIN_BOUND))
        finally:
            traffic.close()
            pool.close()
            dep.cleanup()
            if LOGS:
                shutil.copytree(tmp, LOGS, ignore=shutil.ignore_patterns("*-data"))
    # the delivery topic's first copy of each outcome: what the watcher saw, and what came later
    bounds = [start_ms, *(t for t, _ in events), end_ms]
    gaps = longest_gaps(list(tally.first_ms.values()), bounds)
    repeats = in_windows(tally.repeat_ms(), bounds)
    pause = max(gaps)
    lost, conflicting = tally.lost(sent), tally.conflicting()
    say(
        f"  {len(sent):,} replies sent, {len(tally.first_ms):,} with an outcome; lost "
        f"{len(lost)}, conflicting {len(conflicting)}; {pool.starts} worker starts; workers' "
        f"peak RSS {pool.peak_rss_mb:.0f} MB"
    )
    # the window after each event, until the next: kills are the even events, stops the odd
    say(f"  longest time without an outcome after each kill {fmt(gaps[1::2])} s")
    say(f"  longest time without an outcome after each stop {fmt(gaps[2::2])} s")
    for n, stamp in tally.first_ms.items():  # the watcher stopped with the traffic
        traffic.delivered.setdefault(n, stamp)
    # a reply sent just before an event waits through it: each event's replies are those sent
    # within half an interval of it, either side
    half = int(INTERVAL * 500)
    waits = [traffic.longest_wait_s(t - half, t + half) for t, _ in events]
    say(
        f"  longest a reply waited (its partition stalled) around each kill {fmt(waits[0::2])} s, "
        f"each stop {fmt(waits[1::2])} s"
    )
    say(f"  identical repeats after each kill {repeats[1::2]}, after each stop {repeats[2::2]}")
    say(f"  longest time without an outcome {pause:.2f} s")
    graceful = repeats[0] + sum(repeats[2::2])  # before the first event, after each stop
    if lost or conflicting or graceful:
        raise RuntimeError(
            f"soak: lost {lost[:20]}, conflicting {conflicting[:20]}, {graceful} repeats "
            "without a crash"
        )
    ratio("soak_longest_pause_s", pause)
    return pause


if __name__ == "__main__":
    run()
