"""The lag autoscaler's manifests: deploy/k8s/components/hpa-lag renders with the base and
validates, its HPA asks for the External metric that the component's prometheus-adapter rule
names, and that rule's query, run by promtool on made-up series, sums the workers' lag once per
input partition and only in the HPA's namespace. The local cluster's APIService manifests
(deploy/k8s-local) validate too. The autoscaling itself runs in tests/k8s/test_lag_autoscale.py."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.test_deploy import (
    BASE,
    K8S,
    K8S_VERSIONS,
    ROOT,
    build,
    by_kind,
    config_data,
    defined_series,
    one,
    run,
    tool,
)

COMPONENT = K8S / "components" / "hpa-lag"
RULES = COMPONENT / "prometheus-adapter.yaml"
LOCAL = ROOT / "deploy" / "k8s-local"


def render_with_base(tmp_path: Path, components: list[Path]) -> tuple[dict[str, Any], ...]:
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(BASE, tmp_path)],
                "components": [os.path.relpath(c, tmp_path) for c in components],
            }
        )
    )
    return build(str(tmp_path))


def external_rule() -> dict[str, Any]:
    (rule,) = yaml.safe_load(RULES.read_text())["externalRules"]
    assert isinstance(rule, dict)
    return rule


# alone on the base's Deployment, and before the StatefulSet component (production)
@pytest.mark.parametrize("more", [[], [K8S / "components" / "stateful"]])
def test_lag_component_renders_and_validates(tmp_path: Path, more: list[Path]) -> None:
    docs = render_with_base(tmp_path, [COMPONENT, *more])
    hpa = one(docs, "HorizontalPodAutoscaler")
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(hpa, version, strict=True)
    spec = hpa["spec"]
    target = spec["scaleTargetRef"]  # the workers, whatever kind of workload the base makes
    assert [
        d for d in docs if d["kind"] == target["kind"] and d["metadata"]["name"] == target["name"]
    ] == [one(docs, target["kind"])]
    assert spec["minReplicas"] <= spec["maxReplicas"]
    assert spec["maxReplicas"] <= int(config_data(docs)["REPLYGATE_PARTITIONS"])
    (metric,) = spec["metrics"]
    assert metric["type"] == "External"
    assert metric["external"]["target"]["type"] == "AverageValue"
    assert not by_kind(docs, "ScaledObject")


def test_hpa_asks_for_the_metric_the_adapter_serves() -> None:
    hpa = yaml.safe_load((COMPONENT / "hpa.yaml").read_text())
    (metric,) = hpa["spec"]["metrics"]
    rule = external_rule()
    assert metric["external"]["metric"]["name"] == rule["name"]["as"]
    # the series the rule discovers is one the worker exports, and the rule renames exactly it
    series = rule["seriesQuery"].split("{", 1)[0]
    assert series in defined_series()
    assert series == rule["name"]["matches"].strip("^$")
    # the namespace of the HPA selects the series: one deployment's workers, not another's
    assert rule["resources"]["overrides"]["namespace"] == {"resource": "namespace"}


def adapter_query(matchers: str) -> str:
    """The rule's metricsQuery as the adapter fills it for a namespace."""
    rule = external_rule()
    series = rule["seriesQuery"].split("{", 1)[0]
    query: str = rule["metricsQuery"]
    return query.replace("<<.Series>>", series).replace("<<.LabelMatchers>>", matchers)


def lag_series(ns: str, pod: str, topic: str, partition: int, values: str) -> dict[str, str]:
    labels = f'namespace="{ns}",pod="{pod}",topic="{topic}",partition="{partition}"'
    return {"series": f"replygate_consumer_lag{{{labels}}}", "values": values}


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        # a partition moving: the old and the new owner both report it for a moment
        (
            [("a", "replies.raw", 0, "100"), ("b", "replies.raw", 0, "100")],
            100,
        ),
        # two workers, two topics: everything the group has not read
        (
            [
                ("a", "replies.raw", 0, "700"),
                ("a", "turns.control", 0, "5"),
                ("b", "replies.raw", 1, "300"),
            ],
            1005,
        ),
    ],
)
def test_adapter_query_counts_each_partition_once_in_its_namespace(
    tmp_path: Path, pods: list[tuple[str, str, int, str]], expected: int
) -> None:
    series = [lag_series("replygate", pod, t, p, v) for pod, t, p, v in pods]
    series.append(lag_series("other", "x", "replies.raw", 0, "9999"))  # another deployment
    (tmp_path / "rules.yml").write_text(
        yaml.safe_dump(
            {"groups": [{"name": "adapter", "rules": [{"record": "input_lag", "expr": "0"}]}]}
        )
    )
    (tmp_path / "test.yml").write_text(
        yaml.safe_dump(
            {
                "rule_files": ["rules.yml"],
                "evaluation_interval": "1m",
                "tests": [
                    {
                        "interval": "1m",
                        "input_series": series,
                        "promql_expr_test": [
                            {
                                "expr": adapter_query('namespace="replygate"'),
                                "eval_time": "0m",
                                "exp_samples": [{"labels": "{}", "value": expected}],
                            }
                        ],
                    }
                ],
            }
        )
    )
    proc = run(tool("promtool"), "test", "rules", "test.yml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_adapter_query_check_fails_on_a_wrong_sum(tmp_path: Path) -> None:
    """The promtool check above can fail: the same series, a wrong expectation."""
    (tmp_path / "rules.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "a", "rules": [{"record": "x", "expr": "0"}]}]})
    )
    test = {
        "rule_files": ["rules.yml"],
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    lag_series("replygate", "a", "replies.raw", 0, "100"),
                    lag_series("replygate", "b", "replies.raw", 0, "100"),
                ],
                "promql_expr_test": [
                    {
                        "expr": adapter_query('namespace="replygate"'),
                        "eval_time": "0m",
                        "exp_samples": [{"labels": "{}", "value": 200}],
                    }
                ],
            }
        ],
    }
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    proc = run(tool("promtool"), "test", "rules", "test.yml", cwd=tmp_path)
    assert proc.returncode != 0


@pytest.mark.parametrize("name", ["prometheus-adapter.yaml", "metrics-server.yaml"])
def test_local_cluster_api_services_validate(name: str) -> None:
    docs = [d for d in yaml.safe_load_all((LOCAL / name).read_text()) if d]
    assert {d["kind"] for d in docs} == {"Service", "Endpoints", "APIService"}
    for doc in docs:
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
    service = one(tuple(docs), "Service")
    api = one(tuple(docs), "APIService")
    assert api["spec"]["service"]["name"] == service["metadata"]["name"]
    assert api["spec"]["service"]["namespace"] == service["metadata"]["namespace"]


def test_local_cluster_runs_the_adapter_with_the_component_rule() -> None:
    """cluster-up.sh gives the adapter this very rule file: the cluster test proves the rule
    the docs tell a cluster's adapter to use."""
    script = (LOCAL / "cluster-up.sh").read_text()
    assert '--config="$REPO/deploy/k8s/components/hpa-lag/prometheus-adapter.yaml"' in script
    api = one(
        tuple(d for d in yaml.safe_load_all((LOCAL / "prometheus-adapter.yaml").read_text()) if d),
        "APIService",
    )
    assert api["spec"]["group"] == "external.metrics.k8s.io"
