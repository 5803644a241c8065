"""What the worker writes about a judgement: where a shadow version disagreed with the active
one, and the audit record of an outcome. Pure: decisions in, values out.

An audit record says which rules decided, never what was said: error paths are masked with
the judging scope's masker, messages are left out, a leak rule is named with its span count.
Built with `model_construct` from values the gate has validated already (ids, platforms and
contracts from the record's envelope, times in the gate's one spelling, paths and codes cut to
the model's bounds): an outcome's audit record costs no second validation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Final

from schemas.audit import (
    AuditCode,
    AuditMask,
    AuditOutcome,
    AuditRecord,
    DisagreementKind,
    ShadowJudgement,
)
from schemas.records import Delivery
from streams.core.decision import Decision, Turn
from streams.core.mask_hit import MaskHit

# A step's outcome (`streams.core.turns.StepOutcome`) as the audit names it; None: not an
# outcome of a turn (a correction requested, a chunk held, a tool call's result).
AUDIT_OUTCOMES: Final[Mapping[str, AuditOutcome | None]] = {
    "delivered": "reply",
    "corrected": "corrected",
    "failure_notice": "failure_notice",
    "dead_letter": "dead_letter",
    "progress": "progress",
    "duplicate_dropped": "dropped",
    "cancelled": "dropped",
    "no_reply": "dropped",
    "progress_rejected": "dropped",
    "late_progress": "dropped",
    "correction_requested": None,
    "ignored": None,
    "buffered": None,
    "tool_ok": None,
    "tool_error": None,
}
# At most this many error and mask entries in one record (the model's own bound).
MAX_ENTRIES: Final = 200


def _rules(masked: Iterable[MaskHit]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for hit in masked:
        counts[hit.rule] = counts.get(hit.rule, 0) + hit.count
    return counts


def _hits(masked: Iterable[MaskHit]) -> list[tuple[str, str, int]]:
    return sorted((hit.rule, hit.path, hit.count) for hit in masked)


def disagreements(active: Decision, shadow: Decision) -> list[DisagreementKind]:
    """Where the shadow's judgement of a record differs from the active one's: its verdict or
    action (`verdict`), what the leak rules masked, by rule, path and span count (`masking`:
    one more literal is the same rule id, one more span), the error codes (`codes`)."""
    kinds: list[DisagreementKind] = []
    if (active.verdict, active.action) != (shadow.verdict, shadow.action):
        kinds.append("verdict")
    if _hits(active.masked) != _hits(shadow.masked):
        kinds.append("masking")
    if sorted(e.code for e in active.errors) != sorted(e.code for e in shadow.errors):
        kinds.append("codes")
    return kinds


def _codes(decision: Decision, mask: Callable[[str], str]) -> list[AuditCode]:
    return [
        AuditCode.model_construct(path=mask(e.path)[:1000], code=e.code[:200])
        for e in decision.errors[:MAX_ENTRIES]
    ]


def _masks(decision: Decision) -> list[AuditMask]:
    counts = sorted(_rules(decision.masked).items())[:MAX_ENTRIES]
    return [AuditMask.model_construct(rule=rule, count=count) for rule, count in counts]


def shadow_judgement(
    version: str, active: Decision, shadow: Decision, mask: Callable[[str], str]
) -> ShadowJudgement:
    """The shadow's judgement, to sit beside the active one in the audit record."""
    return ShadowJudgement.model_construct(
        policy_version=version,
        verdict=shadow.verdict,
        action=shadow.action,
        errors=_codes(shadow, mask),
        masked=_masks(shadow),
        disagreements=disagreements(active, shadow),
    )


def audit_record(
    outcome: str,
    decision: Decision,
    *,
    policy_version: str,
    judged_at: str,
    mask: Callable[[str], str],
    tenant: str | None = None,
    turn: Turn | None = None,
    shadow: ShadowJudgement | None = None,
) -> AuditRecord | None:
    """The audit record of one outcome (None: a step that is no outcome of a turn).

    `decision` is the judgement that ended the turn, or the record it sent (a deadline's
    notice); `turn` names the turn when the decision does not (a deadline, a cancel).
    """
    kind = AUDIT_OUTCOMES.get(outcome)
    if kind is None:
        return None
    turn = decision.turn or turn
    output = decision.output
    delivery = output if isinstance(output, Delivery) else None
    ids = turn if turn is not None else delivery
    return AuditRecord.model_construct(
        turn_id=None if ids is None else ids.turn_id,
        conversation_id=None if ids is None else ids.conversation_id,
        platform=None if ids is None else ids.platform,
        tenant=tenant,
        contract=None if ids is None else ids.contract,
        attempt=None if turn is None else turn.attempt,
        outcome=kind,
        verdict=decision.verdict,
        action=decision.action,
        errors=_codes(decision, mask),
        masked=_masks(decision),
        policy_version=policy_version,
        shadow=shadow,
        produced_at=None if turn is None else turn.produced_at,
        judged_at=judged_at,
        delivered_at=None if delivery is None else delivery.delivered_at,
    )
