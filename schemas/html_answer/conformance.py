"""Nothing repaired by the parser: the WHATWG parse errors of an answer, and what it leaves open.

lexbor (selectolax), which builds the tree the walk checks, reports no parse errors: it repairs
silently. html5lib is a WHATWG tokenizer and tree builder that reports them, so it is the
judge; the choice, its conformance on the WHATWG html5lib-tests and its cost are in
bench/README.md. Around it:
- its character-reference errors predate the WHATWG list and are replaced by `charrefs`;
- content the tree builder fosters out of a table is reported (it misses some of it);
- every element still open at the end is `unclosed_element`, and so is a reference cut off at
  the very end (`&am`): the next answer in a page would finish either one;
- its three comment warnings that HTML5 dropped are ignored (comments are refused anyway).

Cost: html5lib reads ~3 characters a microsecond. Most answers are plain nested markup, so a
regex tokenizer with a strict content model goes first (`strictly_clean`): when every token is
an allowed tag, text or whitespace in a place where the HTML5 tree builder inserts it as
written, nothing is implied, fostered or dropped and nothing is left open, there is no parse
error to find. Anything else goes to html5lib (a property test holds the shortcut to it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, Final

from html5lib import HTMLParser
from html5lib._tokenizer import HTMLTokenizer
from html5lib.constants import tableInsertModeElements, tokenTypes
from html5lib.treebuilders import getTreeBuilder

from schemas.html_answer.charrefs import CUT_REFERENCE, TRAILING_REFERENCE_RE, reference_errors
from schemas.html_answer.rules import (
    ASCII_STREAM_OK,
    MAX_ATTRIBUTES_PER_TAG,
    MAX_DEPTH,
    MAX_END_TAGS,
    MAX_RECONSTRUCTION,
    MAX_START_TAGS,
)
from schemas.html_answer.scan import FORMATTING, Scan
from schemas.text_rules import within_ascii

_WS: Final = r"[\t\n\f\r ]"
_ATTR_NAME: Final = r"""[^\t\n\f\r />"'<=\x00][^\t\n\f\r />"'<=\x00]*+"""
_VALUE: Final = r""""[^"\x00]*+"|'[^'\x00]*+'|[^\t\n\f\r "'<=>`\x00]++"""
_ATTR: Final = rf"{_WS}++({_ATTR_NAME})(?:{_WS}*+={_WS}*+({_VALUE}))?"
# The token groups only (no capture inside `attrs`), so `findall` gives one flat tuple a token.
_TOKEN_RE = re.compile(
    rf"(?P<text>[^<]++)"
    rf"|<(?P<start>[A-Za-z][^\t\n\f\r />\x00]*+)"
    rf"(?P<attrs>(?:{_WS}++{_ATTR_NAME}(?:{_WS}*+={_WS}*+(?:{_VALUE}))?)*+){_WS}*+(?P<solidus>/?)>"
    rf"|</(?P<end>[A-Za-z][^\t\n\f\r />\x00]*+){_WS}*+>"
    r"|(?P<other><)",
    re.ASCII,
)
_ATTR_RE = re.compile(_ATTR, re.ASCII)
# Characters the input stream itself reports (controls, noncharacters, lone surrogates).
_STREAM_ERROR_RE = re.compile(
    "[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(plane << 16 | 0xFFFE)}{chr(plane << 16 | 0xFFFF)}" for plane in range(1, 17))
    + "]"
)
# The same test in two steps: a class of astral characters is read ~10x slower than a class of
# BMP ones, and almost no answer holds an astral character at all.
_BMP_STREAM_ERROR_RE = re.compile(
    "[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]"
)
_ASTRAL_RE = re.compile("[\U00010000-\U0010ffff]")
_NONCHARACTER_RE = re.compile(
    "[\ufdd0-\ufdef\ufffe\uffff"
    + "".join(f"{chr(plane << 16 | 0xFFFE)}{chr(plane << 16 | 0xFFFF)}" for plane in range(1, 17))
    + "]"
)
_BLANK: Final = "\t\n\f\r "
_VOID: Final = frozenset({"br", "img"})
_PHRASING: Final = frozenset(
    {"b", "strong", "i", "em", "u", "s", "sub", "sup", "code", "a", "br", "img"}
)
_FLOW: Final = _PHRASING | {
    "p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "ul", "ol", "table", "div", "footer",
}  # fmt: skip
# What the shortcut lets each element hold (None: the answer's top level). Only places where
# the tree builder inserts the child as written, without closing, implying or moving anything.
_CHILDREN: Final[dict[str | None, frozenset[str]]] = {
    None: _FLOW,
    "div": _FLOW,
    "footer": _FLOW,
    "li": _FLOW,
    "td": _FLOW,
    "th": _FLOW,
    "ul": frozenset({"li"}),
    "ol": frozenset({"li"}),
    "table": frozenset({"thead", "tbody"}),
    "thead": frozenset({"tr"}),
    "tbody": frozenset({"tr"}),
    "tr": frozenset({"td", "th"}),
    **{
        name: _PHRASING
        for name in ("p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", *sorted(_PHRASING - _VOID))
    },
}
# Where only whitespace may stand as text (elsewhere the tree builder would foster it, or the
# shortcut does not vouch for it).
_BLANK_ONLY: Final = frozenset({"ul", "ol", "table", "thead", "tbody", "tr"})

# html5lib's names -> the WHATWG error codes where the spec names one.
_WHATWG: Final = {
    "incorrectly-placed-solidus": "unexpected-solidus-in-tag",
    "unexpected-character-after-solidus-in-tag": "unexpected-solidus-in-tag",
    "attributes-in-end-tag": "end-tag-with-attributes",
    "self-closing-flag-on-end-tag": "end-tag-with-trailing-solidus",
    "expected-tag-name-but-got-right-bracket": "invalid-first-character-of-tag-name",
    "expected-tag-name-but-got-question-mark": "unexpected-question-mark-instead-of-tag-name",
    "expected-tag-name": "invalid-first-character-of-tag-name",
    "expected-closing-tag-but-got-right-bracket": "missing-end-tag-name",
    "expected-closing-tag-but-got-char": "invalid-first-character-of-tag-name",
    "expected-closing-tag-but-got-eof": "eof-before-tag-name",
    "eof-in-tag-name": "eof-in-tag",
    "expected-attribute-name-but-got-eof": "eof-in-tag",
    "eof-in-attribute-name": "eof-in-tag",
    "expected-end-of-tag-name-but-got-eof": "eof-in-tag",
    "expected-attribute-value-but-got-eof": "eof-in-tag",
    "eof-in-attribute-value-double-quote": "eof-in-tag",
    "eof-in-attribute-value-single-quote": "eof-in-tag",
    "eof-in-attribute-value-no-quotes": "eof-in-tag",
    "unexpected-EOF-after-solidus-in-tag": "eof-in-tag",
    "expected-doctype-name-but-got-eof": "eof-in-doctype",
    "eof-in-doctype-name": "eof-in-doctype",
    "invalid-character-in-attribute-name": "unexpected-character-in-attribute-name",
    "invalid-character-after-attribute-name": "unexpected-character-in-attribute-name",
    "expected-attribute-value-but-got-right-bracket": "missing-attribute-value",
    "unexpected-character-after-attribute-value": "missing-whitespace-between-attributes",
    "equals-in-unquoted-attribute-value": "unexpected-character-in-unquoted-attribute-value",
    "unexpected-character-in-unquoted-attribute-value": (
        "unexpected-character-in-unquoted-attribute-value"
    ),
    "expected-dashes-or-doctype": "incorrectly-opened-comment",
    "incorrect-comment": "abrupt-closing-of-empty-comment",
    "eof-in-comment-end-dash": "eof-in-comment",
    "eof-in-comment-double-dash": "eof-in-comment",
    "eof-in-comment-end-space-state": "eof-in-comment",
    "eof-in-comment-end-bang-state": "eof-in-comment",
    "non-void-element-with-trailing-solidus": (
        "non-void-html-element-start-tag-with-trailing-solidus"
    ),
}
# Reference errors (found by `charrefs` instead), the input stream's (controls, NUL and
# lone surrogates are `invalid_character`, noncharacters are found here), comment warnings
# HTML5 no longer has, and an attribute given twice (`scan_source` reports each one as
# `duplicate_attribute`, so the shortcut need not look for them).
_IGNORED: Final = frozenset(
    {
        "duplicate-attribute",
        "null-character",
        "invalid-codepoint",
        "expected-numeric-entity-but-got-eof",
        "expected-numeric-entity",
        "numeric-entity-without-semicolon",
        "illegal-codepoint-for-numeric-entity",
        "cant-convert-numeric-entity",
        "illegal-windows-1252-entity",
        "incorrect-cr-newline-entity",
        "named-entity-without-semicolon",
        "expected-named-entity",
        "unexpected-char-in-comment",
        "unexpected-dash-after-double-dash-in-comment",
        "unexpected-space-after-double-dash-in-comment",
    }
)
# The error html5lib's tree builder reports for every element open at the end; it shares its
# name with the tokenizer's `</` at the end, and `unclosed_element` says it better.
_OPEN_AT_END: Final = "expected-closing-tag-but-got-eof"
FOSTERED: Final = "foster-parenting"


@dataclass(frozen=True, slots=True)
class ParseFinding:
    """One parse error (WHATWG code, or html5lib's name for a tree-construction error) at a
    1-based line and column of the payload."""

    error: str
    line: int
    column: int


@dataclass(frozen=True, slots=True)
class Conformance:
    """What the parser would repair: its errors, and the elements left open at the end."""

    errors: tuple[ParseFinding, ...] = ()
    unclosed: tuple[str, ...] = ()
    too_deep: bool = False

    @property
    def clean(self) -> bool:
        return not self.errors and not self.unclosed and not self.too_deep


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _attributes_clean(written: str) -> bool:
    """No attribute given twice, no more than the scan allows, no reference error in a value."""
    pairs = _ATTR_RE.findall(written)
    if len(pairs) > 1 and (
        len(pairs) > MAX_ATTRIBUTES_PER_TAG or len({name.lower() for name, _ in pairs}) < len(pairs)
    ):
        return False
    return "&" not in written or not any(
        "&" in value and next(reference_errors(value, in_attribute=True), None)
        for _name, value in pairs
    )


def strictly_clean(payload: str) -> bool:
    """True only if the HTML5 parser builds exactly the written nesting of allowed elements,
    with no parse error and nothing open at the end (see the module docstring), and the token
    scan has nothing to report either (no attribute given twice, no bound passed): the answer
    then needs neither `scan_source` nor html5lib. False means "not vouched for", not
    "invalid". One `findall` reads every token: this runs on every answer, and per-token match
    objects cost more than the checks themselves."""
    if (not within_ascii(payload, ASCII_STREAM_OK) and _BMP_STREAM_ERROR_RE.search(payload)) or (
        "&" in payload and TRAILING_REFERENCE_RE.search(payload)
    ):
        return False
    if not payload.isascii() and _ASTRAL_RE.search(payload) and _STREAM_ERROR_RE.search(payload):
        return False
    stack: list[str] = []
    allowed = _FLOW
    blank_only = False
    in_a = False
    tags: list[str] = []  # end tags as `/name`: replayed through the scan's bounds if needed
    for text, start, attrs, solidus, end, _other in _TOKEN_RE.findall(payload):
        if text:
            if blank_only and text.strip(_BLANK):
                return False
            if "&" in text and next(reference_errors(text), None):
                return False
            continue
        if start:
            name = start.lower()
            if name not in allowed or (solidus and name not in _VOID):
                return False
            if attrs and not _attributes_clean(attrs):
                return False
            tags.append(name)
            if name in _VOID:
                continue
            if name == "a":
                if in_a:
                    return False
                in_a = True
            stack.append(name)
        elif end:
            if not stack or stack[-1] != end.lower():
                return False
            tags.append("/" + stack[-1])
            if stack.pop() == "a":
                in_a = False
        else:
            return False
        top = stack[-1] if stack else None
        allowed = _CHILDREN.get(top, frozenset())
        blank_only = top in _BLANK_ONLY
    return not stack and _within_bounds(tags)


# No more tags than these, each seeing at most so many open formatting elements, keeps the
# scan's reconstruction estimate (2 x open, a tag) within its bound without replaying it.
_FEW_TAGS: Final = min(MAX_START_TAGS, MAX_END_TAGS)


def _within_bounds(tags: list[str]) -> bool:
    """The scan's bounds (`Scan.start`/`end`) hold for these tags: by a count when they are
    few enough (the estimate is at most 2 x tags x formatting start tags), else replayed."""
    if len(tags) <= _FEW_TAGS:
        formatting = sum(1 for name in tags if name in FORMATTING)
        if 2 * len(tags) * formatting <= MAX_RECONSTRUCTION:
            return True
    bounds = Scan()
    return not any(
        bounds.end(name[1:], 0) if name[0] == "/" else bounds.start(name, 0) for name in tags
    )


def _reference_findings(payload: str) -> Iterator[tuple[int, str]]:
    """Reference errors in the text and the attribute values of well-formed tags, in order."""
    for match in _TOKEN_RE.finditer(payload):
        if match.lastgroup == "text":
            start = match.start()
            for at, code in reference_errors(match.group()):
                yield start + at, code
        elif match.group("attrs"):
            base = match.start("attrs")
            for attr in _ATTR_RE.finditer(match.group("attrs")):
                value = attr.group(2)
                if value and "&" in value:
                    start = base + attr.start(2)
                    for at, code in reference_errors(value, in_attribute=True):
                        yield start + at, code


_TreeBuilder: Final[Any] = getTreeBuilder("etree")
_TABLE_INSERT: Final = frozenset(tableInsertModeElements)
_CHARACTERS: Final = tokenTypes["Characters"]


class _TooDeep(Exception):
    """Raised when html5lib's stack of open elements passes MAX_DEPTH (the walk refuses such
    a tree as too_complex; html5lib's scope checks are linear in the depth)."""


class _Stack(list[Any]):
    def append(self, element: Any) -> None:
        if len(self) > MAX_DEPTH:
            raise _TooDeep
        super().append(element)


class _Watch(_TreeBuilder):  # type: ignore[misc]
    """html5lib's tree builder, reduced to what is read from it: it reports every insertion
    fostered out of a table, bounds the depth, and keeps no text (etree appends text by string
    concatenation, quadratic in a long text node)."""

    on_foster: Callable[[], None] = staticmethod(lambda: None)

    def reset(self) -> None:
        super().reset()
        self.openElements = _Stack()

    def getTableMisnestedNodePosition(self) -> Any:
        self.on_foster()
        return super().getTableMisnestedNodePosition()

    def insertText(self, data: str, parent: Any = None) -> None:
        if self.insertFromTable and self.openElements[-1].name in _TABLE_INSERT:
            self.on_foster()


class _Enough(Exception):
    """Raised from html5lib's error hook once the issue list is full: the rest is not read."""


class _Tokenizer(HTMLTokenizer):
    """html5lib's tokenizer without its reference decoder, which costs ~10 us per `&` and whose
    errors are replaced anyway: a reference's characters are read on as plain text (what
    follows `&` never changes the tokenizer's state), so the tokens and the tree's shape stay
    the same. One difference, on the strict side: `&#32;` between table rows counts as text
    that would be fostered, where HTML5 reads a blank."""

    def consumeEntity(self, allowedChar: Any = None, fromAttribute: bool = False) -> None:
        if fromAttribute:
            token: Any = self.currentToken
            token["data"][-1][1] += "&"
        else:
            self.tokenQueue.append({"type": _CHARACTERS, "data": "&"})


class _BoundedParser(HTMLParser):
    """html5lib's parser that stops at the `limit`-th error it would keep (a `<` flood is one
    error per character; nothing more is reported past the issue cap anyway)."""

    limit: int = 0

    def _parse(
        self, stream: str, innerHTML: bool = False, container: str = "div", scripting: bool = False
    ) -> None:
        """html5lib's own `_parse`, with `_Tokenizer` (it takes no tokenizer argument)."""
        self.innerHTMLMode = innerHTML
        self.container = container
        self.scripting = scripting
        self.tokenizer = _Tokenizer(stream, parser=self)
        self.reset()
        self.mainLoop()

    def parseError(self, errorcode: str = "", datavars: Any = None) -> None:
        super().parseError(errorcode, datavars)
        if errorcode not in _IGNORED:
            self.limit -= 1
            if self.limit <= 0:
                raise _Enough


def _html5lib(payload: str, limit: int) -> tuple[list[tuple[tuple[int, int], str]], list[str]]:
    """html5lib's errors ((line, 0-based column), name) and the elements open at the end."""
    parser = _BoundedParser(tree=_Watch)
    parser.limit = limit
    tree = parser.tree
    tree.on_foster = lambda: parser.parseError(FOSTERED)
    try:
        parser.parseFragment(payload, container="body")
    except _Enough:
        tree.openElements[1:] = []
    errors = [(position, name) for position, name, _vars in parser.errors]
    open_names = [str(element.name) for element in tree.openElements[1:]]
    return errors, open_names


def check_conformance(payload: str, limit: int) -> Conformance:
    """The parse errors (at most `limit`) and open elements of one answer, in source order."""
    return Conformance() if strictly_clean(payload) else parse_findings(payload, limit)


def parse_findings(payload: str, limit: int) -> Conformance:
    """`check_conformance` without the shortcut: html5lib reads the whole answer."""
    try:
        raw, open_names = _html5lib(payload, limit)
    except _TooDeep:
        return Conformance(too_deep=True)
    found: dict[tuple[int, int, str], None] = {}
    for (line, column), name in raw:
        if name in _IGNORED:
            continue
        if name == _OPEN_AT_END and open_names and not payload.endswith("</"):
            continue
        found[(line, column + 1, _WHATWG.get(name, name))] = None
    for offset, code in islice(_reference_findings(payload), limit):
        found[(*_position(payload, offset), code)] = None
    nonchar = _NONCHARACTER_RE.search(payload)
    if nonchar is not None:
        found[(*_position(payload, nonchar.start()), "noncharacter-in-input-stream")] = None
    trailing = TRAILING_REFERENCE_RE.search(payload)
    if trailing is not None:
        found[(*_position(payload, trailing.start()), CUT_REFERENCE)] = None
    errors = tuple(
        ParseFinding(error, line, column) for line, column, error in sorted(found)[:limit]
    )
    return Conformance(errors, tuple(open_names[:limit]))
