"""Progress summaries (docs/contracts.md, Progress summaries): the gate, the turn, the batch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas.records import Delivery
from streams.cli.check_session import CheckSession
from streams.core.decision import Source
from streams.core.pipeline import Gate
from streams.core.state import written
from streams.core.turns import on_reply
from streams.worker.metrics_hooks import worker_metrics
from tests.core.test_batch import T0, Harness
from tests.support.samples import GITHUB_PAT, NOW, encode, raw_reply


def progress(seq: int = 0, text: Any = "Searching the docs…", **changes: Any) -> dict[str, Any]:
    output = {"text": text} if text is not None else {}
    return raw_reply(kind="progress", seq=seq, output=changes.pop("output", output), **changes)


def check(gate: Gate, record: dict[str, Any]) -> dict[str, Any]:
    return CheckSession(gate).line(encode(record), 1, NOW).line()


# ---- the gate (what `replygate check` answers) -------------------------------------------------


def test_progress_is_accepted_and_delivered_as_progress(gate: Gate) -> None:
    line = check(gate, progress(seq=3))
    assert (line["verdict"], line["action"], line["errors"]) == ("accepted", "progress", [])
    delivery = Delivery.model_validate(line["output"])
    assert delivery.kind == "progress" and delivery.delivery_id == "t-42/progress/3"
    assert delivery.message == {"text": "Searching the docs…"}
    assert delivery.preview == "Searching the docs…"
    assert delivery.corrected is False and delivery.contract == "im.segments.v1"


def test_progress_is_not_validated_against_the_contract(gate: Gate) -> None:
    line = check(gate, progress(text="plain prose, not {segments}"))
    assert line["action"] == "progress"


def test_progress_is_masked_and_its_preview_is_one_line(gate: Gate) -> None:
    line = check(gate, progress(text=f"Found\n\n  {GITHUB_PAT}  "))
    assert line["output"]["message"] == {"text": "Found\n\n  [REDACTED:github-pat]  "}
    assert line["output"]["preview"] == "Found [REDACTED:github-pat]"
    assert line["output"]["masked"] == [{"rule": "github-pat", "path": "text", "count": 1}]
    assert GITHUB_PAT not in orjson.dumps(line).decode()


def test_only_output_text_counts(gate: Gate) -> None:
    output = {
        "text": "working",
        "reasoning": "never shown",
        "tool_calls": [{"name": "json", "arguments": {"segments": []}}],
    }
    line = check(gate, progress(output=output))
    assert line["action"] == "progress" and line["output"]["message"] == {"text": "working"}


def test_a_final_reply_is_kind_final_or_no_kind(gate: Gate) -> None:
    assert check(gate, raw_reply(kind="final"))["action"] == "deliver"
    assert check(gate, raw_reply())["action"] == "deliver"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (None, "missing_reply"),
        ("", "too_short"),
        (" \n\t ", "too_short"),
        ("x" * 4001, "too_long"),
        ("  " + "x" * 4001 + "  ", "too_long"),
        ("bell\x07", "control_character"),
        ("nul\x00", "control_character"),
        ("c1\x85", "control_character"),
        ("del\x7f", "control_character"),  # a control character (Cc), though neither C0 nor C1
    ],
)
def test_progress_that_breaks_the_rules_is_dropped(gate: Gate, text: Any, code: str) -> None:
    line = check(gate, progress(text=text))
    assert (line["verdict"], line["action"], line["output"]) == ("rejected", "drop", None)
    assert [e["code"] for e in line["errors"]] == [code]


@pytest.mark.parametrize("text", ["x", "x" * 4000, "  " + "x" * 4000 + "\n", "tab\tlf\ncr\r"])
def test_progress_within_the_rules_is_delivered(gate: Gate, text: str) -> None:
    assert check(gate, progress(text=text))["action"] == "progress"


def test_seq_belongs_to_progress_and_progress_needs_it(gate: Gate) -> None:
    without = raw_reply(kind="progress", output={"text": "x"})
    line = check(gate, without)
    assert line["verdict"] == "dead_letter" and line["errors"][0]["path"] == "seq"
    line = check(gate, raw_reply(seq=1))
    assert line["verdict"] == "dead_letter" and line["errors"][0]["code"] == "unknown_field"
    line = check(gate, raw_reply(kind="final", seq=0))
    assert line["verdict"] == "dead_letter"


@pytest.mark.parametrize("bad", [{"seq": -1}, {"seq": "1"}, {"seq": 1.0}, {"kind": "partial"}])
def test_kind_and_seq_are_strict(gate: Gate, bad: dict[str, Any]) -> None:
    record = {**progress(), **bad}
    assert check(gate, record)["verdict"] == "dead_letter"


# ---- the turn: progress never changes its state ------------------------------------------------


def decide(gate: Gate, record: dict[str, Any]) -> Any:
    return gate.decide_reply(encode(record), Source("replies.raw"), T0)


def test_progress_on_an_open_or_pending_turn_is_sent_without_a_state_change(gate: Gate) -> None:
    pending = decide(gate, raw_reply(output={"text": "prose"})).pending
    for state in (None, written(None, "r:0:1", T0, pending, None)):
        step = on_reply(gate, decide(gate, progress()), state, T0)
        assert step.outcome == "progress" and not step.changes_state
        assert [d.action for d in step.emit] == ["progress"]


def test_progress_after_the_turn_finished_is_late(gate: Gate) -> None:
    finished = written(None, "r:0:1", T0, None, "delivered")
    for record in (progress(), progress(text="")):
        step = on_reply(gate, decide(gate, record), finished, T0)
        assert (step.outcome, step.emit, step.changes_state) == ("late_progress", (), False)


def test_invalid_progress_is_counted_not_sent(gate: Gate) -> None:
    step = on_reply(gate, decide(gate, progress(text="")), None, T0)
    assert (step.outcome, step.emit, step.changes_state) == ("progress_rejected", (), False)


def test_the_batch_writes_no_state_for_progress_and_the_correction_still_counts(
    tmp_path: Path,
) -> None:
    harness = Harness(tmp_path)
    first = harness.run(
        [
            (harness.source("replies_raw", 0), progress(0)),
            (harness.source("replies_raw", 1), raw_reply(output={"text": "prose"})),
        ]
    )
    assert [w.key for w in first.writes] == [b"t-42"]
    pending_state = harness.stored[b"t-42"]
    between = harness.run([(harness.source("replies_raw", 2), progress(1))])
    assert between.writes == [] and harness.stored[b"t-42"] == pending_state
    assert [d.action for d in between.outputs] == ["progress"]
    fixed = harness.run([(harness.source("replies_raw", 3), raw_reply(attempt=1))])
    assert [d.output.corrected for d in fixed.outputs if d.output] == [True]
    late = harness.run([(harness.source("replies_raw", 4), progress(2))])
    assert late.outputs == [] and late.writes == []
    assert [j.step.outcome for j in late.judged] == ["late_progress"]


def test_progress_outcomes_are_counted_with_bounded_labels(tmp_path: Path) -> None:
    harness = Harness(tmp_path)
    metrics = worker_metrics(harness.settings, harness.gate)
    result = harness.run(
        [
            (harness.source("replies_raw", 0), progress(0)),
            (harness.source("replies_raw", 1), progress(1, text="")),
            (harness.source("replies_raw", 2), raw_reply()),
            (harness.source("replies_raw", 3), progress(2)),
            (harness.source("replies_raw", 4), progress(0, contract="acme.unknown.v1")),
        ]
    )
    metrics.batch(result, 5, 0.01)
    text = metrics.metrics.exposition()
    for outcome in ("progress", "progress_rejected", "late_progress"):
        assert f'outcome="{outcome}"' in text
    assert "acme.unknown.v1" not in text
