"""Autoscaling on consumer lag, for real: the HorizontalPodAutoscaler of
deploy/k8s/components/hpa-lag reads the External metric `replygate_input_lag` that
prometheus-adapter (built and started by cluster-up.sh, with the component's rule) computes in
Prometheus from the workers' `replygate_consumer_lag` gauge. Under a backlog it scales out
before the CPU component (deploy/k8s/components/hpa, the fallback) could have; a new pod
delivers; once drained it scales back in; and every turn has exactly one outcome throughout.

The load: BACKLOG replies of PARTS segments offered while no worker runs, then one worker
started under them while more are offered as fast as the producer can, until the HPA scales out.
"Before CPU alone would": the CPU component cannot scale out before its scale-up window has
passed since the workers' CPU (read here from metrics-server, as that HPA reads it) first went
above its target; the lag HPA's scale-out must come earlier. Every wait is bounded by the lack
of progress (the lag not falling, the replicas not going down), not by how long a step took on
this machine."""

from __future__ import annotations

import asyncio
import json
import math
import re
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from streams.errors import RuntimeFailure
from tests.k8s.kube import REPO, kubectl, scale, wait_for, wait_ready, worker_pods
from tests.k8s.prometheus import Prometheus
from tests.k8s.traffic import Producer, group_lag, new_run

PARTITIONS = 4  # REPLYGATE_PARTITIONS of the local overlay
# As in test_autoscale: one worker (CPU limit 1 core) checks 680-880 such turns a second on a
# 2-core machine, so at this offered rate a backlog builds on any machine.
RATE = 1500.0
PARTS = 100
# Turns offered while no worker runs, before the one worker starts: the backlog then exists on
# a machine where the producer is no faster than a worker (a loaded one: ~200 turns/s offered,
# ~600/s drained by one worker), and it outlasts the HPA's reaction (the pod's start, the
# gauge's first scrape, the 15 s window: ~50 s there); the producer goes on offering turns as
# fast as it can until the HPA has scaled out.
BACKLOG = 50_000
NAMESPACE = "replygate"
METRIC = "replygate_input_lag"
COMPONENT = REPO / "deploy/k8s/components/hpa-lag/hpa.yaml"
CPU_COMPONENT = REPO / "deploy/k8s/components/hpa/hpa.yaml"
DEPLOYMENT = REPO / "deploy/k8s/base/deployment.yaml"
POLL_SECONDS = 2.0
# Bounds on waiting without progress, generous on any machine; none is how long a step takes.
METRIC_SECONDS = 300.0  # the metric's first value: Prometheus' scrape, the adapter's relist
SCALE_OUT_SECONDS = 600.0  # the HPA to scale out while the backlog grows
DELIVERY_SECONDS = 300.0  # a new pod Ready and through its rebalance to its first delivery
STALL_SECONDS = 300.0  # the lag not falling (a rebalance's restore), the replicas not going down
LIMIT_SECONDS = 3600.0  # any single wait, whatever its progress
READ_SECONDS = 600.0
REPORT = Path(".run") / "k8s-lag-autoscale-report.txt"
DELIVERY_TOPIC = "delivery.im"
DLQ_TOPIC = "replies.dlq"
METRICS_PORT = 9108
UNITS = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0, "k": 1e3, "M": 1e6, "G": 1e9}


def quantity(text: str) -> float:
    """A Kubernetes quantity as the metrics APIs write it: `1234`, `2500m`, `993512345n`, `12k`."""
    match = re.fullmatch(r"([0-9.]+)([numkMG]?)", text)
    assert match, f"not a quantity: {text!r}"
    return float(match.group(1)) * UNITS[match.group(2)]


def lag_hpa_manifest() -> dict[str, Any]:
    """The component's HPA with the local bounds and a scale-down window of seconds (the
    component's five minutes would only lengthen the test)."""
    doc: dict[str, Any] = yaml.safe_load(COMPONENT.read_text())
    spec = doc["spec"]
    spec["minReplicas"], spec["maxReplicas"] = 1, PARTITIONS
    spec["behavior"]["scaleDown"] = {
        "stabilizationWindowSeconds": 30,
        "policies": [{"type": "Pods", "value": 2, "periodSeconds": 15}],
    }
    return doc


def lag_target() -> float:
    spec = yaml.safe_load(COMPONENT.read_text())["spec"]
    (metric,) = spec["metrics"]
    assert metric["external"]["metric"]["name"] == METRIC
    return quantity(str(metric["external"]["target"]["averageValue"]))


@dataclass(frozen=True)
class CpuRule:
    """What the CPU component scales on: its utilization target, its scale-up window, and the
    workers' CPU request the utilization is relative to."""

    target_percent: float
    window_s: float
    request_cores: float

    @classmethod
    def of_components(cls) -> CpuRule:
        spec = yaml.safe_load(CPU_COMPONENT.read_text())["spec"]
        (metric,) = spec["metrics"]
        assert metric["resource"]["name"] == "cpu"
        deployment = yaml.safe_load(DEPLOYMENT.read_text())
        worker = deployment["spec"]["template"]["spec"]["containers"][0]
        return cls(
            float(metric["resource"]["target"]["averageUtilization"]),
            float(spec["behavior"]["scaleUp"]["stabilizationWindowSeconds"]),
            quantity(str(worker["resources"]["requests"]["cpu"])),
        )

    def above(self, cores: list[float]) -> bool:
        """Whether the CPU HPA would want more than these pods: their mean utilization over its
        target by more than the HPA's tolerance (10%)."""
        if not cores:
            return False
        utilization = 100 * sum(cores) / len(cores) / self.request_cores
        return utilization > self.target_percent * 1.1


def hpa_status() -> dict[str, Any]:
    out = kubectl("-n", NAMESPACE, "get", "hpa", "replygate", "-o", "json")
    status: dict[str, Any] = json.loads(out)["status"]
    return status


def hpa_lag(status: dict[str, Any]) -> float | None:
    """The lag the HPA last read (its External metric's total), or None before its first read."""
    for metric in status.get("currentMetrics") or []:
        current = (metric.get("external") or {}).get("current") or {}
        if "averageValue" in current:
            return quantity(str(current["averageValue"])) * int(status.get("currentReplicas") or 1)
        if "value" in current:
            return quantity(str(current["value"]))
    return None


def external_lag() -> float:
    """The metric as the API server serves it to the HPA (from prometheus-adapter)."""
    path = f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/{METRIC}"
    items = json.loads(kubectl("get", "--raw", path))["items"]
    return sum(quantity(str(item["value"])) for item in items)


def worker_cpu() -> list[float]:
    """Each worker pod's CPU in cores, from metrics-server (what the CPU HPA reads)."""
    selector = "app.kubernetes.io%2Fcomponent%3Dworker"
    path = f"/apis/metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/pods?labelSelector={selector}"
    items = json.loads(kubectl("get", "--raw", path))["items"]
    return [sum(quantity(c["usage"]["cpu"]) for c in item["containers"]) for item in items]


def delivered_by(ip: str) -> float:
    """The delivery records a pod has produced, from its own metrics endpoint."""
    url = f"http://{ip}:{METRICS_PORT}/metrics"
    with urllib.request.urlopen(url, timeout=3) as response:
        text = response.read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(f'replygate_records_out_total{{topic="{DELIVERY_TOPIC}"}}'):
            total += float(line.rsplit(" ", 1)[1])
    return total


@dataclass
class Timeline:
    """The autoscaler's run, in seconds since the backlog began (the producer's start)."""

    servers: str
    cpu: CpuRule
    t0: float = field(default_factory=time.monotonic)
    replicas: list[tuple[float, int]] = field(default_factory=list)
    lags: list[tuple[float, int]] = field(default_factory=list)  # the group's, from the broker
    metric: list[tuple[float, float]] = field(default_factory=list)  # the HPA's External metric
    cpu_above: float | None = None  # first reading the CPU HPA would have scaled on
    first_delivery: dict[str, float] = field(default_factory=dict)  # new pod -> its first one
    ready: dict[str, float] = field(default_factory=dict)  # new pod -> Ready
    lock: threading.Lock = field(default_factory=threading.Lock)

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 1)

    def sample(self) -> tuple[int, int]:
        """The HPA's replicas, the group's lag, and the CPU metrics-server reports."""
        status = hpa_status()
        n = int(status.get("currentReplicas") or 0)
        t = self.now()
        self.replicas.append((t, n))
        read = hpa_lag(status)
        if read is not None:
            self.metric.append((t, read))
        if self.cpu_above is None:
            try:
                cores = worker_cpu()
            except AssertionError:  # metrics-server between two readings of a new pod
                cores = []
            if self.cpu.above(cores):
                self.cpu_above = t
        try:
            lag = asyncio.run(group_lag(self.servers))
        except (KafkaError, RuntimeFailure, OSError) as exc:  # the caller's wait tries again
            raise AssertionError(f"the lag was not read: {exc!r}") from exc
        self.lags.append((self.now(), lag))
        return n, lag

    def first(self, replicas: Callable[[int], bool]) -> float | None:
        return next((t for t, n in self.replicas if replicas(n)), None)

    def peak(self) -> int:
        return max(n for _, n in self.replicas)

    def max_lag(self) -> int:
        return max((lag for _, lag in self.lags), default=0)

    def steps(self) -> str:
        """The replica changes, as `1@0s 3@35s ...`."""
        out: list[str] = []
        for t, n in self.replicas:
            if not out or not out[-1].startswith(f"{n}@"):
                out.append(f"{n}@{t:g}s")
        return " ".join(out)


class NewPods(threading.Thread):
    """Watches the worker pods that were not there at the start: when each is Ready and when
    its metrics first count a delivery (polled twice a second from the host, on the pod's IP)."""

    def __init__(self, line: Timeline, before: set[str]) -> None:
        super().__init__(daemon=True)
        self.line, self.before = line, before
        self.stop = threading.Event()
        self.ips: dict[str, str] = {}

    def run(self) -> None:
        listed = 0.0
        while not self.stop.is_set():
            if time.monotonic() - listed >= POLL_SECONDS:
                listed = time.monotonic()
                self._list()
            for name, ip in list(self.ips.items()):
                if name in self.line.first_delivery:
                    continue
                try:
                    delivered = delivered_by(ip)
                except OSError:  # not serving yet
                    continue
                if delivered > 0:
                    with self.line.lock:
                        self.line.first_delivery[name] = self.line.now()
            self.stop.wait(0.5)

    def scaled_out_pods(self) -> set[str]:
        """The pods the HPA added: all seen but the first (the one worker started under the
        backlog, seen within a poll of its start, long before any scale-out)."""
        return set(list(self.ips)[1:])

    def _list(self) -> None:
        try:
            pods = worker_pods()
        except AssertionError:  # kubectl while the API server is busy: next round
            return
        for pod in pods:
            name = pod["metadata"]["name"]
            if name in self.before:
                continue
            ip = pod.get("status", {}).get("podIP")
            if ip:
                self.ips.setdefault(name, ip)
            ready = any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in pod.get("status", {}).get("conditions") or []
            )
            if ready and name not in self.line.ready:
                with self.line.lock:
                    self.line.ready[name] = self.line.now()


def wait_progress(
    what: str, sample: Callable[[], float], done: Callable[[float], bool], stall: float
) -> None:
    """Sample until `done`; fail only when the sampled value has not fallen for `stall` seconds
    (or after LIMIT_SECONDS in all): a slow machine takes longer, a stuck one fails."""
    start = best_at = time.monotonic()
    best = math.inf
    while True:
        try:
            value = sample()
        except AssertionError:
            value = best
        if done(value):
            return
        now = time.monotonic()
        if value < best:
            best, best_at = value, now
        assert now - best_at < stall, f"{what}: no progress for {stall:g}s (at {best:g})"
        assert now - start < LIMIT_SECONDS, f"{what}: not done after {LIMIT_SECONDS:g}s"
        time.sleep(POLL_SECONDS)


async def end_offsets(servers: str, topics: tuple[str, ...]) -> dict[TopicPartition, int]:
    """The end offsets of every partition of these topics (those that exist)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=servers, request_timeout_ms=10_000)
    consumer = AIOKafkaConsumer(bootstrap_servers=servers, request_timeout_ms=10_000)
    await admin.start()
    try:
        await consumer.start()
        # only topics that exist: asking the broker about another would create it
        names = [t for t in topics if t in set(await admin.list_topics())]
        described = await admin.describe_topics(names) if names else []
        tps = [
            TopicPartition(t["topic"], p["partition"]) for t in described for p in t["partitions"]
        ]
        ends: dict[TopicPartition, int] = await consumer.end_offsets(tps)
        return ends
    finally:
        await consumer.stop()
        await admin.close()


async def read_between(
    servers: str, start: dict[TopicPartition, int], stop: dict[TopicPartition, int]
) -> list[tuple[str, bytes]]:
    """Every record of these partitions from `start` (0 for a partition not there at the start)
    up to `stop`: this run's outputs, not the earlier tests'."""
    consumer = AIOKafkaConsumer(bootstrap_servers=servers, enable_auto_commit=False, group_id=None)
    await consumer.start()
    rows: list[tuple[str, bytes]] = []
    try:
        wanted = {tp: end for tp, end in stop.items() if end > start.get(tp, 0)}
        consumer.assign(list(wanted))
        for tp in wanted:
            consumer.seek(tp, start.get(tp, 0))
        deadline = time.monotonic() + READ_SECONDS
        while wanted and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500, max_records=5000)
            for tp, messages in batch.items():
                for m in messages:
                    if m.offset < wanted.get(tp, 0):
                        rows.append((tp.topic, m.value))
                if tp in wanted and await consumer.position(tp) >= wanted[tp]:
                    del wanted[tp]
        assert not wanted, f"outputs not read to their end: {wanted}"
    finally:
        await consumer.stop()
    return rows


@dataclass
class Outcomes:
    lost: list[str]
    conflicting: list[str]
    repeats: int
    dead_letters: int


def judge(rows: list[tuple[str, bytes]], run: str, produced: int) -> Outcomes:
    """Each of this run's turns (valid replies: one delivery each) delivered once in content."""
    seen: dict[str, set[bytes]] = {}
    copies = dead = 0
    for topic, value in rows:
        if topic == DLQ_TOPIC:
            dead += run.encode() in value
            continue
        ident = str(orjson.loads(value).get("delivery_id", ""))
        if ident.startswith(run):
            seen.setdefault(ident, set()).add(value)
            copies += 1
    ids = [f"{run}t-{i}" for i in range(produced)]
    return Outcomes(
        lost=[i for i in ids if i not in seen],
        conflicting=[i for i, values in seen.items() if len(values) > 1],
        repeats=copies - sum(len(v) for v in seen.values()),
        dead_letters=dead,
    )


def test_lag_hpa_scales_out_before_cpu_would_and_in_when_drained(
    workers: str, prometheus: tuple[Prometheus, float]
) -> None:
    del prometheus  # running: the adapter asks it for the workers' lag
    target = lag_target()
    cpu = CpuRule.of_components()
    scale(1)
    wait_ready(1)
    kubectl("-n", NAMESPACE, "apply", "-f", "-", stdin=json.dumps(lag_hpa_manifest()))
    try:
        wait_for(
            "the HPA to read the lag metric",
            lambda: hpa_lag(hpa_status()) is not None,
            METRIC_SECONDS,
            poll=POLL_SECONDS,
        )
        wait_for(
            "the lag below target before the backlog",
            lambda: external_lag() < target,
            METRIC_SECONDS,
            POLL_SECONDS,
        )
        outputs = (DELIVERY_TOPIC, DLQ_TOPIC)
        start = asyncio.run(end_offsets(workers, outputs))
        scale(0)  # the HPA leaves a Deployment at 0 replicas alone
        wait_ready(0)
        run = new_run()
        producer = Producer(
            workers, int(RATE * SCALE_OUT_SECONDS), RATE, plain=True, parts=PARTS, prefix=run
        )
        line = Timeline(workers, cpu)
        watcher = NewPods(line, set())
        producer.start()
        watcher.start()
        try:
            try:
                wait_progress(
                    f"{BACKLOG} turns offered with no worker running",
                    lambda: float(BACKLOG - producer.produced),
                    lambda v: v <= 0 or producer.done.is_set(),
                    STALL_SECONDS,
                )
                scale(1)
                wait_for(
                    "the HPA to scale out",
                    lambda: line.sample()[0] > 1,
                    SCALE_OUT_SECONDS,
                    POLL_SECONDS,
                )
            finally:
                producer.stop.set()
                producer.join(120)
            assert producer.error is None, producer.error
            scaled_out = line.first(lambda n: n > 1)
            assert scaled_out is not None
            cpu_above = line.cpu_above
            wait_for(
                "a new pod's first delivery",
                lambda: watcher.scaled_out_pods() & set(line.first_delivery),
                DELIVERY_SECONDS,
                POLL_SECONDS,
            )
            wait_progress(
                "the backlog to drain",
                lambda: float(line.sample()[1]),
                lambda v: v == 0,
                STALL_SECONDS,
            )
            drained = line.now()
            wait_progress(
                "the HPA to scale back in to 1",
                lambda: float(line.sample()[0]),
                lambda v: v == 1,
                STALL_SECONDS,
            )
            back_in = line.now()
        finally:
            watcher.stop.set()
            watcher.join(10)
    finally:
        kubectl("-n", NAMESPACE, "delete", "hpa", "replygate", "--ignore-not-found")
    produced = producer.produced
    stop = asyncio.run(end_offsets(workers, outputs))
    outcomes = judge(asyncio.run(read_between(workers, start, stop)), run, produced)
    first_pod, first_delivery = min(
        ((pod, t) for pod, t in line.first_delivery.items() if pod in watcher.scaled_out_pods()),
        key=lambda kv: kv[1],
    )
    cpu_earliest = None if cpu_above is None else cpu_above - POLL_SECONDS + cpu.window_s
    report = (
        f"lag hpa (target {target:g} per pod): {produced} turns offered at up to {RATE:g}/s from "
        f"0 s (the backlog's start); the HPA's metric first above target at "
        f"{next((t for t, v in line.metric if v > target), float('nan')):g} s; scaled out at "
        f"{scaled_out:g} s (CPU over its target first read at "
        f"{'-' if cpu_above is None else f'{cpu_above:g} s'}, so the CPU HPA not before "
        f"{'-' if cpu_earliest is None else f'{cpu_earliest:g} s'}); new pod {first_pod} Ready "
        f"at {line.ready.get(first_pod, float('nan')):g} s, its first delivery at "
        f"{first_delivery:g} s; drained at {drained:g} s (group lag peak {line.max_lag()}, the "
        f"HPA's metric peak {max((v for _, v in line.metric), default=0):g}); back to 1 at "
        f"{back_in:g} s; peak {line.peak()} replicas; replicas {line.steps()}; lost "
        f"{len(outcomes.lost)}, conflicting {len(outcomes.conflicting)}, repeats "
        f"{outcomes.repeats}, dead letters {outcomes.dead_letters}\n"
    )
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(report)
    print(report, end="")
    assert not outcomes.lost, outcomes.lost[:20]
    assert not outcomes.conflicting, outcomes.conflicting[:20]
    assert outcomes.dead_letters == 0
    assert line.max_lag() > target  # a backlog, not only a busy pod
    assert 1 < line.peak() <= PARTITIONS
    # before CPU alone would: the CPU HPA had not yet seen its window pass over high CPU
    assert cpu_earliest is None or scaled_out < cpu_earliest, report
    assert first_delivery >= scaled_out
