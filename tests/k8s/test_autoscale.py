"""Autoscaling, for real: the HorizontalPodAutoscaler of deploy/k8s/components/hpa (CPU, read
from metrics-server, which cluster-up.sh builds and starts) scales the workers out under a
backlog and back in once it has drained, never past the partition count.

The load is bounded by time, not by size: valid replies are offered faster than one worker
handles them until the HPA scales out, then no more (so the backlog is as large as the HPA's
reaction time makes it, whatever the machine's speed). The backlog must then drain (the group's
lag, read from the broker, reaches 0) and the HPA go back to 1 replica. Valid replies only, so
that a lag of 0 means the work is done (a correction goes on after its reply's offset is
committed; the scale test covers corrections). The target, the metric and the
scale-up behaviour are the component's: its 60 s scale-up window rides over the CPU that every
rebalance costs (the pods that take partitions over restore their state from the changelog for
seconds), which with no window made the HPA scale out again after each step in and never reach
1. Only the scale-down window is shortened, from minutes to seconds."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiokafka.errors import KafkaError

from streams.errors import RuntimeFailure
from tests.k8s.kube import REPO, kubectl, scale, wait_for, wait_ready
from tests.k8s.traffic import Producer, group_lag

PARTITIONS = 4  # REPLYGATE_PARTITIONS of the local overlay
# Turns of PARTS segments each, offered at RATE a second until the HPA scales out: twice the
# work a turn that one worker (CPU limit 1 core) checked 680-880 of a second on the 2-core test
# machine (docs/scaling.md), so a backlog builds with room to spare where the gate is faster
# (at 100 segments a faster gate once kept up within 4 s of the rate). Many short segments make
# a turn more work for the worker, not much more for the producer or the broker (~11 KB).
RATE = 1500.0
PARTS = 200
# A backlog, not only a busy pod: more turns wait than 5 s of the rate reached (a worker that
# keeps up leaves about one commit interval, 2.8 s, uncommitted).
BACKLOG_SECONDS = 5.0
METRICS_SECONDS = 180.0  # metrics-server's first reading of the pod
SCALE_OUT_SECONDS = 300.0  # 15 s metrics + the 60 s scale-up window + syncs, with room
DRAIN_SECONDS = 420.0
SCALE_IN_SECONDS = 300.0
POLL_SECONDS = 5.0
REPORT = Path(".run") / "k8s-autoscale-report.txt"


def hpa_manifest() -> dict[str, Any]:
    """The component's HPA with the local bounds and a scale-down window of seconds."""
    doc: dict[str, Any] = yaml.safe_load((REPO / "deploy/k8s/components/hpa/hpa.yaml").read_text())
    spec = doc["spec"]
    spec["minReplicas"], spec["maxReplicas"] = 1, PARTITIONS
    spec["behavior"]["scaleDown"] = {
        "stabilizationWindowSeconds": 30,
        "policies": [{"type": "Pods", "value": 2, "periodSeconds": 15}],
    }
    return doc


def hpa_status() -> dict[str, Any]:
    out = kubectl("-n", "replygate", "get", "hpa", "replygate", "-o", "json")
    status: dict[str, Any] = json.loads(out)["status"]
    return status


@dataclass
class Timeline:
    """The HPA's replica count and the group's lag, sampled with the seconds since the start."""

    servers: str
    t0: float = field(default_factory=time.monotonic)
    replicas: list[tuple[float, int]] = field(default_factory=list)
    lags: list[tuple[float, int]] = field(default_factory=list)

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 1)

    def sample(self) -> tuple[int, int]:
        n = int(hpa_status().get("currentReplicas") or 0)
        self.replicas.append((self.now(), n))
        try:
            lag = asyncio.run(group_lag(self.servers))
        except (KafkaError, RuntimeFailure, OSError) as exc:  # wait_for tries again
            raise AssertionError(f"the lag was not read: {exc!r}") from exc
        self.lags.append((self.now(), lag))
        return n, lag

    def peak(self) -> int:
        return max(n for _, n in self.replicas)

    def max_lag(self) -> int:
        return max(lag for _, lag in self.lags)

    def steps(self) -> str:
        """The replica changes, as `1@0s 3@95s ...`."""
        out: list[str] = []
        for t, n in self.replicas:
            if not out or not out[-1].startswith(f"{n}@"):
                out.append(f"{n}@{t:g}s")
        return " ".join(out)


def test_hpa_scales_out_under_backlog_and_in_when_drained(workers: str) -> None:
    scale(1)
    wait_ready(1)
    kubectl("-n", "replygate", "apply", "-f", "-", stdin=json.dumps(hpa_manifest()))
    try:
        wait_for(
            "the HPA to read CPU metrics",
            lambda: hpa_status().get("currentMetrics"),
            METRICS_SECONDS,
            poll=POLL_SECONDS,
        )
        line = Timeline(workers)
        producer = Producer(workers, int(RATE * SCALE_OUT_SECONDS), RATE, plain=True, parts=PARTS)
        producer.start()
        try:
            wait_for(
                "the HPA to scale out",
                lambda: line.sample()[0] > 1,
                SCALE_OUT_SECONDS,
                POLL_SECONDS,
            )
        finally:
            producer.stop.set()
            producer.join(60)
        scaled_out, produced = line.now(), producer.produced
        backlog = line.max_lag()
        assert producer.error is None, producer.error
        wait_for("the backlog to drain", lambda: line.sample()[1] == 0, DRAIN_SECONDS, POLL_SECONDS)
        drained = line.now()
        wait_for(
            "the HPA to scale back in to 1",
            lambda: line.sample()[0] == 1,
            SCALE_IN_SECONDS,
            POLL_SECONDS,
        )
    finally:
        kubectl("-n", "replygate", "delete", "hpa", "replygate", "--ignore-not-found")
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(
        f"hpa: {produced} turns offered at {RATE:g}/s until it scaled out at {scaled_out:g} s "
        f"(the lag peaked at {backlog} records), drained at {drained:g} s, back to 1 at "
        f"{line.now():g} s; peak {line.peak()} replicas; replicas {line.steps()}\n"
    )
    assert backlog > produced / scaled_out * BACKLOG_SECONDS  # the rate the producer reached
    assert 1 < line.peak() <= PARTITIONS
