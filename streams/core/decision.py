"""The gate's decision value types and the one timestamp spelling: what a judged record is.

`Decision` is one record's outcome (the `check` line, the record to send, its topic and key);
`Source` where a record came from; `Turn` and `PendingTurn` what turn state needs. Pure data, no
Gate: `streams.core.pipeline` makes them, `streams.core.turns` and `batch` read them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal

import orjson

from schemas.issue import Issue, Notice
from schemas.records import Context, OutputRecord, RawChunk, RawReply, record_json
from schemas.verdicts import Action, Verdict
from streams.core.mask_hit import MaskHit

DeliveryKind = Literal["reply", "failure_notice", "progress"]


@dataclass(frozen=True, slots=True)
class Source:
    """Where a record came from; `timestamp` is the Kafka record time (None: use the clock)."""

    topic: str
    partition: int = 0
    offset: int = 0
    timestamp: datetime | None = None
    key: bytes | None = None
    # The record's W3C trace headers (`streams.core.trace.trace_of`), copied onto its outputs.
    trace: tuple[tuple[str, bytes], ...] = ()
    # The record's tenant (the `policy_tenant_header` value; None: none): its policy scope.
    tenant: str | None = None


@dataclass(frozen=True, slots=True)
class Turn:
    """What the worker's turn state needs to know about a reply record."""

    turn_id: str
    conversation_id: str
    platform: str
    contract: str
    attempt: int
    # The agent's own stamp: how old a reply is when its turn's state is already gone.
    produced_at: str | None = None

    @classmethod
    def of(cls, reply: RawReply) -> Turn:
        """The turn a reply (final or progress) belongs to."""
        return cls(
            reply.turn_id,
            reply.conversation_id,
            reply.platform,
            reply.contract,
            reply.attempt,
            reply.produced_at,
        )


@dataclass(frozen=True, slots=True)
class PendingTurn:
    """A turn waiting for its one correction; kept in durable stream state until its deadline."""

    turn_id: str
    conversation_id: str
    platform: str
    contract: str
    deadline: str
    requested_at: str
    # The first attempt's context, for a correction that comes back without one.
    context: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "turn_id": self.turn_id,
            "conversation_id": self.conversation_id,
            "platform": self.platform,
            "contract": self.contract,
            "deadline": self.deadline,
            "requested_at": self.requested_at,
            "context": self.context,
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> PendingTurn:
        return cls(
            value["turn_id"],
            value["conversation_id"],
            value["platform"],
            value["contract"],
            value["deadline"],
            value["requested_at"],
            value.get("context"),
        )

    def stored_context(self) -> Context | None:
        return Context.model_validate(self.context) if self.context is not None else None


@dataclass(frozen=True, slots=True)
class Decision:
    """One record's outcome: the check line, the record to send, and where it goes.

    `masked` and `notices` are what the metrics count; `pending` the turn state to keep.
    """

    id: str | int
    verdict: Verdict
    action: Action
    errors: tuple[Issue, ...] = ()
    output: OutputRecord | None = None
    topic: str | None = None
    key: bytes | None = None
    turn: Turn | None = None
    masked: tuple[MaskHit, ...] = ()
    notices: tuple[Notice, ...] = ()
    pending: PendingTurn | None = None
    # A chunk of a streamed final reply: held by the turn's state, nothing to send.
    chunk: RawChunk | None = None
    # A final reply assembled from its turn's held chunks: the turn's state keeps them, so a
    # replay of the reply is assembled again from the same chunks.
    assembled: bool = False

    def line_json(self) -> bytes:
        """The `replygate check` output line; `output` is the very JSON the worker would send,
        embedded as it is (not parsed back and written again)."""
        output = None if self.output is None else orjson.Fragment(record_json(self.output))
        return orjson.dumps(
            {
                "id": self.id,
                "verdict": self.verdict,
                "action": self.action,
                "errors": [e.as_dict() for e in self.errors],
                "output": output,
            }
        )

    def line(self) -> dict[str, Any]:
        """`line_json` as a value, for a caller that reads it."""
        line: dict[str, Any] = orjson.loads(self.line_json())
        return line


@lru_cache(maxsize=64)
def iso(moment: datetime) -> str:
    """UTC, millisecond precision, `Z`: one spelling for every timestamp the gate writes.

    Cached: a batch's records share their clock reading, and equal datetimes are one instant."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value)
