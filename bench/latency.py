"""End-to-end latency through one worker at half its measured maximum throughput.

A rate-limited producer (linger 0, acks=all, as an upstream agent service would send) publishes
the benchmark mix; a consumer in the same process reads every output topic. A record's latency
is the wall time its output was seen minus the time just before its `send()` (same host clock).
Each round runs `DURATION` seconds on the same worker, warmed up by a burst and then by one
unmeasured round at the target rate; the figures are medians over rounds of each round's p50
and p99. For reference, one round goes through the bare aiokafka passthrough the same way:
that is the floor this broker and box set (broker append, fetch, the clients).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from bench.common import fmt, median, ratio, say
from bench.kafka import REPO, Deployment, create_topic, produce_all, watch
from bench.workload import BenchRecord, Workload, write_workspace

ROUNDS = int(os.environ.get("BENCH_LATENCY_ROUNDS", "3"))
DURATION = float(os.environ.get("BENCH_LATENCY_SECONDS", "6"))
WARM_SECONDS = 3.0  # one unmeasured round at the target rate first
PARTITIONS = 4
TICK = 0.002


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def _pp(values: list[float]) -> str:
    return f"{percentile(values, 50):.1f}/{percentile(values, 99):.1f}"


def _output_id(value: bytes) -> str | None:
    record = orjson.loads(value)
    found = record.get("turn_id") or record.get("call_id")
    return found if isinstance(found, str) else None


@dataclass
class RoundTimes:
    """Per record (ms): send -> broker append (input), append -> worker's send (output
    record's CreateTime), worker's send -> seen by the consumer, and the whole."""

    to_broker: list[float] = field(default_factory=list)
    in_worker: list[float] = field(default_factory=list)
    to_consumer: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)


async def _round(
    dep: Deployment, outputs: list[str], records: list[BenchRecord], rate: float
) -> RoundTimes:
    consumer = AIOKafkaConsumer(
        *outputs,
        bootstrap_servers=dep.servers,
        auto_offset_reset="latest",
        enable_auto_commit=False,
        group_id=None,
        fetch_max_wait_ms=50,
    )
    producer = AIOKafkaProducer(bootstrap_servers=dep.servers, linger_ms=0, acks="all")
    await consumer.start()
    await producer.start()
    sent: dict[str, float] = {}
    seen: dict[str, float] = {}
    created: dict[str, float] = {}  # output CreateTime (s), set by the worker's producer
    appended: dict[str, asyncio.Future[object]] = {}  # input send futures (LogAppendTime)
    try:
        await consumer.seek_to_end()
        for tp in consumer.assignment():  # resolve the lazy seek before anything is produced
            await consumer.position(tp)

        async def read() -> None:
            while len(seen) < len(records):
                batch = await consumer.getmany(timeout_ms=100)
                now = time.time()
                for messages in batch.values():
                    for m in messages:
                        rid = _output_id(m.value)
                        if rid is not None and rid not in seen:
                            seen[rid] = now
                            created[rid] = m.timestamp / 1000

        reader = asyncio.create_task(read())
        started = time.monotonic()
        for i, rec in enumerate(records):
            due = started + i / rate
            delay = due - time.monotonic()
            if delay > TICK:
                await asyncio.sleep(delay)
            sent[rec.id] = time.time()
            appended[rec.id] = await producer.send(dep.topic(rec.topic), rec.value, key=rec.key)
        try:
            await asyncio.wait_for(reader, timeout=60)
        except TimeoutError:
            say(f"  (round ended with {len(seen)}/{len(records)} outputs seen)")
    finally:
        await producer.stop()
        await consumer.stop()
    times = RoundTimes()
    for rid, seen_at in seen.items():
        if rid not in sent:
            continue
        append = appended[rid].result().timestamp / 1000  # type: ignore[attr-defined]
        times.to_broker.append((append - sent[rid]) * 1000)
        times.in_worker.append((created[rid] - append) * 1000)
        times.to_consumer.append((seen_at - created[rid]) * 1000)
        times.total.append((seen_at - sent[rid]) * 1000)
    return times


def run(max_rate: float | None = None, rounds: int = ROUNDS, duration: float = DURATION) -> None:
    if max_rate is None:
        env = os.environ.get("BENCH_MAX_RATE")
        if env:
            max_rate = float(env)
        else:
            from bench.pipeline_vs_passthrough import _records, worker_round

            with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
                max_rate = worker_round(_records(99, 4000), Path(tmp)).throughput
            say(f"  (measured max throughput for this run: {max_rate:,.0f} records/s)")
    rate = max_rate / 2
    per_round = max(100, int(rate * duration))
    say(
        f"== latency: {rate:,.0f} records/s (half of {max_rate:,.0f}), {per_round} records "
        f"per round, {rounds} rounds"
    )
    with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
        rounds_times = _measure(Path(tmp), rate, per_round, rounds, passthrough=False)
        reference = _measure(Path(tmp), rate, per_round, 1, passthrough=True)
    p50s = [percentile(t.total, 50) for t in rounds_times]
    p99s = [percentile(t.total, 99) for t in rounds_times]
    for r, times in enumerate(rounds_times):
        say(f"  round {r}: {_describe(times)}")
    say(f"  reference, bare aiokafka passthrough at the same rate: {_describe(reference[0])}")
    say(f"  worker p50 {fmt(p50s)} ms, p99 {fmt(p99s)} ms")
    say(f"  latency p50 (median of rounds) {median(p50s):.1f} ms")
    ratio("latency_p99_ms", median(p99s))
    # The worker's own share: input appended by the broker -> output record created (sent).
    ratio("worker_p99_ms", median([percentile(t.in_worker, 99) for t in rounds_times]))
    ratio("latency_p99_vs_passthrough", median(p99s) / percentile(reference[0].total, 99))


def _describe(times: RoundTimes) -> str:
    return (
        f"{len(times.total)} records, p50 {percentile(times.total, 50):.1f} ms, "
        f"p99 {percentile(times.total, 99):.1f} ms, max {max(times.total):.1f} ms; "
        f"p50/p99 send->append {_pp(times.to_broker)}, append->output sent "
        f"{_pp(times.in_worker)}, output sent->seen {_pp(times.to_consumer)}"
    )


def _measure(
    tmp: Path, rate: float, per_round: int, rounds: int, passthrough: bool
) -> list[RoundTimes]:
    """Warm up one process (the worker, or the passthrough), then run timed rounds on it."""
    dep = Deployment(partitions=PARTITIONS)
    warm = list(Workload(300).records(300, prefix="warm"))
    workdir = tmp / ("passthrough" if passthrough else "worker")
    try:
        dep.create_topics()
        if passthrough:
            outputs = [dep.passthrough_output()]
            asyncio.run(create_topic(dep.servers, outputs[0], PARTITIONS))
            argv = ["-m", "bench.passthrough", dep.servers, dep.prefix + "pt", outputs[0]]
            total = len(warm) + int(rate * WARM_SECONDS) + rounds * per_round
            proc = subprocess.Popen(
                [sys.executable, *argv, str(total), *dep.input_topics()], cwd=REPO
            )
            stop: Callable[[], None] = lambda: _kill(proc)  # noqa: E731
            alive: Callable[[], bool] = lambda: proc.poll() is None  # noqa: E731
        else:
            outputs = dep.output_topics()
            root = write_workspace(workdir / "workspaces")
            worker = dep.start_worker(workdir, REPLYGATE_WORKSPACES_ROOT=str(root))
            stop, alive = worker.stop, worker.alive
        try:
            triples = ((dep.topic(r.topic), r.key, r.value) for r in warm)
            asyncio.run(produce_all(dep.servers, triples))
            seen = asyncio.run(watch(dep.servers, outputs, len(warm), 120, alive=alive))
            if len(seen.records) < len(warm):
                detail = "" if passthrough else ":\n" + worker.tail()
                raise RuntimeError("the process under test did not start" + detail)
            warm_round = list(Workload(309).records(int(rate * WARM_SECONDS), prefix="warm-"))
            asyncio.run(_round(dep, outputs, warm_round, rate))
            results = []
            for r in range(rounds):
                records = list(Workload(310 + r).records(per_round, prefix=f"lat{r}-"))
                results.append(asyncio.run(_round(dep, outputs, records, rate)))
            return results
        finally:
            stop()
    finally:
        dep.cleanup()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    run()
