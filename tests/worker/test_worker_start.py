"""`replygate worker` starts anywhere: a fresh directory, only a broker address, its defaults.

A user following the README on a new machine must not meet `FileNotFoundError: .run/...`
(Faust creates only the last level of its data directory); the worker creates it with its
parents and serves.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.kafka import REPO, Deployment, collect, publish, readyz
from tests.support.samples import raw_reply

pytestmark = pytest.mark.kafka


def test_worker_starts_in_a_fresh_directory_with_only_a_broker_address(tmp_path: Path) -> None:
    deployment = Deployment(partitions=2)
    env = deployment.worker_env(tmp_path)
    del env["REPLYGATE_DATA_DIR"]  # the default, relative to where the user stands
    workdir = tmp_path / "fresh" / "place"
    workdir.mkdir(parents=True)
    log = (tmp_path / "worker.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "worker"],
        cwd=workdir,
        env={**env, "PYTHONPATH": str(REPO)},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        port = int(env["REPLYGATE_METRICS_PORT"])
        deadline = time.monotonic() + 90
        while readyz(port) != 200 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, (tmp_path / "worker.log").read_text(errors="replace")[-3000:]
        assert readyz(port) == 200
        assert (workdir / ".run" / "worker-data").is_dir()
        delivery = deployment.topic("delivery.im")
        asyncio.run(
            publish(deployment.settings(), deployment.topic("replies.raw"), [("c-7", raw_reply())])
        )
        records = asyncio.run(collect([delivery], lambda r: len(r) >= 1, timeout=60))
        assert len(records) == 1
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
        log.close()
