"""Worker throughput through the real broker, against a bare aiokafka consume -> produce loop.

Each round pre-produces N records of the mix (bench/workload.py) to a fresh deployment's input
topics, then starts ONE process (the worker, or the passthrough) and watches the output topics
until N outputs are there. Throughput is (N - 1) / (last output's timestamp - first output's
timestamp): the processing span, without process start-up and group join, measured the same
way for both. Rounds alternate worker and passthrough; the ratio is median / median.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import fmt, median, ratio, say
from bench.kafka import (
    REPO,
    Deployment,
    cpu_seconds,
    create_topic,
    produce_all,
    wait_group_at_end,
    watch,
)
from bench.workload import BenchRecord, Workload, write_workspace

N_RECORDS = int(os.environ.get("BENCH_RECORDS", "12000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
PARTITIONS = 4
RUN_TIMEOUT = 240.0


@dataclass(frozen=True, slots=True)
class RoundResult:
    throughput: float  # records per second over the processing span
    wall: float  # seconds from process start to the last output seen
    cpu: float  # CPU seconds the process used (start-up included)
    peak_rss_mb: float = 0.0
    commit_lag: float | None = None  # seconds after the last output until commits reached the end


def _records(seed: int, n: int) -> list[BenchRecord]:
    return list(Workload(seed).records(n))


def _produce(dep: Deployment, records: list[BenchRecord]) -> None:
    triples = ((dep.topic(r.topic), r.key, r.value) for r in records)
    asyncio.run(produce_all(dep.servers, triples))


def _throughput(first_ms: int, last_ms: int, n: int) -> float:
    return (n - 1) / max((last_ms - first_ms) / 1000, 1e-3)


def worker_round(
    records: list[BenchRecord], workdir: Path, app: str | None = None, **env: str
) -> RoundResult:
    """One worker process (`replygate worker`, or Faust's worker on `app`) on a fresh deployment."""
    dep = Deployment(partitions=PARTITIONS)
    try:
        dep.create_topics()
        outputs = dep.output_topics()
        if app is not None:
            outputs = [dep.passthrough_output()]
            asyncio.run(create_topic(dep.servers, outputs[0], PARTITIONS))
        _produce(dep, records)
        root = write_workspace(workdir / "workspaces")
        started = time.time()
        worker = dep.start_worker(workdir, app=app, REPLYGATE_WORKSPACES_ROOT=str(root), **env)
        try:
            seen = asyncio.run(
                watch(dep.servers, outputs, len(records), RUN_TIMEOUT, alive=worker.alive)
            )
            if len(seen.records) < len(records):
                raise RuntimeError(
                    f"worker produced {len(seen.records)}/{len(records)} outputs:\n" + worker.tail()
                )
            cpu = worker.cpu_seconds()
            wall = max(r[2] for r in seen.records) - started
            commit_lag = asyncio.run(
                wait_group_at_end(dep.servers, dep.app_id, dep.input_topics(), 60.0)
            )
            peak = worker.peak_rss_mb()
        finally:
            worker.stop()
        first, last = seen.first_last_ms()
        return RoundResult(_throughput(first, last, len(records)), wall, cpu, peak, commit_lag)
    finally:
        dep.cleanup()


def passthrough_round(records: list[BenchRecord]) -> RoundResult:
    dep = Deployment(partitions=PARTITIONS)
    output = dep.passthrough_output()
    try:
        dep.create_topics()
        asyncio.run(create_topic(dep.servers, output, PARTITIONS))
        _produce(dep, records)
        group = dep.prefix + "passthrough"
        started = time.time()
        argv = ["-m", "bench.passthrough", dep.servers, group, output, str(len(records))]
        proc = subprocess.Popen([sys.executable, *argv, *dep.input_topics()], cwd=REPO)
        cpu = 0.0
        try:
            seen = asyncio.run(watch(dep.servers, [output], len(records), RUN_TIMEOUT))
            cpu = cpu_seconds(proc.pid)
            proc.wait(60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if len(seen.records) < len(records):
            raise RuntimeError(f"passthrough produced {len(seen.records)}/{len(records)}")
        first, last = seen.first_last_ms()
        wall = max(r[2] for r in seen.records) - started
        return RoundResult(_throughput(first, last, len(records)), wall, cpu)
    finally:
        dep.cleanup()


def run(n: int = N_RECORDS, rounds: int = ROUNDS) -> float:
    """Print the figures and RATIO lines; return the worker's median throughput (records/s)."""
    say(f"== pipeline_vs_passthrough: {n} records, {PARTITIONS} partitions, {rounds} rounds")
    workers: list[RoundResult] = []
    passes: list[RoundResult] = []
    copies: list[RoundResult] = []
    with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
        for r in range(rounds):
            records = _records(100 + r, n)
            passes.append(passthrough_round(records))
            workers.append(worker_round(records, Path(tmp) / f"round{r}"))
            # A bare Faust agent that only copies, with the worker's app options.
            copies.append(
                worker_round(records, Path(tmp) / f"copy{r}", app="bench.faust_passthrough")
            )
            w, p, c = workers[-1], passes[-1], copies[-1]
            lag = f"+{w.commit_lag:.1f} s" if w.commit_lag is not None else "NOT reached"
            say(
                f"  round {r}: worker {w.throughput:,.0f} rec/s (wall {w.wall:.1f} s, "
                f"peak RSS {w.peak_rss_mb:.0f} MB, commits at end "
                f"{lag}); "
                f"passthrough {p.throughput:,.0f} rec/s (wall {p.wall:.1f} s); "
                f"Faust copy {c.throughput:,.0f} rec/s"
            )
    worker_tp = median([w.throughput for w in workers])
    pass_tp = median([p.throughput for p in passes])
    copy_tp = median([c.throughput for c in copies])
    say(f"  worker      {fmt([w.throughput for w in workers], 0)} rec/s, median {worker_tp:,.0f}")
    say(f"  passthrough {fmt([p.throughput for p in passes], 0)} rec/s, median {pass_tp:,.0f}")
    say(
        f"  Faust copy  {fmt([c.throughput for c in copies], 0)} rec/s, median {copy_tp:,.0f} "
        f"({copy_tp / pass_tp:.2f} of the passthrough): Faust's own ceiling"
    )
    say(
        f"  CPU seconds per round (start-up included): worker {fmt([w.cpu for w in workers])}, "
        f"passthrough {fmt([p.cpu for p in passes])}, Faust copy {fmt([c.cpu for c in copies])}"
    )
    peak = max(w.peak_rss_mb for w in workers)
    say(f"  worker peak RSS (VmHWM) {fmt([w.peak_rss_mb for w in workers])} MB")
    ratio("pipeline_vs_passthrough", worker_tp / pass_tp)
    ratio("worker_vs_faust_copy", worker_tp / copy_tp)
    ratio("worker_rss_mb_this_run", peak)  # worker_peak_rss_mb proper: bench/state_memory.py
    return worker_tp


if __name__ == "__main__":
    run()
