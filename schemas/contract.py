"""What a reply contract is: everything the gate, the preview, an endpoint and the CLI ask of one.

One object per contract owns its knowledge: how its reply is read and validated, what the model
is asked to write (format instructions and, for a JSON contract, the schema of that reply), the
delivered message's schema, the message's one-line preview text, how a delivered message is
turned back into a reply for re-validation, whether the file stage looks at it, and its own error
codes. Nobody compares contract names: `schemas/registry.py` is the one list of contracts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Protocol

import orjson

from schemas.codes import Code
from schemas.issue import Issue
from schemas.records import EMPTY_CONTEXT, Context


@dataclass(frozen=True, slots=True)
class ReplyInput:
    """The final reply as the model sent it: `output.text`, or the `json` tool call's arguments."""

    transport: Literal["text", "tool"]
    text: str | None = None
    arguments: Any = None


@dataclass(frozen=True, slots=True)
class ContractResult:
    """Valid (a message to deliver, or no reply needed) or invalid (issues, never a message)."""

    # the delivered JSON value: an object for the built-in contracts, any value but null for a
    # caller's schema; None only when there is no message
    message: Any = None
    issues: tuple[Issue, ...] = ()
    no_reply: bool = False
    # Items the contract reports without failing, e.g. bare doc links seen in prose.
    reports: tuple[str, ...] = field(default=())

    @property
    def valid(self) -> bool:
        return not self.issues


class ReplyContract(Protocol):
    """A closed, versioned reply contract; deployments register more by import path."""

    @property
    def name(self) -> str: ...

    # Whether the delivered message is always a JSON object (the endpoint checks so first).
    @property
    def delivers_object(self) -> bool: ...

    # Whether the failure notice is in the message shape (else it is `{"text": ...}`).
    @property
    def notice_in_message_shape(self) -> bool: ...

    # Whether the file stage inspects the delivered message's attachments.
    @property
    def needs_file_stage(self) -> bool: ...

    # The codes this contract alone emits, and the catalogue's heading for them.
    @property
    def codes(self) -> Mapping[str, Code]: ...

    @property
    def catalogue_title(self) -> str: ...

    def validate(self, reply: ReplyInput, context: Context) -> ContractResult:
        """Check the whole reply; never repair, strip or coerce."""
        ...

    def instructions(self) -> str:
        """Format-only instructions: what the model writes, nothing about the delivery."""
        ...

    def model_schema(self) -> dict[str, Any] | None:
        """The JSON Schema of the reply the model writes; None when the reply is not JSON."""
        ...

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema of the delivered message (a Delivery's `message`)."""
        ...

    def notice_message(self, text: str) -> Any:
        """The host's failure notice in this contract's own message shape (never model text)."""
        ...

    def preview_text(self, message: Any) -> str:
        """A delivered message as text, before the preview makes it one line."""
        ...

    def reply_of(self, message: Any) -> ReplyInput:
        """The reply this contract reads for a delivered message (endpoint re-validation)."""
        ...

    def endpoint_context(self, message: Any) -> Context:
        """What an endpoint can say of the conversation: no more than the message shows."""
        ...


class ContractBase:
    """Defaults for a JSON contract: the model writes the message it delivers.

    A contract class sets `name` and implements `validate`, `instructions`, `json_schema` and
    `notice_message`; it overrides the rest where its reply is not the delivered JSON value.
    """

    name: str
    delivers_object: bool = False
    notice_in_message_shape: bool = False
    needs_file_stage: bool = False
    codes: Mapping[str, Code] = MappingProxyType({})

    @property
    def catalogue_title(self) -> str:
        return f"`{self.name}`"

    def json_schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def model_schema(self) -> dict[str, Any] | None:
        return self.json_schema()

    def preview_text(self, message: Any) -> str:
        return orjson.dumps(message).decode()

    def reply_of(self, message: Any) -> ReplyInput:
        return ReplyInput("tool", arguments=message)

    def endpoint_context(self, message: Any) -> Context:
        del message
        return EMPTY_CONTEXT


class _Defaults(ContractBase):
    """A deployment's contract object that implements only the required four methods."""

    def __init__(self, inner: Any) -> None:
        self.name = inner.name
        self._inner = inner

    def validate(self, reply: ReplyInput, context: Context) -> ContractResult:
        result: ContractResult = self._inner.validate(reply, context)
        return result

    def instructions(self) -> str:
        return str(self._inner.instructions())

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = self._inner.json_schema()
        return schema

    def notice_message(self, text: str) -> Any:
        return self._inner.notice_message(text)


# What a deployment's object must have, and what `ContractBase` can supply.
REQUIRED_MEMBERS = ("validate", "json_schema", "instructions", "notice_message")
_OPTIONAL_MEMBERS = (
    "delivers_object",
    "notice_in_message_shape",
    "needs_file_stage",
    "codes",
    "catalogue_title",
    "model_schema",
    "preview_text",
    "reply_of",
    "endpoint_context",
)


def completed(obj: Any) -> ReplyContract:
    """`obj` itself when it has every member; else wrapped with `ContractBase`'s defaults."""
    if all(hasattr(obj, member) for member in _OPTIONAL_MEMBERS):
        contract: ReplyContract = obj
        return contract
    return _Defaults(obj)


def correction_instructions(contract: ReplyContract) -> str:
    """A CorrectionRequest's `instructions`: what the model writes, and only that."""
    schema = contract.model_schema()
    if schema is None:
        return contract.instructions()
    text = orjson.dumps(schema, option=orjson.OPT_INDENT_2).decode()
    return f"{contract.instructions()}\n\nJSON Schema:\n{text}"
