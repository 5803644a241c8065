"""Deployment artefacts: kustomize renders that validate, alert rules that promtool accepts and
unit-tests, a dashboard that only uses metrics streams/ops/metrics.py defines, a compose file that
`docker compose config` accepts, and a hardened Dockerfile.

promtool, kustomize and the docker compose plugin are installed by scripts/install-tools.sh; a
missing one fails the test (none skips). The stack itself runs in tests/deploy/test_containers.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from streams.ops.metrics import Metrics
from streams.policy.metrics import PolicyMetrics

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
PROM = DEPLOY / "prometheus"
GRAFANA = DEPLOY / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "replygate.json"
K8S_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())
CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "ScaledObject", "TriggerAuthentication"}
EXPECTED_ALERTS = {
    "ReplygateWorkerDown",
    "ReplygateWorkerAbsent",
    "ReplygateConsumerLagGrowing",
    "ReplygateDeadLetters",
    "ReplygateFailureNoticeRatioHigh",
    "ReplygateCorrectionDeadlinesExpiring",
    "ReplygateLeakSpike",
    "ReplygatePolicyVersionsDiffer",
    "ReplygatePolicyRefused",
}
INSTALL_HINT = "run scripts/install-tools.sh (make test does) to install it"


# ------------------------------------------------------------------ tools
def tool(name: str) -> str:
    """The tool's path, or a loud failure: these tests must not silently skip."""
    found = shutil.which(name)
    if found:
        return found
    for candidate in (Path.home() / "go" / "bin" / name, ROOT / ".tools" / "bin" / name):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    pytest.fail(f"{name} is not installed: {INSTALL_HINT}")


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@cache
def build(path: str) -> tuple[dict[str, Any], ...]:
    proc = run(tool("kustomize"), "build", path)
    assert proc.returncode == 0, proc.stderr
    return tuple(d for d in yaml.safe_load_all(proc.stdout) if d)


def by_kind(docs: tuple[dict[str, Any], ...], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: tuple[dict[str, Any], ...], kind: str) -> dict[str, Any]:
    found = by_kind(docs, kind)
    assert len(found) == 1, (kind, len(found))
    return found[0]


# The workers: a Deployment in the base (development), a StatefulSet in production
# (components/stateful, which the example overlay uses).
WORKER_KINDS = ("Deployment", "StatefulSet")


def workers(docs: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] in WORKER_KINDS]
    assert len(found) == 1, [d["kind"] for d in found]
    return found[0]


BASE = str(K8S / "base")
OVERLAY = str(K8S / "overlays" / "example")


# ------------------------------------------------------------------ kubernetes
@pytest.mark.parametrize("path", [BASE, OVERLAY])
def test_kustomize_render_validates(path: str) -> None:
    docs = build(path)
    kinds = {d["kind"] for d in docs}
    assert kinds & set(WORKER_KINDS)
    assert {
        "ConfigMap",
        "Service",
        "ServiceMonitor",
        "PrometheusRule",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "Job",
        "ServiceAccount",
    } <= kinds
    for doc in docs:
        if doc["kind"] in CRD_KINDS:
            continue
        for version in K8S_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{doc['kind']}/{doc['metadata']['name']} (k8s {version}): {exc}")


def test_validation_is_strict() -> None:
    """kubernetes-validate really checks: a misspelt field of a rendered Deployment is an error."""
    dep = json.loads(json.dumps(one(build(BASE), "Deployment")))
    dep["spec"]["template"]["spec"]["containers"][0]["securityContext"]["readOnlyRootFs"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, K8S_VERSIONS[-1], strict=True)


def test_overlay_adds_the_lag_autoscaler_namespace_and_example_secret() -> None:
    docs = build(OVERLAY)
    assert {"Namespace", "Secret", "HorizontalPodAutoscaler"} <= {d["kind"] for d in docs}
    assert not by_kind(docs, "ScaledObject")  # KEDA is the option the tests do not run
    hpa = one(docs, "HorizontalPodAutoscaler")
    (metric,) = hpa["spec"]["metrics"]
    assert metric["external"]["metric"]["name"] == "replygate_input_lag"
    assert hpa["spec"]["maxReplicas"] == int(config_data(docs)["REPLYGATE_PARTITIONS"])
    ns = one(docs, "Namespace")["metadata"]["name"]
    assert all(d["metadata"].get("namespace") == ns for d in docs if d["kind"] != "Namespace")
    image = workers(docs)["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image != "replygate:latest"


def test_base_commits_no_secret_and_overlay_secret_is_a_placeholder() -> None:
    assert not by_kind(build(BASE), "Secret")
    secret = one(build(OVERLAY), "Secret")
    assert "stringData" not in secret
    import base64

    password = base64.b64decode(secret["data"]["password"]).decode()
    assert "CHANGE-ME" in password
    # No committed file anywhere under deploy/k8s is a Secret manifest.
    for path in K8S.rglob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            assert not (isinstance(doc, dict) and doc.get("kind") == "Secret"), path


def config_data(docs: tuple[dict[str, Any], ...]) -> dict[str, str]:
    data: dict[str, str] = one(docs, "ConfigMap")["data"]
    return data


def pod_specs(docs: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    return [d["spec"]["template"]["spec"] for d in docs if d["kind"] in (*WORKER_KINDS, "Job")]


@pytest.mark.parametrize("path", [BASE, OVERLAY])
def test_pods_are_hardened(path: str) -> None:
    docs = build(path)
    for spec in pod_specs(docs):
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        assert spec["automountServiceAccountToken"] is False
        mounts_by_volume = {v["name"]: v for v in spec["volumes"]}
        for c in spec["containers"]:
            sc = c["securityContext"]
            assert sc["runAsNonRoot"] is True
            assert sc["readOnlyRootFilesystem"] is True
            assert sc["allowPrivilegeEscalation"] is False
            assert sc["capabilities"]["drop"] == ["ALL"]
            assert c["resources"]["requests"] and c["resources"]["limits"]["memory"]
            mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
            assert "emptyDir" in mounts_by_volume[mounts["/tmp"]]


def test_deployment_probes_ports_and_data_dir() -> None:
    docs = build(OVERLAY)
    config = config_data(docs)
    dep = workers(docs)
    spec = dep["spec"]["template"]["spec"]
    (c,) = spec["containers"]
    assert c["args"] == ["worker"]
    port = {p["name"]: p["containerPort"] for p in c["ports"]}["metrics"]
    assert str(port) == config["REPLYGATE_METRICS_PORT"]
    assert c["livenessProbe"]["httpGet"] == {"path": "/livez", "port": "metrics"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert c["startupProbe"]["httpGet"]["path"] == "/livez"
    grace = spec["terminationGracePeriodSeconds"]
    assert grace > float(config["REPLYGATE_SHUTDOWN_TIMEOUT_SECONDS"])
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    data = mounts[config["REPLYGATE_DATA_DIR"]]
    claims = {t["metadata"]["name"] for t in dep["spec"].get("volumeClaimTemplates", [])}
    assert data in claims or "emptyDir" in volumes[data]
    # The ConfigMap feeds REPLYGATE_* and the SASL credentials come from a Secret.
    assert c["envFrom"][0]["configMapRef"]["name"] == one(docs, "ConfigMap")["metadata"]["name"]
    env = {e["name"]: e for e in c["env"]}
    secret_name = one(docs, "Secret")["metadata"]["name"]
    for var, key in (
        ("REPLYGATE_KAFKA_SECURITY__SASL_PASSWORD", "password"),
        ("REPLYGATE_KAFKA_SECURITY__SASL_USERNAME", "username"),
    ):
        ref = env[var]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": secret_name, "key": key}
    assert all(k.startswith("REPLYGATE_") for k in config)
    assert "REPLYGATE_KAFKA_SECURITY__SASL_PASSWORD" not in config


def test_topics_job_runs_replygate_topics() -> None:
    job = one(build(OVERLAY), "Job")
    (c,) = job["spec"]["template"]["spec"]["containers"]
    assert c["args"] == ["topics"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")


def test_service_monitor_selects_the_metrics_service() -> None:
    docs = build(OVERLAY)
    svc = next(d for d in docs if d["metadata"]["name"] == "replygate-metrics")
    dep = workers(docs)
    sm = one(docs, "ServiceMonitor")
    assert sm["apiVersion"] == "monitoring.coreos.com/v1"
    selector = sm["spec"]["selector"]["matchLabels"]
    assert selector.items() <= svc["metadata"]["labels"].items()
    assert svc["metadata"]["labels"][sm["spec"]["jobLabel"]] == "replygate"  # alerts: job=...
    ports = {p["name"] for p in svc["spec"]["ports"]}
    assert all(ep["port"] in ports and ep["path"] == "/metrics" for ep in sm["spec"]["endpoints"])
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= pod_labels.items()


def test_pdb_and_network_policy_select_the_workers() -> None:
    docs = build(OVERLAY)
    pod_labels = workers(docs)["spec"]["template"]["metadata"]["labels"]
    pdb = one(docs, "PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    netpol = one(docs, "NetworkPolicy")
    assert netpol["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
    assert set(netpol["spec"]["policyTypes"]) == {"Ingress", "Egress"}


def keda_variant(tmp_path: Path) -> tuple[dict[str, Any], ...]:
    """The example overlay with KEDA in place of the lag HPA (docs/scaling.md: an option)."""
    example = Path(OVERLAY)
    shutil.copy(example / "namespace.yaml", tmp_path / "namespace.yaml")
    kustomization = yaml.safe_load((example / "kustomization.yaml").read_text())
    kustomization["resources"] = ["namespace.yaml", os.path.relpath(BASE, tmp_path)]
    components = [c.replace("hpa-lag", "keda") for c in kustomization["components"]]
    kustomization["components"] = [
        os.path.relpath((example / c).resolve(), tmp_path) for c in components
    ]
    for patch in kustomization["patches"]:
        if patch["target"]["kind"] == "HorizontalPodAutoscaler":
            patch["target"]["kind"] = "ScaledObject"
            patch["patch"] = patch["patch"].replace("/spec/maxReplicas", "/spec/maxReplicaCount")
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return build(str(tmp_path))


def test_keda_scaled_object_is_structurally_sound(tmp_path: Path) -> None:
    docs = keda_variant(tmp_path)
    assert not by_kind(docs, "HorizontalPodAutoscaler")  # KEDA makes its own
    config = config_data(docs)
    so = one(docs, "ScaledObject")
    assert so["apiVersion"] == "keda.sh/v1alpha1"
    target = so["spec"]["scaleTargetRef"]
    dep = workers(docs)
    assert target["name"] == dep["metadata"]["name"]
    assert target.get("kind", "Deployment") == dep["kind"]
    containers = {c["name"] for c in dep["spec"]["template"]["spec"]["containers"]}
    assert target["envSourceContainerName"] in containers
    (trigger,) = so["spec"]["triggers"]
    assert trigger["type"] == "kafka"
    meta = trigger["metadata"]
    assert meta["bootstrapServersFromEnv"] in config
    assert config[meta["consumerGroupFromEnv"]] == "replygate"
    assert int(meta["lagThreshold"]) > 0
    assert meta["allowIdleConsumers"] == "false"
    # More replicas than partitions would sit idle.
    assert 1 <= so["spec"]["minReplicaCount"] <= so["spec"]["maxReplicaCount"]
    assert so["spec"]["maxReplicaCount"] <= int(config["REPLYGATE_PARTITIONS"])
    auth = one(docs, "TriggerAuthentication")
    assert auth["apiVersion"] == "keda.sh/v1alpha1"
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    secret = one(docs, "Secret")
    params = {r["parameter"] for r in auth["spec"]["secretTargetRef"]}
    assert {"sasl", "username", "password", "tls"} <= params
    for ref in auth["spec"]["secretTargetRef"]:
        assert ref["name"] == secret["metadata"]["name"]
        assert ref["key"] in secret["data"]


def test_hpa_component_renders_and_validates(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(BASE, tmp_path)],
                "components": [os.path.relpath(K8S / "components" / "hpa", tmp_path)],
            }
        )
    )
    docs = build(str(tmp_path))
    hpa = one(docs, "HorizontalPodAutoscaler")
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(hpa, version, strict=True)
    assert hpa["spec"]["scaleTargetRef"]["name"] == one(docs, "Deployment")["metadata"]["name"]
    assert hpa["spec"]["maxReplicas"] <= int(config_data(docs)["REPLYGATE_PARTITIONS"])
    assert not by_kind(docs, "ScaledObject")


def alerts() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((PROM / "alerts.yml").read_text(encoding="utf-8"))
    return data


def test_prometheus_rule_matches_alerts_yml() -> None:
    committed = yaml.safe_load((K8S / "base" / "prometheusrule.yaml").read_text(encoding="utf-8"))
    assert committed["spec"]["groups"] == alerts()["groups"], (
        "deploy/k8s/base/prometheusrule.yaml is out of date: "
        "run python deploy/k8s/sync-prometheusrule.py"
    )
    rendered = one(build(BASE), "PrometheusRule")
    assert rendered["apiVersion"] == "monitoring.coreos.com/v1"
    assert rendered["spec"]["groups"] == alerts()["groups"]


def test_prometheus_rule_rejects_drift(tmp_path: Path) -> None:
    """The comparison above is real: a changed threshold is a difference."""
    changed = alerts()
    changed["groups"][0]["rules"][0]["for"] = "99m"
    committed = yaml.safe_load((K8S / "base" / "prometheusrule.yaml").read_text(encoding="utf-8"))
    assert committed["spec"]["groups"] != changed["groups"]


# ------------------------------------------------------------------ prometheus
def test_promtool_check_rules() -> None:
    proc = run(tool("promtool"), "check", "rules", "alerts.yml", cwd=PROM)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_promtool_test_rules() -> None:
    proc = run(tool("promtool"), "test", "rules", "alerts_test.yml", cwd=PROM)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_promtool_test_rules_fails_on_a_wrong_expectation(tmp_path: Path) -> None:
    """promtool really evaluates the alerts: a test that expects silence where one fires fails."""
    shutil.copy(PROM / "alerts.yml", tmp_path / "alerts.yml")
    tests = yaml.safe_load((PROM / "alerts_test.yml").read_text(encoding="utf-8"))
    for case in tests["tests"]:
        for check in case["alert_rule_test"]:
            check["exp_alerts"] = []
    (tmp_path / "alerts_test.yml").write_text(yaml.safe_dump(tests))
    proc = run(tool("promtool"), "test", "rules", "alerts_test.yml", cwd=tmp_path)
    assert proc.returncode != 0


def test_promtool_check_config() -> None:
    proc = run(tool("promtool"), "check", "config", "prometheus.yml", cwd=PROM)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = yaml.safe_load((PROM / "prometheus.yml").read_text(encoding="utf-8"))
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    assert jobs["replygate"]["static_configs"][0]["targets"] == ["worker:9108"]


def test_every_alert_fires_and_stays_silent_in_unit_tests() -> None:
    names = {r["alert"] for g in alerts()["groups"] for r in g["rules"]}
    assert names == EXPECTED_ALERTS
    fired: set[str] = set()
    silent: set[str] = set()
    tests = yaml.safe_load((PROM / "alerts_test.yml").read_text(encoding="utf-8"))
    for case in tests["tests"]:
        for check in case["alert_rule_test"]:
            (fired if check["exp_alerts"] else silent).add(check["alertname"])
    assert fired == names
    assert silent == names
    for group in alerts()["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("warning", "critical")
            assert rule["annotations"]["summary"] and rule["annotations"]["description"]


# ------------------------------------------------------------------ metric names
@cache
def defined_series() -> frozenset[str]:
    """Every sample name the metrics module can export (counters get _total, histograms more)."""
    m = Metrics(contracts=[], platforms=[], topics=[], rules=[])
    PolicyMetrics(m.registry, platforms=[], contracts=[])  # the worker adds them to its registry
    names: set[str] = set()
    for family in m.registry.collect():
        if family.type == "counter":
            names.add(family.name + "_total")
        elif family.type == "histogram":
            names.update(family.name + s for s in ("_bucket", "_sum", "_count"))
        else:
            names.add(family.name)
    return frozenset(names)


METRIC_TOKEN = re.compile(r"\breplygate_[a-z0-9_]+\b")


def test_defined_series_are_the_documented_ones() -> None:
    assert {
        "replygate_records_in_total",
        "replygate_records_out_total",
        "replygate_outcomes_total",
        "replygate_validation_errors_total",
        "replygate_leaks_masked_total",
        "replygate_attachment_notices_total",
        "replygate_pending_corrections",
        "replygate_correction_roundtrip_seconds_bucket",
        "replygate_correction_deadline_expired_total",
        "replygate_processing_seconds_bucket",
        "replygate_csv_snapshot_bytes_bucket",
        "replygate_consumer_lag",
        "replygate_build_info",
    } <= defined_series()


def dashboard_exprs() -> list[str]:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    exprs += [v["definition"] for v in dash["templating"]["list"] if v.get("definition")]
    return exprs


def test_dashboard_is_valid_and_uses_only_defined_metrics() -> None:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dash["uid"] and dash["title"]
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    used: set[str] = set()
    for expr in dashboard_exprs():
        names = set(METRIC_TOKEN.findall(expr))
        unknown = names - defined_series()
        assert not unknown, (expr, unknown)
        used |= names
    # The dashboard shows what the task asks for.
    titles = " ".join(p["title"].lower() for p in dash["panels"])
    for word in ("records in", "outcomes", "validation errors", "leaks", "p99", "lag", "pending"):
        assert word in titles, word
    assert any("histogram_quantile(0.99" in e for e in dashboard_exprs())
    assert {
        "replygate_records_in_total",
        "replygate_outcomes_total",
        "replygate_validation_errors_total",
        "replygate_leaks_masked_total",
        "replygate_processing_seconds_bucket",
        "replygate_consumer_lag",
        "replygate_pending_corrections",
    } <= used


def test_dashboard_metric_check_catches_a_typo() -> None:
    assert METRIC_TOKEN.findall("rate(replygate_record_in_total[5m])")[0] not in defined_series()


def test_dashboard_expressions_are_valid_promql(tmp_path: Path) -> None:
    """promtool parses each panel expression (Grafana variables replaced by plain values)."""
    subs = {"$__rate_interval": "5m", "$__range": "1h", "$job": "replygate", "$instance": ".*"}
    rules = []
    for i, expr in enumerate(e for e in dashboard_exprs() if not e.startswith("label_values")):
        for key, value in subs.items():
            expr = expr.replace(key, value)
        assert "$" not in expr, expr
        rules.append({"record": f"dashboard:expr_{i}", "expr": expr})
    (tmp_path / "rules.yml").write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]}))
    proc = run(tool("promtool"), "check", "rules", "rules.yml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_alerts_use_only_defined_metrics() -> None:
    for group in alerts()["groups"]:
        for rule in group["rules"]:
            unknown = set(METRIC_TOKEN.findall(rule["expr"])) - defined_series()
            assert not unknown, (rule["alert"], unknown)


def test_grafana_provisioning_matches_dashboard_and_compose() -> None:
    ds = yaml.safe_load(
        (GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text(encoding="utf-8")
    )
    (source,) = ds["datasources"]
    assert source["type"] == "prometheus" and source["url"] == "http://prometheus:9090"
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    ds_var = next(v for v in dash["templating"]["list"] if v["type"] == "datasource")
    assert ds_var["current"]["value"] == source["uid"]
    prov = yaml.safe_load(
        (GRAFANA / "provisioning" / "dashboards" / "replygate.yml").read_text(encoding="utf-8")
    )
    path = prov["providers"][0]["options"]["path"]
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    assert f"./deploy/grafana/dashboards:{path}:ro" in compose["services"]["grafana"]["volumes"]


# ------------------------------------------------------------------ compose and image
def test_docker_compose_config() -> None:
    docker = tool("docker")
    proc = run(docker, "compose", "-f", "docker-compose.yml", "config", "-q")
    assert proc.returncode == 0, f"{proc.stderr}\n(docker compose plugin missing? {INSTALL_HINT})"
    proc = run(docker, "compose", "-f", "docker-compose.yml", "config", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    services = json.loads(proc.stdout)["services"]
    # upstream images by default; `make test` sets the variables to the local ones
    assert services["kafka"]["image"] == "apache/kafka:4.1.0"
    assert services["worker"]["image"] == "replygate:local"
    assert services["topics"]["command"] == ["topics"]
    assert services["worker"]["command"] == ["worker"]
    worker = services["worker"]
    assert worker["depends_on"]["topics"]["condition"] == "service_completed_successfully"
    assert worker["read_only"] is True and worker["user"] == "10001:10001"
    assert worker["environment"]["REPLYGATE_KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092"
    assert services["prometheus"]["image"].startswith("prom/prometheus")
    assert services["grafana"]["image"].startswith("grafana/grafana")
    assert services["kafka"]["ports"][0]["published"] == "9094"
    prom_mounts = {(v["source"], v["target"]) for v in services["prometheus"]["volumes"]}
    assert (str(PROM), "/etc/prometheus") in prom_mounts


def test_docker_compose_images_and_ports_come_from_variables() -> None:
    env = {
        **os.environ,
        "KAFKA_IMAGE": "local/kafka:1",
        "REPLYGATE_IMAGE": "local/replygate:1",
        "PROMETHEUS_IMAGE": "local/prometheus:1",
        "GRAFANA_IMAGE": "local/grafana:1",
        "KAFKA_HOST_PORT": "19094",
    }
    proc = subprocess.run(
        [tool("docker"), "compose", "-f", "docker-compose.yml", "config", "--format", "json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    services = json.loads(proc.stdout)["services"]
    images = {
        name: services[name]["image"] for name in ("kafka", "worker", "prometheus", "grafana")
    }
    assert images == {
        "kafka": "local/kafka:1",
        "worker": "local/replygate:1",
        "prometheus": "local/prometheus:1",
        "grafana": "local/grafana:1",
    }
    kafka = services["kafka"]
    assert kafka["ports"][0]["published"] == "19094"
    assert "HOST://localhost:19094" in kafka["environment"]["KAFKA_ADVERTISED_LISTENERS"]


def test_docker_compose_config_rejects_a_broken_file(tmp_path: Path) -> None:
    docker = tool("docker")
    bad = tmp_path / "compose.yml"
    bad.write_text(
        "services:\n  worker:\n    image: x\n    depends_on: {nope: {condition: what}}\n"
    )
    assert run(docker, "compose", "-f", str(bad), "config", "-q").returncode != 0


def dockerfile_stages() -> list[list[str]]:
    """Dockerfile instructions (continuations joined), split into stages at each FROM."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    stages: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


def test_dockerfile_is_multistage_non_root_and_runs_the_worker() -> None:
    stages = dockerfile_stages()
    assert len(stages) >= 2
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    # any Debian bookworm: upstream's by default, the debootstrapped one in make test
    assert "ARG BASE_IMAGE=debian:bookworm-slim" in text
    assert stages[0][0] == "FROM ${BASE_IMAGE} AS builder"
    final = stages[-1]
    assert final[0] == "FROM ${BASE_IMAGE}"
    assert any("apt-get install" in line and " python3 " in f"{line} " for line in final)
    users = [line.split()[1] for line in final if line.upper().startswith("USER ")]
    assert users, "the final stage needs a USER"
    assert users[-1].split(":")[0] not in ("0", "root")
    assert any(line == 'ENTRYPOINT ["replygate"]' for line in final)
    assert any(line == 'CMD ["worker"]' for line in final)
    assert any(line.startswith("HEALTHCHECK") and "/livez" in line for line in final)
    assert any("COPY --from=builder /opt/replygate /opt/replygate" in line for line in final)
    assert not any(line.upper().startswith("RUN PIP") for line in final)


def test_dockerignore_sends_only_the_sources() -> None:
    text = (ROOT / ".dockerignore").read_text(encoding="utf-8")
    lines = [x.strip() for x in text.splitlines() if x.strip() and not x.startswith("#")]
    assert lines[0] == "**"  # everything excluded, then the sources let back in
    assert {"!pyproject.toml", "!README.md", "!schemas/", "!streams/", "!replygate/"} <= set(lines)


def test_install_tools_script_is_valid_bash() -> None:
    script = ROOT / "scripts" / "install-tools.sh"
    assert run("bash", "-n", str(script)).returncode == 0
    assert os.access(script, os.X_OK)


# ------------------------------------------------------------------ TLS (opt-in)
def tls_overlay(tmp_path: Path) -> tuple[dict[str, Any], ...]:
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(BASE, tmp_path)],
                "components": [os.path.relpath(K8S / "components" / "tls", tmp_path)],
            }
        )
    )
    return build(str(tmp_path))


def test_tls_component_mounts_the_secrets_as_files_never_in_config_or_env(
    tmp_path: Path,
) -> None:
    docs = tls_overlay(tmp_path)
    for doc in docs:
        if doc["kind"] not in CRD_KINDS:
            for version in K8S_VERSIONS:
                kubernetes_validate.validate(doc, version, strict=True)
    config = config_data(docs)
    assert config["REPLYGATE_KAFKA_SECURITY__PROTOCOL"] == "SASL_SSL"
    assert config["REPLYGATE_KAFKA_SECURITY__SASL_PASSWORD_FILE"] == "/etc/replygate/kafka/password"
    assert config["REPLYGATE_KAFKA_SECURITY__SSL_CAFILE"] == "/etc/replygate/kafka/ca.crt"
    assert not [k for k in config if k.endswith("SASL_PASSWORD") or k.endswith("KEY_PASSWORD")]
    assert not by_kind(docs, "Secret")  # the component commits none
    for kind, container in (("Deployment", "worker"), ("Job", "topics")):
        pod = one(docs, kind)["spec"]["template"]["spec"]
        (main,) = [c for c in pod["containers"] if c["name"] == container]
        assert len(pod["containers"]) == 1
        # no secret value reaches the environment: only the user name stays an env var
        from_secrets = [e["name"] for e in main["env"] if "secretKeyRef" in e.get("valueFrom", {})]
        assert from_secrets == ["REPLYGATE_KAFKA_SECURITY__SASL_USERNAME"], kind
        mount = next(m for m in main["volumeMounts"] if m["name"] == "kafka-credentials")
        assert mount == {
            "name": "kafka-credentials",
            "mountPath": "/etc/replygate/kafka",
            "readOnly": True,
        }
        volume = next(v for v in pod["volumes"] if v["name"] == "kafka-credentials")
        sources = {s["secret"]["name"]: s["secret"] for s in volume["projected"]["sources"]}
        assert [i["path"] for i in sources["replygate-kafka"]["items"]] == ["password"]
        assert {i["path"] for i in sources["replygate-kafka-tls"]["items"]} == {
            "ca.crt",
            "tls.crt",
            "tls.key",
        }
        assert volume["projected"]["defaultMode"] == 0o440


def test_tls_component_lets_the_workers_reach_only_dns_and_the_broker(tmp_path: Path) -> None:
    netpol = one(tls_overlay(tmp_path), "NetworkPolicy")
    egress = netpol["spec"]["egress"]
    assert all(rule.get("to") for rule in egress), "an egress rule without peers allows all"
    ports = sorted((p["port"], p.get("endPort"), p["protocol"]) for r in egress for p in r["ports"])
    assert ports == [(53, None, "TCP"), (53, None, "UDP"), (9092, 9096, "TCP")]
    (ingress,) = netpol["spec"]["ingress"]
    assert ingress["ports"] == [{"port": "metrics", "protocol": "TCP"}]
    (scraper,) = ingress["from"]
    assert scraper["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }


def test_docker_compose_tls_override_mounts_the_secrets_as_files(tmp_path: Path) -> None:
    certs = tmp_path / "tls"
    subprocess.run(
        ["bash", str(DEPLOY / "kafka-local" / "kafka-local.sh"), "certs"],
        env={**os.environ, "KAFKA_LOCAL_HOME": str(tmp_path), "KAFKA_TLS_DIR": str(certs),
             "KAFKA_TLS_SAN": "DNS:kafka,DNS:localhost"},
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    proc = subprocess.run(
        [tool("docker"), "compose", "-f", "docker-compose.yml", "-f", "docker-compose.tls.yml",
         "config", "--format", "json"],
        cwd=ROOT, env={**os.environ, "KAFKA_TLS_DIR": str(certs)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    config = json.loads(proc.stdout)
    services = config["services"]
    for name in ("topics", "worker"):
        env = services[name]["environment"]
        assert env["REPLYGATE_KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9095"
        assert env["REPLYGATE_KAFKA_SECURITY__PROTOCOL"] == "SSL"
        assert env["REPLYGATE_KAFKA_SECURITY__SSL_KEYFILE"] == "/run/secrets/kafka-client-key"
        assert {s["source"] for s in services[name]["secrets"]} == {
            "kafka-ca",
            "kafka-client-cert",
            "kafka-client-key",
        }
    assert config["secrets"]["kafka-client-key"]["file"] == str(certs / "client.key")
    kafka = services["kafka"]["environment"]
    assert "MTLS:SSL" in kafka["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
    assert kafka["KAFKA_LISTENER_NAME_MTLS_SSL_CLIENT_AUTH"] == "required"
    # nothing secret in any environment: no key or certificate body, no password
    key = "".join(line for line in (certs / "client.key").read_text().splitlines()[1:-1])
    dump = json.dumps([services[n].get("environment", {}) for n in ("kafka", "topics", "worker")])
    assert key not in dump and "PRIVATE KEY" not in dump and "PASSWORD" not in dump.upper()


def test_no_script_under_pipefail_pipes_into_grep_q() -> None:
    """`cmd | grep -q x` under `set -o pipefail` is a false "no" whenever grep exits at its
    first match before `cmd` has written everything (SIGPIPE): the k8s cluster-up then added
    an address the bridge already had. Scripts read the whole input (`grep x >/dev/null`)."""
    found = []
    for script in sorted(ROOT.glob("**/*.sh")):
        if any(part in {".venv", ".git", ".kafka-local", ".images"} for part in script.parts):
            continue
        text = script.read_text(encoding="utf-8")
        if "pipefail" not in text:
            continue
        found += [
            f"{script.relative_to(ROOT)}:{number}"
            for number, line in enumerate(text.splitlines(), 1)
            if re.search(r"\|\s*grep\s+-[A-Za-z]*q", line)
        ]
    assert found == []
