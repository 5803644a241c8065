"""The canonical citation URIs of `assistant.html.v1` (docs/contracts.md section 2): a pure grammar.

Grammar (ASCII only; every regex is RE2, so matching is linear and cannot backtrack):

- `doc://docid-N[-cM[-pK]][?id=ID(,ID)*]`: N, M, K are decimal integers without sign or
  leading zeros (`0`, `7`, `113`; not `07`, `+7`), so each fragment has exactly one
  spelling and can be looked up in `context.fragments`; `-pK` only after `-cM`; IDs are
  element IDs `[A-Za-z0-9_-]+`.
- `kg://ENTITY[?name=NAME[&alias=ALIAS]]` and `inno://` the same. ENTITY, NAME and ALIAS are
  each one or more of `A-Z a-z 0-9 - . _ ~ ! $ ' ( ) * + , : @` or a percent escape `%HH`:
  no whitespace, no `/ ? # & = ;`, no bare `%` (so the parts cannot be confused, and `;`
  stays the separator of `b id` source lists). Write anything else percent-encoded.
- `skill://SkillName/INSTANCE`: SkillName `[A-Za-z0-9._-]+`; INSTANCE as an ENTITY above.
- `http://HOST[:PORT][/path][?query][#fragment]` and `https://` the same: lower-case scheme,
  a host (DNS name, IPv4 or `[IPv6]`), no user-info (credentials never belong in a reply),
  path/query/fragment made of RFC 3986 characters and valid `%HH` escapes. This is also the
  rule for every other http(s) URL a reply or an operator gives (`is_http_url`).

A bare `docid-...` (the prose shorthand) is `non_canonical_uri` where a URI is required;
anything else that is not one of the forms above is `invalid_uri`. Non-ASCII characters
(Cyrillic or fullwidth lookalikes, zero-width characters) are always `invalid_uri`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import re2

from schemas.re2_spans import spans_finder

# An RFC 3986 scheme and its colon, without the `//` of the schemes a link may use.
_OTHER_SCHEME: Final = re2.compile(r"([A-Za-z][A-Za-z0-9+.-]{0,63}):")
MAX_URI_LENGTH = 2048

_NUM = r"(?:0|[1-9][0-9]*)"
_ELEMENT_ID = r"[A-Za-z0-9_-]+"
_FRAGMENT = rf"docid-{_NUM}(?:-c{_NUM}(?:-p{_NUM})?)?"
_IDS = rf"{_ELEMENT_ID}(?:,{_ELEMENT_ID})*"
_SEGMENT = r"(?:[A-Za-z0-9\-._~!$'()*+,:@]|%[0-9A-Fa-f]{2})+"
# Host labels: letters and digits, inner hyphens; written so that no string can match two
# ways, so a backtracking engine (a JSON Schema `pattern` elsewhere) also stays linear.
_LABEL = r"[A-Za-z0-9]+(?:-+[A-Za-z0-9]+)*"
_HOST = rf"(?:{_LABEL}(?:\.{_LABEL})*|\[[0-9A-Fa-f:.]+\])"
_URL_CHAR = r"(?:[-A-Za-z0-9._~!$&'()*+,;=:@/?]|%[0-9A-Fa-f]{2})"
# The one http(s) URL rule (citations, media and share URLs, webhooks): RE2, Python `re` and
# ECMA-262 read it alike. Path and query share their characters, so `[/?]` starts either.
HTTP_URL = rf"https?://{_HOST}(?::[0-9]{{1,5}})?(?:[/?]{_URL_CHAR}*)?(?:#{_URL_CHAR}*)?"

_DOC_RE = re2.compile(rf"doc://({_FRAGMENT})(?:\?id=({_IDS}))?")
_BARE_DOC_RE = re2.compile(rf"{_FRAGMENT}(?:\?id={_IDS})?")
_KG_RE = re2.compile(rf"(?:kg|inno)://{_SEGMENT}(?:\?name={_SEGMENT}(?:&alias={_SEGMENT})?)?")
_SKILL_RE = re2.compile(rf"skill://[A-Za-z0-9._-]+/{_SEGMENT}")
_HTTP_RE = re2.compile(HTTP_URL)
_ELEMENT_ID_RE = re2.compile(_ELEMENT_ID)
# Doc links written in prose: `docid-113-c0` or `doc://docid-113-c0?id=a`. Boundaries are
# checked by hand (RE2 has no look-around): see `find_doc_links`.
_PROSE_DOC_RE = re2.compile(rf"(?:doc://)?({_FRAGMENT})(?:\?id=({_IDS}))?")
# Whole-input matchers on ASCII bytes, for the hot path (see `schemas.re2_spans`).
_DOC = spans_finder(_DOC_RE, whole=True)
_BARE_DOC = spans_finder(_BARE_DOC_RE, whole=True)
_KG = spans_finder(_KG_RE, whole=True)
_SKILL = spans_finder(_SKILL_RE, whole=True)
_HTTP = spans_finder(_HTTP_RE, whole=True)
_ELEMENT_ID_WHOLE = spans_finder(_ELEMENT_ID_RE, whole=True)
_PROSE_DOC = spans_finder(_PROSE_DOC_RE)
_WORDISH = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


@dataclass(frozen=True, slots=True)
class Uri:
    """A URI that passed the grammar: its scheme and, for `doc://`, the fragment and cited IDs."""

    value: str
    scheme: str
    fragment: str | None = None
    ids: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class UriError:
    """Why a string is not a canonical URI: `invalid_uri` or `non_canonical_uri`, in one of the
    code's named forms. Data only: the contract that cites URIs owns the codes and their words
    (`schemas.html_answer.codes.uri_issue` builds the Issue)."""

    code: str
    form: str
    context: Mapping[str, object]


def _uri_error(code: str, form: str, value: str, **context: object) -> UriError:
    return UriError(code, form, {"value": value[:200], **context})


@dataclass(frozen=True, slots=True)
class DocLink:
    """A doc link found in prose: where it is, how it was written, and its canonical URI."""

    start: int
    end: int
    written: str
    uri: Uri

    @property
    def bare(self) -> bool:
        return not self.written.startswith("doc://")


def is_element_id(value: str) -> bool:
    """An HTML element ID as cited in `?id=` and allowed on `p`/`li`: `[A-Za-z0-9_-]+`."""
    return value.isascii() and _ELEMENT_ID_WHOLE(value.encode("ascii"), 0) is not None


def _non_ascii(value: str) -> UriError | None:
    for offset, char in enumerate(value):
        if not char.isascii():
            return _uri_error(
                "invalid_uri", "non_ascii", value, code_point=ord(char), offset=offset
            )
    return None


def _doc_uri(data: bytes, value: str) -> Uri | None:
    """`value` (ASCII, `data` its bytes) as a doc URI, or None."""
    spans = _DOC(data, 0)
    if spans is None:
        return None
    (fs, fe), (is_, ie) = spans[1], spans[2]
    ids = value[is_:ie] if is_ >= 0 else None
    return Uri(value, "doc", value[fs:fe], tuple(ids.split(",")) if ids else None)


def parse_uri(value: str) -> Uri | UriError:
    """Check one canonical URI; never repairs it (a bare `docid-` is reported, not prefixed)."""
    if not value:
        return _uri_error("invalid_uri", "empty", value)
    if len(value) > MAX_URI_LENGTH:
        return _uri_error("invalid_uri", "too_long", value, limit=MAX_URI_LENGTH)
    if not value.isascii():
        error = _non_ascii(value)
        if error is not None:
            return error
    data = value.encode("ascii")  # only ASCII is left
    if value.startswith("docid-"):
        hint = f"doc://{value}" if _BARE_DOC(data, 0) else "doc://docid-N[-cM[-pK]]"
        return _uri_error("non_canonical_uri", "bare", value, hint=hint)
    scheme, sep, _ = value.partition("://")
    if not sep:
        other = _OTHER_SCHEME.match(value)
        if other is not None:  # `javascript:`, `data:`, `mailto:`: a scheme, just not ours
            scheme = other.group(1)[:20].lower()
            return _uri_error("invalid_uri", "other_scheme", value, scheme=scheme)
        return _uri_error("invalid_uri", "no_scheme", value)
    if scheme == "doc":
        doc = _doc_uri(data, value)
        if doc is not None:
            return doc
        return _uri_error("invalid_uri", "doc", value)
    if scheme in ("kg", "inno"):
        if _KG(data, 0):
            return Uri(value, scheme)
        return _uri_error("invalid_uri", "entity", value, scheme=scheme)
    if scheme == "skill":
        if _SKILL(data, 0):
            return Uri(value, scheme)
        return _uri_error("invalid_uri", "skill", value)
    if scheme in ("http", "https"):
        if _HTTP(data, 0):
            return Uri(value, scheme)
        return _uri_error("invalid_uri", "http", value, scheme=scheme)
    return _uri_error("invalid_uri", "unsupported", value, scheme=scheme[:20])


def is_http_url(value: str) -> bool:
    """The one http(s) URL rule: `a href`, im.segments media and share URLs, webhooks.

    The citation grammar's, the stricter of the two rules there were: plain ASCII, lower-case
    scheme, no user-info, RFC 3986 characters (tests/schemas/test_uris.py shows what changed)."""
    # What `parse_uri` answers for an http(s) URI, without building one (property-tested).
    return (
        0 < len(value) <= MAX_URI_LENGTH
        and value.isascii()
        and _HTTP(value.encode("ascii"), 0) is not None
    )


# `is_http_url` as a JSON Schema (draft 2020-12, ECMA-262 patterns). `$` may match before a
# final line break in some engines; the `not` refuses every character outside printable ASCII.
HTTP_URL_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "string",
    "description": "an absolute http:// or https:// URL with a host (plain ASCII, no user-info)",
    "maxLength": MAX_URI_LENGTH,
    "pattern": f"^{HTTP_URL}$",
    "not": {"pattern": "[^!-~]"},
}


def find_doc_links(text: str) -> Iterator[DocLink]:
    """Doc links in prose (`docid-113-c0`, `doc://docid-1?id=a`), canonicalized, in order.

    A match counts only as a whole word: the character before it is not a letter, digit,
    `_`, `-` or `/`, and the one after is not a letter, digit, `_` or `-`. So
    `xdocid-1`, `/docid-1` and `docid-07` are not links; the ASCII-only grammar keeps
    confusable spellings out.
    """
    for start, end, (fs, fe), (is_, ie) in _prose_doc_spans(text):
        if start > 0 and (text[start - 1] in _WORDISH or text[start - 1] == "/"):
            continue
        if end < len(text) and text[end] in _WORDISH:
            continue
        written = text[start:end]
        ids = text[is_:ie] if is_ >= 0 else None
        canonical = written if written.startswith("doc://") else "doc://" + written
        uri = Uri(canonical, "doc", text[fs:fe], tuple(ids.split(",")) if ids else None)
        yield DocLink(start, end, written, uri)


_Span = tuple[int, int]


def _prose_doc_spans(text: str) -> Iterator[tuple[int, int, _Span, _Span]]:
    """(start, end, fragment span, ids span) of each prose doc link match, in order.

    On ASCII text (byte offsets are character offsets) straight on the RE2 object: the
    binding's `finditer` costs microseconds per call and per match."""
    if not text.isascii():
        for match in _PROSE_DOC_RE.finditer(text):
            yield match.start(), match.end(), match.span(1), match.span(2)
        return
    data = text.encode("ascii")
    pos = 0
    while (spans := _PROSE_DOC(data, pos)) is not None:
        (start, end), fragment, ids = spans[0], spans[1], spans[2]
        yield start, end, fragment, ids
        pos = end  # a match is never empty: it holds `docid-` at least
