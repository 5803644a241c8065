"""Debian's prometheus on the host for the cluster tests, with deploy/prometheus/alerts.yml.

Debian builds prometheus without `kubernetes_sd_configs`, so `PodTargets` does its job: it
lists the pods through the API server every 2 s and writes those that
deploy/prometheus/prometheus-k8s.yml would keep (annotation `prometheus.io/scrape: "true"`,
phase Running; port and path from the annotations) to the file that
deploy/prometheus/prometheus-local.yml reads."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tests.k8s.kube import REPO, kubectl

PORT = 19090
START_SECONDS = 60.0


def scrape_targets(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """file_sd entries for the pods that ask to be scraped, as the role-pod relabelling keeps."""
    out = []
    for pod in pods:
        notes = pod["metadata"].get("annotations") or {}
        ip = pod.get("status", {}).get("podIP")
        if notes.get("prometheus.io/scrape") != "true" or not ip:
            continue
        if pod["status"].get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
            continue
        out.append(
            {
                "targets": [f"{ip}:{notes.get('prometheus.io/port', '9108')}"],
                "labels": {
                    "__metrics_path__": notes.get("prometheus.io/path", "/metrics"),
                    "namespace": pod["metadata"]["namespace"],
                    "pod": pod["metadata"]["name"],
                },
            }
        )
    return out


class PodTargets(threading.Thread):
    """Writes `scrape_targets` of the namespace's pods to `path` every `every` seconds."""

    def __init__(self, path: Path, namespace: str = "replygate", every: float = 2.0) -> None:
        super().__init__(daemon=True)
        self.path, self.namespace, self.every = path, namespace, every
        self.done = threading.Event()
        self.write()

    def write(self) -> None:
        pods = json.loads(kubectl("-n", self.namespace, "get", "pods", "-o", "json"))["items"]
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(scrape_targets(pods)))
        tmp.replace(self.path)

    def run(self) -> None:
        while not self.done.wait(self.every):
            try:
                self.write()
            except (AssertionError, subprocess.TimeoutExpired):
                continue  # the API server busy: the last list stays until the next one


@dataclass
class Prometheus:
    proc: subprocess.Popen[bytes]
    home: Path
    targets: PodTargets

    @classmethod
    def start(cls, home: Path) -> Prometheus:
        shutil.rmtree(home / "data", ignore_errors=True)
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "deploy/prometheus/prometheus-local.yml", home / "prometheus.yml")
        shutil.copy(REPO / "deploy/prometheus/alerts.yml", home / "alerts.yml")
        targets = PodTargets(home / "targets.json")
        targets.start()
        log = (home / "prometheus.log").open("wb")
        proc = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={home / 'prometheus.yml'}",
                f"--storage.tsdb.path={home / 'data'}",
                f"--web.listen-address=127.0.0.1:{PORT}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        prom = cls(proc, home, targets)
        deadline = time.monotonic() + START_SECONDS
        while not prom.ready():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"prometheus did not start:\n{prom.log_tail()}")
            time.sleep(0.5)
        return prom

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/-/ready", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def api(self, path: str, **params: str) -> Any:
        url = f"http://127.0.0.1:{PORT}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=30) as response:
            body = orjson.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def stop(self) -> None:
        self.targets.done.set()
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def log_tail(self) -> str:
        return "\n".join((self.home / "prometheus.log").read_text().splitlines()[-30:])
