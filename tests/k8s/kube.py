"""kubectl for the cluster tests: JSON in and out, every call bounded in time."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support import waiting

REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / "deploy" / "k8s" / "overlays" / "local"
NAMESPACE = "replygate"
KAFKA_NAMESPACE = "replygate-kafka"
CALL_SECONDS = 120.0


def kubectl(*args: str, timeout: float = CALL_SECONDS, stdin: str | None = None) -> str:
    """Run kubectl (KUBECONFIG and PATH from `make test-k8s`); a failure shows its stderr."""
    proc = subprocess.run(
        ["kubectl", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        input=stdin,
    )
    if proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def get(kind: str, name: str = "", namespace: str = NAMESPACE) -> Any:
    named = [name] if name else []
    return json.loads(kubectl("-n", namespace, "get", kind, *named, "-o", "json"))


def wait_for(what: str, check: Callable[[], Any], seconds: float, poll: float = 1.0) -> Any:
    """`waiting.wait_for`, a kubectl error while things settle counting as not yet."""
    return waiting.wait_for(what, check, seconds, poll=poll, tolerate=(AssertionError,))


def ready_replicas(name: str = "replygate") -> int:
    return int(get("deployment", name)["status"].get("readyReplicas") or 0)


def worker_pods() -> list[dict[str, Any]]:
    """The worker pods that are not being deleted."""
    out = kubectl(
        "-n", NAMESPACE, "get", "pods", "-l", "app.kubernetes.io/component=worker", "-o", "json"
    )
    return [p for p in json.loads(out)["items"] if not p["metadata"].get("deletionTimestamp")]


def is_ready(pod: dict[str, Any]) -> bool:
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def scale(replicas: int, name: str = "replygate") -> None:
    kubectl("-n", NAMESPACE, "scale", f"deployment/{name}", f"--replicas={replicas}")


def wait_ready(replicas: int, seconds: float = 240.0) -> None:
    """Exactly `replicas` worker pods, all Ready (the Deployment's own count may lag)."""

    def settled() -> bool:
        pods = worker_pods()
        return len(pods) == replicas and all(is_ready(p) for p in pods)

    wait_for(f"{replicas} ready worker pods", settled, seconds)
