"""docs/producers.md: its Python example is at most 20 lines and runs against the real broker.

The example is taken from the page as it is written, run as a script with the worker's
settings in the environment, and every record it sends is judged by a real worker: none is a
dead letter (keyed right), each turn has its outcome.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.support.kafka import REPO, Deployment, collect_messages

DOC = REPO / "docs" / "producers.md"


def example() -> str:
    """The first Python block under `## From Python`."""
    section = DOC.read_text(encoding="utf-8").split("## From Python", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "docs/producers.md has no Python example"
    return match.group(1)


def test_the_example_is_at_most_20_lines() -> None:
    lines = example().rstrip("\n").splitlines()
    assert 5 < len(lines) <= 20


@pytest.mark.kafka
def test_the_example_runs_and_every_record_it_sends_is_judged(tmp_path: Path) -> None:
    deployment = Deployment(partitions=2)
    deployment.create_topics()
    (tmp_path / "ws" / "ws-3").mkdir(parents=True)
    script = tmp_path / "example.py"
    script.write_text(example(), encoding="utf-8")
    deployment.start_worker(tmp_path, REPLYGATE_WORKSPACES_ROOT=str(tmp_path / "ws"))
    t = deployment.topic
    try:
        env = deployment.worker_env(tmp_path)
        done = subprocess.run(
            [sys.executable, str(script)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]

        def finished(records: list[Any]) -> bool:
            return sum(r.topic == t("delivery.im") for r in records) >= 3 and any(
                r.topic == t("toolresults.kandev") for r in records
            )

        found = asyncio.run(
            collect_messages(
                [t("delivery.im"), t("toolresults.kandev"), t("replies.dlq")],
                finished,
                timeout=90,
                settle=2,
            )
        )
    finally:
        deployment.stop_all()
    values = [(r.topic, orjson.loads(r.value), r) for r in found]
    assert [v for topic, v, _ in values if topic == t("replies.dlq")] == []
    deliveries = {
        (v["turn_id"], v["kind"]): r for topic, v, r in values if topic == t("delivery.im")
    }
    assert set(deliveries) == {("t-1", "progress"), ("t-1", "reply"), ("t-2", "reply")}, (
        deployment.log_tail()
    )
    assert [k for k, _v in deliveries[("t-1", "reply")].headers] == ["traceparent"]
    (result,) = [r for topic, _v, r in values if topic == t("toolresults.kandev")]
    assert result.key == b"task-9" and orjson.loads(result.value)["status"] == "ok"
