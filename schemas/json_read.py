"""Reading a JSON contract's reply: the one value in `output.text` or the `json` tool call.

The transport rules every JSON contract shares (the built-in IM contract and a deployment's
schema contracts): exactly one JSON value, nothing stripped or extracted, no number that a
64-bit value cannot hold, one meaning per object (no key given twice, which orjson would read
last-wins and another reader first-wins). Pure.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson

from schemas.codes import DUPLICATE_KEY, LONE_SURROGATE, MAX_ISSUES, NOT_JSON
from schemas.contract import ReplyInput
from schemas.issue import Issue, child_path, json_path
from schemas.issue_sink import capped
from schemas.json_numbers import as_written, loads_wide, wide_integer, wide_number_issues

# A key's path from the value's root: keys and indexes.
KeyPath = tuple[str | int, ...]


# Past this size a text's value is walked rather than written again (no copy of it is made).
LARGE_TEXT_CHARS: Final = 256 * 1024


def _colons(data: bytes | str) -> int:
    """Every colon of JSON text, escaped ones (`\\u003a`) counted too."""
    if isinstance(data, str):
        if "\\u003" not in data:  # one scan clears the escaped forms in nearly every text
            return data.count(":")
        return data.count(":") + data.count("\\u003a") + data.count("\\u003A")
    if b"\\u003" not in data:
        return data.count(b":")
    return data.count(b":") + data.count(b"\\u003a") + data.count(b"\\u003A")


def _value_colons(value: Any) -> int | None:
    """The colons `value` would be written with (one per key, and those in its strings), by a
    walk: for a value deeper than orjson writes. None past 100,000 nodes."""
    count, seen = 0, 0
    stack = [value]
    while stack:
        node = stack.pop()
        seen += 1
        if seen > 100_000:
            return None
        if isinstance(node, str):
            count += node.count(":")
        elif isinstance(node, dict):
            count += len(node) + sum(key.count(":") for key in node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def _certainly_one_meaning(data: bytes | str, value: Any) -> bool:
    """True when `data` (the JSON text `value` was read from) gives no key twice.

    orjson keeps the last of two equal keys, so a duplicate leaves fewer key-value colons in
    `value` than in `data`. Colons in strings are written literally by orjson and may be
    escaped (`\\u003a`) in `data`: every colon of `data`, counting escaped ones, equals every
    colon of `value` written again exactly when no key was dropped (a literal `\\\\u003a` only
    makes the count larger, so the precise reading decides). A few byte counts and one orjson
    write: a fraction of the record's parse (bench/README.md)."""
    if (b"{" not in data) if isinstance(data, bytes) else ("{" not in data):
        return True
    written: int | None
    if len(data) > LARGE_TEXT_CHARS:  # a walk allocates nothing: a huge value is not copied
        written = _value_colons(value)
    else:
        try:
            again = orjson.dumps(value, default=as_written)
        except TypeError:  # deeper than orjson writes
            written = _value_colons(value)
        else:
            if again == (data if isinstance(data, bytes) else data.encode("utf-8", "replace")):
                return True  # written as orjson writes it (a compact producer): one key each
            written = again.count(b":")
    return written is not None and _colons(data) == written


class _Keys(dict[str, Any]):
    """An object as the standard library's parser read it, with the keys it gave twice."""

    __slots__ = ("twice",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.twice: tuple[str, ...] = ()
        if len(self) != len(pairs):
            seen: set[str] = set()
            twice: dict[str, None] = {}
            for key, _ in pairs:
                if key in seen:
                    twice[key] = None
                seen.add(key)
            self.twice = tuple(twice)


def _ignored(_: str) -> int:
    return 0


def duplicate_keys(data: bytes | str, value: Any, limit: int = MAX_ISSUES) -> list[KeyPath]:
    """The path of every key `data` gives twice in one object (at most `limit` + 1), in order.

    `value` is what orjson read from `data`. Nearly every text is cleared by a count
    (`_certainly_one_meaning`); the rest is read again by the standard library's parser, which
    hands each object's pairs over before they are merged. Too deep for it to read: the root
    is named, so such a text is refused rather than guessed."""
    if _certainly_one_meaning(data, value):
        return []
    try:
        tree = json.loads(
            data if isinstance(data, str) else data.decode("utf-8", "replace"),
            object_pairs_hook=_Keys,
            parse_int=_ignored,
            parse_float=_ignored,
            parse_constant=_ignored,
        )
    except RecursionError:
        return [()]
    except ValueError:  # not JSON after all: the caller's parser has said so
        return []
    found: list[KeyPath] = []
    stack: list[tuple[KeyPath, Any]] = [((), tree)]
    while stack and len(found) <= limit:
        path, node = stack.pop()
        if isinstance(node, _Keys):
            found.extend((*path, key) for key in node.twice)
            stack.extend(((*path, k), v) for k, v in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(node))))
    return found[: limit + 1]


def duplicate_key_issues(paths: list[KeyPath], base: str = "$") -> list[Issue]:
    """`duplicate_key` issues for `duplicate_keys`' paths under `base` (bounded)."""
    if not paths:  # nearly always: no sink to build
        return []
    return capped(DUPLICATE_KEY.issue(child_path(base, *path)) for path in paths)


def lone_surrogate_issue(text: str | bytes, error: Exception) -> Issue | None:
    """`lone_surrogate` when orjson refused `text` for a lone surrogate escape, else None:
    readers disagree on such a string (replaced, kept or refused), so it has no one meaning."""
    message = str(error)
    if "surrogate" not in message:
        return None
    at = getattr(error, "pos", None)
    return LONE_SURROGATE.issue("$", "at", at=at if isinstance(at, int) else 0)


def issue_path(path: KeyPath) -> str:
    """A key path as the errors spell it (`output.tool_calls[0].arguments`)."""
    return json_path(*path)


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


def _wide_numbers(text: str) -> tuple[Issue, ...]:
    """An issue at its path for each number in `text` that no 64-bit value holds (bounded), as
    a tool call's arguments get them; () when `text` is not one JSON value read that way.
    Only for a text already refused for such a number: a valid reply never pays for it."""
    try:
        value = loads_wide(text.encode("utf-8", "surrogatepass"))
    except ValueError:
        return ()
    return tuple(capped(wide_number_issues(value, limit=MAX_ISSUES + 1)))


def _infinite_numbers(text: str, error: orjson.JSONDecodeError) -> tuple[Issue, ...]:
    """`not_finite` at its path for a literal beyond the doubles (`1e400`) that orjson refused
    `text` for, or () when it refused `text` for anything else."""
    return _wide_numbers(text) if "infinity" in str(error) else ()


def parse_value(reply: ReplyInput, what: str = "value") -> tuple[Any, tuple[Issue, ...]]:
    """The reply's one JSON value (the `json` call's arguments, or `output.text` parsed) and
    what is wrong with its transport: the rules shared by every JSON contract.

    The value is None when there is none to validate; a value next to issues (keys given
    twice: the value is orjson's reading; one object with text around it) is still validated
    and never delivered, so one correction names every error, the transport's first."""
    if reply.transport == "tool":
        wide = _wide_argument(reply.arguments)
        return (reply.arguments, ()) if wide is None else (None, (wide,))
    text = reply.text
    if text is None:
        return None, (not_json("no_text", what=what),)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if "depth limit" in str(exc):
            return None, (not_json("too_deep"),)
        lone = lone_surrogate_issue(text, exc)
        if lone is not None:
            return None, (lone,)
        infinite = _infinite_numbers(text, exc)
        if infinite:
            return None, infinite
        problem = not_json("not_one", what=what, error=exc)
        located, issues = _located_object(text)
        return located, (problem, *issues)
    return _read_whole(text, value)


def _read_whole(text: str, value: Any) -> tuple[Any, tuple[Issue, ...]]:
    """A text orjson read: refused for a wide integer, else the keys it gives twice."""
    wide = wide_integer(text)
    if wide is not None:
        return None, _wide_numbers(text) or (wide,)
    return value, tuple(duplicate_key_issues(duplicate_keys(text, value)))


def _located_object(text: str) -> tuple[Any, tuple[Issue, ...]]:
    """The one JSON object a text that is not one JSON value still holds whole (prose or a
    Markdown fence around it: from its first `{` to its last `}`), or None. Never delivered:
    it is validated only so that the one correction names its errors too, after `not_json`."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None, ()
    inner = text[start : end + 1]
    try:
        value = orjson.loads(inner)
    except orjson.JSONDecodeError as exc:
        return None, _infinite_numbers(inner, exc)
    if not isinstance(value, dict):
        return None, ()
    return _read_whole(inner, value)


def parse_object(reply: ReplyInput) -> tuple[dict[str, Any] | None, tuple[Issue, ...]]:
    """The reply's one JSON object (None when there is none) and its transport's issues;
    nothing is stripped or extracted."""
    if reply.transport == "tool" and not isinstance(reply.arguments, dict):
        return None, (not_json("arguments"),)
    value, problems = parse_value(reply, "object")
    if value is None:
        return None, problems or (not_json("not_object"),)
    if not isinstance(value, dict):
        return None, (*problems, not_json("not_object"))
    return value, problems


def is_large(reply: ReplyInput) -> bool:
    """Whether a reply's text is past LARGE_TEXT_CHARS: its value is then walked, not copied."""
    return reply.text is not None and len(reply.text) > LARGE_TEXT_CHARS
