"""docs/quickstart.md as a new user follows it: its `send.py` runs against a real worker and
the delivery is the line the page shows; the no-registry `up` names the services the Compose
test starts (Grafana has no local image)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.deploy.test_containers import SERVICES
from tests.support.kafka import REPO, Deployment, collect_messages

DOC = (REPO / "docs" / "quickstart.md").read_text(encoding="utf-8")


def block(language: str, after: str) -> str:
    """The first fenced block of `language` after the heading or text `after`."""
    match = re.search(rf"```{language}\n(.*?)```", DOC.split(after, 1)[1], re.DOTALL)
    assert match is not None, f"docs/quickstart.md has no {language} block after {after!r}"
    return match.group(1)


def test_the_no_registry_up_names_the_services_the_compose_test_starts() -> None:
    (up,) = [line for line in block("sh", "Without access").splitlines() if " up " in line]
    assert up.split(" up -d ", 1)[1].split() == list(SERVICES)


@pytest.mark.kafka
def test_send_py_is_delivered_as_the_page_shows(tmp_path: Path) -> None:
    shown: dict[str, Any] = orjson.loads(block("json", "## 4."))
    deployment = Deployment(partitions=2)
    deployment.create_topics()
    script = tmp_path / "send.py"
    script.write_text(block("python", "## 3."), encoding="utf-8")
    deployment.start_worker(tmp_path)
    t = deployment.topic
    try:
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=deployment.worker_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        found = asyncio.run(
            collect_messages([t("delivery.im")], lambda records: len(records) >= 1, timeout=90)
        )
    finally:
        deployment.stop_all()
    (record,) = found
    delivered: dict[str, Any] = orjson.loads(record.value)
    assert list(delivered) == list(shown), "the page's field order"
    assert {**delivered, "delivered_at": "..."} == shown, deployment.log_tail()
