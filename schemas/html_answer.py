"""`assistant.html.v1`: an HTML answer in a Markdown fence, checked against a closed element list.

Transport. `output.text` is, after optional blank lines, an opening fence line of three or more
backticks labelled exactly `html`, the payload, a closing fence line of at least as many
backticks, then optional blank lines and at most ONE line
`optional_rag_fragment_used: URI(;URI)*`. Leading/trailing spaces on those lines are fine;
anything else outside the fence is `not_fenced` (an unclosed fence too). The payload is the
text between the fence lines, byte for byte (line breaks inside kept, the one before the
closing fence dropped). A `json` tool call is `wrong_transport`; text over
`MAX_TEXT_CHARS` is `too_long`. All of it is one linear pass over the lines.

Parser. selectolax 1.0.2 (lexbor), fragment mode with a `body` context, scripting off. Parse
plus an iterative walk over every node, measured on this machine (2 cores):

| input                                         | lexbor    | justhtml 3.16 | lxml 6.1     |
|-----------------------------------------------|-----------|---------------|--------------|
| realistic 4.3 KB answer                       | 0.33 ms   | 6.9 ms        | 0.24 ms      |
| 100,000 nested `<div>` (1.1 MB)               | 56,700 ms | 3,350 ms      | 2.4 ms [1]   |
| 100,000 unclosed `<p><b><i>` (300 KB)         | 452 ms    | 5,620 ms      | 119 ms       |
| 1 MB of `&amp;`                               | 8.4 ms    | 326 ms        | 15 ms        |
| 1 MB of bare `&`                              | 15 ms     | 736 ms        | 14 ms        |
| reconstruction bomb, 49 KB [2]                | 7,200 ms  | 2,580 ms [3]  | not measured |
| one tag with 100,000 distinct attributes      | 26,900 ms | not measured  | not measured |

[1] libxml2 silently stops nesting at depth 2048. [2] 2,000 `<div>`, 2,000 `<b id="i">`,
then `</div>x` 2,000 times: every `x` re-opens all the `b`, 4,004,000 nodes, 1.4 GB.
[3] the 500/500 version (251,000 nodes).

lxml is not an HTML5 parser (libxml2's HTML 4 parser: different trees, silent cut-offs), so it
is out. justhtml is HTML5-exact and linear but 20x slower on real answers and, like every tree
builder, explodes on the reconstruction bomb. lexbor is HTML5-exact and fastest, but its scope
checks are quadratic in nesting depth, its duplicate-attribute check quadratic per tag, and
reconstruction multiplies elements. So a linear pre-scan (`scan_source`, a tokenizer-level
pass that never builds a tree) runs first and answers `too_complex` without parsing when the
source has more than 10,000 start tags or 10,000 end tags, a tag with more than 32
attributes, or a reconstruction estimate over 100,000 (an upper bound on elements the parser
may re-open; see `_CostModel`). `validate` end to end, with that guard: the 4.3 KB answer
~3 ms; 100,000 nested divs 26 ms, 100,000 unclosed tags 12 ms, the bomb 6 ms, the attribute
flood 12 ms (all `too_complex`); 1 MB of `&amp;` 34 ms, of `&` 43 ms, of `<` 114 ms (valid);
1 MB of NULs 32 ms (`invalid_character`); the slowest found is 1 MB of prose holding 40,000
doc links, ~0.9 s. The worst parse that passes the guard is 10,000 nested divs (~0.3 s).
The same pre-scan sees the tokens the parser silently drops: explicitly written `<html>`,
`<head>`, `<body>` (start or end) and `<!DOCTYPE>` are `disallowed_element` (a fragment parse
ignores them, so the tree cannot tell), and so is `<image>`, which the parser renames `img`.

Paths. An element is `html/body/TAG[i]/...` (i: 1-based among same-tag siblings), an attribute
`...@name`, a text node `.../text()[i]`, a comment `.../comment()[i]`. Source-level findings
use `html` (`<html>`), `html/head`, `html/body` (explicit tags, too_complex, bad characters,
with line:column in the message) and `!doctype`. Transport errors are at `$`; the trailing
line's items at `optional_rag_fragment_used[i]` (0-based).

Decisions the spec leaves open:
- Comments (and CDATA / `<?...>` bogus comments) are `disallowed_element`, like every other
  node that is not an allowed element or text.
- Control characters (U+0000-U+0008, U+000B, U+000E-U+001F, U+007F-U+009F) and lone surrogates
  in the payload are `invalid_character` (the parser would drop or replace them, so the
  delivered HTML would not be what was checked). An empty or blank payload is `empty_html`.
- Children of disallowed elements are still checked, except inside elements whose content is
  not ordinary HTML (script, style, svg, math, template, textarea, ...).
- Markdown shorthand is looked for in text nodes outside `code` and `pre` (showing Markdown in
  a code block is legitimate): `**x**`, `__x__` (not inside a word), `[t](u)`, `![a](u)`,
  three backticks, and a line starting with `#`..`######` and a space, where a text node
  starts a line if it is the first child or follows a non-inline element or `br`.
- Prose doc links (`docid-113-c0`, and `doc://docid-...` written as text) outside code/pre are
  cited as canonical `doc://...`; the bare ones are also listed, as written, in `reports`.
  Citations are deduplicated by exact string, in document order.
- The element-ID rule applies to every `doc://` URI written out (attributes and prose), not to
  bare `docid-` prose links, which cannot carry `?id=`.
- `img src` UUID hex digits may be either case; the extension is lower case. A blank `alt` is
  `invalid_attribute_value`. `b` with neither `class` nor `id` but other attributes gets only
  `disallowed_attribute`; with one of the two, the other is `missing_attribute`.
- An attribute written twice in one start tag (`<a href=... href=...>`, names compared as the
  tokenizer lower-cases them) is `duplicate_attribute`, found by the pre-scan (at `html/body`,
  line:column in the message): the parser keeps the first, other consumers take the last.
- `footer` counts as inside a blockquote when any ancestor is `div` with class `blockquote`
  (or `blockquote doc-embed`, which then fails `doc_embed_not_empty`).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import re2
from selectolax.lexbor import LexborHTMLParser, LexborNode

from schemas.contract import ContractResult, ReplyContract, ReplyInput
from schemas.errors import Issue
from schemas.records import Context
from schemas.uris import Uri, UriError, find_doc_links, is_element_id, parse_uri

NAME: Final = "assistant.html.v1"
MAX_TEXT_CHARS: Final = 1_048_576
MAX_ISSUES: Final = 100
MAX_ELEMENTS: Final = 10_000
MAX_DEPTH: Final = 256
MAX_START_TAGS: Final = 10_000
MAX_END_TAGS: Final = 10_000
MAX_ATTRIBUTES_PER_TAG: Final = 32
MAX_RECONSTRUCTION: Final = 100_000
RAG_KEY: Final = "optional_rag_fragment_used"
BODY: Final = "html/body"

ALLOWED_ELEMENTS: Final = frozenset(
    {
        "p",
        "br",
        "b",
        "strong",
        "i",
        "em",
        "u",
        "s",
        "sub",
        "sup",
        "code",
        "pre",
        "ul",
        "ol",
        "li",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "a",
        "img",
        "div",
        "footer",
    }
)
_INLINE: Final = frozenset({"b", "strong", "i", "em", "u", "s", "sub", "sup", "code", "a", "img"})
_CODE: Final = frozenset({"code", "pre"})
# Elements whose children are not ordinary HTML content: reported, not descended into.
_OPAQUE: Final = frozenset(
    {
        "script",
        "style",
        "template",
        "svg",
        "math",
        "textarea",
        "title",
        "xmp",
        "iframe",
        "noembed",
        "noframes",
        "noscript",
        "plaintext",
        "select",
        "object",
        "embed",
        "head",
    }
)
_BLOCKQUOTE_CLASSES: Final = frozenset({"blockquote", "blockquote doc-embed"})
_IMG_SRC_RE = re2.compile(
    r"/document/[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    r"\.(?:png|jpg|jpeg|gif|webp|svg)"
)
_BAD_CHAR_RE = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ud800-\udfff]")

# --- transport ---------------------------------------------------------------------------

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


def _lines(text: str) -> Iterator[tuple[int, int, int]]:
    """(start, end of content, start of next line) for every line; linear, no copies."""
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
    """Cut `output.text` into payload and optional trailing line; anything else is `not_fenced`."""
    lines = _lines(text)
    opening: re.Match[str] | None = None
    for start, end, after in lines:
        if not text[start:end].strip():
            continue
        opening = _OPEN_FENCE_RE.fullmatch(text, start, end)
        if opening is None or opening.group(2).strip(" \t") != "html":
            return Issue(
                "$",
                "not_fenced",
                "the answer must start with a Markdown code fence "
                "labelled html (```html); found other text before it",
            )
        payload_start = after
        break
    if opening is None:
        return Issue("$", "not_fenced", "the answer is empty; send one ```html fenced block")
    ticks = len(opening.group(1))
    for start, end, _after in lines:
        close = _CLOSE_FENCE_RE.fullmatch(text, start, end)
        if close is not None and len(close.group(1)) >= ticks:
            payload_end = start
            # The line break before the closing fence belongs to the fence, not the payload.
            if payload_end > payload_start:
                payload_end -= 2 if text.startswith("\r\n", payload_end - 2) else 1
            payload = text[payload_start : max(payload_start, payload_end)]
            return _after_fence(text, lines, Fenced(payload, payload_start, None))
    return Issue(
        "$", "not_fenced", "the ```html fence is never closed; end it with a line holding only ```"
    )


def _after_fence(
    text: str, lines: Iterator[tuple[int, int, int]], fenced: Fenced
) -> Fenced | Issue:
    rag: tuple[str, ...] | None = None
    for start, end, _after in lines:
        if not text[start:end].strip():
            continue
        match = _RAG_LINE_RE.fullmatch(text, start, end)
        if match is None or rag is not None:
            what = "a second optional_rag_fragment_used line" if match else "text"
            return Issue(
                "$",
                "not_fenced",
                f"found {what} after the closing fence; only one "
                "optional_rag_fragment_used: URI(;URI)* line may follow it",
            )
        rag = tuple(item.strip() for item in match.group(1).split(";"))
    return Fenced(fenced.payload, fenced.payload_offset, rag)


# --- pre-scan ----------------------------------------------------------------------------

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
_FORMATTING: Final = frozenset(
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
# Tags the tree cannot show as written: the shell (dropped by a fragment parse) and `<image>`
# (renamed to `img` by the parser).
_EXPLICIT: Final = {"html": "html", "head": "html/head", "body": "html/body", "image": BODY}
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
        if name in _FORMATTING:
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
    too_complex: str | None = None
    too_complex_at: int = 0
    # Start tags that carry an attribute twice: (offset of the tag, tag name, attribute name).
    duplicates: list[tuple[int, str, str]] = field(default_factory=list)
    cost: _CostModel = field(default_factory=_CostModel)


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
                tag = _read_tag(src, lt + 2)
                i, name = tag.end, tag.name
                if tag.complete:
                    scan.end_tags += 1
                    scan.cost.end(name)
                    _note_explicit(scan, name, lt)
                    if _over_bounds(scan, lt):
                        return scan
                continue
            close = src.find(">", lt)
            i = size if close < 0 else close + 1
            continue
        tag = _read_tag(src, lt + 1)
        i, name = tag.end, tag.name
        if not tag.complete:
            break
        scan.start_tags += 1
        scan.cost.start(name)
        _note_explicit(scan, name, lt)
        if tag.duplicate is not None and len(scan.duplicates) < MAX_ISSUES:
            scan.duplicates.append((lt, name, tag.duplicate))
        if tag.attrs > MAX_ATTRIBUTES_PER_TAG:
            scan.too_complex = (
                f"a <{name[:40]}> tag has more than {MAX_ATTRIBUTES_PER_TAG} attributes"
            )
            scan.too_complex_at = lt
            return scan
        if _over_bounds(scan, lt):
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
    if name in _EXPLICIT:
        scan.explicit.setdefault(name, offset)


def _over_bounds(scan: Scan, offset: int) -> bool:
    if scan.start_tags > MAX_START_TAGS:
        scan.too_complex = f"more than {MAX_START_TAGS} start tags"
    elif scan.end_tags > MAX_END_TAGS:
        scan.too_complex = f"more than {MAX_END_TAGS} end tags"
    elif scan.cost.estimate > MAX_RECONSTRUCTION:
        scan.too_complex = (
            "too many formatting elements (b, i, a, ...) left open or misnested: the parser "
            "could re-open them over and over; close each one where it belongs"
        )
    else:
        return False
    scan.too_complex_at = offset
    return True


def _line_col(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


# --- issues ------------------------------------------------------------------------------


class _Issues:
    """At most MAX_ISSUES distinct issues, in order; then one `too_many_errors`."""

    def __init__(self) -> None:
        self.items: list[Issue] = []
        self._seen: set[Issue] = set()
        self.overflow = False

    @property
    def full(self) -> bool:
        return self.overflow

    def add(self, path: str, code: str, message: str) -> None:
        issue = Issue(path, code, message)
        if issue in self._seen:
            return
        if len(self.items) >= MAX_ISSUES:
            self.overflow = True
            return
        self._seen.add(issue)
        self.items.append(issue)

    def final(self) -> tuple[Issue, ...]:
        if self.overflow:
            return (
                *self.items,
                Issue(
                    "$", "too_many_errors", f"more than {MAX_ISSUES} issues; fix these and resend"
                ),
            )
        return tuple(self.items)


# --- tree walk ---------------------------------------------------------------------------

_BOLD_STAR_RE = re2.compile(r"\*\*[^*\s](?:[^*\n]*[^*\s])?\*\*")
_BOLD_UNDER_RE = re2.compile(r"(?:^|[^A-Za-z0-9_])__[^_\s](?:[^_\n]*[^_\s])?__(?:$|[^A-Za-z0-9_])")
_LINK_RE = re2.compile(r"(!?)\[[^\[\]\n]*\]\([^()\n]*\)")
_HEADING_RE = re2.compile(r"(?:^|\n)[ \t]*#{1,6}[ \t]")
_HEADING_AFTER_NL_RE = re2.compile(r"\n[ \t]*#{1,6}[ \t]")


@dataclass(slots=True)
class _Walk:
    """State of one validation: issues, citations and reports, the fragments known."""

    issues: _Issues
    fragments: Mapping[str, Sequence[str]]
    citations: list[str] = field(default_factory=list)
    cited: set[str] = field(default_factory=set)
    reports: list[str] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)
    elements: int = 0
    stopped: bool = False
    too_deep: bool = False

    def cite(self, uri: Uri, path: str, *, check_ids: bool = True) -> None:
        if uri.value not in self.cited:
            self.cited.add(uri.value)
            self.citations.append(uri.value)
        if check_ids and uri.scheme == "doc" and uri.fragment is not None:
            self._check_ids(uri, path)

    def _check_ids(self, uri: Uri, path: str) -> None:
        known = self.fragments.get(uri.fragment or "")
        if not known:
            return
        if not uri.ids:
            self.issues.add(
                path,
                "missing_element_ids",
                f"{uri.value} cites a fragment whose element IDs are known; add "
                f"?id= with the IDs you used (one of {_preview(known)})",
            )
            return
        allowed = set(known)
        for element_id in uri.ids:
            if element_id not in allowed:
                self.issues.add(
                    path,
                    "unknown_element_id",
                    f"{uri.value}: element ID {element_id!r} is not in fragment "
                    f"{uri.fragment} (known: {_preview(known)})",
                )

    def report(self, written: str) -> None:
        if written not in self.reported:
            self.reported.add(written)
            self.reports.append(written)


def _preview(values: Sequence[str]) -> str:
    shown = ", ".join(values[:5])
    return shown + (", ..." if len(values) > 5 else "")


def _check_uri_attr(walk: _Walk, path: str, value: str, *, http_only: bool = False) -> None:
    parsed = parse_uri(value)
    if isinstance(parsed, UriError):
        walk.issues.add(path, parsed.code, f"{value[:200]!r} {parsed.message}")
        return
    if http_only and parsed.scheme not in ("http", "https"):
        walk.issues.add(
            path, "invalid_attribute_value", f"{value[:200]!r} must be an absolute http(s) URL"
        )
        return
    walk.cite(parsed, path)


def _expect(walk: _Walk, path: str, attrs: Mapping[str, str], name: str, wanted: str) -> None:
    value = attrs.get(name)
    if value is None:
        walk.issues.add(f"{path}@{name}", "missing_attribute", f'is required: {name}="{wanted}"')
    elif value != wanted:
        walk.issues.add(
            f"{path}@{name}",
            "invalid_attribute_value",
            f'is {value[:100]!r}; must be exactly "{wanted}"',
        )


def _disallow_others(
    walk: _Walk, path: str, attrs: Mapping[str, str], allowed: frozenset[str], tag: str
) -> None:
    for name in attrs:
        if name not in allowed:
            hint = ", ".join(sorted(allowed)) if allowed else "none"
            walk.issues.add(
                f"{path}@{name[:60]}",
                "disallowed_attribute",
                f"<{tag}> may not have this attribute (allowed: {hint})",
            )


_B_ATTRS = frozenset({"class", "id"})
_A_ATTRS = frozenset({"class", "target", "href"})
_IMG_ATTRS = frozenset({"class", "src", "alt"})
_DIV_ATTRS = frozenset({"class", "data-source"})
_ID_ONLY = frozenset({"id"})
_NONE: frozenset[str] = frozenset()


def _check_b(walk: _Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _B_ATTRS, "b")
    if "class" not in attrs and "id" not in attrs:
        return
    _expect(walk, path, attrs, "class", "info-source")
    sources = attrs.get("id")
    if sources is None:
        walk.issues.add(
            f"{path}@id",
            "missing_attribute",
            'is required with class="info-source": id="URI(;URI)*"',
        )
        return
    for item in sources.split(";"):
        _check_uri_attr(walk, f"{path}@id", item)


def _check_a(walk: _Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _A_ATTRS, "a")
    _expect(walk, path, attrs, "class", "http-source")
    _expect(walk, path, attrs, "target", "_blank")
    href = attrs.get("href")
    if href is None:
        walk.issues.add(f"{path}@href", "missing_attribute", "is required: an absolute http(s) URL")
    else:
        _check_uri_attr(walk, f"{path}@href", href, http_only=True)


def _check_img(walk: _Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _IMG_ATTRS, "img")
    _expect(walk, path, attrs, "class", "img-source")
    src = attrs.get("src")
    if src is None:
        walk.issues.add(f"{path}@src", "missing_attribute", "is required: /document/<uuid>.<ext>")
    elif not (src.isascii() and _IMG_SRC_RE.fullmatch(src)):
        walk.issues.add(
            f"{path}@src",
            "invalid_attribute_value",
            f"{src[:200]!r} must be /document/<uuid>.<ext> (uuid as 8-4-4-4-12 hex; "
            "ext png, jpg, jpeg, gif, webp or svg)",
        )
    alt = attrs.get("alt")
    if alt is None:
        walk.issues.add(f"{path}@alt", "missing_attribute", "is required: describe the image")
    elif not alt.strip():
        walk.issues.add(f"{path}@alt", "invalid_attribute_value", "is blank; describe the image")


def _check_div(walk: _Walk, path: str, attrs: Mapping[str, str]) -> None:
    _disallow_others(walk, path, attrs, _DIV_ATTRS, "div")
    cls = attrs.get("class")
    if cls is None:
        walk.issues.add(
            f"{path}@class",
            "missing_attribute",
            'is required: "blockquote" or "blockquote doc-embed"',
        )
    elif cls not in _BLOCKQUOTE_CLASSES:
        walk.issues.add(
            f"{path}@class",
            "invalid_attribute_value",
            f'is {cls[:100]!r}; must be exactly "blockquote" or "blockquote doc-embed"',
        )
    source = attrs.get("data-source")
    if source is None:
        walk.issues.add(f"{path}@data-source", "missing_attribute", "is required: a canonical URI")
    else:
        _check_uri_attr(walk, f"{path}@data-source", source)


def _check_id_only(walk: _Walk, path: str, attrs: Mapping[str, str], tag: str) -> None:
    _disallow_others(walk, path, attrs, _ID_ONLY, tag)
    element_id = attrs.get("id")
    if element_id is not None and not is_element_id(element_id):
        walk.issues.add(
            f"{path}@id",
            "invalid_attribute_value",
            f"{element_id[:100]!r} is not an element ID ([A-Za-z0-9_-]+)",
        )


def _check_attributes(walk: _Walk, tag: str, path: str, attrs: Mapping[str, str]) -> None:
    if tag == "b":
        _check_b(walk, path, attrs)
    elif tag == "a":
        _check_a(walk, path, attrs)
    elif tag == "img":
        _check_img(walk, path, attrs)
    elif tag == "div":
        _check_div(walk, path, attrs)
    elif tag in ("p", "li"):
        _check_id_only(walk, path, attrs, tag)
    elif attrs:
        _disallow_others(walk, path, attrs, _NONE, tag)


def _attributes(node: LexborNode) -> dict[str, str]:
    return {name: value or "" for name, value in node.attributes.items()}


def _check_text(walk: _Walk, path: str, text: str, line_start: bool) -> None:
    # Cheap substring tests first: the RE2 wrapper costs microseconds per call.
    found: list[str] = []
    if ("**" in text and _BOLD_STAR_RE.search(text)) or (
        "__" in text and _BOLD_UNDER_RE.search(text)
    ):
        found.append("**bold**/__bold__ (use <strong> or <b>)")
    if "](" in text:
        match = _LINK_RE.search(text)
        if match is not None:
            found.append("![alt](url) (use <img>)" if match.group(1) else "[text](url) (use <a>)")
    if "```" in text:
        found.append("``` code fence (use <pre><code>)")
    if "#" in text and (_HEADING_RE if line_start else _HEADING_AFTER_NL_RE).search(text):
        found.append("# heading (use <h1>..<h6>)")
    for what in found:
        walk.issues.add(path, "markdown_shorthand", f"Markdown is not rendered here: {what}")
    if "docid-" in text:
        for link in find_doc_links(text):
            walk.cite(link.uri, path, check_ids=not link.bare)
            if link.bare:
                walk.report(link.written)


def _has_content(node: LexborNode) -> bool:
    child = node.first_child
    while child is not None:
        if not child.is_text_node or (child.text_content or "").strip():
            return True
        child = child.next
    return False


# A frame: node, path, depth, inside code/pre, inside div.blockquote, starts a line.
_Frame = tuple[LexborNode, str, int, bool, bool, bool]


def _child_frames(
    first: LexborNode | None, base: str, depth: int, in_code: bool, in_quote: bool
) -> list[_Frame]:
    """Frames for a node's children in reverse document order (ready for a LIFO stack)."""
    counts: dict[str, int] = {}
    frames: list[_Frame] = []
    line_start = True
    node = first
    while node is not None:
        if node.is_element_node:
            key = node.tag or "?"
        elif node.is_text_node:
            key = "text()"
        elif node.is_comment_node:
            key = "comment()"
        else:
            key = "node()"
        index = counts.get(key, 0) + 1
        counts[key] = index
        frames.append((node, f"{base}/{key}[{index}]", depth, in_code, in_quote, line_start))
        if node.is_element_node:
            line_start = node.tag not in _INLINE
        elif not node.is_text_node:
            line_start = False
        else:
            text = node.text_content or ""
            line_start = (line_start and not text.strip()) or text.endswith("\n")
        node = node.next
    frames.reverse()
    return frames


def _visit_element(walk: _Walk, frame: _Frame) -> list[_Frame]:
    node, path, depth, in_code, in_quote, _ = frame
    walk.elements += 1
    if walk.elements > MAX_ELEMENTS:
        walk.issues.add(BODY, "too_complex", f"more than {MAX_ELEMENTS} elements")
        walk.stopped = True
        return []
    if depth > MAX_DEPTH:
        if not walk.too_deep:
            walk.too_deep = True
            walk.issues.add(path, "too_complex", f"elements nest deeper than {MAX_DEPTH} levels")
        return []
    tag = node.tag or "?"
    if tag not in ALLOWED_ELEMENTS:
        walk.issues.add(
            path,
            "disallowed_element",
            f"<{tag[:60]}> is not allowed (allowed: {' '.join(sorted(ALLOWED_ELEMENTS))})",
        )
        if tag in _OPAQUE:
            return []
    else:
        attrs = _attributes(node)
        _check_attributes(walk, tag, path, attrs)
        if tag == "footer" and not in_quote:
            walk.issues.add(
                path,
                "footer_outside_blockquote",
                '<footer> is only allowed inside <div class="blockquote">',
            )
        if tag == "div":
            cls = attrs.get("class")
            if cls == "blockquote doc-embed" and _has_content(node):
                walk.issues.add(
                    path,
                    "doc_embed_not_empty",
                    'a <div class="blockquote doc-embed"> must be empty',
                )
            in_quote = in_quote or cls in _BLOCKQUOTE_CLASSES
    return _child_frames(node.first_child, path, depth + 1, in_code or tag in _CODE, in_quote)


def walk_tree(first: LexborNode | None, walk: _Walk) -> None:
    """Check every node, iteratively (a 100,000-deep tree cannot reach Python's stack)."""
    stack = _child_frames(first, BODY, 1, False, False)
    while stack and not walk.stopped and not walk.issues.full:
        frame = stack.pop()
        node, path, _depth, in_code, _in_quote, line_start = frame
        if node.is_element_node:
            stack.extend(_visit_element(walk, frame))
        elif node.is_text_node:
            if not in_code:
                _check_text(walk, path, node.text_content or "", line_start)
        elif node.is_comment_node:
            walk.issues.add(path, "disallowed_element", "HTML comments are not allowed")
        else:
            walk.issues.add(path, "disallowed_element", "only elements and text are allowed")


# --- the contract ------------------------------------------------------------------------


def _check_characters(payload: str, walk: _Walk) -> bool:
    """Flag control characters and lone surrogates; False if the payload cannot be parsed."""
    match = _BAD_CHAR_RE.search(payload)
    if match is None:
        return True
    char = match.group()
    walk.issues.add(
        BODY,
        "invalid_character",
        f"contains the control character U+{ord(char):04X} at "
        f"{_line_col(payload, match.start())} of the HTML; remove it",
    )
    return not ("\ud800" <= char <= "\udfff" or _has_surrogate(payload))


def _has_surrogate(payload: str) -> bool:
    try:
        payload.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _check_scan(payload: str, walk: _Walk) -> bool:
    """Report what only the token stream shows; False if the parser must not run."""
    scan = scan_source(payload)
    for name, offset in scan.explicit.items():
        where = _line_col(payload, offset)
        if name == "image":
            message = f"<image> is written at {where}; it is not an allowed element (write <img>)"
        else:
            what = "<!DOCTYPE>" if name == "!doctype" else f"<{name}>"
            message = (
                f"{what} is written at {where}; send only the body content, without "
                "document, head or body tags"
            )
        walk.issues.add(_EXPLICIT.get(name, "!doctype"), "disallowed_element", message)
    for offset, tag, attr in scan.duplicates:
        walk.issues.add(
            BODY,
            "duplicate_attribute",
            f"<{tag[:40]}> at {_line_col(payload, offset)} has the attribute {attr[:60]!r} "
            "twice; consumers disagree about which one counts: write it once",
        )
    if scan.too_complex is not None:
        walk.issues.add(
            BODY,
            "too_complex",
            f"{scan.too_complex} (at {_line_col(payload, scan.too_complex_at)})",
        )
        return False
    return True


def _check_rag(items: tuple[str, ...], walk: _Walk) -> list[str]:
    used: list[str] = []
    for index, item in enumerate(items):
        parsed = parse_uri(item)
        if isinstance(parsed, UriError):
            walk.issues.add(
                f"{RAG_KEY}[{index}]", "invalid_uri", f"{item[:200]!r} {parsed.message}"
            )
        else:
            used.append(parsed.value)
    return used


class AssistantHtmlV1:
    """The `assistant.html.v1` reply contract (docs/contracts.md section 2)."""

    @property
    def name(self) -> str:
        return NAME

    def validate(self, reply: ReplyInput, context: Context) -> ContractResult:
        """Check transport, HTML and citations; report every issue (bounded), repair nothing."""
        if reply.transport != "text":
            return ContractResult(
                issues=(
                    Issue(
                        "$",
                        "wrong_transport",
                        "this contract takes a text answer (a ```html fence), not a json tool call",
                    ),
                )
            )
        text = reply.text
        if not isinstance(text, str):
            return ContractResult(issues=(Issue("$", "not_fenced", "there is no answer text"),))
        if len(text) > MAX_TEXT_CHARS:
            return ContractResult(
                issues=(Issue("$", "too_long", f"is longer than {MAX_TEXT_CHARS} characters"),)
            )
        fenced = split_fence(text)
        if isinstance(fenced, Issue):
            return ContractResult(issues=(fenced,))
        walk = _Walk(_Issues(), context.fragments or {})
        rag = _check_rag(fenced.rag_items, walk) if fenced.rag_items is not None else []
        _check_payload(fenced.payload, walk)
        issues = walk.issues.final()
        if issues:
            return ContractResult(issues=issues, reports=tuple(walk.reports))
        message = {"html": fenced.payload, "citations": walk.citations, "rag_fragments_used": rag}
        return ContractResult(message=message, reports=tuple(walk.reports))

    def json_schema(self) -> dict[str, Any]:
        """The delivered message: html, citations and rag_fragments_used, closed."""
        uri_list = {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "uniqueItems": True,
        }
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:replygate:contract:assistant.html.v1",
            "title": NAME,
            "type": "object",
            "properties": {
                "html": {
                    "type": "string",
                    "minLength": 1,
                    "description": "the fenced HTML payload, exactly as sent",
                },
                "citations": {**uri_list, "description": "canonical URIs cited, in order"},
                "rag_fragments_used": {
                    **uri_list,
                    "description": "URIs of the optional trailing line",
                },
            },
            "required": ["html", "citations", "rag_fragments_used"],
            "additionalProperties": False,
        }

    def instructions(self) -> str:
        """Format-only correction instructions: the fence, the closed HTML subset, citations."""
        return _INSTRUCTIONS

    def notice_message(self, text: str) -> dict[str, Any]:
        """The host's failure notice as one escaped paragraph, in the delivered message shape."""
        return {"html": f"<p>{html.escape(text)}</p>", "citations": [], "rag_fragments_used": []}


def _check_payload(payload: str, walk: _Walk) -> None:
    if not payload.strip():
        walk.issues.add(BODY, "empty_html", "the ```html fence holds no HTML")
        return
    if not _check_characters(payload, walk):
        return
    if not _check_scan(payload, walk):
        return
    tree = LexborHTMLParser(payload, is_fragment=True, fragment_tag="body", scripting=False)
    walk_tree(tree.root, walk)


ASSISTANT_HTML_V1: Final = AssistantHtmlV1()
_: ReplyContract = ASSISTANT_HTML_V1

_INSTRUCTIONS = """\
Answer with exactly one Markdown code fence labelled html that holds the whole answer:
```html
<p>...</p>
```
Optionally, after the closing fence, add ONE line listing the fragments you used:
optional_rag_fragment_used: doc://docid-1-c0;doc://docid-2
Nothing else may appear outside the fence.

Inside the fence write only these HTML elements (no <html>, <head>, <body>, doctype, comments,
script, style, span or any other element):
p br b strong i em u s sub sup code pre ul ol li h1 h2 h3 h4 h5 h6 table thead tbody tr th td
a img div footer

Attributes, exactly as listed (no other attribute, no other class):
- <b> none, or class="info-source" id="URI;URI" (the sources it cites)
- <a class="http-source" target="_blank" href="https://..."> (absolute http or https URL)
- <img class="img-source" src="/document/<uuid>.<ext>" alt="description"> (ext png, jpg, jpeg,
  gif, webp or svg)
- <div class="blockquote" data-source="URI"> a quotation, optionally ending in <footer>;
  or <div class="blockquote doc-embed" data-source="URI"></div>, which must be empty
- <p> and <li>: optional id="text-8" (letters, digits, _ and -)
- <footer> only inside <div class="blockquote">; every other element: no attributes

Citation URIs (plain ASCII):
- doc://docid-N, doc://docid-N-cM, doc://docid-N-cM-pK, optionally with ?id=ID,ID listing the
  element IDs cited; when the fragment's element IDs are known, ?id= is required and may only
  name those IDs. Never write a bare docid-... inside an attribute.
- kg://ENTITY?name=NAME&alias=ALIAS and inno://... (name and alias optional; percent-encode
  spaces and / ? # & = ;), skill://SkillName/INSTANCE, https://host/path

Do not use Markdown anywhere in the text: no **bold**, __bold__, [text](url), ![alt](url),
# headings or ``` fences; use the HTML elements above.
"""
