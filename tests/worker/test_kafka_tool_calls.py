"""A rich-output tool call runs once: its CSV is read once, and a replay never reads it again.

The worker dies at a chosen point after a call's state is durable (before its ToolResult is
sent, or after it is sent and before the input is committed); the CSV is then rewritten. The
next worker replays the call (asserted by its log) and the topic holds one ToolResult for it,
with the first snapshot. A repeat of the call id is dropped.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from tests.support.crash_harness import wait_killed
from tests.support.kafka import Deployment, collect, publish
from tests.support.samples import SALES_CSV, csv_chart_arguments, tool_call

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("kill", ["after_state_write@1", "after_outputs@1"])
def test_a_replayed_tool_call_sends_its_first_result_and_never_reads_the_csv_again(
    tmp_path: Path, kill: str
) -> None:
    root = tmp_path / "ws"
    csv = root / "ws-3" / "reports" / "sales.csv"
    csv.parent.mkdir(parents=True)
    csv.write_text(SALES_CSV)
    d = Deployment(partitions=1)
    d.create_topics()
    results = d.topic("toolresults.kandev")
    call = tool_call(csv_chart_arguments(), call_id="csv-1")
    try:
        first = d.start_worker(
            tmp_path, REPLYGATE_FAILPOINT=kill, REPLYGATE_WORKSPACES_ROOT=str(root)
        )
        asyncio.run(publish(d.settings(), d.topic("toolcalls.raw"), [("task-9", call)]))
        assert wait_killed(first, 90), f"the worker did not die at {kill}\n{d.log_tail()}"
        csv.write_text("month,sales,cost\nJan,99,1\n")  # changed after the call ran
        d.start_worker(tmp_path, REPLYGATE_WORKSPACES_ROOT=str(root))
        asyncio.run(collect([results], lambda r: len(r) >= 1, timeout=90, settle=3))
        # a repeat of the call id, after the CSV changed: dropped, nothing read or sent
        asyncio.run(publish(d.settings(), d.topic("toolcalls.raw"), [("task-9", call)]))
        out = [d.topic("replies.dlq"), results, d.topic("delivery.im")]
        heard = asyncio.run(collect(out, lambda r: False, timeout=8))
    finally:
        d.stop_all()
    sent = {v for t, _k, v in heard if t == results}
    assert len(sent) == 1, f"{len(sent)} different ToolResults for one call\n{d.log_tail()}"
    result = orjson.loads(sent.pop())
    assert (result["call_id"], result["status"]) == ("csv-1", "ok")
    snapshot = result["metadata"]["normalized"]["generic"]["output"]
    assert snapshot["resolved_charts"][0]["labels"] == ["Jan", "Feb", "Mar"], snapshot  # first CSV
    assert [t for t, _k, _v in heard if t != results] == []
    assert "replayed 1 input records" in d.logs[1].read_text(errors="replace"), d.log_tail()
