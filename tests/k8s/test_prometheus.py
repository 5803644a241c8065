"""Prometheus in the loop: Prometheus discovered the worker pods through the Kubernetes API
(`kubernetes_sd_configs`, role pod, by their annotations; tests/k8s/prometheus.py) and scraped
them through the scale test, loaded the alert rules, answers every expression of the Grafana
dashboard with data, and the worker-absent alert goes pending with the workers scaled to 0 and
a backlog waiting."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import yaml

from tests.k8s.kube import REPO, scale, wait_for, wait_ready
from tests.k8s.prometheus import Prometheus
from tests.k8s.traffic import turn
from tests.support.kafka import produce
from tests.support.samples import im_text

DASHBOARD = REPO / "deploy/grafana/dashboards/replygate.json"
# Grafana's variables as the dashboard's defaults resolve them, for a query at a time.
VARIABLES = {"$__rate_interval": "1m", "$__range": "15m", "$job": "replygate", "$instance": ".*"}


def dashboard_expressions() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [t["expr"] for p in panels for t in p.get("targets", []) if t.get("expr")]


def resolve(expr: str) -> str:
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    return expr


def has_data(prom: Prometheus, expr: str, start: float) -> bool:
    data = prom.api(
        "query_range", query=expr, start=f"{start:.0f}", end=f"{time.time():.0f}", step="15"
    )
    return bool(data["result"])


def test_pods_discovered_and_scraped_through_the_scale(
    prometheus: tuple[Prometheus, float],
) -> None:
    prom, started = prometheus
    data = prom.api("query", query='max_over_time(count(up{job="replygate"} == 1)[30m:5s])')
    assert data["result"], "no replygate target was ever up"
    assert float(data["result"][0]["value"][1]) >= 4  # the 4 replicas of the scale test
    targets = prom.api("targets", state="active")["activeTargets"]
    assert targets and all(t["labels"]["pod"].startswith("replygate-") for t in targets)
    # found by the Kubernetes discovery: the API server's labels for the pod, its annotations
    found = [t["discoveredLabels"] for t in targets]
    assert all(d["__meta_kubernetes_pod_annotation_prometheus_io_scrape"] == "true" for d in found)
    # and a pod that does not ask to be scraped (the topics Job's) is dropped by the relabelling
    dropped = prom.api("targets", state="dropped")["droppedTargets"]
    assert any(
        d["discoveredLabels"].get("__meta_kubernetes_pod_name", "").startswith("replygate-topics")
        for d in dropped
    )
    del started


def test_alert_rules_loaded(prometheus: tuple[Prometheus, float]) -> None:
    prom, _ = prometheus
    want = {
        r["alert"]
        for g in yaml.safe_load((REPO / "deploy/prometheus/alerts.yml").read_text())["groups"]
        for r in g["rules"]
    }
    groups = prom.api("rules")["groups"]
    assert {r["name"] for g in groups for r in g["rules"]} == want


def rare_outcomes() -> list[tuple[str, Any]]:
    """What the scale test's turns never cause: a dead letter (not JSON) and an attachment
    notice (an image at a path that does not exist), so their panels have data too."""
    image = [{"type": "image", "data": {"media": {"kind": "path", "value": "missing.png"}}}]
    conv, reply = turn(200_001)
    reply["output"] = {"text": im_text(image)}
    return [("c-dlq", b"not json"), (conv, reply)]


def test_every_dashboard_expression_returns_data(
    prometheus: tuple[Prometheus, float], workers: str
) -> None:
    prom, started = prometheus
    asyncio.run(produce("replies.raw", rare_outcomes(), servers=workers))
    expressions = [resolve(e) for e in dashboard_expressions()]

    def empty() -> list[str]:
        return [e for e in expressions if not has_data(prom, e, started)]

    # a new series needs two scrapes before a rate over it has a value; then judge what is left
    with contextlib.suppress(AssertionError):
        wait_for("every dashboard expression to have data", lambda: not empty(), 120, poll=5)
    missing = empty()
    assert not missing, "no data for:\n" + "\n".join(missing)


def _alert_states(prom: Prometheus) -> dict[str, str]:
    alerts: list[dict[str, Any]] = prom.api("alerts")["alerts"]
    return {a["labels"]["alertname"]: a["state"] for a in alerts}


def test_worker_absent_alert_pending_when_scaled_to_zero(
    prometheus: tuple[Prometheus, float], workers: str
) -> None:
    prom, _ = prometheus
    scale(0)
    wait_ready(0)
    asyncio.run(produce("replies.raw", [turn(i) for i in range(100_000, 100_500)], servers=workers))
    states = wait_for(
        "ReplygateWorkerAbsent to go pending",
        lambda: (s := _alert_states(prom)).get("ReplygateWorkerAbsent") and s,
        120,
        poll=2,
    )
    assert states["ReplygateWorkerAbsent"] == "pending"
    scale(1)
    wait_ready(1)
