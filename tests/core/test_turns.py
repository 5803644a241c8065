"""The turn state machine (docs/contracts.md, "Correction"): one outcome per turn, come what may."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from schemas.records import Context
from streams.core.decision import Decision, PendingTurn, Source
from streams.core.pipeline import Gate
from streams.core.ports import NoTurns
from streams.core.state import TurnState, seen_by, written
from streams.core.turns import on_cancel, on_deadline, on_reply
from tests.support.samples import encode, raw_reply

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


def decide(gate: Gate, at: datetime = T0, **changes: object) -> Decision:
    return gate.decide_reply(encode(raw_reply(**changes)), Source("replies.raw"), at)


def waiting(pending: PendingTurn, source: str = "r:0:1") -> TurnState:
    return written(None, source, T0, pending, None)


def done(outcome: str, source: str = "r:0:2") -> TurnState:
    return written(None, source, T0, None, outcome)


def pending_for(gate: Gate) -> PendingTurn:
    decision = decide(gate, output={"text": "not json"})
    assert decision.pending is not None
    return decision.pending


def test_valid_first_attempt_is_delivered_and_finishes_the_turn(gate: Gate) -> None:
    step = on_reply(gate, decide(gate), None, T0)
    assert step.outcome == "delivered"
    assert [d.action for d in step.emit] == ["deliver"]
    assert step.finished == "delivered" and step.pending is None


def test_no_reply_finishes_without_emitting(gate: Gate) -> None:
    step = on_reply(gate, decide(gate, output={"text": '{"segments": []}'}), None, T0)
    assert (step.outcome, step.emit, step.finished) == ("no_reply", (), "no_reply")


def test_invalid_first_attempt_becomes_pending(gate: Gate) -> None:
    decision = decide(gate, output={"text": "prose"})
    step = on_reply(gate, decision, None, T0)
    assert step.outcome == "correction_requested"
    assert [d.action for d in step.emit] == ["request_correction"]
    assert isinstance(step.pending, PendingTurn) and step.finished is None
    assert step.pending.deadline == "2026-11-30T12:00:30.000Z"


def test_valid_correction_before_deadline_is_delivered_corrected(gate: Gate) -> None:
    pending = pending_for(gate)
    at = T0 + timedelta(seconds=3)
    step = on_reply(gate, decide(gate, at, attempt=1), waiting(pending), at)
    assert step.outcome == "corrected"
    assert step.emit[0].output is not None and step.emit[0].output.corrected is True
    assert step.pending is None and step.finished == "corrected"
    assert step.roundtrip_seconds == pytest.approx(3.0)


def test_invalid_correction_gets_the_failure_notice(gate: Gate) -> None:
    pending = pending_for(gate)
    at = T0 + timedelta(seconds=3)
    step = on_reply(gate, decide(gate, at, attempt=1, output={"text": "x"}), waiting(pending), at)
    assert step.outcome == "failure_notice"
    assert step.emit[0].output is not None and step.emit[0].output.kind == "failure_notice"
    assert step.pending is None


def test_correction_after_the_deadline_gets_the_notice_not_the_reply(gate: Gate) -> None:
    pending = pending_for(gate)
    late = T0 + timedelta(seconds=31)
    step = on_reply(gate, decide(gate, late, attempt=1), waiting(pending), late)
    assert step.outcome == "failure_notice" and step.expired
    assert step.emit[0].output is not None
    assert step.emit[0].output.delivered_at == pending.deadline


def test_deadline_expiry_sends_one_notice(gate: Gate) -> None:
    pending = pending_for(gate)
    assert on_deadline(gate, waiting(pending), T0 + timedelta(seconds=29)).outcome == "ignored"
    step = on_deadline(gate, waiting(pending), T0 + timedelta(seconds=30))
    assert step.outcome == "failure_notice" and step.expired and step.pending is None
    notice = step.emit[0].output
    assert notice is not None and notice.kind == "failure_notice"
    assert notice.delivery_id == "t-42"
    # once finished, a second deadline event does nothing
    again = on_deadline(gate, done("failure_notice"), T0 + timedelta(seconds=31))
    assert again.outcome == "ignored" and again.emit == ()


def test_expiry_notice_is_identical_on_replay(gate: Gate) -> None:
    pending = pending_for(gate)
    first = on_deadline(gate, waiting(pending), T0 + timedelta(seconds=30))
    replay = on_deadline(gate, waiting(pending), T0 + timedelta(seconds=95))
    assert first.emit[0].output == replay.emit[0].output


def test_cancel_drops_the_pending_turn_and_a_late_correction(gate: Gate) -> None:
    pending = pending_for(gate)
    step = on_cancel(waiting(pending))
    assert (step.outcome, step.pending, step.finished, step.emit) == (
        "cancelled",
        None,
        "cancelled",
        (),
    )
    late = on_reply(gate, decide(gate, attempt=1), done("cancelled"), T0)
    assert late.outcome == "duplicate_dropped" and late.emit == ()


def test_cancel_before_the_reply_means_nothing_is_ever_delivered(gate: Gate) -> None:
    step = on_cancel(None)
    assert step.finished == "cancelled" and step.pending is None
    assert on_reply(gate, decide(gate), done("cancelled"), T0).emit == ()


def test_cancel_after_delivery_changes_nothing(gate: Gate) -> None:
    assert on_cancel(done("delivered")).outcome == "duplicate_dropped"


@pytest.mark.parametrize("finished", ["delivered", "corrected", "failure_notice", "no_reply"])
def test_finished_turns_take_no_further_record(gate: Gate, finished: str) -> None:
    for attempt in (0, 1):
        step = on_reply(gate, decide(gate, attempt=attempt), done(finished), T0)
        assert (step.outcome, step.emit, step.finished) == ("duplicate_dropped", (), None)


def test_repeat_of_the_first_attempt_while_pending_is_dropped(gate: Gate) -> None:
    pending = pending_for(gate)
    step = on_reply(gate, decide(gate, output={"text": "prose"}), waiting(pending), T0)
    assert step.outcome == "duplicate_dropped" and step.emit == ()


def test_unsolicited_correction_is_dropped(gate: Gate) -> None:
    step = on_reply(gate, decide(gate, attempt=1), None, T0)
    assert step.outcome == "duplicate_dropped" and step.emit == ()


def test_dead_letters_pass_through_without_state(gate: Gate) -> None:
    decision = gate.decide_reply(b"nope", Source("replies.raw"), T0)
    step = on_reply(gate, decision, None, T0)
    assert step.outcome == "dead_letter" and step.emit == (decision,)
    assert step.pending is None and step.finished is None


def test_pending_turn_round_trips_through_its_table_form(gate: Gate) -> None:
    pending = pending_for(gate)
    stored = {**pending.as_dict(), "partition": 3}
    assert PendingTurn.from_dict(stored) == pending


class Kept(NoTurns):
    """A turn view that keeps one waiting turn's context."""

    def __init__(self, pending: PendingTurn) -> None:
        self.pending = pending

    def kept_context(self, turn_id: str) -> Context | None:
        return self.pending.stored_context()


def test_correction_without_context_is_judged_with_the_first_attempts_context(gate: Gate) -> None:
    pending = pending_for(gate)
    assert pending.context is not None and pending.context["members"] == ["123456789", "555000111"]
    correction = encode(raw_reply(attempt=1, context=None))  # mentions 555000111
    alone = gate.decide_reply(correction, Source("replies.raw"), T0)
    assert [e.code for e in alone.errors] == ["unknown_mention_target"]
    helped = gate.decide_reply(correction, Source("replies.raw"), T0, Kept(pending))
    assert helped.action == "deliver"


def test_a_replayed_record_sees_the_state_it_saw_the_first_time(gate: Gate) -> None:
    """After a crash, the record that finished a turn re-sends its outputs, identically."""
    pending = pending_for(gate)
    made_pending = waiting(pending, "r:0:5")
    at = T0 + timedelta(seconds=2)
    first = on_reply(gate, decide(gate, at, attempt=1, context=None), made_pending, at)
    finished = written(made_pending, "r:0:9", at, None, first.finished)
    assert finished.status == "finished" and finished.before == made_pending
    # a later repeat sees a finished turn
    assert seen_by(finished, "r:0:12") == (finished, False)
    # the finishing record itself, replayed, sees the pending turn it completed
    before, replay = seen_by(finished, "r:0:9")
    assert replay and before == made_pending
    again = on_reply(gate, decide(gate, at, attempt=1, context=None), before, at)
    assert first.emit[0].output == again.emit[0].output
    # the record that made the turn pending, replayed, sees an open turn and asks again
    assert seen_by(made_pending, "r:0:5") == (None, True)
    assert seen_by(made_pending, "r:0:6") == (made_pending, False)


def test_a_state_value_keeps_one_level_of_history() -> None:
    """`before` is flattened, so a turn's value never grows with its steps."""
    first = done("cancelled", "r:0:1")
    second = written(first, "r:0:2", T0, None, "cancelled")
    third = written(second, "r:0:3", T0, None, "cancelled")
    assert third.before is not None and third.before.before is None
    assert TurnState.decode(third.encode()) == third
