"""The policy's operations artefacts: the dashboard's policy panels and the alert on workers
enforcing different versions, checked against what a worker's `PolicyMetrics` really exports
(promtool evaluates the alert rules over the series two workers' registries expose).

promtool is installed by scripts/install-tools.sh; a missing one fails (tests/deploy/test_deploy.py
has the helpers). The rules' own unit tests are in deploy/prometheus/alerts_test.yml.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from streams.policy.metrics import PolicyMetrics
from tests.deploy.test_deploy import DASHBOARD, PROM, ROOT, alerts, run, tool

VERSIONS_DIFFER = "ReplygatePolicyVersionsDiffer"
REFUSED = "ReplygatePolicyRefused"
A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64
# the labels Prometheus adds to every scraped series
TARGET_LABELS = frozenset({"job", "instance"})
BY = re.compile(r"\bby \(([^)]*)\)")
METRIC = re.compile(r"\b(replygate_policy_[a-z_]+)\b")


def worker(active: str, shadow: str | None = None, refused: int = 0) -> CollectorRegistry:
    """A worker's policy series, as `PolicyMetrics` sets them when it holds these versions."""
    registry = CollectorRegistry()
    metrics = PolicyMetrics(registry, platforms=["im"], contracts=["im.segments.v1"])
    metrics.held("active", "settings")  # what every worker holds before any bundle
    metrics.held("active", active)
    metrics.held("shadow", shadow)
    for _ in range(refused):
        metrics.refused()
    if shadow is not None:
        metrics.disagreement("im", "im.segments.v1", "masking")
    return registry


def series(registry: CollectorRegistry, instance: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples a scrape of this registry gives Prometheus, with the target's labels."""
    out = []
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for sample in family.samples:
            labels = dict(sample.labels, job="replygate", instance=instance)
            out.append((sample.name, labels, sample.value))
    return out


def promtool_case(
    name: str, workers: dict[str, CollectorRegistry], eval_time: str, expected: list[Any]
) -> dict[str, Any]:
    """A promtool test: every worker's samples held constant for 10 minutes (scraped each 15 s)."""
    inputs = []
    for instance, registry in workers.items():
        for metric, labels, value in series(registry, instance):
            body = ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            inputs.append({"series": f"{metric}{{{body}}}", "values": f"{value:g}x40"})
    return {
        "name": name,
        "interval": "15s",
        "input_series": inputs,
        "alert_rule_test": [
            {"eval_time": eval_time, "alertname": VERSIONS_DIFFER, "exp_alerts": expected}
        ],
    }


def rule(name: str) -> dict[str, Any]:
    found = [r for g in alerts()["groups"] for r in g["rules"] if r.get("alert") == name]
    assert len(found) == 1, name
    return found[0]


def promtool_test(tmp_path: Path, cases: list[dict[str, Any]]) -> str:
    shutil.copy(PROM / "alerts.yml", tmp_path / "alerts.yml")
    doc = {"rule_files": ["alerts.yml"], "evaluation_interval": "15s", "tests": cases}
    (tmp_path / "policy_test.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    proc = run(tool("promtool"), "test", "rules", "policy_test.yml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_alert_fires_on_two_workers_exports_of_different_versions(tmp_path: Path) -> None:
    annotations = {
        k: v.replace("{{ $value }}", "2") for k, v in rule(VERSIONS_DIFFER)["annotations"].items()
    }
    firing = {"exp_labels": {"severity": "warning"}, "exp_annotations": annotations}
    differ = {"worker-0:9108": worker(A), "worker-1:9108": worker(B, shadow=A)}
    agree = {"worker-0:9108": worker(B, shadow=A), "worker-1:9108": worker(B, refused=1)}
    settings = {"worker-0:9108": worker("settings"), "worker-1:9108": worker(A)}
    promtool_test(
        tmp_path,
        [
            promtool_case("two versions, 45 s: pending only", differ, "45s", []),
            promtool_case("two versions, 2 minutes", differ, "2m", [firing]),
            # a shadow is not enforced: one active version with a shadow beside it is agreement
            promtool_case("one active version, shadows beside it", agree, "5m", []),
            # a worker still on its settings file is a different version too
            promtool_case("settings file and a bundle", settings, "2m", [firing]),
        ],
    )


def test_the_alert_test_above_can_fail(tmp_path: Path) -> None:
    """promtool really evaluates the rule on those series: expecting silence where two
    versions are enforced fails."""
    differ = {"worker-0:9108": worker(A), "worker-1:9108": worker(B)}
    shutil.copy(PROM / "alerts.yml", tmp_path / "alerts.yml")
    doc = {
        "rule_files": ["alerts.yml"],
        "evaluation_interval": "15s",
        "tests": [promtool_case("wrong", differ, "2m", [])],
    }
    (tmp_path / "t.yml").write_text(yaml.safe_dump(doc), encoding="utf-8")
    proc = run(tool("promtool"), "test", "rules", "t.yml", cwd=tmp_path)
    assert proc.returncode != 0 and VERSIONS_DIFFER in proc.stdout + proc.stderr


def test_the_alert_is_the_count_of_active_versions_held_for_a_minute() -> None:
    differ = rule(VERSIONS_DIFFER)
    assert differ["for"] == "1m"
    assert 'role="active"' in differ["expr"] and "count by (version)" in differ["expr"]
    assert differ["labels"]["severity"] == "warning"
    assert "replygate policy status" in differ["annotations"]["description"]
    refused = rule(REFUSED)
    assert "replygate_policy_refused_total" in refused["expr"]


def policy_panels() -> list[dict[str, Any]]:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [
        p
        for p in dash["panels"]
        if any("replygate_policy_" in t.get("expr", "") for t in p.get("targets", []))
    ]


def test_the_dashboard_shows_versions_per_worker_disagreements_and_refusals() -> None:
    panels = policy_panels()
    exprs = [t["expr"] for p in panels for t in p["targets"]]
    titles = [p["title"].lower() for p in panels]
    assert any("per worker" in t for t in titles)
    assert any(
        "instance" in by and "version" in by
        for e in exprs
        if "replygate_policy_info" in e
        for by in BY.findall(e)
    ), "no panel shows the version each worker holds"
    assert any("shadow disagreements" in t for t in titles)
    assert any("kind" in by for e in exprs if "disagreements" in e for by in BY.findall(e)), (
        "no panel splits the disagreements by kind"
    )
    assert any("replygate_policy_refused_total" in e for e in exprs)
    # the row the panels sit under
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert any(p["type"] == "row" and p["title"] == "Policy" for p in dash["panels"])


def test_the_policy_panels_group_only_by_labels_the_metrics_have() -> None:
    """A `by (...)` naming a label the metric lacks gives one unlabelled line, silently: each
    label a policy panel groups by is one `PolicyMetrics` exports (or a target label)."""
    registry = worker(A, shadow=B, refused=1)
    labels: dict[str, set[str]] = {}
    for name, sample_labels, _ in series(registry, "w:9108"):
        labels.setdefault(name, set()).update(sample_labels)
    for panel in policy_panels():
        for target in panel["targets"]:
            (metric,) = set(METRIC.findall(target["expr"]))
            assert metric in labels, (panel["title"], metric)
            for by in BY.findall(target["expr"]):
                wanted = {label.strip() for label in by.split(",") if label.strip()}
                assert wanted <= labels[metric] | TARGET_LABELS, (panel["title"], wanted)


def test_the_rollout_procedure_names_only_real_commands() -> None:
    """docs/operations.md's rollout: check, publish --shadow, watch, promote, rollback; each
    `replygate ...` command it shows is one the CLI parses."""
    from streams.cli.main import _build_parser

    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("## Rolling out a policy", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^\s*(replygate [^#\n]*?)\s*(?:#.*)?$", section, re.MULTILINE)
    steps = ("policy check", "policy publish --shadow", "policy promote", "policy rollback")
    for step in (*steps, "audit", "policy status"):
        assert any(c.startswith(f"replygate {step}") for c in commands), step
    parser = _build_parser()
    for command in commands:
        args = [a for a in command.split()[1:] if a != "-f"]
        parser.parse_args(args)  # exits 2 on an unknown command or option
