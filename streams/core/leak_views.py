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
possessive runs), so a view costs time linear in the text, and references are decoded once,
never repeatedly (`&amp;amp;` reads `&amp;`, as in a browser).

A view's text is first built the fast way (C-level substitutions, one call per run or per real
reference); the way back, a token pass with a callback per rewritten token, is built only for a
view in which the masker's pre-filter finds something.
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

import re2

from schemas.re2_spans import spans_finder

__all__ = ["View", "decoded_text", "decoded_views", "may_hide"]


def _alternation(names: frozenset[str], ignore_case: bool = False) -> str:
    """An alternation of literal names grouped by first character (the regex engine tries
    branches in turn: one character test each instead of a whole name each)."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(name[0], []).append(re.escape(name[1:]))
    branches = "|".join(
        re.escape(first) + "(?:" + "|".join(sorted(rests, key=lambda r: (-len(r), r))) + ")"
        for first, rests in sorted(groups.items())
    )
    return f"(?i:{branches})" if ignore_case else f"(?:{branches})"


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
_LEGACY_NAMES: Final = frozenset(k for k in html5_entities if not k.endswith(";"))
_ENTITY = (
    r"&(?:#[xX][0-9a-fA-F]++;?|#[0-9]++;?|[A-Za-z][A-Za-z0-9]{0,31}+;"
    rf"|{_alternation(_LEGACY_NAMES)})"
)
_ENTITIES = re.compile(_ENTITY)
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
# A tag cannot hold `<` here, so a search from one `<` stops at the next: linear overall.
_TAG_REST = r"(?:[\t\n\f\r /][^<>]*+)?>"
_MARKUP = re.compile(rf"<(/?)({_alternation(_HTML_TAGS, ignore_case=True)}){_TAG_REST}|{_ENTITY}")
_PERCENT = re.compile(r"%[0-7][0-9A-Fa-f]|(?:%[89A-Fa-f][0-9A-Fa-f])++")
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})++")
# Elements that render inline: their tags join the text around them.
_INLINE_TAGS: Final = frozenset(
    {"a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font", "i", "kbd"}
    | {"mark", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "sup", "time"}
    | {"tt", "u", "var", "wbr"}
)
# The rendered text without the way back, in two C-speed passes: inline tags, then the rest.
_INLINE_TAG = re.compile(rf"</?{_alternation(_INLINE_TAGS, ignore_case=True)}{_TAG_REST}")
_ANY_TAG = re.compile(rf"</?{_alternation(_HTML_TAGS, ignore_case=True)}{_TAG_REST}")
# Beyond this many digits a character reference is out of range whatever it says.
_MAX_REF_DIGITS = 8

# A decoded token: its replacement text, and whether it is markup (never masked).
_Decoded = tuple[str, bool]


def may_hide(text: str) -> bool:
    """Could any stage change this text? The hot path: most strings answer no at C speed.

    Every stage but one is set off by an ASCII mark; the invisible-character stage is the only
    one non-ASCII text concerns, so other non-ASCII (an accent, the preview's own `…`) is no
    reason to build views."""
    return (
        "&" in text
        or "%" in text
        or "<" in text
        or ("\\" in text and ("\\u" in text or "\\/" in text))
        or has_invisible(text)
    )


def _json(m: re.Match[str]) -> _Decoded:
    """One JSON escape as its character: `\\\\`, `\\/`, `\\uXXXX` (a surrogate pair as one)."""
    token = m.group()
    if token[1] in "\\/":
        return token[1], False
    if m.group(3) is not None:
        return chr(int(m.group(3), 16)), False
    high, low = int(m.group(1), 16), int(m.group(2), 16)
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)), False


def _charref(token: str) -> str:
    """`html.unescape` of one reference; numeric ones first cut to a size `int()` accepts.

    The common cases are read straight from the HTML5 table or the code point (a named
    reference with its `;`, printable ASCII by number): what `html.unescape` returns for them,
    without its regex pass. No cache: the pure core keeps no module-level mutable state."""
    if token[1] != "#":
        if token[-1] == ";":
            named = html5_entities.get(token[1:])
            if named is not None:
                return named
        return html.unescape(token)
    hexa = token[2] in "xX"
    digits = token[3 if hexa else 2 :].rstrip(";").lstrip("0") or "0"
    if len(digits) > _MAX_REF_DIGITS:
        return "\ufffd"
    if len(digits) <= 3:
        code = int(digits, 16 if hexa else 10)
        if 0x20 <= code < 0x7F:
            return chr(code)
    return html.unescape(f"&#{'x' if hexa else ''}{digits};")


def _entity(m: re.Match[str]) -> _Decoded:
    """One character reference, decoded."""
    return _charref(m.group()), False


def _markup(m: re.Match[str]) -> _Decoded:
    """A tag as the reader sees it (nothing inline, a line break otherwise), or a reference."""
    name = m.group(2)
    if name is None:
        return _charref(m.group()), False
    return ("" if name.lower() in _INLINE_TAGS else "\n"), True


def _percent(m: re.Match[str]) -> _Decoded:
    """One ASCII escape as its character, or a run of high bytes decoded as UTF-8 together."""
    token = m.group()
    if len(token) == 3 and token[1] < "8":
        return chr(int(token[1:], 16)), False
    return bytes.fromhex(token.replace("%", "")).decode("utf-8", "replace"), False


def _utf8(m: re.Match[str]) -> str:
    """A whole run of percent-escapes at once: the same text as `_percent` token by token
    (ASCII bytes decode alone either way), one call per run."""
    return bytes.fromhex(m.group().replace("%", "")).decode("utf-8", "replace")


def _invisible(_m: re.Match[str]) -> _Decoded:
    """Invisible characters read as nothing."""
    return "", False


def _text_of(decode: Callable[[re.Match[str]], _Decoded]) -> Callable[[re.Match[str]], str]:
    """A token decoder for `re.sub`: its text only."""

    def text(m: re.Match[str]) -> str:
        return decode(m)[0]

    return text


def _rendered(text: str) -> str:
    """The markup stage's text at C speed: inline tags, then the others, then references."""
    return _ENTITIES.sub(_text_of(_entity), _ANY_TAG.sub("\n", _INLINE_TAG.sub("", text)))


@dataclass(frozen=True, slots=True)
class _Stage:
    """One decoding: when it may apply (cheap), the tokens it rewrites and how, and the same
    text built fast without offsets (`quick`), which is all a string without a hit needs."""

    name: str
    applies: Callable[[str], bool]
    pattern: re.Pattern[str]
    decode: Callable[[re.Match[str]], _Decoded]
    quick: Callable[[str], str]


JSON: Final = _Stage(
    "json",
    lambda t: "\\" in t and ("\\u" in t or "\\/" in t),
    _JSON_ESCAPE,
    _json,
    lambda t: _JSON_ESCAPE.sub(_text_of(_json), t),
)
ENTITIES: Final = _Stage(
    "entities",
    lambda t: "&" in t,
    _ENTITIES,
    _entity,
    lambda t: _ENTITIES.sub(_text_of(_entity), t),
)
MARKUP: Final = _Stage(
    "markup", lambda t: _ANY_TAG.search(t) is not None, _MARKUP, _markup, _rendered
)
PERCENT: Final = _Stage(
    "percent", lambda t: "%" in t, _PERCENT, _percent, lambda t: _PERCENT_RUN.sub(_utf8, t)
)


def _re2_class(chars: str) -> Callable[[bytes, int], object]:
    opts = re2.Options()
    opts.log_errors = False
    return spans_finder(re2.compile(f"[{chars}]", opts))


_ANY_INVISIBLE = _re2_class(_INVISIBLE_CLASS)


def invisible_in_utf8(data: bytes) -> bool:
    """`has_invisible` of UTF-8 text already encoded (a tree's JSON)."""
    return _ANY_INVISIBLE(data, 0) is not None


def has_invisible(text: str) -> bool:
    """Does `text` hold an invisible character? RE2 over its UTF-8 in a fraction of the time of
    `re`, which tries a class with no literal prefix at every position; `re` for text RE2 cannot
    read (lone surrogates)."""
    if text.isascii():
        return False
    try:
        data = text.encode()
    except UnicodeEncodeError:
        return _INVISIBLE.search(text) is not None
    return invisible_in_utf8(data)


INVISIBLE: Final = _Stage(
    "invisible",
    has_invisible,
    _INVISIBLE,
    _invisible,
    lambda t: _INVISIBLE.sub("", t),
)


class View:
    """A decoded text and the way back to its source: which spans of the source were rewritten
    (tokens), and how long each became; between tokens the text is a copy. The way back is
    built on first use, by the stage's token pass over the source (`exact`)."""

    __slots__ = ("_index", "_source_text", "_stage", "_tokens", "source", "text")

    def __init__(self, stage: _Stage, source: View | None, source_text: str, text: str) -> None:
        self._stage = stage
        self.source = source  # the view this one decoded; None: the original string
        self._source_text = source_text
        self.text = text
        self._tokens: tuple[array[int], array[int], bytearray] | None = None
        self._index: tuple[list[int], list[int]] | None = None

    @property
    def stage(self) -> str:
        """The stage that made this view (`json`, `entities`, `markup`, ...)."""
        return self._stage.name

    def __repr__(self) -> str:
        return f"View({self.stage!r}, {len(self.text)} chars)"

    def exact(self) -> str:
        """Build the way back (once) and return the text it gives, which is the text."""
        if self._tokens is None:
            source_text = self._source_text if self.source is None else self.source.exact()
            spans, lens, struct, self.text = _record(self._stage, source_text)
            self._tokens = (spans, lens, struct)
        return self.text

    def _token_arrays(self) -> tuple[array[int], array[int], bytearray]:
        """The tokens (spans in the source, lengths here, markup flags), built if need be."""
        self.exact()
        assert self._tokens is not None
        return self._tokens

    def _starts_ends(self) -> tuple[list[int], list[int]]:
        """Where each token starts and ends in this view (built on the first mapping)."""
        if self._index is None:
            starts: list[int] = []
            ends: list[int] = []
            shift = 0
            spans, lens, _struct = self._token_arrays()
            for k, length in enumerate(lens):
                start = spans[2 * k] + shift
                starts.append(start)
                ends.append(start + length)
                shift += length - (spans[2 * k + 1] - spans[2 * k])
            self._index = (starts, ends)
        return self._index

    def to_source(self, start: int, end: int) -> list[tuple[int, int]]:
        """The source spans that `text[start:end]` came from, markup left out."""
        starts, ends = self._starts_ends()
        spans = self._token_arrays()[0]
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
        """Source spans of the markup tokens among tokens [first, last)."""
        spans, _lens, struct = self._token_arrays()
        if not any(struct[first:last]):
            return []
        return [(spans[2 * k], spans[2 * k + 1]) for k in range(first, last) if struct[k]]

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


def _record(stage: _Stage, text: str) -> tuple[array[int], array[int], bytearray, str]:
    """The stage's token pass: where each rewritten token was, its new length, whether it is
    markup; and the decoded text."""
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

    return spans, lens, struct, stage.pattern.sub(replace, text)


def _chain(stages: Sequence[_Stage], text: str, source: View | None) -> list[View]:
    """Each stage on the previous one's output; the views that changed something."""
    views: list[View] = []
    for stage in stages:
        if not stage.applies(text):
            continue
        decoded = stage.quick(text)
        if decoded != text:
            source = View(stage, source, text, decoded)
            views.append(source)
            text = decoded
    return views


_DECODING: Final = (JSON, JSON, ENTITIES, PERCENT, PERCENT, INVISIBLE)
_RENDERING: Final = (MARKUP, PERCENT, INVISIBLE)


def decoded_text(text: str) -> str:
    """`text` as a reader ends up reading it: decoded, HTML tags rendered (no offsets kept)."""
    if not may_hide(text):
        return text
    views = _chain(_DECODING, text, None)
    out = views[-1].text if views else text
    return _ANY_TAG.sub("\n", _INLINE_TAG.sub("", out)) if "<" in out else out


def decoded_views(text: str) -> list[View]:
    """Every view of `text` that differs from it: decoded as is, and decoded after rendering
    markup (when there is markup). Views are cheap until asked the way back."""
    if not may_hide(text):
        return []
    views = _chain(_DECODING, text, None)
    if "<" in text:
        json_views = [v for v in views if v.stage == "json"]
        base = json_views[-1] if json_views else None
        rendered = _chain(_RENDERING, base.text if base else text, base)
        if rendered and rendered[0].stage == "markup":
            views += rendered
    return views
