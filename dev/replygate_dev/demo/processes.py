"""The processes and files around a demo run: the worker subprocess, its environment and
metrics, the local broker, free ports and the bundled files."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import IO, Final

import orjson

import streams
from replygate_dev.demo.samples import SAMPLES_DIR
from streams.settings import Settings

# The checkout the demo runs from (it is not shipped): its local broker script lives there.
CHECKOUT: Final = Path(__file__).resolve().parents[3]
CORRECTION_DEADLINE_SECONDS: Final = 5.0
CORRECTOR_TIMEOUT_SECONDS: Final = 3.0
STOP_SECONDS: Final = 15.0


def free_port() -> int:
    """A free TCP port on loopback (for the worker's metrics and web ports)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def read_rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in bytes, from /proc; (0, 0) where there is no /proc."""
    values = {"VmRSS": 0, "VmHWM": 0}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                name, _, rest = line.partition(":")
                if name in values:
                    values[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return values["VmRSS"], values["VmHWM"]


def scrape_outcomes(port: int) -> Counter[str]:
    """The worker's `replygate_outcomes` counts, summed over contract and platform."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read(4 * 1024 * 1024).decode()
    counts: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        if family.name != "replygate_outcomes":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                counts[sample.labels["outcome"]] += int(sample.value)
    return counts


def copy_files(root: Path) -> tuple[Path, Path]:
    """The bundled workspaces and media, copied where the worker may read them."""
    workspaces, media = root / "workspaces", root / "media"
    shutil.copytree(SAMPLES_DIR / "workspaces", workspaces)
    shutil.copytree(SAMPLES_DIR / "media", media)
    return workspaces, media


def worker_env(settings: Settings, root: Path, base_url: str, metrics_port: int) -> dict[str, str]:
    workspaces, media = root / "workspaces", root / "media"
    package_root = str(Path(streams.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "PYTHONPATH": package_root + (os.pathsep + path if path else ""),
        "PYTHONUNBUFFERED": "1",
        "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        "REPLYGATE_TOPIC_PREFIX": settings.topic_prefix,
        "REPLYGATE_APP_ID": settings.app_id,
        "REPLYGATE_PARTITIONS": str(settings.partitions),
        "REPLYGATE_DATA_DIR": str(root / "worker-data"),
        "REPLYGATE_STORE": "memory://",
        "REPLYGATE_WORKSPACES_ROOT": str(workspaces),
        "REPLYGATE_MEDIA_ROOT": str(media),
        "REPLYGATE_CORRECTION_DEADLINE_SECONDS": str(CORRECTION_DEADLINE_SECONDS),
        "REPLYGATE_CORRECTOR__ENABLED": "true",
        "REPLYGATE_CORRECTOR__BASE_URL": base_url,
        "REPLYGATE_CORRECTOR__MODEL": "scripted-demo",
        "REPLYGATE_CORRECTOR__API_KEY": "demo-key-not-a-secret",
        "REPLYGATE_CORRECTOR__TIMEOUT_SECONDS": str(CORRECTOR_TIMEOUT_SECONDS),
        "REPLYGATE_METRICS_PORT": str(metrics_port),
        "REPLYGATE_SCHEMA_CONTRACTS": orjson.dumps(
            [entry.model_dump(mode="json", by_alias=True) for entry in settings.schema_contracts]
        ).decode(),
    }
    if settings.config_file is not None:
        env["REPLYGATE_CONFIG_FILE"] = str(settings.config_file)
    return env


def start_worker(env: dict[str, str], root: Path, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """`replygate worker` (Faust's web server off, so no port of this host is assumed free)."""
    return subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "worker", "--loglevel", "info"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_worker(worker: subprocess.Popen[bytes], seconds: float = STOP_SECONDS) -> int | None:
    """SIGTERM, a bounded wait, then SIGKILL; the exit code (None if it would not die)."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(seconds)
        except subprocess.TimeoutExpired:
            worker.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(5)
    return worker.returncode


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no worker log)"


def start_local_broker(servers: str) -> bool:
    """`deploy/kafka-local/kafka-local.sh up` for a loopback address, when the checkout has it."""
    script = CHECKOUT / "deploy" / "kafka-local" / "kafka-local.sh"
    host, _, port = servers.split(",")[0].strip().rpartition(":")
    if not script.is_file() or host not in ("127.0.0.1", "localhost") or not port.isdigit():
        return False
    print(f"no broker at {servers}: starting the local one (stop it with `make kafka-down`)")
    done = subprocess.run(
        ["bash", str(script), "up"], env={**os.environ, "KAFKA_PORT": port}, check=False
    )
    return done.returncode == 0
