"""Debian's prometheus on the host for the cluster tests: it discovers the worker pods through
the API server (deploy/prometheus/prometheus-k8s.yml) and loads deploy/prometheus/alerts.yml."""

from __future__ import annotations

import base64
import shutil
import subprocess
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


def _raw(jsonpath: str) -> str:
    return kubectl("config", "view", "--raw", "--minify", "-o", f"jsonpath={jsonpath}")


@dataclass
class Prometheus:
    proc: subprocess.Popen[bytes]
    home: Path

    @classmethod
    def start(cls, home: Path) -> Prometheus:
        shutil.rmtree(home / "data", ignore_errors=True)
        home.mkdir(parents=True, exist_ok=True)
        (home / "ca.crt").write_bytes(
            base64.b64decode(_raw("{.clusters[0].cluster.certificate-authority-data}")))
        token = home / "token"
        token.write_text(_raw("{.users[0].user.token}"))
        token.chmod(0o600)
        config = (REPO / "deploy/prometheus/prometheus-k8s.yml").read_text()
        config = (config.replace("@API_SERVER@", _raw("{.clusters[0].cluster.server}"))
                  .replace("@CA_FILE@", str(home / "ca.crt"))
                  .replace("@TOKEN_FILE@", str(token)))
        (home / "prometheus.yml").write_text(config)
        shutil.copy(REPO / "deploy/prometheus/alerts.yml", home / "alerts.yml")
        log = (home / "prometheus.log").open("wb")
        proc = subprocess.Popen(
            ["prometheus", f"--config.file={home / 'prometheus.yml'}",
             f"--storage.tsdb.path={home / 'data'}", f"--web.listen-address=127.0.0.1:{PORT}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
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
