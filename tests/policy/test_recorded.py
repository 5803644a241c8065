"""What a judged batch says about policy: one audit record per outcome (no reply text), with the
version that judged the turn and the shadow's judgement beside; disagreements by kind."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from schemas.audit import AuditRecord
from streams.core.decision import Source
from streams.policy.recorded import audited, disagreed
from tests.core.test_batch import T0
from tests.core.test_batch_versions import ONE, TWO, Versioned, invalid
from tests.support.samples import im_text, raw_reply

SAID = "the reply text no audit record may hold"


@pytest.fixture
def v(tmp_path: Path) -> Versioned:
    return Versioned(tmp_path)


def said(n: int, **changes: object) -> dict[str, object]:
    text = im_text([{"type": "text", "data": {"text": f"{SAID} {n} canary-0001"}}])
    return raw_reply(output={"text": text}, **changes)


def test_one_audit_record_per_outcome_naming_its_version_and_no_text(v: Versioned) -> None:
    one = v.gates(ONE, "one")
    v.hold(one)
    first = v.run(
        [
            (v.source("replies_raw", 1), said(1)),  # delivered
            (v.source("replies_raw", 2), invalid(turn_id="t-43")),  # a correction: no outcome
            (v.source("replies_raw", 3), b"not json"),  # a dead letter
        ]
    )
    v.hold(v.gates(TWO, "two"))
    later = T0 + timedelta(minutes=10)
    deadline = Source(v.settings.deadline_topic(), 0, 1, later, b"c-7")
    second = v.run([(deadline, orjson.dumps({"turn_id": "t-43"}))], wall=later)
    records = [AuditRecord.model_validate_json(a.value) for a in audited(first.judged)]
    records += [AuditRecord.model_validate_json(a.value) for a in audited(second.judged)]
    assert [(r.turn_id, r.outcome) for r in records] == [
        ("t-42", "reply"),
        (None, "dead_letter"),
        ("t-43", "failure_notice"),
    ]
    assert {r.policy_version for r in records} == {one.version}  # the turn's, not the new one
    assert records[0].masked[0].rule == "literal" and records[0].masked[0].count == 1
    for value in [a.value for a in audited(first.judged)]:
        assert SAID.encode() not in value and b"canary-0001" not in value
    assert [a.key for a in audited(first.judged)] == [b"c-7", b"c-7"]


def test_the_shadow_disagreement_is_counted_and_written_beside(v: Versioned) -> None:
    v.hold(v.gates(TWO, "two"), shadow=v.gates(ONE, "one"))
    result = v.run(
        [
            (v.source("replies_raw", 1), said(1)),
            (v.source("replies_raw", 2), raw_reply(turn_id="t-43")),
        ]
    )
    assert [(d.platform, d.contract, d.kind) for d in disagreed(result.judged)] == [
        ("im", "im.segments.v1", "masking")
    ]
    records = [AuditRecord.model_validate_json(a.value) for a in audited(result.judged)]
    shadow = records[0].shadow
    assert shadow is not None and shadow.disagreements == ["masking"]
    assert records[1].shadow is not None and records[1].shadow.disagreements == []
