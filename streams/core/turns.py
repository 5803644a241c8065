"""The turn state machine: pure transitions from (decision, state) to what to send and store.

A turn is open, pending (waiting for its one correction) or finished (delivered, corrected,
noticed, cancelled, no reply). A finished turn takes no further record. The worker keeps one
state value per turn in a Faust table (changelogged, on the conversation's partition); this
module only decides; `streams.core.state` shapes what is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from schemas.codes import CORRECTION_MISMATCH
from schemas.issue import Issue
from schemas.records import Delivery
from streams.core.chunks import ChunkBuffer, add_chunk
from streams.core.decision import Decision, PendingTurn, Turn, parse_iso
from streams.core.outcomes import Outcome
from streams.core.pipeline import Gate
from streams.core.state import TurnState

# A step's outcome: a counted outcome, or one of the two that are not a turn's end.
StepOutcome = Outcome | Literal["correction_requested", "ignored"]


@dataclass(frozen=True, slots=True)
class Step:
    """What one record does: records to send and the turn's next state (if it changes).

    A step that changes the state sets `pending` (waiting for the correction) or `finished`
    (the outcome); the worker writes that as one value (`streams.core.state.written`).
    """

    outcome: StepOutcome
    emit: tuple[Decision, ...] = ()
    pending: PendingTurn | None = None
    finished: str | None = None
    expired: bool = False
    roundtrip_seconds: float | None = None
    # A chunk step's new buffer (`streams.core.state.with_stream`): not a change of the turn's
    # status.
    stream: ChunkBuffer | None = None

    @property
    def changes_state(self) -> bool:
        return self.pending is not None or self.finished is not None


def _finish(decision: Decision, outcome: Outcome) -> Step:
    emit = (decision,) if decision.output is not None else ()
    return Step(outcome, emit, finished=outcome)


def on_progress(decision: Decision, state: TurnState | None) -> Step:
    """A progress summary: sent while the turn is open or pending, never a change of state.

    Once the turn is finished it is dropped and counted (`late_progress`), valid or not.
    """
    if _split(state)[1] is not None:
        return Step("late_progress")
    if decision.action == "drop":
        return Step("progress_rejected")
    return Step("progress", (decision,))


def on_chunk(decision: Decision, state: TurnState | None, limit: int) -> Step:
    """A chunk of a streamed final reply: held while its attempt is the one the turn expects
    (0 while open, 1 while pending); a repeated `seq`, or any chunk after that, is dropped."""
    pending, finished = _split(state)
    chunk = decision.chunk
    expected = 0 if pending is None else 1
    if chunk is None or finished is not None or chunk.attempt != expected:
        return Step("duplicate_dropped")
    stream = add_chunk(state.stream if state else None, chunk.attempt, chunk.chunk, limit)
    return Step("duplicate_dropped") if stream is None else Step("buffered", stream=stream)


def on_reply(gate: Gate, decision: Decision, state: TurnState | None, now: datetime) -> Step:
    """A `replies.raw` record's decision against the turn's state."""
    pending, finished = _split(state)
    if decision.verdict == "dead_letter":
        return Step("dead_letter", (decision,))
    if decision.action in ("progress", "drop"):
        return on_progress(decision, state)
    turn = decision.turn
    if turn is None or finished is not None:
        return Step("duplicate_dropped")
    if turn.attempt == 0:
        if pending is not None:
            return Step("duplicate_dropped")
        if decision.action == "request_correction":
            return Step("correction_requested", (decision,), pending=decision.pending)
        return _finish(decision, _final_outcome(decision))
    # attempt 1: only the correction that a pending turn is waiting for counts
    if pending is None:
        return Step("duplicate_dropped")
    roundtrip = (now - parse_iso(pending.requested_at)).total_seconds()
    if now > parse_iso(pending.deadline):
        return on_deadline(gate, state, now)  # the deadline passed first
    mismatch = correction_mismatch(turn, pending)
    if mismatch is not None:
        notice = replace(gate.failure_notice(pending_turn(pending), now), errors=(mismatch,))
        return Step("failure_notice", (notice,), finished="failure_notice")
    step = _finish(decision, _final_outcome(decision))
    return Step(step.outcome, step.emit, finished=step.finished, roundtrip_seconds=roundtrip)


def correction_mismatch(turn: Turn, pending: PendingTurn) -> Issue | None:
    """Why a correction is not the one its turn asked for: a correction only fixes the format,
    so it answers the same conversation, on the same platform, under the same contract."""
    for field, got, asked in (
        ("conversation_id", turn.conversation_id, pending.conversation_id),
        ("platform", turn.platform, pending.platform),
        ("contract", turn.contract, pending.contract),
    ):
        if got != asked:
            return CORRECTION_MISMATCH.issue(field, got=got, asked=asked)
    return None


def pending_turn(pending: PendingTurn) -> Turn:
    """The turn a pending correction belongs to, as its one outcome is addressed."""
    return Turn(pending.turn_id, pending.conversation_id, pending.platform, pending.contract, 1)


def _split(state: TurnState | None) -> tuple[PendingTurn | None, str | None]:
    return (state.waiting, state.finished_outcome) if state is not None else (None, None)


def _final_outcome(decision: Decision) -> Outcome:
    if decision.action == "deliver":
        output = decision.output
        return "corrected" if isinstance(output, Delivery) and output.corrected else "delivered"
    if decision.action == "none":
        return "no_reply"
    return "failure_notice"


def on_cancel(state: TurnState | None) -> Step:
    """`turns.control` cancel: drop the pending turn; nothing is delivered for it, now or later."""
    if _split(state)[1] is not None:
        return Step("duplicate_dropped")
    return Step("cancelled", (), finished="cancelled")


def on_deadline(gate: Gate, state: TurnState | None, now: datetime) -> Step:
    """The deadline passed with no valid correction: the host's failure notice, once."""
    pending, finished = _split(state)
    if pending is None or finished is not None or now < parse_iso(pending.deadline):
        return Step("ignored")
    # The deadline itself is the notice's time, so a replay yields the identical record.
    notice = gate.failure_notice(pending_turn(pending), parse_iso(pending.deadline))
    return Step("failure_notice", (notice,), finished="failure_notice", expired=True)
