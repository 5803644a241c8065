"""A finished turn's state does not grow with what the turn saw: once the group has committed
past its last record, it is settled (its outcome and when it finished, tens of bytes), and a
repeat is still recognised until the horizon (`streams.core.state.settled`)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from streams.core.decision import Source
from streams.core.state import TurnIndex, TurnState, settled, tool_key
from tests.core.test_batch import CLOCK_SKEW, HORIZON, T0, Harness, kinds
from tests.support.samples import raw_reply, tool_call

PROSE = "Here is the answer in prose, which the contract refuses " * 20


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def _corrected(h: Harness) -> None:
    """t-42 asks for a correction at offset 1 (the prose and its context held while pending),
    and its correction finishes it at offset 2."""
    h.run([(h.source("replies_raw", 1), raw_reply(output={"text": PROSE}))])
    pending = h.state()
    assert pending is not None and pending.waiting is not None
    done = h.run([(h.source("replies_raw", 2), raw_reply(attempt=1))])
    assert kinds(done) == ["deliver"]


def test_a_corrected_turn_keeps_what_its_replay_needs_until_committed_then_settles(
    h: Harness,
) -> None:
    _corrected(h)
    finished = h.state()
    assert finished is not None and finished.before is not None  # the pending turn it saw
    h.committed = 2  # the correction (offset 2) may still be read again
    correction = [(h.source("replies_raw", 2), raw_reply(attempt=1))]
    replay = h.run(correction, apply=False)
    assert replay.replayed == 1 and kinds(replay) == ["deliver"]
    h.committed = 3  # committed past it: no replay can come
    later = h.run([(h.source("replies_raw", 3), raw_reply(turn_id="t-9"))])
    assert sorted(w.key for w in later.writes) == [b"t-42", b"t-9"]
    value = h.stored[b"t-42"]
    assert orjson.loads(value) == {"f": "corrected", "t": orjson.loads(value)["t"]}
    assert len(b"t-42") + len(value) <= 100
    state = h.state()
    assert state is not None and state.is_settled
    assert (state.status, state.outcome, state.at) == ("finished", "corrected", finished.at)
    assert b"prose" not in value and b"c-7" not in value  # no reply body, no context


def test_a_repeat_of_a_settled_turn_is_dropped_until_the_horizon_then_it_expires(
    h: Harness,
) -> None:
    h.run([(h.source("replies_raw", 1), raw_reply())])
    h.committed = 2
    h.run([(h.source("replies_raw", 2), raw_reply(turn_id="t-9"))])
    assert h.state() == settled(h.state() or TurnState("open", "x:0:0", ""))
    repeat = h.run([(h.source("replies_raw", 3), raw_reply())])
    assert repeat.outputs == [] and [j.step.outcome for j in repeat.judged] == ["duplicate_dropped"]
    cancel = {"turn_id": "t-42", "conversation_id": "c-7", "action": "cancel"}
    late_cancel = h.run([(h.source("turns_control", 4), cancel)])
    assert late_cancel.writes == [] or all(w.key != b"t-42" for w in late_cancel.writes)
    progress = raw_reply(kind="progress", seq=0, output={"text": "Searching"})
    assert [j.step.outcome for j in h.run([(h.source("replies_raw", 5), progress)]).judged] == [
        "late_progress"
    ]
    # expiry still finds it, by the time it finished
    after = T0 + HORIZON + CLOCK_SKEW
    gone = h.run([(h.source("replies_raw", 6, after), raw_reply(turn_id="t-100"))], apply=False)
    assert [w.value for w in gone.writes if w.key == b"t-42"] == [None]


def test_a_settled_value_survives_a_rebuild_of_the_index(h: Harness) -> None:
    h.run([(h.source("replies_raw", 1), raw_reply())])
    h.committed = 2
    h.run([(h.source("replies_raw", 2), raw_reply(turn_id="t-9"))])
    index = TurnIndex(h.settings.state_keep)
    index.rebuild((0, key, value) for key, value in h.stored.items())
    assert index.pending == {} and index.releasable(0, lambda _t, _p: 99) == [b"t-9"]
    assert list(index.due(0, T0 + HORIZON + CLOCK_SKEW)) == [b"t-42", b"t-9"]


def test_a_tool_call_settles_to_its_outcome(h: Harness) -> None:
    h.run([(h.source("toolcalls_raw", 1), tool_call())])
    h.committed = 2
    h.run([(h.source("toolcalls_raw", 2), tool_call(call_id="call-2"))])
    value = h.stored[tool_key("call-1")]
    state = TurnState.decode(value)
    assert state.is_settled and (state.outcome, state.result) == ("tool_ok", None)
    assert len(tool_key("call-1")) + len(value) <= 100


def test_a_pending_or_open_turn_is_never_settled() -> None:
    index = TurnIndex(timedelta(days=1))
    pending = TurnState("open", "replies:0:3", T0.isoformat())
    index.note(0, b"t-1", pending)
    assert index.releasable(0, lambda _t, _p: 99) == []


def test_a_settled_value_round_trips() -> None:
    state = settled(TurnState("finished", "replies:0:3", "2026-11-30T12:00:05.123Z", outcome="x"))
    assert TurnState.decode(state.encode()) == state
    assert state.encode() == b'{"f":"x","t":1796040005123}'


def test_a_turn_ended_by_its_deadline_settles_too(h: Harness) -> None:
    h.run([(h.source("replies_raw", 1), raw_reply(output={"text": PROSE}))])
    late = T0 + timedelta(seconds=40)
    event = (Source(h.settings.deadline_topic(), 0, 7, late), orjson.dumps({"turn_id": "t-42"}))
    noticed = h.run([event], wall=late)
    assert [d.output.kind for d in noticed.outputs if d.output] == ["failure_notice"]
    h.committed = 8  # the group has committed past the deadline event (offset 7)
    h.run([(h.source("replies_raw", 9, late), raw_reply(turn_id="t-9"))])
    state = h.state()
    assert state is not None and state.is_settled and state.outcome == "failure_notice"
