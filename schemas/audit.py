"""The audit record (docs/policy.md, Audit): one per outcome on `<prefix>replygate-audit`, keyed
by `conversation_id`, for the operator who must answer "why did this user get a notice".

It says which turn, which rules and which policy version decided what, and when; never what
was said: no reply text, no masked value, no error message (a message can quote the reply).
Closed and strict like every record.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from schemas.records import (
    ContractName,
    Id,
    Platform,
    PolicyVersion,
    Timestamp,
    TurnId,
    Written,
)
from schemas.verdicts import Action, Verdict

# What became of a turn (or of a record that never became one: a dead letter).
AuditOutcome = Literal["reply", "corrected", "failure_notice", "dead_letter", "dropped", "progress"]
# Where a shadow's judgement differed from the active one's.
DisagreementKind = Literal["verdict", "masking", "codes"]
Tenant = Annotated[str, StringConstraints(min_length=1, max_length=200)]
# Bounds: an audit record stays small whatever the reply held.
MAX_ENTRIES = 200


class AuditCode(Written):
    """An error of the judgement: its path (masked) and code, never its message."""

    path: Annotated[str, StringConstraints(max_length=1000)]
    code: Annotated[str, StringConstraints(min_length=1, max_length=200)]


class AuditMask(Written):
    """A leak rule that masked something, and how many spans; never a value."""

    rule: Annotated[str, StringConstraints(min_length=1, max_length=64)]
    count: Annotated[int, Field(ge=1)]


class ShadowJudgement(Written):
    """What the shadow version would have decided for the same record; it decided nothing."""

    policy_version: PolicyVersion
    verdict: Verdict
    action: Action
    errors: Annotated[list[AuditCode], Field(max_length=MAX_ENTRIES)]
    masked: Annotated[list[AuditMask], Field(max_length=MAX_ENTRIES)]
    disagreements: list[DisagreementKind]


class AuditRecord(Written):
    """One outcome. `turn_id`, `conversation_id`, `platform` and `contract` are null only for
    a dead letter of a record that did not say them; `tenant` is null when the record's tenant
    header was absent. `policy_version` is the version that judged the turn's first record
    (`settings` when no bundle was published). Times: the record's `produced_at` (as the
    agent wrote it, null when it had none), when it was judged, and when the outcome was
    written (null for an outcome that sends nothing)."""

    turn_id: TurnId | None
    conversation_id: Id | None
    platform: Platform | None
    tenant: Tenant | None
    contract: ContractName | None
    attempt: Annotated[int, Field(ge=0, le=1)] | None
    outcome: AuditOutcome
    verdict: Verdict
    action: Action
    errors: Annotated[list[AuditCode], Field(max_length=MAX_ENTRIES)]
    masked: Annotated[list[AuditMask], Field(max_length=MAX_ENTRIES)]
    policy_version: PolicyVersion
    shadow: ShadowJudgement | None
    produced_at: Timestamp | None
    judged_at: Timestamp
    delivered_at: Timestamp | None
