"""The records on replygate's topics (docs/records.md): closed, strict, no coercion."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

from schemas.codes import INVALID_DATETIME

STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)


def _iso_datetime(value: str) -> str:
    """Timestamps stay the producer's text; they must still be ISO 8601 with a zone."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise _bad_timestamp("not_iso") from None
    if parsed.tzinfo is None:
        raise _bad_timestamp()
    return value


def _bad_timestamp(form: str = "") -> PydanticCustomError:
    """`invalid_datetime` in the code's own words (pydantic keeps the code as the type)."""
    return PydanticCustomError(INVALID_DATETIME.name, INVALID_DATETIME.message(form))


Timestamp = Annotated[str, StringConstraints(max_length=64), AfterValidator(_iso_datetime)]
Id = Annotated[str, StringConstraints(min_length=1, max_length=200)]
TurnId = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]
ContractName = Annotated[
    str, StringConstraints(min_length=1, max_length=100, pattern=r"^[a-z0-9][a-z0-9._-]*$")
]
Platform = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")
]
# A policy bundle's version (`sha256:` and the hex digest of its canonical form), or `settings`:
# the worker's settings file, while no bundle is published.
PolicyVersion = Annotated[
    str, StringConstraints(pattern=r"^(sha256:[0-9a-f]{64}|settings)$", max_length=71)
]


# Why a record could not be processed at all (schemas/codes.py explains each).
DeadReason = Literal[
    "not_json",
    "invalid_envelope",
    "unknown_contract",
    "record_too_large",
    "processing_error",
    "turn_expired",
    "wrong_key",
]


class Record(BaseModel):
    model_config = STRICT


_set = object.__setattr__


class Written(Record):
    """A record the gate writes: built on the hot path from values it has already checked."""

    @classmethod  # the pydantic mypy plugin gives each model its typed signature
    def model_construct(  # type: ignore[override]
        cls, _fields_set: set[str] | None = None, **values: Any
    ) -> Self:
        """pydantic's `model_construct` without its per-field work (about half its cost), for
        models with no defaults, validators or private attributes: every field is required
        (KeyError, TypeError) and kept in the model's order, the order of the bytes sent."""
        names = cls.__pydantic_fields__
        if VERSION_FIELD in names and VERSION_FIELD not in values:
            values[VERSION_FIELD] = None  # the one field with a default: no policy version
        fields = {name: values.pop(name) for name in names}
        if values:
            raise TypeError(f"{cls.__name__} has no field {sorted(values)}")
        record = cls.__new__(cls)
        _set(record, "__dict__", fields)
        _set(record, "__pydantic_fields_set__", set(fields) if _fields_set is None else _fields_set)
        _set(record, "__pydantic_extra__", None)
        _set(record, "__pydantic_private__", None)
        return record


class ModelToolCall(Record):
    """One tool call in a model's output; only the one named `json` can carry the reply."""

    name: Annotated[str, StringConstraints(max_length=200)]
    arguments: Any


Seq = Annotated[int, Field(ge=0, le=2**63 - 1)]


class ModelOutput(Record):
    text: str | None = None
    tool_calls: list[ModelToolCall] | None = None
    reasoning: str | None = None
    # A streamed final reply: its text is the turn's chunks 0..chunks-1 (instead of `text`).
    chunks: Seq | None = Field(
        default=None,
        description="A streamed final reply: how many RawChunk records (seq 0..chunks-1, same "
        "turn_id and attempt, sent before this one on replies.raw) hold its text; instead of "
        "`text`.",
    )


class Context(Record):
    """What the gate knows about the conversation: who may be mentioned, which fragments exist."""

    sender_id: str | None = None
    members: Annotated[list[str], Field(max_length=10_000)] | None = None
    fragments: dict[str, Annotated[list[str], Field(max_length=10_000)]] | None = None
    language: Annotated[str, StringConstraints(max_length=35)] | None = None

    def mentionable(self) -> frozenset[str]:
        ids = set(self.members or ())
        if self.sender_id is not None:
            ids.add(self.sender_id)
        return frozenset(ids)


EMPTY_CONTEXT = Context()


class RawReply(Record):
    """What an upstream agent service publishes on `replies.raw`: a final reply, a progress
    summary (`kind: progress`), or the final record of a streamed reply (`output.chunks`,
    after its RawChunk records on the same topic and key)."""

    turn_id: TurnId
    conversation_id: Id
    platform: Platform
    contract: ContractName
    attempt: Annotated[int, Field(ge=0, le=1)]
    provider: Annotated[str, StringConstraints(max_length=200)] | None = None
    output: ModelOutput
    context: Context | None = None
    produced_at: Timestamp
    # A progress summary (`kind: progress`, with its `seq`) or the final reply (absent/final).
    kind: Literal["final", "progress"] | None = None
    seq: Seq | None = None

    @property
    def is_progress(self) -> bool:
        return self.kind == "progress"


class StreamChunk(Record):
    """One piece of a streamed final reply's text, `seq` 0, 1, ... in the reply's order."""

    seq: Seq
    text: str


class RawChunk(Record):
    """A chunk record of a streamed final reply on `replies.raw` (keyed like its RawReply):
    held in the turn's state until the final RawReply with `output.chunks` arrives."""

    turn_id: TurnId
    conversation_id: Id
    attempt: Annotated[int, Field(ge=0, le=1)]
    chunk: StreamChunk
    produced_at: Timestamp


class ToolCall(Record):
    """A rich-output tool call from an agent, on `toolcalls.raw`."""

    call_id: Id
    task_id: Id
    session_id: Id | None = None
    workspace: Annotated[str, StringConstraints(min_length=1, max_length=255)]
    tool: Name
    arguments: Any


class TurnControl(Record):
    turn_id: TurnId
    conversation_id: Id
    action: Literal["cancel"]


# The additive field of the outcome records: the policy version that judged the record. Left
# out of the bytes when unset (no bundle published), so a record is what it always was.
VERSION_FIELD = "policy_version"


class MaskEntry(Written):
    rule: str
    path: str
    count: Annotated[int, Field(ge=1)]


class NoticeEntry(Written):
    path: str
    reason: str


class ErrorEntry(Written):
    path: str
    code: str
    message: str


# `<turn_id>` for a reply or notice, `<turn_id>/progress/<seq>` for a progress summary.
DeliveryId = Annotated[str, StringConstraints(min_length=1, max_length=240)]


class Delivery(Written):
    """What a platform endpoint consumes from `delivery.<platform>`."""

    delivery_id: DeliveryId
    turn_id: TurnId
    conversation_id: Id
    platform: Platform
    contract: ContractName
    kind: Literal["reply", "failure_notice", "progress"]
    # The contract's own shape: an object, or any JSON value for a caller-owned schema.
    message: Any
    # One line of plain text projected from `message` (docs/records.md, Previews).
    preview: Annotated[str, StringConstraints(max_length=280)]
    corrected: bool
    masked: list[MaskEntry]
    notices: list[NoticeEntry]
    delivered_at: Timestamp
    policy_version: PolicyVersion | None = None


class CorrectionRequest(Written):
    turn_id: TurnId
    conversation_id: Id
    platform: Platform
    contract: ContractName
    invalid_output: str
    errors: list[ErrorEntry]
    instructions: str
    deadline: Timestamp
    policy_version: PolicyVersion | None = None


class GenericNormalized(Written):
    input: dict[str, Any] | None
    output: dict[str, Any] | None


class Normalized(Written):
    generic: GenericNormalized


class ToolResultMetadata(Written):
    normalized: Normalized


class ToolResult(Written):
    call_id: Id
    task_id: Id
    tool: Name
    status: Literal["ok", "error"]
    text: str
    metadata: ToolResultMetadata
    policy_version: PolicyVersion | None = None


class DeadLetter(Written):
    source_topic: str
    partition: Annotated[int, Field(ge=-1)]
    offset: Annotated[int, Field(ge=-1)]
    reason: DeadReason
    detail: str
    record: str
    policy_version: PolicyVersion | None = None


# What the gate writes: one of these per output record (docs/records.md).
OutputRecord = Delivery | CorrectionRequest | ToolResult | DeadLetter


def record_json(value: Any) -> bytes:
    """The JSON bytes of a record, or of a value holding records: its fields in model order.

    For records with every field set (the gate builds its outputs with `model_construct`):
    orjson writes the fields as they are, the bytes the gate's plain dicts gave before.
    """
    return orjson.dumps(value, default=_fields)


def _fields(value: Any) -> dict[str, Any]:
    if isinstance(value, Record):
        fields: dict[str, Any] = value.__dict__
        if fields.get(VERSION_FIELD, fields) is None:  # an outcome record with no version
            fields = dict(fields)
            del fields[VERSION_FIELD]
        return fields
    raise TypeError(f"{type(value).__name__} is not JSON")
