"""The audit topic: one record per outcome, for every outcome kind (reply, corrected,
failure_notice, dead_letter, dropped, progress), each naming the policy version, and none
holding any text that was sent (every audit record is searched for every reply text, masked
secret and raw record of the run).

A real worker process on the local broker.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from schemas.audit import AuditRecord
from tests.policy.running import CORRECTIONS, DELIVERY, DLQ, PolicyDeployment, Sent
from tests.support.samples import im_text, raw_reply

pytestmark = pytest.mark.kafka

SECRET = "canary-audit-7f3a9c"
BUNDLE = f'[default]\nleak_literals = ["{SECRET}"]\n'
NOT_JSON = b"zq-raw-record-that-is-no-json"
TEXTS: list[str] = []  # every text the test sends, filled by `said`


def said(text: str) -> str:
    TEXTS.append(text)
    return text


def reply(turn: str, text: str, attempt: int = 0, **changes: Any) -> Sent:
    output = {"text": im_text([{"type": "text", "data": {"text": said(text)}}])}
    return Sent(
        raw_reply(
            turn_id=turn, conversation_id=f"c-{turn}", attempt=attempt, output=output, **changes
        )
    )


def prose(turn: str, text: str, attempt: int = 0) -> Sent:
    output = {"text": said(text)}
    return Sent(
        raw_reply(turn_id=turn, conversation_id=f"c-{turn}", attempt=attempt, output=output)
    )


FIRST = [
    reply("t-reply", f"zq-valid-answer with {SECRET} inside"),
    prose("t-corrected", "zq-prose-to-be-corrected"),
    prose("t-notice", "zq-prose-that-stays-prose"),
    prose("t-cancel", "zq-prose-then-cancelled"),
    Sent(
        raw_reply(
            turn_id="t-progress",
            conversation_id="c-t-progress",
            kind="progress",
            seq=0,
            output={"text": said("zq-progress-searching-the-docs")},
        )
    ),
    Sent(NOT_JSON, key="c-dead"),
]
SECOND = [
    reply("t-reply", f"zq-valid-answer with {SECRET} inside"),  # a repeat: dropped
    reply("t-corrected", "zq-corrected-answer", attempt=1),
    prose("t-notice", "zq-second-prose-attempt", attempt=1),
    Sent(
        {"turn_id": "t-cancel", "conversation_id": "c-t-cancel", "action": "cancel"},
        topic="turns_control",
    ),
    reply("t-progress", "zq-final-after-progress"),
]
# (turn, outcome): each exactly once
EXPECTED = Counter(
    {
        ("t-reply", "reply"): 1,
        ("t-reply", "dropped"): 1,
        ("t-corrected", "corrected"): 1,
        ("t-notice", "failure_notice"): 1,
        ("t-cancel", "dropped"): 1,
        ("t-progress", "progress"): 1,
        ("t-progress", "reply"): 1,
        (None, "dead_letter"): 1,
    }
)


def outcomes(out: dict[str, list[dict[str, Any]]]) -> Counter[tuple[str | None, str]]:
    return Counter((r.get("turn_id"), str(r.get("outcome"))) for r in out["audit"])


def test_one_audit_record_per_outcome_of_every_kind_and_no_text(tmp_path: Path) -> None:
    dep = PolicyDeployment(tmp_path)
    path = dep.bundle("audit", BUNDLE)
    version = dep.version(path)
    try:
        dep.policy("publish", path)
        (worker,) = dep.start_ready()
        dep.wait_active([worker], version)
        dep.send(FIRST)
        dep.read(lambda o: len(o[CORRECTIONS]) >= 3 and len(o[DELIVERY]) >= 2 and bool(o[DLQ]))
        dep.send(SECOND)
        out = dep.read(lambda o: sum(outcomes(o).values()) >= sum(EXPECTED.values()))
    finally:
        dep.stop()

    assert outcomes(out) == EXPECTED
    assert {outcome for _turn, outcome in EXPECTED} == {
        "reply",
        "corrected",
        "failure_notice",
        "dead_letter",
        "dropped",
        "progress",
    }
    raw = dep.raw_values("audit")
    for value in raw:
        record = AuditRecord.model_validate_json(value)  # closed: nothing else in it
        assert record.policy_version == version
        for text in (*TEXTS, SECRET, NOT_JSON.decode()):
            assert text.encode() not in value, (text, value)
    records = {(r["turn_id"], r["outcome"]): r for r in out["audit"]}
    # which rules masked, and how many spans: never the value
    assert [m["count"] for m in records[("t-reply", "reply")]["masked"]] == [1]
    notice = records[("t-notice", "failure_notice")]
    assert notice["attempt"] == 1 and notice["errors"], notice
    assert records[("t-corrected", "corrected")]["delivered_at"] is not None
