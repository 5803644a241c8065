"""The turn state machine: pure transitions from (decision, state) to what to send and store.

A turn is open, pending (waiting for its one correction) or finished (delivered, corrected,
noticed, cancelled, no reply). A finished turn takes no further record. The worker keeps the
pending and finished tables in Faust (changelogged, on the conversation's partition); this
module only decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from streams.metrics import Outcome
from streams.pipeline import Decision, Gate, PendingTurn, Turn, parse_iso

# A step's outcome: a counted outcome, or one of the two that are not a turn's end.
StepOutcome = Outcome | Literal["correction_requested", "ignored"]

KEEP: Literal["keep"] = "keep"


@dataclass(frozen=True, slots=True)
class Step:
    """What one record does: records to send, the new pending entry, the finished mark."""

    outcome: StepOutcome
    emit: tuple[Decision, ...] = ()
    pending: PendingTurn | Literal["keep"] | None = KEEP
    finished: str | None = None
    expired: bool = False
    roundtrip_seconds: float | None = None


def prior_state(
    finished: Mapping[str, Any] | None, pending: Mapping[str, Any] | None, source: str
) -> tuple[PendingTurn | None, str | None]:
    """The turn's state as it was before the record `source` (`topic:partition:offset`).

    A record replayed after a crash finds the state it wrote itself the first time; it then
    sees the state it saw then, and re-sends the identical records instead of being dropped as
    a repeat (the outputs of its first run may never have reached the broker).
    """
    if finished is not None and finished["source"] == source:
        before = finished["pending"]
        return (PendingTurn.from_dict(before) if before else None), None
    if pending is not None and pending["source"] == source:
        return None, None
    return (
        PendingTurn.from_dict(pending) if pending else None,
        finished["outcome"] if finished is not None else None,
    )


def _finish(decision: Decision, outcome: Outcome, had_pending: bool) -> Step:
    emit = (decision,) if decision.output is not None else ()
    return Step(outcome, emit, None if had_pending else KEEP, finished=outcome)


def on_reply(
    gate: Gate,
    decision: Decision,
    pending: PendingTurn | None,
    finished: str | None,
    now: datetime,
) -> Step:
    """A `replies.raw` record's decision against the turn's state."""
    if decision.verdict == "dead_letter":
        return Step("dead_letter", (decision,))
    turn = decision.turn
    if turn is None or finished is not None:
        return Step("duplicate_dropped")
    if turn.attempt == 0:
        if pending is not None:
            return Step("duplicate_dropped")
        if decision.action == "request_correction":
            return Step("correction_requested", (decision,), pending=decision.pending)
        return _finish(decision, _final_outcome(decision), had_pending=False)
    # attempt 1: only the correction that a pending turn is waiting for counts
    if pending is None:
        return Step("duplicate_dropped")
    roundtrip = (now - parse_iso(pending.requested_at)).total_seconds()
    if now > parse_iso(pending.deadline):
        return on_deadline(gate, pending, finished, now)  # the deadline passed first
    step = _finish(decision, _final_outcome(decision), had_pending=True)
    return Step(step.outcome, step.emit, step.pending, step.finished, roundtrip_seconds=roundtrip)


def _final_outcome(decision: Decision) -> Outcome:
    if decision.action == "deliver":
        return "corrected" if decision.output and decision.output.get("corrected") else "delivered"
    if decision.action == "none":
        return "no_reply"
    return "failure_notice"


def on_cancel(pending: PendingTurn | None, finished: str | None) -> Step:
    """`turns.control` cancel: drop the pending turn; nothing is delivered for it, now or later."""
    if finished is not None:
        return Step("duplicate_dropped")
    return Step("cancelled", (), None if pending is not None else KEEP, finished="cancelled")


def on_deadline(
    gate: Gate, pending: PendingTurn | None, finished: str | None, now: datetime
) -> Step:
    """The deadline passed with no valid correction: the host's failure notice, once."""
    if pending is None or finished is not None or now < parse_iso(pending.deadline):
        return Step("ignored")
    turn = Turn(pending.turn_id, pending.conversation_id, pending.platform, pending.contract, 1)
    # The deadline itself is the notice's time, so a replay yields the identical record.
    notice = gate.failure_notice(turn, parse_iso(pending.deadline))
    return Step("failure_notice", (notice,), None, finished="failure_notice", expired=True)
