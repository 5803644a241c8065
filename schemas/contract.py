"""What a reply contract is: the shape the pipeline calls, whatever the contract's rules are."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from schemas.errors import Issue
from schemas.records import Context


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

    def validate(self, reply: ReplyInput, context: Context) -> ContractResult:
        """Check the whole reply; never repair, strip or coerce."""
        ...

    def json_schema(self) -> dict[str, Any]:
        """The JSON Schema a model is shown in a correction request."""
        ...

    def instructions(self) -> str:
        """Format-only correction instructions (the schema is appended by the pipeline)."""
        ...

    def notice_message(self, text: str) -> dict[str, Any]:
        """The host's failure notice in this contract's own message shape (never model text)."""
        ...
