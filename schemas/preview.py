"""A Delivery's `preview`: one line of plain text for a console, a log line or a notification.

Projected from the delivered message (validated, masked, notice-substituted), never from raw
output, so it can hold no secret and no unchecked attachment. Pure: the masker is passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from selectolax.lexbor import LexborHTMLParser, LexborNode

from schemas.text_rules import escape_controls

MAX_CODE_POINTS: Final = 280
ELLIPSIS: Final = "…"
# Passes of "mask, then normalise and cut" before the result is stable (one, nearly always).
_MAX_PASSES: Final = 4

# Segment types shown as a bracketed word (share adds its title).
_TOKENS: Final[Mapping[str, str]] = {
    "image": "[image]",
    "audio": "[audio]",
    "video": "[video]",
    "file": "[file]",
    "reply": "[reply]",
    "forward": "[forward]",
    "face": "[face]",
    "dice": "[dice]",
    "rps": "[rps]",
}
# Elements of the HTML answer contract that end a line of text where they start and stop.
_INLINE: Final = frozenset({"b", "strong", "i", "em", "u", "s", "sub", "sup", "code", "a", "img"})


def one_line(text: str) -> str:
    """Whitespace runs (line breaks too) to one space, ends trimmed, cut to 280 code points.

    `str.split()` splits at exactly the characters `\\s` matches (`str.isspace`), faster than
    `re.sub` plus `strip` (bench/README.md)."""
    return _cut(" ".join(text.split()))


def _cut(line: str) -> str:
    """A line cut to 280 code points, the last one an ellipsis when anything was cut."""
    if len(line) <= MAX_CODE_POINTS:
        return line
    return line[: MAX_CODE_POINTS - 1] + ELLIPSIS


def _segment_text(segment: Any) -> str:
    """One IM segment as preview text."""
    seg_type, data = segment.get("type"), segment.get("data") or {}
    if seg_type == "text":
        return str(data.get("text", ""))
    if seg_type == "markdown":
        return str(data.get("content", ""))
    if seg_type == "mention":
        return "@" + str(data.get("target", ""))
    if seg_type == "share":
        return f"[share: {data.get('title', '')}]"
    return _TOKENS.get(str(seg_type), "")


def segments_text(message: Mapping[str, Any]) -> str:
    return "".join(_segment_text(s) for s in message.get("segments", []) if isinstance(s, dict))


def html_text(html: str, limit: int | None = None) -> str:
    """The HTML's text content (entities decoded), a space at each block boundary.

    With a `limit`, the walk stops once the text holds more than `limit` non-blank
    characters: its one-line form is then already longer than `limit`, and everything `one_line`
    keeps of it is there (the collapsed text of a prefix is a prefix of the collapsed text).
    """
    first = LexborHTMLParser(html, is_fragment=True, fragment_tag="body", scripting=False).root
    out: list[str] = [" "]
    stack: list[tuple[LexborNode, bool]] = []
    _push_children(stack, first)  # every top-level node, not only the first one
    while stack:
        node, entering = stack.pop()
        if node.tag == "-text":
            text = node.text_content or ""
            out.append(text)
            if limit is not None:
                limit -= sum(map(len, text.split()))
                if limit < 0:
                    break
            continue
        if node.tag not in _INLINE:
            out.append(" ")
        if entering:
            stack.append((node, False))
            _push_children(stack, node.first_child)
    return "".join(out)


def _push_children(stack: list[tuple[LexborNode, bool]], first: LexborNode | None) -> None:
    """Push `first` and its next siblings so that they pop in document order."""
    start = len(stack)
    node = first
    while node is not None:
        stack.append((node, True))
        node = node.next
    stack[start:] = stack[start:][::-1]


def preview_line(text: str) -> str:
    """`text` as one line, unmasked: a control or bidi character left once whitespace is one
    space is shown escaped (`\\x1b`, `\\u202e`): a console, a log line or a notification
    interprets none."""
    return _cut(escape_controls(" ".join(text.split())))


def preview(text: str, mask: Callable[[str], str]) -> str:
    """`preview_line(text)` masked (`masked_line`)."""
    return masked_line(preview_line(text), mask)


def masked_line(line: str, mask: Callable[[str], str]) -> str:
    """A preview line masked again until stable, since joining or cutting text can make a
    string a leak rule matches (the message's own strings are already masked)."""
    for _ in range(_MAX_PASSES):
        masked = mask(line)
        if masked == line:
            return line
        line = one_line(masked)
    return ""
