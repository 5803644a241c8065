"""Decoded views of a string: what a browser, a URL parser or an LLM reads, and the way back.

A reader never sees a reply's characters as they stand: it decodes JSON escapes, HTML character
references and percent-escapes, it renders markup, and it skips invisible characters. The masker
matches its rules on each decoded view too; a `View` maps a span of its text back to spans of
the original, so a secret found in a view masks exactly the characters that spell it.

Stages, each applied only when its cheap trigger is in the text (most strings have none):
JSON escapes (`\\uXXXX`, `\\/`, `\\\\`; twice, for JSON inside a JSON string), HTML character
references (`html.unescape` semantics), percent-escapes (UTF-8, twice, for a URL inside a query
value), invisible and format characters removed (Unicode Cf, zero-width, soft hyphen, variation
selectors, fillers). A second chain renders markup: tags become nothing (inline elements) or a
line break (everything else), so a token split by `<b>` or a PEM block split by `<br>` reads
whole; tags are structural, never masked. Every stage is one regex pass (no nested quantifiers,
possessive runs) plus a callback per token, so a view costs time linear in the text, and
entities are decoded once, never repeatedly (`&amp;amp;` reads `&amp;`, as in a browser).
"""

from __future__ import annotations

import html
import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html.entities import html5 as html5_entities
from typing import Final

__all__ = ["View", "decoded_text", "decoded_views", "may_hide"]

# Characters that render as nothing, or join or split text invisibly: Unicode Cf (soft hyphen,
# zero-width space/joiners, bidi controls, word joiner, BOM, tags), plus the fillers and
# selectors that are not Cf (combining grapheme joiner, Hangul fillers, Khmer inherent vowels,
# Mongolian and Unicode variation selectors).
_INVISIBLE_CLASS: Final = (
    "\u00ad\u034f\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u115f\u1160\u17b4\u17b5"
    "\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufe00-\ufe0f"
    "\ufeff\uffa0\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef"
)
_INVISIBLE = re.compile(f"[{_INVISIBLE_CLASS}]++")
_JSON_ESCAPE = re.compile(
    r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})|\\[\\/]"
)
# Character references: numeric, named with `;`, and the legacy names a browser also reads
# without one (`&amp`, `&copy`); a bare `&` of a query string is no token at all.
_LEGACY_NAMES: Final = sorted((k for k in html5_entities if not k.endswith(";")), key=len)[::-1]
_ENTITY = (
    r"&(?:#[xX][0-9a-fA-F]++;?|#[0-9]++;?|[A-Za-z][A-Za-z0-9]{0,31};"
    rf"|(?:{'|'.join(_LEGACY_NAMES)}))"
)
_ENTITIES = re.compile(_ENTITY)
# A tag cannot hold `<` here, so a search from one `<` stops at the next: linear overall.
# HTML elements: only their tags are markup; `<password>` or `<T>` in prose or code stay text.
_HTML_TAGS: Final = frozenset(
    {"a", "abbr", "address", "area", "article", "aside", "audio", "b", "bdi", "bdo", "big"}
    | {"blockquote", "body", "br", "button", "canvas", "caption", "center", "cite", "code"}
    | {"col", "colgroup", "data", "datalist", "dd", "del", "details", "dfn", "dialog", "div"}
    | {"dl", "dt", "em", "fieldset", "figcaption", "figure", "font", "footer", "form", "h1"}
    | {"h2", "h3", "h4", "h5", "h6", "head", "header", "hgroup", "hr", "html", "i", "img"}
    | {"input", "ins", "kbd", "label", "legend", "li", "main", "mark", "menu", "nav", "nobr"}
    | {"ol", "optgroup", "option", "output", "p", "picture", "pre", "q", "rp", "rt", "ruby"}
    | {"s", "samp", "section", "select", "small", "span", "strike", "strong", "sub"}
    | {"summary", "sup", "table", "tbody", "td", "textarea", "tfoot", "th", "thead", "time"}
    | {"tr", "tt", "u", "ul", "var", "wbr"}
)
_TAG_REST = r"(?:[\t\n\f\r /][^<>]*+)?>"


def _names(names: frozenset[str]) -> str:
    """An alternation of tag names, longest first, matched in any case."""
    return "(?i:" + "|".join(sorted(names, key=lambda n: (-len(n), n))) + ")"


_MARKUP = re.compile(rf"<(/?)({_names(_HTML_TAGS)}){_TAG_REST}|{_ENTITY}")
_PERCENT = re.compile(r"%[0-7][0-9A-Fa-f]|(?:%[89A-Fa-f][0-9A-Fa-f])++")
# Elements that render inline: their tags join the text around them.
_INLINE_TAGS: Final = frozenset(
    {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd"}
    | {"mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time"}
    | {"tt", "u", "var", "wbr"}
)
# The rendered text without the way back, in two C-speed passes: inline tags, then the rest.
_INLINE_TAG = re.compile(rf"</?{_names(_INLINE_TAGS)}{_TAG_REST}")
_ANY_TAG = re.compile(rf"</?{_names(_HTML_TAGS)}{_TAG_REST}")
# Beyond this many digits a character reference is out of range whatever it says.
_MAX_REF_DIGITS = 8

# A decoded token: its replacement text, and whether it is markup (never masked).
_Decoded = tuple[str, bool]


def may_hide(text: str) -> bool:
    """Could any stage change this text? The hot path: most strings answer no at C speed."""
    return (
        "&" in text
        or "%" in text
        or "<" in text
        or "\\u" in text
        or "\\/" in text
        or not text.isascii()
    )


def _json(m: re.Match[str]) -> _Decoded:
    token = m.group()
    if token[1] in "\\/":
        return token[1], False
    if m.group(3) is not None:
        return chr(int(m.group(3), 16)), False
    high, low = int(m.group(1), 16), int(m.group(2), 16)
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), False


def _charref(token: str) -> str:
    """`html.unescape` of one reference; numeric ones first cut to a size `int()` accepts."""
    if token[1] != "#":
        return html.unescape(token)
    hexa = token[2] in "xX"
    digits = token[3 if hexa else 2 :].rstrip(";").lstrip("0") or "0"
    if len(digits) > _MAX_REF_DIGITS:
        return "\ufffd"
    return html.unescape(f"&#{'x' if hexa else ''}{digits};")


def _entity(m: re.Match[str]) -> _Decoded:
    return _charref(m.group()), False


def _markup(m: re.Match[str]) -> _Decoded:
    name = m.group(2)
    if name is None:
        return _charref(m.group()), False
    return ("" if name.lower() in _INLINE_TAGS else "\n"), True


def _percent(m: re.Match[str]) -> _Decoded:
    token = m.group()
    if len(token) == 3 and token[1] < "8":
        return chr(int(token[1:], 16)), False
    return bytes.fromhex(token.replace("%", "")).decode("utf-8", "replace"), False


def _invisible(_m: re.Match[str]) -> _Decoded:
    return "", False


@dataclass(frozen=True, slots=True)
class _Stage:
    """One decoding: when it may apply (cheap), the tokens it rewrites, and how."""

    name: str
    applies: Callable[[str], bool]
    pattern: re.Pattern[str]
    decode: Callable[[re.Match[str]], _Decoded]


JSON: Final = _Stage("json", lambda t: "\\u" in t or "\\/" in t, _JSON_ESCAPE, _json)
ENTITIES: Final = _Stage("entities", lambda t: "&" in t, _ENTITIES, _entity)
MARKUP: Final = _Stage("markup", lambda t: "<" in t or "&" in t, _MARKUP, _markup)
PERCENT: Final = _Stage("percent", lambda t: "%" in t, _PERCENT, _percent)
INVISIBLE: Final = _Stage("invisible", lambda t: not t.isascii(), _INVISIBLE, _invisible)


class View:
    """A decoded text and its tokens: the spans of its source that were rewritten, and how long
    each became. Between tokens the text is a copy, so positions map back one to one."""

    __slots__ = ("_index", "_lens", "_spans", "_struct", "source", "stage", "text")

    def __init__(
        self,
        text: str,
        stage: str,
        source: View | None,
        spans: array[int],
        lens: array[int],
        struct: bytearray,
    ) -> None:
        self.text = text
        self.stage = stage
        self.source = source  # the view this one decoded; None: the original string
        self._spans = spans  # source start, source end of token k at 2k, 2k+1
        self._lens = lens  # length of token k in this view
        self._struct = struct  # 1 where token k is markup
        self._index: tuple[list[int], list[int]] | None = None

    def __repr__(self) -> str:
        return f"View({self.stage!r}, {len(self._lens)} tokens)"

    def _starts_ends(self) -> tuple[list[int], list[int]]:
        """Where each token starts and ends in this view (built on the first mapping)."""
        if self._index is None:
            starts: list[int] = []
            ends: list[int] = []
            shift = 0
            spans = self._spans
            for k, length in enumerate(self._lens):
                start = spans[2 * k] + shift
                starts.append(start)
                ends.append(start + length)
                shift += length - (spans[2 * k + 1] - spans[2 * k])
            self._index = (starts, ends)
        return self._index

    def to_source(self, start: int, end: int) -> list[tuple[int, int]]:
        """The source spans that `text[start:end]` came from, markup left out."""
        starts, ends = self._starts_ends()
        spans = self._spans
        first = bisect_right(ends, start)  # tokens [0, first) end at or before `start`
        if first < len(starts) and starts[first] <= start < ends[first]:
            src_start = spans[2 * first]
        elif first:
            src_start = spans[2 * first - 1] + start - ends[first - 1]
        else:
            src_start = start
        last = bisect_left(starts, end)  # tokens [0, last) start before `end`
        if last and ends[last - 1] >= end:
            src_end = spans[2 * last - 1]
        elif last:
            src_end = spans[2 * last - 1] + end - ends[last - 1]
        else:
            src_end = end
        return _cut(src_start, src_end, self._markup_between(first, last))

    def _markup_between(self, first: int, last: int) -> list[tuple[int, int]]:
        if not any(self._struct[first:last]):
            return []
        spans = self._spans
        return [(spans[2 * k], spans[2 * k + 1]) for k in range(first, last) if self._struct[k]]

    def to_original(self, start: int, end: int) -> list[tuple[int, int]]:
        """The spans of the original string that `text[start:end]` came from, in order."""
        spans = self.to_source(start, end)
        view = self.source
        while view is not None:
            spans = [part for s, e in spans for part in view.to_source(s, e)]
            view = view.source
        return spans


def _cut(start: int, end: int, holes: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """[start, end) without the holes (sorted, disjoint); empty pieces dropped."""
    out: list[tuple[int, int]] = []
    pos = start
    for s, e in holes:
        if s > pos:
            out.append((pos, min(s, end)))
        pos = max(pos, e)
    if pos < end:
        out.append((pos, end))
    return [(s, e) for s, e in out if s < e]


def _apply(stage: _Stage, text: str, source: View | None) -> View | None:
    """The stage's view of `text`, or None when it changes nothing."""
    if not stage.applies(text):
        return None
    spans: array[int] = array("q")
    lens: array[int] = array("q")
    struct = bytearray()
    decode = stage.decode

    def replace(m: re.Match[str]) -> str:
        out, is_markup = decode(m)
        if out != m.group():
            spans.extend(m.span())
            lens.append(len(out))
            struct.append(is_markup)
        return out

    decoded = stage.pattern.sub(replace, text)
    if not lens:
        return None
    return View(decoded, stage.name, source, spans, lens, struct)


def _chain(stages: Sequence[_Stage], text: str, source: View | None) -> list[View]:
    """Each stage on the previous one's output; the views that changed something."""
    views: list[View] = []
    for stage in stages:
        view = _apply(stage, text, source)
        if view is not None:
            views.append(view)
            source, text = view, view.text
    return views


_DECODING: Final = (JSON, JSON, ENTITIES, PERCENT, PERCENT, INVISIBLE)
_RENDERING: Final = (MARKUP, PERCENT, INVISIBLE)


def decoded_text(text: str) -> str:
    """`text` as a reader ends up reading it (the decoding chain, no offsets kept)."""
    views = _chain(_DECODING, text, None) if may_hide(text) else []
    return views[-1].text if views else text


def _rendered(text: str) -> str:
    """The rendering chain's final text, built without offsets (most of it at C speed)."""
    out = _ANY_TAG.sub("\n", _INLINE_TAG.sub("", text))
    for stage in (ENTITIES, *_RENDERING[1:]):
        view = _apply(stage, out, None)
        out = out if view is None else view.text
    return out


def decoded_views(text: str, worth: Callable[[str], bool] = bool) -> list[View]:
    """Every view of `text` that differs from it: decoded as is, and decoded after rendering
    markup. The rendered chain is built only when there is markup and its text is `worth` it
    (the masker asks whether any rule could match there): tags are the common case."""
    if not may_hide(text):
        return []
    views = _chain(_DECODING, text, None)
    if "<" in text:
        json_views = [v for v in views if v.stage == "json"]
        base = json_views[-1] if json_views else None
        source = base.text if base else text
        if worth(_rendered(source)):
            rendered = _chain(_RENDERING, source, base)
            if rendered and rendered[0].stage == "markup" and any(rendered[0]._struct):
                views += rendered
    return views
