"""The production workers: `components/stateful` turns the base's Deployment into a StatefulSet
with the turn state (RocksDB) on a volume per pod and one standby replica; the example overlay
uses it. Rendered with kustomize and validated strictly, like the rest of deploy/k8s."""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.test_deploy import BASE, K8S, K8S_VERSIONS, OVERLAY, build, one, run, tool

STATEFUL = K8S / "components" / "stateful"


def _render(tmp_path: Path, *components: str) -> tuple[dict[str, Any], ...]:
    """The base with `components` (names under deploy/k8s/components), in that order."""
    paths = [os.path.relpath(K8S / "components" / c, tmp_path) for c in components]
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [os.path.relpath(BASE, tmp_path)],
                "components": paths,
            }
        )
    )
    proc = run(tool("kustomize"), "build", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    return tuple(d for d in yaml.safe_load_all(proc.stdout) if d)


@pytest.mark.parametrize("autoscaler", ["hpa", "hpa-lag"])
def test_the_stateful_workers_render_validate_and_are_what_the_autoscaler_scales(
    tmp_path: Path, autoscaler: str
) -> None:
    docs = _render(tmp_path, autoscaler, "stateful")
    assert not [d for d in docs if d["kind"] == "Deployment"]
    workers = one(docs, "StatefulSet")
    hpa = one(docs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"]["kind"] == "StatefulSet"
    assert hpa["spec"]["scaleTargetRef"]["name"] == workers["metadata"]["name"]
    for doc in (workers, hpa, one(docs, "ConfigMap")):
        for version in K8S_VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)


def test_the_turn_state_is_on_disk_on_a_volume_per_pod_with_a_standby(tmp_path: Path) -> None:
    docs = _render(tmp_path, "stateful")
    config = one(docs, "ConfigMap")["data"]
    assert config["REPLYGATE_STORE"] == "rocksdb://"
    assert int(config["REPLYGATE_STANDBY_REPLICAS"]) >= 1
    workers = one(docs, "StatefulSet")
    spec = workers["spec"]
    (container,) = spec["template"]["spec"]["containers"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    claim = mounts[config["REPLYGATE_DATA_DIR"]]
    assert [t["metadata"]["name"] for t in spec["volumeClaimTemplates"]] == [claim]
    assert claim not in {v["name"] for v in spec["template"]["spec"]["volumes"]}
    assert spec["persistentVolumeClaimRetentionPolicy"]["whenScaled"] == "Retain"
    # the selector is the one the PDB and the NetworkPolicy use
    selector = spec["selector"]["matchLabels"]
    assert one(docs, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"] == selector
    assert selector.items() <= spec["template"]["metadata"]["labels"].items()
    service = next(d for d in docs if d["metadata"]["name"] == spec["serviceName"])
    assert service["spec"]["clusterIP"] == "None" and service["spec"]["selector"] == selector


def test_the_stateful_pod_template_is_the_deployments_but_for_the_data_volume() -> None:
    """statefulset.yaml repeats the base's pod template (kustomize cannot change a kind): it
    may differ only in where the data directory lives."""
    deployment = yaml.safe_load((Path(BASE) / "deployment.yaml").read_text())
    stateful = yaml.safe_load((STATEFUL / "statefulset.yaml").read_text())
    expected = copy.deepcopy(deployment["spec"]["template"])
    expected["spec"]["volumes"] = [v for v in expected["spec"]["volumes"] if v["name"] != "data"]
    assert stateful["spec"]["template"] == expected
    assert stateful["spec"]["selector"] == deployment["spec"]["selector"]


def test_the_example_overlay_runs_the_stateful_workers() -> None:
    docs = build(OVERLAY)
    assert one(docs, "StatefulSet")["spec"]["volumeClaimTemplates"]
    assert one(docs, "ConfigMap")["data"]["REPLYGATE_STORE"] == "rocksdb://"
