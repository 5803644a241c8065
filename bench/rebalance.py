"""The longest pause in deliveries while a consumer-group member joins, leaves or crashes.

A worker serves a steady stream of valid replies (RATE a second over 4 partitions). Each round:
a second worker joins (join), is stopped with SIGTERM (leave), a third joins and is SIGKILLed
(crash). For each event the pause is the longest any reply sent from the event until the group
has settled (WINDOW seconds; the crash window adds the session timeout) waited for its
delivery (the delivery record's timestamp minus the send time): what a user of a partition
stalled by the rebalance sees. A gap across all deliveries would hide a crash, since the other
workers' partitions go on. Real worker processes on the local broker.

RATIO rebalance_pause_join_s, rebalance_pause_leave_s, rebalance_pause_crash_s: medians of the
rounds; targets join <= 3 s, graceful leave <= 3 s, crash <= session timeout + 2 s.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from replygate_dev.demo import free_port

from bench.common import fmt, median, ratio, say
from bench.kafka import Deployment, Worker, from_start, wait_ready
from bench.recovery import im_reply

PARTITIONS = 4
RATE = 100.0  # replies a second: well under one worker's capacity, so a gap is a pause
ROUNDS = int(os.environ.get("BENCH_REBALANCE_ROUNDS", "3"))
# seconds after an event in which its pause must fall
WINDOW = float(os.environ.get("BENCH_REBALANCE_WINDOW", "15"))
READY_BOUND = 120.0
EVENTS = ("join", "leave", "crash")


def session_timeout() -> float:
    from streams.settings import load_settings

    return float(load_settings().session_timeout_seconds)


def _reply(n: int) -> tuple[bytes, bytes]:
    conversation = f"c-{n % 64}"
    return conversation.encode(), im_reply(f"t-{n}", conversation)


@dataclass
class Traffic:
    """Produces replies at RATE and records the broker timestamps of the deliveries, in a
    thread of its own (its event loop is not held up by the bench's waits)."""

    dep: Deployment
    rate: float = RATE
    sent: dict[int, int] = field(default_factory=dict)  # reply n -> send time (ms)
    delivered: dict[int, int] = field(default_factory=dict)  # reply n -> first delivery (ms)
    stop: threading.Event = field(default_factory=threading.Event)
    # `sent` grows in the traffic thread while the bench reads it: copying it unlocked raised
    # "dictionary changed size during iteration" in the second round.
    lock: threading.Lock = field(default_factory=threading.Lock)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(30)

    async def _run(self) -> None:
        await asyncio.gather(self._produce(), self._watch())

    async def _produce(self) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.dep.servers, linger_ms=5)
        await producer.start()
        try:
            topic, started, n = self.dep.topic("replies_raw"), time.monotonic(), 0
            while not self.stop.is_set():
                key, value = _reply(n)
                with self.lock:
                    self.sent[n] = int(time.time() * 1000)
                try:
                    await producer.send(topic, value, key=key)
                except KafkaError:  # no broker to send to (bench.broker_outage): not sent
                    with self.lock:
                        del self.sent[n]
                n += 1
                await asyncio.sleep(max(0.0, started + n / self.rate - time.monotonic()))
        finally:
            await producer.stop()

    async def _watch(self) -> None:
        consumer = from_start(self.dep.topic("delivery.im"), servers=self.dep.servers)
        await consumer.start()
        try:
            while not self.stop.is_set():
                batch = await consumer.getmany(timeout_ms=200)
                for messages in batch.values():
                    for m in messages:
                        n = int(orjson.loads(m.value)["delivery_id"][2:])
                        self.delivered.setdefault(n, m.timestamp)
        finally:
            await consumer.stop()

    def longest_wait_s(self, start_ms: int, end_ms: int) -> float:
        """The longest wait for delivery of a reply sent from `start_ms` to `end_ms` (one not
        delivered yet counts until now)."""
        now = int(time.time() * 1000)
        with self.lock:
            sent = list(self.sent.items())
        waits = [self.delivered.get(n, now) - t for n, t in sent if start_ms <= t <= end_ms]
        return max(waits, default=0) / 1000.0


def _pause_after(traffic: Traffic, act: Callable[[], None], window: float) -> float:
    start_ms = int(time.time() * 1000)
    act()
    time.sleep(window)
    end_ms = int(time.time() * 1000)
    time.sleep(3)  # the last replies of the window get their chance to be delivered
    return traffic.longest_wait_s(start_ms, end_ms)


def _start(dep: Deployment, workdir: Path) -> tuple[Worker, int]:
    port = free_port()
    worker = dep.start_worker(workdir, REPLYGATE_METRICS_PORT=str(port))
    return worker, port


def _round(
    dep: Deployment, traffic: Traffic, tmp: Path, r: int, bound: float = READY_BOUND
) -> dict[str, float]:
    pauses: dict[str, float] = {}
    joiner: list[Worker] = []

    def join() -> None:
        worker, port = _start(dep, tmp / f"r{r}-join")
        joiner.append(worker)
        wait_ready(port, worker, bound)

    # a join's window starts at the worker's start and lasts until it is ready, then WINDOW
    pauses["join"] = _pause_after(traffic, join, WINDOW)
    pauses["leave"] = _pause_after(traffic, lambda: joiner[0].stop(), WINDOW)
    victim, port = _start(dep, tmp / f"r{r}-crash")
    wait_ready(port, victim, bound)
    time.sleep(WINDOW)  # its join settles first
    pauses["crash"] = _pause_after(traffic, victim.proc.kill, WINDOW + session_timeout())
    victim.proc.wait(10)
    # said as each round ends: a run stopped later still shows the rounds it finished
    say(f"  round {r + 1}: " + ", ".join(f"{e} {p:.2f} s" for e, p in pauses.items()))
    return pauses


def run(rounds: int = ROUNDS) -> dict[str, float]:
    say(
        f"== rebalance pause: {RATE:g} replies/s on {PARTITIONS} partitions, {rounds} rounds "
        f"of join / SIGTERM leave / SIGKILL crash (session timeout {session_timeout():g} s)"
    )
    dep = Deployment(partitions=PARTITIONS)
    dep.create_topics()
    results: dict[str, list[float]] = {e: [] for e in EVENTS}
    traffic = Traffic(dep)
    with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
        first, port = _start(dep, Path(tmp) / "first")
        try:
            wait_ready(port, first, READY_BOUND)
            traffic.start()
            time.sleep(5)
            for r in range(rounds):
                for event, pause in _round(dep, traffic, Path(tmp), r).items():
                    results[event].append(pause)
        finally:
            traffic.close()
            first.stop()
            dep.cleanup()
    return _report(results, "")


def _report(results: dict[str, list[float]], suffix: str) -> dict[str, float]:
    """Each event's pauses said, and its median as `rebalance_pause_<event><suffix>_s`."""
    medians = {}
    for event in EVENTS:
        say(f"  {event}: pauses {fmt(results[event], 2)} s")
        medians[event] = median(results[event])
        ratio(f"rebalance_pause_{event}{suffix}_s", medians[event])
    return medians


# With a horizon's worth of finished turns: the state a worker restores when partitions move.
HORIZON_TURNS = int(os.environ.get("BENCH_REBALANCE_TURNS", "1000000"))
HORIZON_ROUNDS = int(os.environ.get("BENCH_REBALANCE_1M_ROUNDS", "1"))
HORIZON_BOUND = 1800.0
# What the deployment runs in production (deploy/k8s): state on disk, a warm copy elsewhere.
HORIZON_ENV = {"REPLYGATE_STORE": "rocksdb://", "REPLYGATE_STANDBY_REPLICAS": "1"}


def run_horizon(turns: int = HORIZON_TURNS, rounds: int = HORIZON_ROUNDS) -> dict[str, float]:
    """The same events with `turns` finished turns in the horizon, written straight to the turn
    changelog as the worker leaves them (settled), on the production store (RocksDB, one
    standby replica). RATIO rebalance_pause_{join,leave,crash}_1m_s."""
    from bench.state_memory import write_settled

    say(
        f"\n== rebalance pause with {turns:,} finished turns in the horizon: {RATE:g} replies/s "
        f"on {PARTITIONS} partitions, {rounds} round(s), RocksDB, 1 standby replica"
    )
    dep = Deployment(partitions=PARTITIONS, env=dict(HORIZON_ENV))
    dep.create_topics()
    results: dict[str, list[float]] = {e: [] for e in EVENTS}
    traffic = Traffic(dep)
    with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
        maker, port = _start(dep, Path(tmp) / "maker")  # it creates the changelog topic
        wait_ready(port, maker, READY_BOUND)
        maker.stop()
        started = time.monotonic()
        asyncio.run(write_settled(dep.servers, dep.changelog(), turns, PARTITIONS))
        say(f"  {turns:,} settled turns written in {time.monotonic() - started:.0f} s")
        first, port = _start(dep, Path(tmp) / "first")
        try:
            ready_s = wait_ready(port, first, HORIZON_BOUND, poll=0.5)
            rss = first.rss_mb()
            say(f"  the first worker (empty disk) ready in {ready_s:.0f} s, RSS {rss:.0f} MB")
            traffic.start()
            time.sleep(5)
            for r in range(rounds):
                for event, pause in _round(dep, traffic, Path(tmp), r, HORIZON_BOUND).items():
                    results[event].append(pause)
            say(f"  the first worker's peak RSS {first.peak_rss_mb():.0f} MB")
        finally:
            traffic.close()
            first.stop()
            dep.cleanup()
            _say_warm_ups(Path(tmp))
    return _report(results, "_1m")


# A directory to keep the workers' logs of the `_1m` round in (they go with the round's files).
KEEP_LOGS = os.environ.get("BENCH_REBALANCE_LOGS", "")


def _say_warm_ups(tmp: Path) -> None:
    """Each worker's warm-up before it joined (`streams.worker.warmup`), from its log."""
    for log in sorted(tmp.glob("*/worker.log")):
        if KEEP_LOGS:
            Path(KEEP_LOGS).mkdir(parents=True, exist_ok=True)
            shutil.copy(log, Path(KEEP_LOGS) / f"{log.parent.name}.log")
        lines = log.read_text(errors="replace").splitlines()
        for line in lines:
            if "warmed before joining" in line:
                say(f"  {log.parent.name}: {line.split('] ', 3)[-1].strip()}")
