"""Text a reader's terminal or client interprets: the one rule every contract's strings share.

A reply's strings (text, Markdown, HTML text and attribute values, titles, names, tool-call
arguments, a caller-owned schema's strings and keys) may not hold NUL, the other C0 and the
C1 control characters (tab, line feed and carriage return are text), nor the bidirectional
override, embedding and isolate characters (U+202A-U+202E, U+2066-U+2069), which reorder what
a reader sees. The marks a right-to-left language needs (U+200E, U+200F, U+061C) stay valid.

What replygate writes itself (previews, error paths and messages, log and summary lines) shows
such characters escaped instead (`escape_controls`). Pure; one compiled pattern per rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Final

import orjson

from schemas.codes import CONTROL_CHARACTER, MAX_ISSUES
from schemas.issue import Issue, child_path
from schemas.issue_sink import IssueSink
from schemas.json_numbers import as_written

__all__ = [
    "NO_CONTROLS_PATTERN",
    "control_character_issues",
    "escape_controls",
    "find_control",
    "tree_control_issues",
    "within_ascii",
]

# C0 but tab, LF, CR; C1; the bidi embeddings/overrides and isolates. DEL (U+007F) is neither
# C0 nor C1: ordinary in a reply, refused in progress text (`with_delete`) and escaped on output.
_REPLY_CLASS: Final = "\x00-\x08\x0b\x0c\x0e-\x1f\x80-\x9f\u202a-\u202e\u2066-\u2069"
# The same rule as a JSON Schema `pattern` (ECMA-262), for the schemas replygate publishes.
NO_CONTROLS_PATTERN: Final = (
    "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u0080-\\u009f"
    "\\u202a-\\u202e\\u2066-\\u2069]*$"
)
_REPLY: Final = re.compile(f"[{_REPLY_CLASS}]")
# The ASCII a reply's strings may hold (DEL too), and progress text (no DEL).
_ASCII_REPLY: Final = bytes(range(0x20, 0x80)) + b"\t\n\r"
_ASCII_PROGRESS: Final = bytes(range(0x20, 0x7F)) + b"\t\n\r"
_WITH_DELETE: Final = re.compile(f"[{_REPLY_CLASS}\x7f]")
# What replygate's own output escapes: every control character (tab, LF and CR too: one line
# stays one line), DEL, the bidi controls above, and lone surrogates (no encoding carries them).
_SHOWN_ESCAPED: Final = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def within_ascii(text: str, allowed: bytes) -> bool:
    """Whether `text` is ASCII with every character in `allowed`: a table lookup a byte, where
    a regex class search over the text costs ~6x more."""
    return text.isascii() and not text.encode("ascii").translate(None, allowed)


def find_control(text: str, with_delete: bool = False) -> int | None:
    """The index of the first character a reply may not hold, or None (one regex search;
    printable text and ASCII with line breaks are cleared without it)."""
    if text.isprintable() or within_ascii(text, _ASCII_PROGRESS if with_delete else _ASCII_REPLY):
        return None  # every character of the refused classes is one `isprintable` refuses
    match = (_WITH_DELETE if with_delete else _REPLY).search(text)
    return None if match is None else match.start()


def _escaped(match: re.Match[str]) -> str:
    point = ord(match.group())
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def escape_controls(text: str) -> str:
    """`text` with every control, bidi control and lone surrogate written as `\\x1b` or
    `\\u202e`: for anything replygate writes itself (a reader's terminal interprets none).
    Printable text is cleared without a search: every character of the class is one
    `str.isprintable` refuses (a control, a bidi format character, a surrogate)."""
    if text.isprintable():
        return text
    return _SHOWN_ESCAPED.sub(_escaped, text) if _SHOWN_ESCAPED.search(text) else text


def control_character_issues(text: str, base: str, with_delete: bool = False) -> list[Issue]:
    """One `control_character` issue per refused character, at `base[<code point index>]`;
    at most MAX_ISSUES, then one `too_many_errors` (`IssueSink`)."""
    pattern = _WITH_DELETE if with_delete else _REPLY
    if pattern.search(text) is None:
        return []
    sink = IssueSink()
    for match in pattern.finditer(text):
        sink.add(_issue(f"{base}[{match.start()}]", match.group()))
        if sink.full:
            break
    return sink.result()


def _issue(path: str, char: str) -> Issue:
    return CONTROL_CHARACTER.issue(path, code_point=ord(char))


def _strings(value: Any, base: str) -> Iterator[tuple[str, str, bool]]:
    """Every string of a JSON value with its path: `(path, text, is_key)`, depth first."""
    stack: list[tuple[str, Any]] = [(base, value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            yield path, node, False
        elif isinstance(node, dict):
            items = list(node.items())
            for key, child in reversed(items):
                stack.append((child_path(path, str(key)), child))
            for key, _ in items:
                if isinstance(key, str):
                    yield child_path(path, key), key, True
        elif isinstance(node, list):
            stack.extend((child_path(path, i), v) for i, v in reversed(list(enumerate(node))))


def tree_control_issues(
    value: Any,
    base: str = "$",
    limit: int = MAX_ISSUES,
    large: bool = False,
    read_from: str | None = None,
) -> list[Issue]:
    """The `control_character` issues of every string and key of a JSON value (bounded).

    A string's issue names the code point's index (`segments[0].data.text[5]`); a key's names
    the key itself (the path shows it escaped once it leaves the gate). `large`: the value is
    walked, never written again (no copy of a huge reply is made). `read_from`: the JSON text
    the value was read from (or a text holding it), which one search clears in nearly every
    reply."""
    if read_from is not None and not _may_write_control(read_from):
        return []
    if not (_walk_has_control(value) if large else tree_has_control(value)):
        return []
    sink = IssueSink(limit)
    for path, text, is_key in _strings(value, base):
        if _REPLY.search(text) is None:
            continue
        if is_key:
            sink.add(_issue(path, _REPLY.search(text).group()))  # type: ignore[union-attr]
        else:
            sink.extend(control_character_issues(text, path))
        if sink.full:
            break
    return sink.result()


# In orjson's output a refused C0 character is `\b`, `\f` or `\u00XX`; C1 and the bidi
# controls are their UTF-8 bytes. A match may be a false alarm (an escaped backslash before a
# `b`): the walk then decides.
_MAYBE_IN_JSON: Final = re.compile(rb"[\\\xc2\xe2]")  # their first bytes, one class
_IN_JSON: Final = re.compile(
    rb"\\[bf]|\\u00[01]|\xc2[\x80-\x9f]|\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]"
)


# In JSON text a refused character stands as itself (raw C0 is no JSON outside a blank) or
# as an escape: `\b`, `\f`, or `\u` with a C0, C1 or bidi code point. A match may be a false
# alarm (`\\b`, `\u0041`): the value decides.
_ESCAPED_IN_TEXT: Final = re.compile("\\\\(?:[bf]|u(?:00[0189]|20[26]))")


def _may_write_control(text: str) -> bool:
    """Whether the JSON text may give a string a refused character. In ASCII JSON only an
    escape can: a search for the backslash, not a class test of every character. Other text
    is searched twice, for the class and for the escapes: one pattern with both as
    alternatives tries each at every position (~2.5x slower for 400 characters)."""
    escaped = "\\" in text and _ESCAPED_IN_TEXT.search(text) is not None
    return escaped or (not text.isascii() and find_control(text) is not None)


def tree_has_control(value: Any) -> bool:
    """Whether any string or key of a JSON value holds a refused character: one orjson write
    and one bytes search for a clean value (the common case), else the walk."""
    try:
        data = orjson.dumps(value, default=as_written)
    except TypeError:  # too deep for orjson: walk
        return _walk_has_control(value)
    if _MAYBE_IN_JSON.search(data) is None or _IN_JSON.search(data) is None:
        return False
    return _walk_has_control(value)


def _walk_has_control(value: Any) -> bool:
    """`tree_has_control` by a walk that allocates nothing but its stack."""
    stack = [value]
    search = _REPLY.search
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if search(node) is not None:
                return True
        elif isinstance(node, dict):
            if any(search(key) is not None for key in node if isinstance(key, str)):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False
