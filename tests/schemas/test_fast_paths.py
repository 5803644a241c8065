"""The contracts' shortcuts answer exactly as the slow paths they skip (issue 10: speed)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.html_answer import scan
from schemas.html_answer.scan import _read_simple_tag, _read_tag, scan_source

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
