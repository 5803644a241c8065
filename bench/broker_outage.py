"""How soon deliveries resume after the broker comes back from a SIGKILL.

A broker of the bench's own (deploy/kafka-local on its own port and data directory under /tmp,
so the shared broker is never touched) serves one worker and replies at RATE a second. The
broker is SIGKILLed, stays down OUTAGE seconds, and is started again on the same data. The
resume is the time from the broker answering again to the first delivery of a reply sent after
that (the delivery record's timestamp, set by the worker's producer).

RATIO broker_resume_s: the median over the rounds; target <= 5.
"""

from __future__ import annotations

import itertools
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from replygate_dev.demo import free_port

from bench.common import fmt, median, ratio, say
from bench.kafka import Deployment, Worker, wait_ready
from bench.rebalance import Traffic
from tests.support.kafka import PrivateBroker

OUTAGE = float(os.environ.get("BENCH_OUTAGE_SECONDS", "20"))
ROUNDS = int(os.environ.get("BENCH_OUTAGE_ROUNDS", "2"))
PORT = int(os.environ.get("BENCH_OUTAGE_PORT", "19092"))
RESUME_BOUND = 120.0


@dataclass
class OutageBroker:
    """A broker of our own, started again on the same data and ports after a SIGKILL."""

    home: Path
    port: int = PORT
    controller: int = field(default_factory=free_port)

    def __post_init__(self) -> None:
        self.broker = PrivateBroker(self.home, port=self.port)

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def up(self) -> None:
        self.broker.up(KAFKA_CONTROLLER_PORT=str(self.controller))

    def kill(self) -> None:
        self.broker.kill()

    def down(self) -> None:
        self.broker.down(purge=True)


def resume_after(traffic: Traffic, back_ms: int) -> float | None:
    """Seconds from `back_ms` to the first delivery of a reply sent after it."""
    with traffic.lock:
        sent = [(n, t) for n, t in traffic.sent.items() if t >= back_ms]
    stamps = [traffic.delivered[n] for n, _ in sent if n in traffic.delivered]
    return (min(stamps) - back_ms) / 1000 if stamps else None


def longest_gap_s(traffic: Traffic, start_ms: int) -> float:
    """The longest time without any delivery since `start_ms` (what a user of every partition
    sees): the outage, the broker's start, and the resume."""
    stamps = sorted([start_ms, *(t for t in traffic.delivered.values() if t >= start_ms)])
    return max((b - a for a, b in itertools.pairwise(stamps)), default=0) / 1000


def outage_round(broker: OutageBroker, traffic: Traffic, worker: Worker) -> float:
    time.sleep(3)  # deliveries flowing
    killed_ms = int(time.time() * 1000)
    broker.kill()
    time.sleep(OUTAGE)
    restart_ms = int(time.time() * 1000)
    broker.up()
    back_ms = int(time.time() * 1000)
    deadline = time.monotonic() + RESUME_BOUND
    while (resumed := resume_after(traffic, back_ms)) is None:
        if time.monotonic() > deadline or not worker.alive():
            raise RuntimeError(f"no delivery {RESUME_BOUND:.0f} s after\n{worker.tail()}")
        time.sleep(0.2)
    time.sleep(3)
    say(
        f"  broker down {(restart_ms - killed_ms) / 1000:.1f} s, its start took "
        f"{(back_ms - restart_ms) / 1000:.1f} s, deliveries resumed {resumed:.2f} s after it "
        f"answered; longest time without a delivery {longest_gap_s(traffic, killed_ms):.1f} s"
    )
    return resumed


def run(rounds: int = ROUNDS) -> float:
    # the bench's own clients retry through the outage; their connection errors are expected
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    say(f"\n== broker_outage: the broker SIGKILLed for {OUTAGE:g} s, {rounds} rounds ==")
    with tempfile.TemporaryDirectory(prefix="rg-bench-outage-") as tmp:
        broker = OutageBroker(Path(tmp) / "kafka")
        broker.up()
        dep = Deployment(partitions=4, servers=broker.bootstrap)
        results: list[float] = []
        try:
            dep.create_topics()
            port = free_port()
            worker = dep.start_worker(Path(tmp) / "w", REPLYGATE_METRICS_PORT=str(port))
            traffic = Traffic(dep, rate=20.0)
            try:
                wait_ready(port, worker, 120)
                traffic.start()
                for _ in range(rounds):
                    results.append(outage_round(broker, traffic, worker))
            finally:
                traffic.close()
                worker.stop()
        finally:
            broker.down()
    say(f"  resume {fmt(results, 2)} s")
    value = median(results)
    ratio("broker_resume_s", value)
    return value


if __name__ == "__main__":
    run()
