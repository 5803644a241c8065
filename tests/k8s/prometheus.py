"""Prometheus on the host for the cluster tests, discovering the worker pods through the
Kubernetes API: deploy/prometheus/prometheus-k8s.yml (`kubernetes_sd_configs`, role pod, the
pods' `prometheus.io/*` annotations) with deploy/prometheus/alerts.yml, authenticated as the
ServiceAccount of deploy/k8s/overlays/local/prometheus (a token that may only list and watch
the pods of namespace replygate).

Debian's prometheus is built without the Kubernetes discovery, so the binary is the one
deploy/k8s-local/build-prometheus.sh builds from Prometheus' Go module; `make test-k8s` passes
its path in PROMETHEUS_BIN."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tests.k8s.kube import LOCAL, REPO, kubectl

PORT = 19090
START_SECONDS = 60.0
TOKEN_DURATION = "4h"  # outlasts the cluster tests; a bound token, never the admin's


def binary() -> str:
    """The Prometheus with `kubernetes_sd_configs` (PROMETHEUS_BIN, from build-prometheus.sh)."""
    path = os.environ.get("PROMETHEUS_BIN", "")
    if not path or not os.access(path, os.X_OK):
        raise AssertionError(
            "PROMETHEUS_BIN does not name an executable: run the cluster tests with "
            "`make test-k8s`, or set it to the output of deploy/k8s-local/build-prometheus.sh"
        )
    return path


def api_server() -> tuple[str, bytes]:
    """The API server's address and CA certificate, from the test's kubeconfig."""
    view = orjson.loads(kubectl("config", "view", "--raw", "--minify", "-o", "json"))
    cluster = view["clusters"][0]["cluster"]
    return cluster["server"], base64.b64decode(cluster["certificate-authority-data"])


def discovery_token() -> str:
    """A token of the ServiceAccount that may list the worker pods (applied here)."""
    kubectl("apply", "-k", str(LOCAL / "prometheus"))
    token = kubectl(
        "-n", "replygate-monitoring", "create", "token", "prometheus", "--duration", TOKEN_DURATION
    )
    return token.strip()


def render(template: str, server: str, ca_file: Path, token_file: Path) -> str:
    """prometheus-k8s.yml with the API server, its CA and the token file filled in."""
    values = {"@API_SERVER@": server, "@CA_FILE@": str(ca_file), "@TOKEN_FILE@": str(token_file)}
    for name, value in values.items():
        assert name in template, f"prometheus-k8s.yml has no {name}"
        template = template.replace(name, value)
    return template


@dataclass
class Prometheus:
    proc: subprocess.Popen[bytes]
    home: Path

    @classmethod
    def start(cls, home: Path) -> Prometheus:
        shutil.rmtree(home / "data", ignore_errors=True)
        home.mkdir(parents=True, exist_ok=True)
        server, ca = api_server()
        (home / "ca.crt").write_bytes(ca)
        token_file = home / "token"
        token_file.write_text(discovery_token())
        token_file.chmod(0o600)
        template = (REPO / "deploy/prometheus/prometheus-k8s.yml").read_text()
        config = render(template, server, home / "ca.crt", token_file)
        (home / "prometheus.yml").write_text(config)
        shutil.copy(REPO / "deploy/prometheus/alerts.yml", home / "alerts.yml")
        log = (home / "prometheus.log").open("wb")
        proc = subprocess.Popen(
            [
                binary(),
                f"--config.file={home / 'prometheus.yml'}",
                f"--storage.tsdb.path={home / 'data'}",
                f"--web.listen-address=127.0.0.1:{PORT}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        prom = cls(proc, home)
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
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def log_tail(self) -> str:
        return "\n".join((self.home / "prometheus.log").read_text().splitlines()[-30:])
