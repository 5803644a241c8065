"""What a judged batch says about policy, once its state is durable: the audit record of each
outcome and where the shadow disagreed. Pure: the batch's `Judged` steps in, values out.

The audit records go out with the batch's outputs, so a replay sends the identical records
again: every time in them comes from the record, the broker or the output, never the clock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from schemas.audit import AuditRecord, DisagreementKind
from schemas.records import record_json
from streams.core.batch import Judged
from streams.core.decision import Decision, iso
from streams.policy.judgement import audit_record, disagreements, shadow_judgement


@dataclass(frozen=True, slots=True)
class Audited:
    """One audit record as it goes out (keyed by conversation, or by the dead record's own
    key), and the disagreements of the shadow with the record's judgement."""

    key: bytes | None
    value: bytes


@dataclass(frozen=True, slots=True)
class Disagreement:
    platform: str
    contract: str
    kind: DisagreementKind


def _unmasked(path: str) -> str:
    """The gate masks every error path it writes already (`Gate._masked`)."""
    return path


def _decision(judged: Judged) -> Decision | None:
    """The judgement that ended the turn: the record's own, else what it sent (a deadline's
    notice, a failed record's dead letter), else none (a cancel, a repeat)."""
    if judged.decision is not None:
        return judged.decision
    return judged.step.emit[0] if judged.step.emit else None


# A step that sent nothing and judged nothing (a cancel, a repeat of a control or deadline).
def _dropped(turn_id: str) -> Decision:
    return Decision(id=turn_id, verdict="no_reply", action="drop")


def audit_of(judged: Judged) -> AuditRecord | None:
    """The audit record of a judged step, or None (not an outcome of a turn)."""
    decision = _decision(judged)
    if decision is None:
        decision = _dropped("" if judged.turn is None else judged.turn.turn_id)
    shadow = None
    if judged.shadow is not None and judged.decision is not None:
        version, theirs = judged.shadow
        shadow = shadow_judgement(version, judged.decision, theirs, _unmasked)
    at = judged.judged_at
    return audit_record(
        judged.step.outcome,
        decision,
        policy_version=judged.version,
        judged_at=iso(at) if at is not None else "1970-01-01T00:00:00.000Z",
        mask=_unmasked,
        tenant=judged.tenant,
        turn=judged.turn,
        shadow=shadow,
    )


def audited(judged: Iterable[Judged]) -> list[Audited]:
    """The batch's audit records, in the order of its steps."""
    out: list[Audited] = []
    for step in judged:
        record = audit_of(step)
        if record is None:
            continue
        decision = _decision(step)
        key = (
            record.conversation_id.encode()
            if record.conversation_id is not None
            else (None if decision is None else decision.key)
        )
        out.append(Audited(key, record_json(record)))
    return out


def disagreed(judged: Iterable[Judged]) -> list[Disagreement]:
    """Every kind of disagreement of the shadow with a record's judgement, by the record's
    platform and contract (`-` when the record did not say them)."""
    out: list[Disagreement] = []
    for step in judged:
        if step.shadow is None or step.decision is None:
            continue
        turn = step.decision.turn or step.turn
        platform, contract = ("-", "-") if turn is None else (turn.platform, turn.contract)
        for kind in disagreements(step.decision, step.shadow[1]):
            out.append(Disagreement(platform, contract, kind))
    return out
