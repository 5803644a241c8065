"""Autoscaling, for real: the HorizontalPodAutoscaler of deploy/k8s/components/hpa (CPU, read
from metrics-server, which cluster-up.sh builds and starts) scales the workers out under a
backlog and back in once it has drained, never past the partition count. The test shortens
the HPA's windows so that a run takes minutes; the target and the metric are the component's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.k8s.kube import REPO, kubectl, scale, wait_for, wait_ready
from tests.k8s.traffic import Producer

PARTITIONS = 4  # REPLYGATE_PARTITIONS of the local overlay
BACKLOG = 40_000  # outlasts metrics-server's 15 s resolution and the HPA sync, drains in minutes
REPORT = Path(".run") / "k8s-autoscale-report.txt"


def hpa_manifest() -> dict[str, Any]:
    """The component's HPA, with windows of seconds instead of minutes and the local bounds."""
    doc: dict[str, Any] = yaml.safe_load((REPO / "deploy/k8s/components/hpa/hpa.yaml").read_text())
    spec = doc["spec"]
    spec["minReplicas"], spec["maxReplicas"] = 1, PARTITIONS
    spec["behavior"] = {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 15}],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": 30,
            "policies": [{"type": "Pods", "value": 2, "periodSeconds": 15}],
        },
    }
    return doc


def hpa_status() -> dict[str, Any]:
    out = kubectl("-n", "replygate", "get", "hpa", "replygate", "-o", "json")
    status: dict[str, Any] = json.loads(out)["status"]
    return status


def test_hpa_scales_out_under_backlog_and_in_when_drained(workers: str) -> None:
    scale(1)
    wait_ready(1)
    kubectl("-n", "replygate", "apply", "-f", "-", stdin=json.dumps(hpa_manifest()))
    seen: list[int] = []

    def replicas() -> int:
        n = int(hpa_status().get("currentReplicas") or 0)
        seen.append(n)
        return n

    try:
        wait_for(
            "the HPA to read CPU metrics", lambda: hpa_status().get("currentMetrics"), 180, poll=5
        )
        producer = Producer(workers, BACKLOG, rate=5000.0)
        producer.start()
        wait_for("the HPA to scale out", lambda: replicas() > 1, 420, poll=5)
        producer.join(600)
        wait_for("the HPA to scale back in to 1", lambda: replicas() == 1, 900, poll=5)
    finally:
        kubectl("-n", "replygate", "delete", "hpa", "replygate", "--ignore-not-found")
    peak = max(seen)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(f"hpa: 1 -> {peak} replicas under a {BACKLOG}-turn backlog, back to 1\n")
    assert 1 < peak <= PARTITIONS
