"""Span arithmetic of the masker: overlapping matches folded, text cut around them, markers.

The marker `[REDACTED:<rule-id>]` is written here and only here (`marker`); `MARKER` reads one
back. Spans are byte offsets into UTF-8 data or character offsets into the text, as named.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator
from typing import AnyStr, Final

__all__ = [
    "MARKER",
    "MARKER_OPEN",
    "Marks",
    "Piece",
    "around_markers",
    "char_spans",
    "fold",
    "marker",
    "marker_bytes",
    "resolve",
    "splice",
    "splice_keeping",
]

# What the masker writes; the id is one of its rules' (checked against them by the masker).
MARKER_OPEN: Final = "[REDACTED:"
MARKER: Final = re.compile(r"\[REDACTED:([a-z0-9]+(?:-[a-z0-9]+)*)\]")


def marker(rule_id: str) -> str:
    """The text that stands where a secret was: the rule that found it, nothing of the value."""
    return f"{MARKER_OPEN}{rule_id}]"


def marker_bytes(rule_id: str) -> bytes:
    """`marker` as UTF-8, for splicing byte data."""
    return marker(rule_id).encode()


def char_bounds(data: bytes, s: int, e: int) -> tuple[int, int]:
    """Widen a byte span to whole UTF-8 characters (a bounded run may stop inside one)."""
    while s > 0 and 0x80 <= data[s] < 0xC0:
        s -= 1
    while e < len(data) and 0x80 <= data[e] < 0xC0:
        e += 1
    return s, e


def resolve(cands: Iterator[tuple[int, int, int, str]], data: bytes) -> list[tuple[int, int, str]]:
    """Earliest start wins, then the longest, then rule priority; overlaps fold into the winner.

    Folding (rather than dropping) an overlapping match keeps its tail from leaking.
    """
    regions: list[tuple[int, int, str]] = []
    widened = ((*char_bounds(data, s, e), p, r) for s, e, p, r in cands)
    for s, neg_e, _prio, rule_id in sorted((s, -e, p, r) for s, e, p, r in widened):
        e = -neg_e
        if regions and s < regions[-1][1]:
            last = regions[-1]
            if e > last[1]:
                regions[-1] = (last[0], e, last[2])
            continue
        regions.append((s, e, rule_id))
    return regions


def splice(
    source: AnyStr,
    regions: Iterable[tuple[int, int, str, bool]],
    marker: Callable[[str], AnyStr],
) -> tuple[list[AnyStr], dict[str, int]]:
    """`source` cut around the regions (sorted, disjoint), each replaced by its rule's marker or
    by nothing; and how many markers per rule were written."""
    pieces: list[AnyStr] = []
    counts: dict[str, int] = {}
    prev = 0
    for s, e, rule_id, marked in regions:
        pieces.append(source[prev:s])
        if marked:
            pieces.append(marker(rule_id))
            counts[rule_id] = counts.get(rule_id, 0) + 1
        prev = e
    pieces.append(source[prev:])
    return pieces, dict(sorted(counts.items()))


# (start, end, priority, rule id, carries the marker) in characters of the original text.
Piece = tuple[int, int, int, str, bool]
# The markers of a text: their starts and their ends (sorted, disjoint), in characters.
Marks = tuple[list[int], list[int]]


def around_markers(marks: Marks, s: int, e: int) -> bool:
    """May [s, e) be masked in a text with markers: it touches none, or it covers whole each
    one it touches and is more than one marker alone? A span inside a marker, or reaching into
    one, was made by the marker's own text (`acme-[a-z]+` in `[REDACTED:acme-key]`)."""
    starts, ends = marks
    i = bisect_right(ends, s)  # the first marker ending after s
    if i == len(starts) or starts[i] >= e:
        return True
    if starts[i] < s:
        return False
    j = bisect_left(starts, e) - 1  # the last marker starting before e
    return ends[j] <= e and (i, s, e) != (j, starts[i], ends[j])


def splice_keeping(
    text: str, regions: Iterable[tuple[int, int, str, bool]], marks: Marks, count_rest: bool
) -> tuple[list[str], dict[str, int]]:
    """`splice` for a text with markers: a region holding markers (whole, `around_markers`)
    keeps them as they are and loses the rest; one counts only when `count_rest` (a marker of
    an earlier pass already counted its secret)."""
    starts, ends = marks
    pieces: list[str] = []
    counts: dict[str, int] = {}
    prev = 0
    for s, e, rule_id, marked in regions:
        pieces.append(text[prev:s])
        kept = range(bisect_left(starts, s), bisect_left(starts, e))
        if kept:
            pieces += (text[starts[k] : ends[k]] for k in kept)
        elif marked:
            pieces.append(marker(rule_id))
        if marked and (count_rest or not kept):
            counts[rule_id] = counts.get(rule_id, 0) + 1
        prev = e
    pieces.append(text[prev:])
    return pieces, dict(sorted(counts.items()))


def char_spans(
    data: bytes, cands: Iterator[tuple[int, int, int, str]]
) -> list[tuple[int, int, int, str]]:
    """Candidates with byte offsets into `data` as character offsets, in one pass."""
    spans = [(*char_bounds(data, s, e), p, r) for s, e, p, r in cands]
    if not spans or data.isascii():
        return spans
    offsets = sorted({o for s, e, _p, _r in spans for o in (s, e)})
    chars: dict[int, int] = {}
    prev = count = 0
    for offset in offsets:
        count += len(data[prev:offset].decode("utf-8", "surrogatepass"))
        chars[offset] = count
        prev = offset
    return [(chars[s], chars[e], p, r) for s, e, p, r in spans]


def fold(pieces: list[Piece]) -> list[tuple[int, int, str, bool]]:
    """`resolve` for pieces: overlaps fold into the earliest; a region carries a marker when
    any piece in it does, named after the first such piece."""
    regions: list[tuple[int, int, str, bool]] = []
    ordered = sorted((s, -e, p, not m, r) for s, e, p, r, m in pieces)
    for s, neg_e, _prio, unmarked, rule_id in ordered:
        e, marked = -neg_e, not unmarked
        if regions and s < regions[-1][1]:
            ls, le, lr, lm = regions[-1]
            if marked and not lm:
                lr, lm = rule_id, True
            regions[-1] = (ls, max(le, e), lr, lm)
            continue
        regions.append((s, e, rule_id, marked))
    return regions
