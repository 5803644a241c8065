"""W3C trace context (`traceparent`, `tracestate`) carried from an input record to its outputs.

Only these two headers pass through, each at most MAX_TRACE_HEADER_BYTES; a value that breaks
the W3C format is dropped, never an error (a trace header must not cost a reply). Pure: the
worker reads the input record's headers with `trace_of` and attaches the result to every record
that input causes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

TRACEPARENT: Final = "traceparent"
TRACESTATE: Final = "tracestate"
MAX_TRACE_HEADER_BYTES: Final = 512
# W3C trace-context: at most 32 list members in `tracestate`.
MAX_TRACESTATE_MEMBERS: Final = 32

# The headers an output record carries: (name, value) pairs, as Kafka clients take them.
Trace = tuple[tuple[str, bytes], ...]
NO_TRACE: Final[Trace] = ()

# version "-" trace-id "-" parent-id "-" trace-flags, lowercase hex; a later version may add
# fields after another "-" (W3C trace-context, Versioning of traceparent).
_TRACEPARENT: Final = re.compile(
    r"(?P<version>[0-9a-f]{2})-(?P<trace>[0-9a-f]{32})-(?P<parent>[0-9a-f]{16})-[0-9a-f]{2}"
    r"(?P<rest>-.*)?"
)
_KEY: Final = re.compile(
    r"[a-z][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13}"
)
_VALUE: Final = re.compile(r"[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]")


def valid_traceparent(value: str) -> bool:
    """W3C `traceparent`: version 00 is exactly 55 characters; version ff is invalid; the
    trace id and the parent id are not all zeros."""
    match = _TRACEPARENT.fullmatch(value)
    if match is None:
        return False
    version = match["version"]
    if version == "ff" or (version == "00" and match["rest"] is not None):
        return False
    return match["trace"] != "0" * 32 and match["parent"] != "0" * 16


def valid_tracestate(value: str) -> bool:
    """W3C `tracestate`: comma-separated `key=value` members (empty ones allowed), at most 32."""
    members = [m.strip(" \t") for m in value.split(",")]
    present = [m for m in members if m]
    if len(present) > MAX_TRACESTATE_MEMBERS:
        return False
    for member in present:
        key, sep, val = member.partition("=")
        if not sep or _KEY.fullmatch(key) is None or _VALUE.fullmatch(val) is None:
            return False
    return True


def _text(value: bytes | str | None) -> str | None:
    """A header value as ASCII text within the bound, or None (dropped)."""
    if value is None:
        return None
    raw = value.encode("utf-8", "replace") if isinstance(value, str) else bytes(value)
    if len(raw) > MAX_TRACE_HEADER_BYTES or not raw.isascii():
        return None
    return raw.decode("ascii")


HeadersIn = Iterable[tuple[str, bytes | str | None]] | Mapping[str, bytes | str | None]


def trace_of(headers: HeadersIn | None) -> Trace:
    """The trace headers to copy from an input record's headers: a valid `traceparent`, and
    a valid `tracestate` beside it (W3C: no `tracestate` without a `traceparent`). A header
    given more than once is ambiguous and dropped; names are matched without case."""
    if not headers:
        return NO_TRACE
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    seen: dict[str, list[str | None]] = {}
    for name, value in pairs:
        lowered = name.lower() if isinstance(name, str) else ""
        if lowered in (TRACEPARENT, TRACESTATE):
            seen.setdefault(lowered, []).append(_text(value))
    parents, states = seen.get(TRACEPARENT, []), seen.get(TRACESTATE, [])
    parent = parents[0] if len(parents) == 1 else None
    if parent is None or not valid_traceparent(parent):
        return NO_TRACE
    trace: list[tuple[str, bytes]] = [(TRACEPARENT, parent.encode("ascii"))]
    state = states[0] if len(states) == 1 else None
    if state is not None and valid_tracestate(state):
        trace.append((TRACESTATE, state.encode("ascii")))
    return tuple(trace)


def trace_to_list(trace: Trace) -> list[list[str]]:
    """The trace as JSON-ready pairs, for turn state (values are ASCII by `trace_of`)."""
    return [[name, value.decode("ascii")] for name, value in trace]


def trace_from_list(value: object) -> Trace:
    """`trace_to_list` read back from stored state; anything else is no trace."""
    if not isinstance(value, list):
        return NO_TRACE
    return trace_of([(str(p[0]), str(p[1])) for p in value if isinstance(p, list) and len(p) == 2])
