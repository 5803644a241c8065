"""The linear pre-scan: what the HTML tokens say before any tree is built.

lexbor (selectolax) is HTML5-exact and fast on real answers, but its scope checks are
quadratic in nesting depth, its duplicate-attribute check quadratic per tag, and misnested
formatting elements make it re-open ("reconstruct") elements over and over. So this
tokenizer-level pass, which never builds a tree, runs first and answers `too_complex`
without parsing when the source has more than 10,000 start tags or 10,000 end tags, a tag
with more than 32 attributes, or a reconstruction estimate over 100,000 (see `_CostModel`).
The parser comparison and the timings behind these bounds are in bench/README.md.

It also sees the tokens the parser silently drops: explicitly written `<html>`, `<head>`,
`<body>` (start or end) and `<!DOCTYPE>` (a fragment parse ignores them), `<image>` (which the
parser renames `img`), and an attribute written twice in one start tag (the parser keeps the
first, other consumers take the last).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from schemas.codes import MAX_ISSUES
from schemas.html_answer.rules import (
    BODY,
    MAX_ATTRIBUTES_PER_TAG,
    MAX_END_TAGS,
    MAX_RECONSTRUCTION,
    MAX_START_TAGS,
)

_WS: Final = "\t\n\f\r "
_TAG_NAME_RE = re.compile(r"[^\t\n\f\r />]*")
_ATTR_NAME_RE = re.compile(r"[^\t\n\f\r />=]*")
_SKIP_WS_RE = re.compile(r"[\t\n\f\r ]*")
_UNQUOTED_RE = re.compile(r"[^\t\n\f\r >]*")
_COMMENT_END_RE = re.compile(r"--!?>")
_TAG_OPEN_RE = re.compile(r"<[!/?A-Za-z]")
_RAWTEXT: Final = frozenset(
    {"script", "style", "xmp", "iframe", "noembed", "noframes", "textarea", "title"}
)
_RAWTEXT_END = {
    name: re.compile(rf"</{name}[\t\n\f\r />]", re.IGNORECASE | re.ASCII) for name in _RAWTEXT
}
FORMATTING: Final = frozenset(
    {
        "a",
        "b",
        "big",
        "code",
        "em",
        "font",
        "i",
        "nobr",
        "s",
        "small",
        "strike",
        "strong",
        "tt",
        "u",
    }
)
# Elements that bound the default scope (HTML, MathML, SVG): an end tag may not reach past one.
_SCOPE_BOUNDARY: Final = frozenset(
    {
        "applet",
        "caption",
        "html",
        "table",
        "td",
        "th",
        "marquee",
        "object",
        "template",
        "mi",
        "mo",
        "mn",
        "ms",
        "mtext",
        "annotation-xml",
        "foreignobject",
        "desc",
        "title",
    }
)
# After one of these, the tokenizer's raw-text switch depends on tree state; stop predicting it.
_MODE_CHANGERS: Final = frozenset({"svg", "math", "select"})
# Tags the tree cannot show as written: the shell and `frameset`/`frame` (dropped by a fragment
# parse; in a document a frameset replaces the body) and `<image>` (renamed to `img`).
EXPLICIT: Final = {
    "html": "html",
    "head": "html/head",
    "body": "html/body",
    "image": BODY,
    "frameset": BODY,
    "frame": BODY,
}
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _ascii_lower(value: str) -> str:
    return value.lower() if value.isascii() else value.translate(_ASCII_LOWER)


@dataclass(slots=True)
class _CostModel:
    """An upper bound on the elements the tree builder may re-open ("reconstruct").

    Every entry of the active-formatting list comes from a formatting start tag; an end tag
    `</X>` removes one unless a scope boundary (table, td, ...) opened since the last `<X>`.
    So `open` bounds the list length; each tag token can trigger at most two reconstructions,
    each cloning at most the whole list: `estimate` sums `2 * open` over tag tokens.
    """

    stamps: dict[str, list[int]] = field(default_factory=dict)
    boundaries: int = 0
    open: int = 0
    estimate: int = 0

    def start(self, name: str) -> None:
        self.estimate += 2 * self.open
        if name in _SCOPE_BOUNDARY:
            self.boundaries += 1
        if name in FORMATTING:
            self.stamps.setdefault(name, []).append(self.boundaries)
            self.open += 1

    def end(self, name: str) -> None:
        self.estimate += 2 * self.open
        stack = self.stamps.get(name)
        if stack and stack[-1] == self.boundaries:
            stack.pop()
            self.open -= 1


@dataclass(slots=True)
class Scan:
    """What the source says before any tree exists: explicit shell tags, bounds, verdict."""

    explicit: dict[str, int] = field(default_factory=dict)
    start_tags: int = 0
    end_tags: int = 0
    # Why the source is refused before parsing: too_complex's form and its context.
    too_complex: tuple[str, dict[str, object]] | None = None
    too_complex_at: int = 0
    # Start tags that carry an attribute twice: (offset of the tag, tag name, attribute name).
    duplicates: list[tuple[int, str, str]] = field(default_factory=list)
    cost: _CostModel = field(default_factory=_CostModel)

    def start(self, name: str, offset: int) -> bool:
        """Count a start tag at `offset`; True when a bound is passed (`too_complex` set)."""
        self.start_tags += 1
        self.cost.start(name)
        _note_explicit(self, name, offset)
        return _over_bounds(self, offset)

    def end(self, name: str, offset: int) -> bool:
        """Count an end tag at `offset`; True when a bound is passed (`too_complex` set)."""
        self.end_tags += 1
        self.cost.end(name)
        _note_explicit(self, name, offset)
        return _over_bounds(self, offset)


def _end(pattern: re.Pattern[str], src: str, pos: int) -> int:
    """End of a match of a pattern that always matches (a starred character class)."""
    match = pattern.match(src, pos)
    return pos if match is None else match.end()


@dataclass(slots=True)
class _Tag:
    """One tokenized tag: where the scan goes on, its lower-case name, attributes, and whether
    it was closed by `>`; `duplicate` is the first attribute name written twice."""

    end: int
    name: str
    attrs: int
    complete: bool
    duplicate: str | None = None


def _read_tag(src: str, pos: int) -> _Tag:
    """Tokenize one tag from its name (attribute names as the tokenizer lower-cases them)."""
    size = len(src)
    end = _end(_TAG_NAME_RE, src, pos)
    tag = _Tag(end, _ascii_lower(src[pos:end]), 0, False)
    names: set[str] = set()
    i = end
    while True:
        i = _end(_SKIP_WS_RE, src, i)
        if i >= size:
            tag.end = size
            return tag
        char = src[i]
        if char == ">":
            tag.end, tag.complete = i + 1, True
            return tag
        if char == "/":
            i += 1
            continue
        # An attribute name; its first character may be anything, even `=` or a quote.
        start = i
        i = _end(_ATTR_NAME_RE, src, i + 1)
        attr = _ascii_lower(src[start:i])
        if attr in names and tag.duplicate is None:
            tag.duplicate = attr
        names.add(attr)
        tag.attrs += 1
        if tag.attrs > MAX_ATTRIBUTES_PER_TAG:
            tag.end, tag.complete = i, True
            return tag
        i = _end(_SKIP_WS_RE, src, i)
        if i < size and src[i] == "=":
            i = _end(_SKIP_WS_RE, src, i + 1)
            if i >= size:
                tag.end = size
                return tag
            quote = src[i]
            if quote in "\"'":
                close = src.find(quote, i + 1)
                if close < 0:
                    tag.end = size
                    return tag
                i = close + 1
            elif quote != ">":
                i = _end(_UNQUOTED_RE, src, i)


# The common tag, read by one regex: attributes each after a blank or `/`, values quoted or
# absent. Anything else (unquoted values, `a = "x"`, `a="x"b`, more than 32 attributes, no `>`)
# goes to `_read_tag`, which agrees wherever this matches (tests/schemas/test_html_answer.py).
_SEP = r"[\t\n\f\r /]"
_NAME = r"""[^\t\n\f\r />="'][^\t\n\f\r />=]*"""
_VALUE = r"""(?:="[^"]*"|='[^']*')?"""
_SIMPLE_TAG_RE = re.compile(rf"([^\t\n\f\r />]*)((?:{_SEP}+{_NAME}{_VALUE})*){_SEP}*>")
_SIMPLE_ATTR_RE = re.compile(rf"{_SEP}+({_NAME}){_VALUE}")


def _read_simple_tag(src: str, pos: int) -> _Tag | None:
    """`_read_tag` for the common tag in one regex match; None where `_read_tag` must read it."""
    match = _SIMPLE_TAG_RE.match(src, pos)
    if match is None:
        return None
    tag = _Tag(match.end(), _ascii_lower(match.group(1)), 0, True)
    written = match.group(2)
    if written:
        names = _SIMPLE_ATTR_RE.findall(_ascii_lower(written))
        if len(names) > MAX_ATTRIBUTES_PER_TAG:
            return None
        tag.attrs = len(names)
        if len(names) > 1 and len(set(names)) < len(names):
            seen: set[str] = set()
            for name in names:
                if name in seen:
                    tag.duplicate = name
                    break
                seen.add(name)
    return tag


def _skip_markup_declaration(src: str, pos: int, scan: Scan) -> int:
    """`pos` is just after `<!`: skip a comment, doctype or bogus comment; return the end."""
    if src.startswith("--", pos):
        body = pos + 2
        if src.startswith(">", body):
            return body + 1
        if src.startswith("->", body):
            return body + 2
        match = _COMMENT_END_RE.search(src, body)
        return len(src) if match is None else match.end()
    if src[pos : pos + 7].lower() == "doctype":
        scan.explicit.setdefault("!doctype", pos - 2)
    close = src.find(">", pos)
    return len(src) if close < 0 else close + 1


def scan_source(src: str) -> Scan:
    """One linear pass over the HTML tokens the tree builder will see; never builds a tree."""
    scan = Scan()
    size = len(src)
    predict_rawtext = True
    i = 0
    while i < size:
        found = _TAG_OPEN_RE.search(src, i)
        if found is None:
            break
        lt = found.start()
        nxt = src[lt + 1]
        if nxt == "!":
            i = _skip_markup_declaration(src, lt + 2, scan)
            continue
        if nxt == "?":
            close = src.find(">", lt)
            i = size if close < 0 else close + 1
            continue
        if nxt == "/":
            if lt + 2 < size and src[lt + 2].isascii() and src[lt + 2].isalpha():
                tag = _read_simple_tag(src, lt + 2) or _read_tag(src, lt + 2)
                i, name = tag.end, tag.name
                if tag.complete and scan.end(name, lt):
                    return scan
                continue
            close = src.find(">", lt)
            i = size if close < 0 else close + 1
            continue
        tag = _read_simple_tag(src, lt + 1) or _read_tag(src, lt + 1)
        i, name = tag.end, tag.name
        if not tag.complete:
            break
        over = scan.start(name, lt)
        if tag.duplicate is not None and len(scan.duplicates) < MAX_ISSUES:
            scan.duplicates.append((lt, name, tag.duplicate))
        if tag.attrs > MAX_ATTRIBUTES_PER_TAG:
            scan.too_complex = ("attributes", {"tag": name[:40], "limit": MAX_ATTRIBUTES_PER_TAG})
            scan.too_complex_at = lt
            return scan
        if over:
            return scan
        if name in _MODE_CHANGERS:
            predict_rawtext = False
        if predict_rawtext and name == "plaintext":
            break
        if predict_rawtext and name in _RAWTEXT:
            match = _RAWTEXT_END[name].search(src, i)
            if match is None:
                break
            i = match.start()
    return scan


def _note_explicit(scan: Scan, name: str, offset: int) -> None:
    if name in EXPLICIT:
        scan.explicit.setdefault(name, offset)


def _over_bounds(scan: Scan, offset: int) -> bool:
    if scan.start_tags > MAX_START_TAGS:
        scan.too_complex = ("start_tags", {"limit": MAX_START_TAGS})
    elif scan.end_tags > MAX_END_TAGS:
        scan.too_complex = ("end_tags", {"limit": MAX_END_TAGS})
    elif scan.cost.estimate > MAX_RECONSTRUCTION:
        scan.too_complex = ("reconstruction", {})
    else:
        return False
    scan.too_complex_at = offset
    return True


def line_col(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"
