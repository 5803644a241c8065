"""Policy bundles: what a shadow costs per record, what loading a bundle costs, and how long
every worker takes to judge under a newly published version.

`shadow_cost`: CPU time to judge the benchmark mix's replies under the active version and
under a shadow (which masks one more literal) and compare the two judgements, over the time
to judge them under the active version alone. A shadow is one more judgement per record, so
the ratio is about 2; more would mean the comparison or the second gate costs extra.

`policy_load_seconds`: a bundle with a default and four tenant sections, each with its own
literals (five maskers), loaded and its gates built, as a worker's follower does off the event
loop before a switch.

`policy_switch_seconds`: real workers on the broker (SWITCH_WORKERS processes, SWITCH_PARTITIONS
partitions) under steady traffic; a new bundle is published with `replygate policy publish`'s
code, and the time runs from the write of its `active` record (the record's timestamp) until a
delivery judged under the new version has been read from every partition, so until every
worker judges under it (the median of the rounds; the target is 5 s). It includes the
delivery read's fetch wait; the publish command's own check of the bundle before the write is
said beside it.

Run alone with `python -m bench.policy`.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson
from aiokafka import AIOKafkaConsumer
from replygate_dev.demo import free_port

from bench.common import fmt, median, ratio, say
from bench.kafka import Deployment, Worker, from_start, wait_ready
from bench.rebalance import Traffic
from bench.workload import Workload, write_workspace
from streams.core.decision import Source
from streams.files.stage import DiskFiles
from streams.policy.bundle import read_bundle
from streams.policy.judgement import disagreements
from streams.policy.load import PolicyGates, load_policy
from streams.settings import FileSettings, GateSettings, Settings

N_RECORDS = int(os.environ.get("BENCH_POLICY_RECORDS", "400"))
ROUNDS = int(os.environ.get("BENCH_POLICY_ROUNDS", "4"))
ACTIVE = '[default]\nleak_literals = ["canary-0001"]\n'
SHADOW = '[default]\nleak_literals = ["canary-0001", "canary-0002"]\n'
SWITCH_ROUNDS = int(os.environ.get("BENCH_POLICY_SWITCH_ROUNDS", "3"))
SWITCH_PARTITIONS = 4
SWITCH_WORKERS = 2
SWITCH_RATE = 100.0  # replies a second, well under the workers' capacity
SWITCH_BOUND = 60.0  # seconds a round may take before the bench gives up on it
READY_BOUND = 120.0
TENANTS = "[default]\n" + "".join(
    f'[tenant.t{n}]\nleak_literals = ["tenant-{n}-secret"]\n' for n in range(4)
)


def _gates(folder: Path, name: str, text: str, files: DiskFiles) -> PolicyGates:
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return PolicyGates(load_policy(read_bundle(path), GateSettings()), files)


def run(n: int = N_RECORDS, rounds: int = ROUNDS) -> None:
    say(f"== policy: shadow cost over {n} records of the mix, {rounds} rounds; bundle load; switch")
    with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
        folder = Path(tmp)
        files = DiskFiles.from_settings(
            Settings(workspaces_root=write_workspace(folder)).group(FileSettings)
        )
        active = _gates(folder, "active", ACTIVE, files).gate(None, None)
        shadow = _gates(folder, "shadow", SHADOW, files).gate(None, None)
        now = datetime.now(UTC)
        replies = GateSettings().topic("replies_raw")
        for rec in Workload(299).records(50):  # warm-up: first-use caches are not per record
            if rec.topic == "replies_raw":
                active.decide_reply(rec.value, Source(replies, 0, 0), now)
                shadow.decide_reply(rec.value, Source(replies, 0, 0), now)
        alone: list[float] = []
        both: list[float] = []
        differ = 0
        for r in range(rounds):
            records = [rec for rec in Workload(300 + r).records(n) if rec.topic == "replies_raw"]
            sources = [Source(replies, 0, i) for i in range(len(records))]
            started = time.process_time()
            for rec, source in zip(records, sources, strict=True):
                active.decide_reply(rec.value, source, now)
            alone.append((time.process_time() - started) / len(records))
            started = time.process_time()
            for rec, source in zip(records, sources, strict=True):
                a = active.decide_reply(rec.value, source, now)
                s = shadow.decide_reply(rec.value, source, now)
                differ += bool(disagreements(a, s))
            both.append((time.process_time() - started) / len(records))
        say(f"  active alone     {fmt([s * 1e6 for s in alone])} us/record (CPU)")
        say(f"  active + shadow  {fmt([s * 1e6 for s in both])} us/record (CPU)")
        say(f"  disagreements    {differ} (the shadow's extra literal is in no record)")
        ratio("shadow_cost", median(both) / median(alone))
        loads = []
        for _ in range(3):
            started = time.perf_counter()
            _gates(folder, "tenants", TENANTS, files)
            loads.append(time.perf_counter() - started)
        say(f"  bundle with 4 tenant sections loaded, gates built: {fmt(loads, 2)} s")
        ratio("policy_load_seconds", median(loads))

        ratio("policy_switch_seconds", median(switch_seconds(folder, SWITCH_ROUNDS)))


@dataclass
class VersionWatch(Traffic):
    """Steady replies (bench.rebalance's traffic) whose watcher notes when each policy version
    was first read from each partition of the delivery topic (its partition is the input's)."""

    first_seen: dict[tuple[int, str], float] = field(default_factory=dict)

    async def _watch(self) -> None:
        consumer = from_start(
            self.dep.topic("delivery.im"), servers=self.dep.servers, fetch_max_wait_ms=50
        )
        await consumer.start()
        try:
            while not self.stop.is_set():
                batch = await consumer.getmany(timeout_ms=100)
                now = time.time()
                for messages in batch.values():
                    for m in messages:
                        version = orjson.loads(m.value).get("policy_version", "settings")
                        self.first_seen.setdefault((m.partition, version), now)
        finally:
            await consumer.stop()

    def everywhere(self, version: str, partitions: int) -> float | None:
        """When the version had been read from every partition (None: not yet)."""
        stamps = [self.first_seen.get((p, version)) for p in range(partitions)]
        return None if any(s is None for s in stamps) else max(s for s in stamps if s)


def _publish(dep: Deployment, path: Path) -> tuple[str, float]:
    """`replygate policy publish`: the version, and when its `active` record was written
    (the record's timestamp, the producer's clock: this host's)."""
    from streams.policy.topic import perform

    (line,) = asyncio.run(perform("publish", dep.settings(), path))
    return line.split()[1], asyncio.run(_written_at(dep))


async def _written_at(dep: Deployment) -> float:
    from aiokafka import TopicPartition

    tp = TopicPartition(dep.topology().policy.name, 0)
    consumer = AIOKafkaConsumer(bootstrap_servers=dep.servers, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        stamp = 0
        while await consumer.position(tp) < end:
            for record in (await consumer.getmany(tp, timeout_ms=500)).get(tp, []):
                if record.key == b"active":
                    stamp = record.timestamp
        return stamp / 1000.0
    finally:
        await consumer.stop()


def switch_seconds(folder: Path, rounds: int) -> list[float]:
    """Each round: a new bundle published, then the seconds until every partition's
    deliveries carry its version."""
    say(
        f"  switch: {SWITCH_WORKERS} workers, {SWITCH_PARTITIONS} partitions, "
        f"{SWITCH_RATE:g} replies/s, {rounds} publications"
    )
    dep = Deployment(partitions=SWITCH_PARTITIONS)
    dep.create_topics()
    bundles = [folder / f"switch-{r}.toml" for r in range(rounds + 1)]
    for r, path in enumerate(bundles):
        path.write_text(f'[default]\nleak_literals = ["canary-switch-{r:04d}"]\n', "utf-8")
    traffic = VersionWatch(dep, rate=SWITCH_RATE)
    workers: list[Worker] = []
    seconds: list[float] = []
    try:
        first, _ = _publish(dep, bundles[0])
        for w in range(SWITCH_WORKERS):
            port = free_port()
            workers.append(dep.start_worker(folder / f"w{w}", REPLYGATE_METRICS_PORT=str(port)))
            wait_ready(port, workers[-1], READY_BOUND)
        traffic.start()
        _until(traffic, first, workers)
        for path in bundles[1:]:
            called = time.time()
            version, written = _publish(dep, path)
            seen = _until(traffic, version, workers)
            seconds.append(seen - written)
            say(
                f"    {version[:15]}...: every partition {seconds[-1]:.2f} s after its record "
                f"was written ({seen - called:.2f} s after the publish command began: it "
                f"checks the bundle first)"
            )
            time.sleep(2)
    finally:
        traffic.close()
        for worker in workers:
            worker.stop()
        dep.cleanup()
    say(f"  publish -> every worker judging under it: {fmt(seconds, 2)} s")
    return seconds


def _until(traffic: VersionWatch, version: str, workers: list[Worker]) -> float:
    """When `version` had been read from every partition; an error past SWITCH_BOUND."""
    deadline = time.monotonic() + SWITCH_BOUND
    while time.monotonic() < deadline:
        at = traffic.everywhere(version, SWITCH_PARTITIONS)
        if at is not None:
            return at
        dead = [w for w in workers if not w.alive()]
        if dead:
            raise RuntimeError(f"a worker stopped\n{dead[0].tail()}")
        time.sleep(0.05)
    raise RuntimeError(f"a version was not seen on every partition in {SWITCH_BOUND:g} s")


if __name__ == "__main__":
    run()
