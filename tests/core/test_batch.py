"""A batch of input records against stored turn state, without Kafka (`streams.core.batch`).

The worker's guarantees rest on these: one write per touched turn, a replay that re-derives
the identical outputs, expiry by broker time, and no Kafka error ever judged here.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas.records import CorrectionRequest, Delivery, record_json
from streams.core.batch import BatchResult, TurnBatch, Write
from streams.core.decision import Source
from streams.core.state import TurnIndex, TurnState, tool_key
from streams.settings import Settings
from tests.support.gates import disk_gate
from tests.support.samples import SALES_CSV, csv_chart_arguments, encode, raw_reply, tool_call

T0 = datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)
HORIZON = timedelta(days=7)
CLOCK_SKEW = timedelta(hours=1)


class Harness:
    """A TurnBatch over a dict store that applies each batch's writes, as the worker does."""

    def __init__(self, tmp: Path, **settings: Any) -> None:
        self.settings = Settings(workspaces_root=tmp, media_root=tmp, **settings)
        self.gate = disk_gate(self.settings)
        self.stored: dict[bytes, bytes] = {}
        self.index = TurnIndex(self.settings.state_keep)
        self.committed: int | None = None  # the group's committed offset of replies.raw
        self.batch = TurnBatch(
            self.gate,
            lambda _p, key: self.stored.get(key),
            self.index,
            lambda _t, _p: self.committed,
        )

    def source(
        self,
        name: str,
        offset: int,
        at: datetime = T0,
        partition: int = 0,
        key: bytes | None = None,
    ) -> Source:
        """The sample records' own key by default: `c-7`, or `task-9` for a tool call."""
        default = b"task-9" if name == "toolcalls_raw" else b"c-7"
        return Source(self.settings.topic(name), partition, offset, at, key or default)

    def run(
        self, records: list[tuple[Source, Any]], apply: bool = True, wall: datetime = T0
    ) -> BatchResult:
        encoded = [(s, v if isinstance(v, bytes) else encode(v)) for s, v in records]
        result = self.batch.run(encoded, wall)
        if apply:
            for write in result.writes:
                self.apply(write)
        return result

    def apply(self, write: Write) -> None:
        if write.value is None:
            self.stored.pop(write.key, None)
        else:
            self.stored[write.key] = write.value
        self.index.note(write.partition, write.key, write.state)

    def state(self, turn_id: str = "t-42") -> TurnState | None:
        raw = self.stored.get(turn_id.encode())
        return TurnState.decode(raw) if raw else None


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def kinds(result: BatchResult) -> list[str]:
    return [d.action for d in result.outputs]


def test_a_turn_touched_twice_in_a_batch_is_written_once(h: Harness) -> None:
    invalid = raw_reply(output={"text": "prose"})
    cancel = {"turn_id": "t-42", "conversation_id": "c-7", "action": "cancel"}
    result = h.run([(h.source("replies_raw", 1), invalid), (h.source("turns_control", 2), cancel)])
    assert kinds(result) == ["request_correction"]
    assert len(result.writes) == 1
    state = h.state()
    assert state is not None and (state.status, state.outcome) == ("finished", "cancelled")
    assert state.source.endswith(":0:2") and state.before is not None
    assert state.before.status == "pending"


def test_a_replayed_batch_re_sends_the_identical_outputs(h: Harness) -> None:
    records = [
        (h.source("replies_raw", 1), raw_reply()),
        (h.source("replies_raw", 2), raw_reply(turn_id="t-43", output={"text": "prose"})),
    ]
    first = h.run(records)
    assert first.replayed == 0 and kinds(first) == ["deliver", "request_correction"]
    replay = h.run(records)  # the crash fell after the state write, before the commit
    assert replay.replayed == 2
    assert [d.output for d in replay.outputs] == [d.output for d in first.outputs]
    # a later repeat of the delivered turn is a duplicate, not a replay
    repeat = h.run([(h.source("replies_raw", 3), raw_reply())])
    assert repeat.outputs == [] and repeat.replayed == 0
    assert [j.step.outcome for j in repeat.judged] == ["duplicate_dropped"]


def test_a_correction_and_its_deadline_give_one_outcome(h: Harness) -> None:
    h.run([(h.source("replies_raw", 1), raw_reply(output={"text": "prose"}))])
    state = h.state()
    assert state is not None and state.waiting is not None
    deadline = {"turn_id": "t-42"}
    # the deadline event of a turn whose deadline passed: the notice, once
    late = T0 + timedelta(seconds=40)
    event = (Source(h.settings.deadline_topic(), 0, 7, late), orjson.dumps(deadline))
    early = h.run([event], apply=False, wall=T0)  # the batch's clock: the deadline is ahead
    assert early.outputs == []
    noticed = h.run([event], wall=late)
    assert [d.output.kind for d in noticed.outputs if d.output] == ["failure_notice"]
    assert noticed.judged[0].step.expired
    # the correction after it is a duplicate
    correction = h.run([(h.source("replies_raw", 8, late), raw_reply(attempt=1))])
    assert correction.outputs == []


def test_a_request_made_late_gives_the_corrector_its_whole_window_and_replays_the_same(
    h: Harness,
) -> None:
    """A consumer 45 s behind a 30 s deadline: the deadline counts from the request (the batch's
    clock), not from the record's broker time, or the request would be born expired."""
    records = [(h.source("replies_raw", 1), raw_reply(output={"text": "prose"}))]
    behind = T0 + timedelta(seconds=45)
    first = h.run(records, wall=behind)
    request = first.outputs[0].output
    assert isinstance(request, CorrectionRequest)
    assert request.deadline == "2026-11-30T12:01:20.000Z"  # 12:00:05 + 45 s + 30 s
    state = h.state()
    assert state is not None and state.waiting is not None
    assert (state.waiting.requested_at, state.waiting.deadline) == (
        "2026-11-30T12:00:50.000Z",
        request.deadline,
    )
    # its replay, a minute later still, finds its own write and asks exactly as it first did
    replay = h.run(records, wall=behind + timedelta(seconds=60))
    assert replay.replayed == 1 and [d.output for d in replay.outputs] == [request]
    # a correction that came 20 s after the request (before its deadline) is delivered
    correction = (h.source("replies_raw", 2, behind + timedelta(seconds=20)), raw_reply(attempt=1))
    assert kinds(h.run([correction], wall=behind + timedelta(seconds=21))) == ["deliver"]


def test_a_record_on_time_is_asked_at_its_broker_time(h: Harness) -> None:
    """No lag (the batch's clock before the record's time, as with a skewed clock): the
    record's own time, as `replygate check` does."""
    early = T0 - timedelta(seconds=3)
    result = h.run([(h.source("replies_raw", 1), raw_reply(output={"text": "prose"}))], wall=early)
    request = result.outputs[0].output
    assert isinstance(request, CorrectionRequest)
    assert request.deadline == "2026-11-30T12:00:35.000Z"


@pytest.mark.parametrize(
    ("field", "value", "reply"),
    [
        ("contract", "text.plain.v1", {"output": {"text": "plain words"}}),
        ("platform", "ide", {}),
        ("conversation_id", "c-8", {}),
    ],
)
def test_a_correction_for_another_conversation_platform_or_contract_ends_with_the_notice(
    h: Harness, field: str, value: str, reply: dict[str, Any]
) -> None:
    """A correction only fixes the format: one that names another contract, platform or
    conversation is not the answer its turn asked for, and is never delivered there."""
    h.run([(h.source("replies_raw", 1), raw_reply(output={"text": "prose"}))])
    other = raw_reply(attempt=1, **{field: value, **reply})
    # keyed as its own conversation (which may share the turn's partition)
    source = h.source("replies_raw", 2, key=other["conversation_id"].encode())
    assert h.gate.decide_reply(encode(other), source, T0).action == "deliver"
    result = h.run([(source, other)])
    assert [d.action for d in result.outputs] == ["failure_notice"]
    notice = result.outputs[0]
    assert isinstance(notice.output, Delivery)
    assert (notice.topic, notice.output.contract, notice.output.conversation_id) == (
        h.settings.delivery_topic("im"),
        "im.segments.v1",
        "c-7",
    )
    assert [(e.path, e.code) for e in notice.errors] == [(field, "correction_mismatch")]
    state = h.state()
    assert state is not None and state.finished_outcome == "failure_notice"


def test_progress_older_than_the_horizon_is_dropped_as_late_not_a_dead_letter(
    h: Harness,
) -> None:
    late = T0 + HORIZON + timedelta(seconds=1)
    progress = raw_reply(kind="progress", seq=0, output={"text": "Searching the docs"})
    result = h.run([(h.source("replies_raw", 1, late), progress)])
    assert result.outputs == [] and result.writes == []
    assert [j.step.outcome for j in result.judged] == ["late_progress"]


def test_finished_turns_expire_by_broker_time_with_a_tombstone(h: Harness) -> None:
    h.run([(h.source("replies_raw", 1), raw_reply())])
    assert h.state() is not None and h.index.pending == {}
    just_before = T0 + HORIZON + CLOCK_SKEW - timedelta(seconds=1)
    other = raw_reply(turn_id="t-99", produced_at="2026-12-07T12:00:00Z")
    kept = h.run([(h.source("replies_raw", 2, just_before), other)])
    assert kept.expired == 0 and h.state() is not None
    after = T0 + HORIZON + CLOCK_SKEW
    gone = h.run([(h.source("replies_raw", 3, after), raw_reply(turn_id="t-100"))], apply=False)
    assert gone.expired == 1
    assert [w.value for w in gone.writes if w.key == b"t-42"] == [None]


def test_a_reply_older_than_the_horizon_is_a_dead_letter_not_a_second_delivery(
    h: Harness,
) -> None:
    late = T0 + HORIZON + timedelta(seconds=1)
    result = h.run([(h.source("replies_raw", 1, late), raw_reply())])
    (letter,) = result.outputs
    assert letter.output is not None and letter.output.reason == "turn_expired"
    assert letter.topic == h.settings.topic("dlq") and result.writes == []


def test_a_failure_in_the_gate_is_that_records_dead_letter(tmp_path: Path) -> None:
    h = Harness(tmp_path, extra_contracts={"boom.v1": "tests.support.kafka:BOOM_CONTRACT"})
    result = h.run(
        [
            (h.source("replies_raw", 1), raw_reply(contract="boom.v1")),
            (h.source("replies_raw", 2), raw_reply(turn_id="t-2")),
        ]
    )
    assert kinds(result) == ["dead_letter", "deliver"]
    assert result.outputs[0].output is not None
    assert result.outputs[0].output.reason == "processing_error"


def test_a_tool_call_runs_once_and_its_replay_never_reads_the_workspace(
    h: Harness, tmp_path: Path
) -> None:
    """The ToolResult (its CSV snapshot) is kept in state: a replay re-sends that very record
    though the CSV changed since, a repeat of the call id is dropped, and once the group has
    committed past the call the kept record goes (the call id stays, against repeats)."""
    csv = tmp_path / "ws-3" / "reports" / "sales.csv"
    csv.parent.mkdir(parents=True)
    csv.write_text(SALES_CSV)
    call = (h.source("toolcalls_raw", 1), tool_call(csv_chart_arguments()))
    first = h.run([call])
    assert kinds(first) == ["tool_result"] and [w.key for w in first.writes] == [tool_key("call-1")]
    sent = record_json(first.outputs[0].output)
    csv.write_text("month,sales,cost\nJan,99,1\n")  # changed after the call
    replay = h.run([call])  # the crash fell after the state write, before the commit
    assert replay.replayed == 1 and [record_json(d.output) for d in replay.outputs] == [sent]
    assert [j.step.outcome for j in replay.judged] == ["tool_ok"]
    repeat = h.run([(h.source("toolcalls_raw", 2), tool_call(csv_chart_arguments()))])
    assert repeat.outputs == [] and repeat.writes == []
    assert [j.step.outcome for j in repeat.judged] == ["duplicate_dropped"]
    h.committed = 2  # committed past the call: its result goes, its id stays
    later = h.run([(h.source("toolcalls_raw", 3), tool_call(call_id="call-2"))])
    assert sorted(w.key for w in later.writes) == [tool_key("call-1"), tool_key("call-2")]
    kept = TurnState.decode(h.stored[tool_key("call-1")])
    assert (kept.status, kept.outcome, kept.result) == ("finished", "tool_ok", None)
    again = h.run([(h.source("toolcalls_raw", 4), tool_call(csv_chart_arguments()))])
    assert again.outputs == [] and [j.step.outcome for j in again.judged] == ["duplicate_dropped"]


def test_a_tool_error_is_kept_and_replayed_the_same_and_a_dead_letter_writes_nothing(
    h: Harness,
) -> None:
    bad = (h.source("toolcalls_raw", 1), tool_call({"version": 2}))
    first = h.run([bad])
    assert kinds(first) == ["tool_error"] and len(first.writes) == 1
    replay = h.run([bad])
    assert [record_json(d.output) for d in replay.outputs] == [
        record_json(d.output) for d in first.outputs
    ]
    assert [j.step.outcome for j in replay.judged] == ["tool_error"]
    broken = h.run([(h.source("toolcalls_raw", 2), b"{not json")])
    assert kinds(broken) == ["dead_letter"] and broken.writes == []


def test_the_index_is_rebuilt_from_the_store(h: Harness) -> None:
    h.run(
        [
            (h.source("replies_raw", 1), raw_reply(output={"text": "prose"})),
            (h.source("replies_raw", 2), raw_reply(turn_id="t-2")),
        ]
    )
    rebuilt = TurnIndex(HORIZON + CLOCK_SKEW)
    rebuilt.rebuild((0, key, value) for key, value in h.stored.items())
    assert set(rebuilt.pending) == {b"t-42"}
    assert list(rebuilt.due(0, T0 + HORIZON + CLOCK_SKEW)) == [b"t-2"]


def test_expiry_is_bounded_per_batch(h: Harness) -> None:
    """A backlog of old turns goes over several batches, never as one huge write."""
    from streams.core.batch import EXPIRE_PER_BATCH

    many = EXPIRE_PER_BATCH + 5
    h.run([(h.source("replies_raw", i), raw_reply(turn_id=f"t-{i}")) for i in range(many)])
    later = T0 + HORIZON + CLOCK_SKEW
    first = h.run([(h.source("replies_raw", many, later), raw_reply(turn_id="x-1"))])
    second = h.run([(h.source("replies_raw", many + 1, later), raw_reply(turn_id="x-2"))])
    assert (first.expired, second.expired) == (EXPIRE_PER_BATCH, 5)
    assert not any(key.startswith(b"t-") for key in h.stored)  # every old turn is gone
