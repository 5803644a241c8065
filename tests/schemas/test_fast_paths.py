"""The contracts' shortcuts answer exactly as the slow paths they skip (issue 10: speed)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from schemas import im_segments, text_rules
from schemas.contract import ReplyInput
from schemas.html_answer import scan
from schemas.html_answer.rules import INLINE
from schemas.html_answer.scan import _read_simple_tag, _read_tag, scan_source
from schemas.html_answer.transport import _eol_lines, _lines
from schemas.html_answer.walk import _child_frames
from schemas.im_segments import (
    IM_SEGMENTS_V1,
    SEGMENT_TYPES,
    _plain_segment,
    _segment_issues,
    message_issues,
)
from schemas.issue_sink import IssueSink
from schemas.preview import html_text, one_line, preview
from schemas.records import Context
from schemas.uris import _PROSE_DOC_RE, _WORDISH, Uri, find_doc_links, is_http_url, parse_uri

# Tag-shaped text: names, blanks, `/`, `=`, both quotes, `>`, `<`, and non-ASCII letters whose
# case the tokenizer must leave alone.
_TAG_TOKENS = st.sampled_from(
    ["a", "B", "href", "ID", "x-y", " ", "\t", "\n", "/", "=", '"', "'", ">", "<", "é", "\u0130"]
)
_TAG_TEXT = st.lists(_TAG_TOKENS, max_size=24).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_TAG_TEXT)
def test_simple_tag_reads_as_the_tokenizer_loop(text: str) -> None:
    """Wherever the one-regex reading answers, it is `_read_tag`'s answer."""
    fast = _read_simple_tag(text, 0)
    if fast is not None:
        assert fast == _read_tag(text, 0)


@pytest.mark.parametrize(
    "tag",
    [
        "p>",
        "br/>",
        'a class="http-source" target="_blank" href="https://e.com/?a=1&b=2">',
        "img src='/x.png' alt=\"a > b\" />",
        'b id="1" ID="2" class="c">',
        " ".join(f'a{i}="v"' for i in range(32)) + ">",
    ],
)
def test_common_tags_take_the_shortcut(tag: str) -> None:
    fast = _read_simple_tag(tag, 0)
    assert fast is not None
    assert fast == _read_tag(tag, 0)


@pytest.mark.parametrize(
    "tag", ["a href=x>", 'a href = "x">', 'a x="1"y="2">', "a x", " ".join(["a"] * 34) + ">"]
)
def test_other_tags_go_the_long_way(tag: str) -> None:
    assert _read_simple_tag(tag, 0) is None


_HTML_TOKENS = st.sampled_from(
    ["<p>", "</p>", "<b ", "<a ", "</a>", "<br/>", "<!-- c -->", "<!doctype html>", "<html>",
     "<script>", "</script>", "<svg>", "<table>", "<td>", "<i>", "</i>", "x", " ", "\n", "=",
     '"', "'", "id=", 'class="c"', "href='u'", "/", ">", "<", "</"]
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(_HTML_TOKENS, max_size=40).map("".join))
def test_scan_with_the_shortcut_equals_the_scan_without(html: str) -> None:
    fast = scan_source(html)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan, "_read_simple_tag", lambda _src, _pos: None)
        slow = scan_source(html)
    assert fast == slow


_URLS = st.sampled_from(["https://x.example/a", "HTTPS://x.example", "ftp://x", "", "u1"])
_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | _URLS | st.text(max_size=4)
_MEDIA = st.dictionaries(
    st.sampled_from(["kind", "value", "x"]),
    st.sampled_from(["url", "path", "base64", "file", "nope"]) | _SCALARS,
)
_DATA = st.dictionaries(
    st.sampled_from(["text", "content", "target", "message_id", "url", "title", "id", "media"]),
    _SCALARS | _MEDIA,
    max_size=3,
)
_SEGMENT = (
    st.dictionaries(
        st.sampled_from(["type", "data", "x"]),
        st.sampled_from([*SEGMENT_TYPES, "nope"]) | _DATA | _SCALARS,
    )
    | _SCALARS
)
_MENTIONABLE = frozenset({"u1", "u2"})


@settings(max_examples=1500, deadline=None)
@given(_SEGMENT)
def test_plain_segments_have_no_issues(segment: Any) -> None:
    """The shortcut passes a segment only where the full checks find nothing."""
    if _plain_segment(segment, _MENTIONABLE):
        sink = IssueSink()
        _segment_issues(segment, 0, _MENTIONABLE, sink)
        assert sink.items == []


@settings(max_examples=600, deadline=None)
@given(st.lists(_SEGMENT, max_size=6))
def test_message_issues_with_the_shortcut_equal_those_without(segments: list[Any]) -> None:
    message = {"segments": segments}
    fast = message_issues(message, _MENTIONABLE)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(im_segments, "_plain_segment", lambda _segment, _mentionable: False)
        slow = message_issues(message, _MENTIONABLE)
    assert fast == slow


def test_common_segments_take_the_shortcut() -> None:
    for segment in [
        {"type": "text", "data": {"text": "hi"}},
        {"type": "mention", "data": {"target": "u1"}},
        {"type": "share", "data": {"url": "https://x.example/", "title": "t"}},
        {"type": "image", "data": {"media": {"kind": "url", "value": "https://x.example/a"}}},
        {"type": "file", "data": {"media": {"kind": "path", "value": "a.bin"}}},
        {"type": "dice", "data": {}},
        {"type": "face", "data": {"id": 12}},
        {"type": "face", "data": {"id": 1.5}},
        {"type": "face", "data": {"id": "smile"}},
    ]:
        assert _plain_segment(segment, _MENTIONABLE)
    assert not _plain_segment({"type": "mention", "data": {"target": "u9"}}, _MENTIONABLE)
    for face in (True, float("inf"), float("nan"), None):
        assert not _plain_segment({"type": "face", "data": {"id": face}}, _MENTIONABLE)


def test_mentionable_ids_are_read_only_when_a_segment_mentions() -> None:
    """The contract asks the context for its IDs only for a reply with a mention segment."""
    asked: list[bool] = []

    class Counting(Context):
        def mentionable(self) -> frozenset[str]:
            asked.append(True)
            return super().mentionable()

    context = Counting(sender_id="u1")
    text = '{"segments": [{"type": "text", "data": {"text": "hi"}}]}'
    assert IM_SEGMENTS_V1.validate(ReplyInput(transport="text", text=text), context).valid
    assert asked == []
    text = '{"segments": [{"type": "mention", "data": {"target": "u1"}}]}'
    assert IM_SEGMENTS_V1.validate(ReplyInput(transport="text", text=text), context).valid
    assert asked == [True]


_URI_PARTS = st.sampled_from(
    ["http", "https", "doc", "docid-1", "://", "x", ".", "-", ":", "80", "/", "?", "#", "@",
     "%41", "[::1]", "\u00e9", " ", "a" * 700]
)  # fmt: skip


@settings(max_examples=800, deadline=None)
@given(st.lists(_URI_PARTS, max_size=10).map("".join))
def test_is_http_url_answers_as_parse_uri(value: str) -> None:
    parsed = parse_uri(value)
    assert is_http_url(value) == (isinstance(parsed, Uri) and parsed.scheme in ("http", "https"))


def _frames_as_before(first: Any, base: str) -> list[tuple[str, bool]]:
    """The child frames' paths and line starts, as the walk computed them before it carried
    each text node's text in its frame (reading the text twice)."""
    counts: dict[str, int] = {}
    frames: list[tuple[str, bool]] = []
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
        counts[key] = index = counts.get(key, 0) + 1
        frames.append((f"{base}/{key}[{index}]", line_start))
        if node.is_element_node:
            line_start = node.tag not in INLINE
        elif not node.is_text_node:
            line_start = False
        else:
            text = node.text_content or ""
            line_start = (line_start and not text.strip()) or text.endswith("\n")
        node = node.next
    frames.reverse()
    return frames


@settings(max_examples=400, deadline=None)
@given(st.lists(_HTML_TOKENS | st.sampled_from(["<code>", "\n# h", "<!-- x -->"]), max_size=30))
def test_child_frames_carry_what_the_walk_read_before(tokens: list[str]) -> None:
    tree = LexborHTMLParser("".join(tokens), is_fragment=True, fragment_tag="body")
    pending = [tree.root]
    while pending:
        first = pending.pop()
        frames = _child_frames(first, "b", 1, False, False)
        assert [(f[1], f[5]) for f in frames] == _frames_as_before(first, "b")
        for node, *_, text in frames:
            assert text == ((node.text_content or "") if node.is_text_node else "")
            if node.is_element_node and node.first_child is not None:
                pending.append(node.first_child)


def _html_text_as_before(html: str) -> str:
    """The preview's HTML text as it was walked before (children listed with `iter`): right
    only when the fragment starts with a node that is not text, as `<br>` + html does."""
    root = LexborHTMLParser(html, is_fragment=True, fragment_tag="body", scripting=False).root
    out: list[str] = []
    stack: list[tuple[Any, bool]] = [(root, True)] if root is not None else []
    while stack:
        node, entering = stack.pop()
        if node.tag == "-text":
            out.append(node.text(deep=False) or "")
            continue
        if node.tag not in INLINE:
            out.append(" ")
        if entering:
            stack.append((node, False))
            children = list(node.iter(include_text=True))
            stack.extend((child, True) for child in reversed(children))
    return "".join(out)


_PROSE_TOKENS = st.sampled_from(["x", "y z", "&amp;", "\u00e9", "<li>", "<td>", "<img>", "<br>"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_HTML_TOKENS | _PROSE_TOKENS, max_size=30).map("".join))
def test_preview_html_text_equals_the_walk_it_replaced(html: str) -> None:
    assert one_line(html_text(html)) == one_line(_html_text_as_before("<br>" + html))


def test_preview_of_html_that_starts_with_text_keeps_the_rest() -> None:
    """The walk it replaced stopped after a first top-level text node."""
    assert one_line(html_text("hello <b>x</b> <p>more</p>")) == "hello x more"
    assert one_line(_html_text_as_before("hello <b>x</b> <p>more</p>")) == "hello"


def _doc_links_as_before(text: str) -> list[tuple[int, int, str, Uri]]:
    """`find_doc_links` as it matched before: the RE2 binding's `finditer`."""
    found = []
    for match in _PROSE_DOC_RE.finditer(text):
        start, end = match.start(), match.end()
        if start > 0 and (text[start - 1] in _WORDISH or text[start - 1] == "/"):
            continue
        if end < len(text) and text[end] in _WORDISH:
            continue
        written, ids = match.group(0), match.group(2)
        canonical = written if written.startswith("doc://") else "doc://" + written
        uri = Uri(canonical, "doc", match.group(1), tuple(ids.split(",")) if ids else None)
        found.append((start, end, written, uri))
    return found


_PROSE_PARTS = st.sampled_from(
    ["docid-", "doc://", "1", "0", "07", "-c", "2", "-p", "?id=", "a", ",", "b_", " ", "/", "x",
     "\u00e9", "\u4e2d"]
)  # fmt: skip


@settings(max_examples=800, deadline=None)
@given(st.lists(_PROSE_PARTS, max_size=24).map("".join))
def test_doc_links_found_as_finditer_finds_them(text: str) -> None:
    links = [(link.start, link.end, link.written, link.uri) for link in find_doc_links(text)]
    assert links == _doc_links_as_before(text)


_FENCE_TOKENS = st.sampled_from(["```", "`", "html", " ", "\t", "\n", "\r", "x", "é", ";"])


@settings(max_examples=1500, deadline=None)
@given(st.lists(_FENCE_TOKENS, max_size=30).map("".join))
def test_lines_cut_by_find_equal_the_regex_cut(text: str) -> None:
    """Without a carriage return `_lines` cuts by `str.find`; the lines are the regex's."""
    assert list(_lines(text)) == list(_eol_lines(text))
    plain = text.replace("\r", "")
    assert list(_lines(plain)) == list(_eol_lines(plain))


# Characters around every boundary of the control rule, the escapes JSON writes them with,
# and ordinary text.
_CONTROL_EDGES = st.sampled_from(
    [
        "a",
        "é",
        " ",
        "\n",
        "\t",
        "\r",
        "\x00",
        "\x07",
        "\x1b",
        "\x1f",
        "\x7f",
        "\x80",
        "\x85",
        "\x9f",
        "\xa0",
        "\u200e",
        "\u200f",
        "\u2029",
        "\u202a",
        "\u202e",
        "\u202f",
        "\u2065",
        "\u2066",
        "\u2069",
        "\u206a",
        "\\",
        "b",
        "u",
        '"',
    ]
)


@settings(max_examples=1500, deadline=None)
@given(
    st.recursive(
        st.lists(_CONTROL_EDGES, max_size=8).map("".join),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.lists(_CONTROL_EDGES, max_size=4).map("".join), inner, max_size=3)
        ),
        max_leaves=8,
    ),
    st.booleans(),
)
def test_controls_read_from_the_text_equal_those_of_the_value(value: Any, ascii: bool) -> None:
    """The search over the JSON text a value was read from clears exactly what the value's own
    check would: written escaped (`\\u202e`, `\\b`) or as itself."""
    text = json.dumps(value, ensure_ascii=ascii)
    assert text_rules.tree_control_issues(value, read_from=text) == (
        text_rules.tree_control_issues(value)
    )


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        _CONTROL_EDGES | st.sampled_from(["\ud800", "~", "x", "é…", "\u200f"]), max_size=12
    ).map("".join)
)
def test_printable_text_needs_no_escape(text: str) -> None:
    assert text_rules.escape_controls(text) == text_rules._SHOWN_ESCAPED.sub(
        text_rules._escaped, text
    )


@settings(max_examples=800, deadline=None)
@given(st.lists(_CONTROL_EDGES | st.sampled_from(["x" * 150, "\x1c", "\x85"]), max_size=12))
def test_preview_normalises_once(parts: list[str]) -> None:
    """The preview's one whitespace pass gives what two passes (before and after escaping) gave."""
    text = "".join(parts)
    assert preview(text, lambda line: line) == one_line(
        text_rules.escape_controls(" ".join(text.split()))
    )


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(_CONTROL_EDGES | st.sampled_from(["~", "x", "é…"]), max_size=12).map("".join),
    st.booleans(),
)
def test_find_control_clears_printable_text_as_the_search_would(text: str, delete: bool) -> None:
    pattern = text_rules._WITH_DELETE if delete else text_rules._REPLY
    match = pattern.search(text)
    assert text_rules.find_control(text, delete) == (None if match is None else match.start())


def test_no_character_a_control_class_holds_is_printable() -> None:
    """What lets `isprintable` clear a text without a search, checked for every code point."""
    classes = (text_rules._SHOWN_ESCAPED, text_rules._REPLY, text_rules._WITH_DELETE)
    for point in range(0x110000):
        char = chr(point)
        if any(pattern.match(char) for pattern in classes):
            assert not char.isprintable(), hex(point)
