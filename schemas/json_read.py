"""Reading a JSON contract's reply: the one value in `output.text` or the `json` tool call.

The transport rules every JSON contract shares (the built-in IM contract and a deployment's
schema contracts): exactly one JSON value, nothing stripped or extracted, no number that a
64-bit value cannot hold. Pure.
"""

from __future__ import annotations

from typing import Any

import orjson

from schemas.codes import NOT_JSON
from schemas.contract import ReplyInput
from schemas.errors import Issue
from schemas.json_numbers import wide_integer, wide_number_issues


def not_json(form: str, **ctx: object) -> Issue:
    """A `not_json` issue at the reply's root, in the code's named wording."""
    return NOT_JSON.issue("$", form, **ctx)


def _wide_argument(arguments: Any) -> Issue | None:
    """The first number in the arguments that no 64-bit value holds (see `WideNumber`), found
    only when orjson cannot write them (a valid reply costs one orjson write)."""
    try:
        orjson.dumps(arguments)
    except TypeError:
        wide = wide_number_issues(arguments, limit=1)
        return wide[0] if wide else None  # too deep: the contract's own rules say so
    return None


def parse_value(reply: ReplyInput, what: str = "value") -> tuple[Any, Issue | None]:
    """The reply's one JSON value (the `json` call's arguments, or `output.text` parsed), or
    why there is none: the transport rules shared by every JSON contract."""
    if reply.transport == "tool":
        return reply.arguments, _wide_argument(reply.arguments)
    text = reply.text
    if text is None:
        return None, not_json("no_text", what=what)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):
            return None, not_json("too_deep")
        return None, not_json("not_one", what=what, error=exc)
    wide = wide_integer(text)
    if wide is not None:
        return None, wide
    return value, None


def parse_object(reply: ReplyInput) -> tuple[dict[str, Any] | None, Issue | None]:
    """The reply's one JSON object, or why there is none; nothing is stripped or extracted."""
    if reply.transport == "tool" and not isinstance(reply.arguments, dict):
        return None, not_json("arguments")
    value, problem = parse_value(reply, "object")
    if problem is not None:
        return None, problem
    if not isinstance(value, dict):
        return None, not_json("not_object")
    return value, None
