"""The transport of `assistant.html.v1`: the ```html fence and the optional trailing line.

`output.text` is, after optional blank lines, an opening fence line of three or more
backticks labelled exactly `html`, the payload, a closing fence line of at least as many
backticks, then optional blank lines and at most ONE line
`optional_rag_fragment_used: URI(;URI)*`. Leading/trailing spaces on those lines are fine;
anything else outside the fence is `not_fenced` (an unclosed fence too). The payload is the
text between the fence lines, byte for byte (line breaks inside kept, the one before the
closing fence dropped). All of it is one linear pass over the lines.

Where the transport is broken but the payload can still be found (text before the first
```html fence line, text or a second trailing line after its closing fence), the split still
returns it, with the `not_fenced` issues (before, after) in `transport`: the payload is
checked too, so the one correction request carries every error. No fence labelled html, or
one never closed, leaves nothing to check.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from schemas.html_answer.codes import NOT_FENCED
from schemas.issue import Issue

_OPEN_FENCE_RE = re.compile(r"[ \t]*(`{3,})([^\r\n]*)")
_CLOSE_FENCE_RE = re.compile(r"[ \t]*(`{3,})[ \t]*")
_RAG_LINE_RE = re.compile(r"[ \t]*optional_rag_fragment_used:([^\r\n]*)")
_EOL_RE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True, slots=True)
class Fenced:
    """The transport split: the payload exactly as sent, and the trailing line's raw items."""

    payload: str
    payload_offset: int
    rag_items: tuple[str, ...] | None
    # The broken transport around a payload that could still be found (reported first).
    transport: tuple[Issue, ...] = ()


def _lines(text: str) -> Iterator[tuple[int, int, int]]:
    """(start, end of content, start of next line) for every line; linear, no copies. Text
    with no carriage return is cut at each `\n` by `str.find`, a third of the regex's cost."""
    if "\r" in text:
        yield from _eol_lines(text)
        return
    pos = 0
    size = len(text)
    while pos < size:
        end = text.find("\n", pos)
        if end < 0:
            yield pos, size, size
            return
        yield pos, end, end + 1
        pos = end + 1


def _eol_lines(text: str) -> Iterator[tuple[int, int, int]]:
    """`_lines` for any line ending: `\r\n`, `\r` or `\n`."""
    pos = 0
    size = len(text)
    while pos < size:
        match = _EOL_RE.search(text, pos)
        if match is None:
            yield pos, size, size
            return
        yield pos, match.start(), match.end()
        pos = match.end()


def split_fence(text: str) -> Fenced | Issue:
    """Cut `output.text` into payload and optional trailing line; anything else is `not_fenced`
    (in `Fenced.transport` when the payload can still be found)."""
    lines = _lines(text)
    opening: re.Match[str] | None = None
    before: Issue | None = None
    for start, end, after in lines:
        if not text[start:end].strip():
            continue
        match = _OPEN_FENCE_RE.fullmatch(text, start, end)
        if match is None or match.group(2).strip(" \t") != "html":
            before = before or NOT_FENCED.issue("$")
            continue
        opening = match
        payload_start = after
        break
    if opening is None:
        return before or NOT_FENCED.issue("$", "empty")
    ticks = len(opening.group(1))
    for start, end, _after in lines:
        if text.find("```", start, end) < 0:
            continue  # most payload lines: no regex call
        close = _CLOSE_FENCE_RE.fullmatch(text, start, end)
        if close is not None and len(close.group(1)) >= ticks:
            payload_end = start
            # The line break before the closing fence belongs to the fence, not the payload.
            if payload_end > payload_start:
                payload_end -= 2 if text.startswith("\r\n", payload_end - 2) else 1
            payload = text[payload_start : max(payload_start, payload_end)]
            found = Fenced(payload, payload_start, None, (before,) if before else ())
            return _after_fence(text, lines, found)
    return before or NOT_FENCED.issue("$", "unclosed")


def _after_fence(text: str, lines: Iterator[tuple[int, int, int]], fenced: Fenced) -> Fenced:
    rag: tuple[str, ...] | None = None
    after: Issue | None = None
    for start, end, _after in lines:
        if not text[start:end].strip():
            continue
        match = _RAG_LINE_RE.fullmatch(text, start, end)
        if match is None or rag is not None:
            after = after or NOT_FENCED.issue("$", "second_rag" if match else "text_after")
            continue
        rag = tuple(item.strip() for item in match.group(1).split(";"))
    transport = (*fenced.transport, after) if after else fenced.transport
    return Fenced(fenced.payload, fenced.payload_offset, rag, transport)
