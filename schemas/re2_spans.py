"""RE2 matches as group spans, without the cost of the binding's Python match objects.

`google-re2`'s `search`/`fullmatch` wrap every call in Python (argument checks, encoding, a
`_Match` object, offset mapping): several times the C++ match on short inputs such as URIs.
`spans_finder` goes straight to the compiled RE2 object when the binding exposes it, and
through the public API otherwise (same answers, the old cost).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import re2

__all__ = ["SpansFinder", "spans_finder"]

# Spans (start, end) of every group of a match in UTF-8 bytes at or after an offset, or None;
# an unmatched group is (-1, -1).
SpansFinder = Callable[[bytes, int], Sequence[tuple[int, int]] | None]


def spans_finder(regex: Any, whole: bool = False) -> SpansFinder:
    """A search (`whole`: a match of the whole input from the offset) on a compiled RE2."""
    raw = getattr(regex, "_regexp", None)
    anchors = getattr(re2, "_Anchor", None)
    anchor = getattr(anchors, "ANCHOR_BOTH" if whole else "UNANCHORED", None)
    if raw is not None and anchor is not None and hasattr(raw, "Match"):
        match = raw.Match

        def fast(data: bytes, pos: int) -> Sequence[tuple[int, int]] | None:
            spans: list[tuple[int, int]] = match(anchor, data, pos, len(data))
            return None if spans[0][0] < 0 else spans

        return fast

    find = regex.fullmatch if whole else regex.search

    def slow(data: bytes, pos: int) -> Sequence[tuple[int, int]] | None:
        m = find(data, pos)
        return None if m is None else [m.span(g) for g in range(regex.groups + 1)]

    return slow
