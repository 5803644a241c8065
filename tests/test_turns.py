"""The turn state machine (contracts.md, "Correction"): one outcome per turn, whatever arrives."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from streams.pipeline import Decision, Gate, PendingTurn, Source
from streams.settings import Settings
from streams.turns import KEEP, on_cancel, on_deadline, on_reply, prior_state
from tests.samples import encode, raw_reply

T0 = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    return Gate(Settings(workspaces_root=tmp_path, media_root=tmp_path))


def decide(gate: Gate, at: datetime = T0, **changes: object) -> Decision:
    return gate.process_reply(encode(raw_reply(**changes)), Source("replies.raw"), at)


def pending_for(gate: Gate) -> PendingTurn:
    decision = decide(gate, output={"text": "not json"})
    assert decision.pending is not None
    return decision.pending


def test_valid_first_attempt_is_delivered_and_finishes_the_turn(gate: Gate) -> None:
    step = on_reply(gate, decide(gate), None, None, T0)
    assert step.outcome == "delivered"
    assert [d.action for d in step.emit] == ["deliver"]
    assert step.finished == "delivered" and step.pending is KEEP


def test_no_reply_finishes_without_emitting(gate: Gate) -> None:
    step = on_reply(gate, decide(gate, output={"text": '{"segments": []}'}), None, None, T0)
    assert (step.outcome, step.emit, step.finished) == ("no_reply", (), "no_reply")


def test_invalid_first_attempt_becomes_pending(gate: Gate) -> None:
    decision = decide(gate, output={"text": "prose"})
    step = on_reply(gate, decision, None, None, T0)
    assert step.outcome == "correction_requested"
    assert [d.action for d in step.emit] == ["request_correction"]
    assert isinstance(step.pending, PendingTurn) and step.finished is None
    assert step.pending.deadline == "2026-11-30T12:00:30.000Z"


def test_valid_correction_before_deadline_is_delivered_corrected(gate: Gate) -> None:
    pending = pending_for(gate)
    at = T0 + timedelta(seconds=3)
    step = on_reply(gate, decide(gate, at, attempt=1), pending, None, at)
    assert step.outcome == "corrected"
    assert step.emit[0].output is not None and step.emit[0].output["corrected"] is True
    assert step.pending is None and step.finished == "corrected"
    assert step.roundtrip_seconds == pytest.approx(3.0)


def test_invalid_correction_gets_the_failure_notice(gate: Gate) -> None:
    pending = pending_for(gate)
    at = T0 + timedelta(seconds=3)
    step = on_reply(gate, decide(gate, at, attempt=1, output={"text": "x"}), pending, None, at)
    assert step.outcome == "failure_notice"
    assert step.emit[0].output is not None and step.emit[0].output["kind"] == "failure_notice"
    assert step.pending is None


def test_correction_after_the_deadline_gets_the_notice_not_the_reply(gate: Gate) -> None:
    pending = pending_for(gate)
    late = T0 + timedelta(seconds=31)
    step = on_reply(gate, decide(gate, late, attempt=1), pending, None, late)
    assert step.outcome == "failure_notice" and step.expired
    assert step.emit[0].output is not None
    assert step.emit[0].output["delivered_at"] == pending.deadline


def test_deadline_expiry_sends_one_notice(gate: Gate) -> None:
    pending = pending_for(gate)
    assert on_deadline(gate, pending, None, T0 + timedelta(seconds=29)).outcome == "ignored"
    step = on_deadline(gate, pending, None, T0 + timedelta(seconds=30))
    assert step.outcome == "failure_notice" and step.expired and step.pending is None
    notice = step.emit[0].output
    assert notice is not None and notice["kind"] == "failure_notice"
    assert notice["delivery_id"] == "t-42"
    # once finished, a second deadline event does nothing
    again = on_deadline(gate, pending, "failure_notice", T0 + timedelta(seconds=31))
    assert again.outcome == "ignored" and again.emit == ()


def test_expiry_notice_is_identical_on_replay(gate: Gate) -> None:
    pending = pending_for(gate)
    first = on_deadline(gate, pending, None, T0 + timedelta(seconds=30))
    replay = on_deadline(gate, pending, None, T0 + timedelta(seconds=95))
    assert first.emit[0].output == replay.emit[0].output


def test_cancel_drops_the_pending_turn_and_a_late_correction(gate: Gate) -> None:
    pending = pending_for(gate)
    step = on_cancel(pending, None)
    assert (step.outcome, step.pending, step.finished, step.emit) == (
        "cancelled",
        None,
        "cancelled",
        (),
    )
    late = on_reply(gate, decide(gate, attempt=1), None, "cancelled", T0)
    assert late.outcome == "duplicate_dropped" and late.emit == ()


def test_cancel_before_the_reply_means_nothing_is_ever_delivered(gate: Gate) -> None:
    step = on_cancel(None, None)
    assert step.finished == "cancelled" and step.pending is KEEP
    assert on_reply(gate, decide(gate), None, "cancelled", T0).emit == ()


def test_cancel_after_delivery_changes_nothing(gate: Gate) -> None:
    assert on_cancel(None, "delivered").outcome == "duplicate_dropped"


@pytest.mark.parametrize("finished", ["delivered", "corrected", "failure_notice", "no_reply"])
def test_finished_turns_take_no_further_record(gate: Gate, finished: str) -> None:
    for attempt in (0, 1):
        step = on_reply(gate, decide(gate, attempt=attempt), None, finished, T0)
        assert (step.outcome, step.emit, step.finished) == ("duplicate_dropped", (), None)


def test_repeat_of_the_first_attempt_while_pending_is_dropped(gate: Gate) -> None:
    pending = pending_for(gate)
    step = on_reply(gate, decide(gate, output={"text": "prose"}), pending, None, T0)
    assert step.outcome == "duplicate_dropped" and step.emit == ()


def test_unsolicited_correction_is_dropped(gate: Gate) -> None:
    step = on_reply(gate, decide(gate, attempt=1), None, None, T0)
    assert step.outcome == "duplicate_dropped" and step.emit == ()


def test_dead_letters_pass_through_without_state(gate: Gate) -> None:
    decision = gate.process_reply(b"nope", Source("replies.raw"), T0)
    step = on_reply(gate, decision, None, None, T0)
    assert step.outcome == "dead_letter" and step.emit == (decision,)
    assert step.pending is KEEP and step.finished is None


def test_pending_turn_round_trips_through_its_table_form(gate: Gate) -> None:
    pending = pending_for(gate)
    stored = {**pending.as_dict(), "partition": 3}
    assert PendingTurn.from_dict(stored) == pending


def test_correction_without_context_is_judged_with_the_first_attempts_context(gate: Gate) -> None:
    pending = pending_for(gate)
    assert pending.context is not None and pending.context["members"] == ["123456789", "555000111"]
    correction = encode(raw_reply(attempt=1, context=None))  # mentions 555000111
    alone = gate.process_reply(correction, Source("replies.raw"), T0)
    assert [e.code for e in alone.errors] == ["unknown_mention_target"]
    helped = gate.process_reply(
        correction, Source("replies.raw"), T0, context_for=lambda _: pending.stored_context()
    )
    assert helped.action == "deliver"


def test_a_replayed_record_sees_the_state_it_saw_the_first_time(gate: Gate) -> None:
    """After a crash, the record that finished a turn re-sends its outputs, identically."""
    pending = pending_for(gate)
    stored_pending = {**pending.as_dict(), "partition": 0, "source": "r:0:5"}
    finished = {"outcome": "corrected", "source": "r:0:9", "pending": pending.as_dict()}
    # a later repeat sees a finished turn
    assert prior_state(finished, None, "r:0:12") == (None, "corrected")
    # the finishing record itself, replayed, sees the pending turn it completed
    before, outcome = prior_state(finished, None, "r:0:9")
    assert before == pending and outcome is None
    at = T0 + timedelta(seconds=2)
    first = on_reply(gate, decide(gate, at, attempt=1, context=None), pending, None, at)
    again = on_reply(gate, decide(gate, at, attempt=1, context=None), before, outcome, at)
    assert first.emit[0].output == again.emit[0].output
    # the record that made the turn pending, replayed, sees an open turn and asks again
    assert prior_state(None, stored_pending, "r:0:5") == (None, None)
    assert prior_state(None, stored_pending, "r:0:6") == (pending, None)
