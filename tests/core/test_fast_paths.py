"""The gate's shortcuts answer exactly as the slow paths they skip (issue 10: speed)."""

from __future__ import annotations

import re
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from schemas.im_segments import DATA_MODELS, _plainly_valid
from schemas.preview import MAX_CODE_POINTS, one_line
from streams.core.leaks import Masker

_VALUES = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
_KEYS = st.sampled_from(
    ["text", "content", "target", "message_id", "forward_id", "url", "title", "id", "media", "x"]
)
_MEDIA = st.dictionaries(
    st.sampled_from(["kind", "value", "x"]),
    st.sampled_from(["url", "path", "base64", "file", "nope", ""]) | _VALUES,
)
_DATA = st.dictionaries(_KEYS, _VALUES | _MEDIA, max_size=3)


def _pydantic_valid(seg_type: str, data: dict[str, Any]) -> bool:
    try:
        DATA_MODELS[seg_type].model_validate(data)
    except ValidationError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(sorted(DATA_MODELS)), _DATA)
def test_plainly_valid_data_is_valid(seg_type: str, data: dict[str, Any]) -> None:
    """The shortcut never passes what the model refuses (it may defer to the model)."""
    if _plainly_valid(DATA_MODELS[seg_type], data):
        assert _pydantic_valid(seg_type, data)


def test_plainly_valid_takes_the_common_shapes() -> None:
    model = DATA_MODELS
    assert _plainly_valid(model["text"], {"text": "hi"})
    assert _plainly_valid(model["share"], {"url": "https://a.b/", "title": "t"})
    assert _plainly_valid(model["image"], {"media": {"kind": "url", "value": "https://a/x.png"}})
    assert _plainly_valid(model["dice"], {})
    assert not _plainly_valid(model["text"], {"text": 1})
    assert not _plainly_valid(model["image"], {"media": {"kind": "url", "value": ""}})


_WHITESPACE = re.compile(r"\s+")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(" \t\n\x1c\u2028\u3000")))
def test_one_line_equals_the_regex_it_replaced(text: str) -> None:
    line = _WHITESPACE.sub(" ", text).strip()
    expected = line if len(line) <= MAX_CODE_POINTS else line[: MAX_CODE_POINTS - 1] + "…"
    assert one_line(text) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["0123456789", "12345678", "9", " ", "\u0660" * 19, "\u00e9", "-"])
    ).map("".join)
)
def test_long_digit_runs_found_as_a_regex_finds_them(text: str) -> None:
    from schemas.json_numbers import _has_long_run

    data = text.encode()
    assert _has_long_run(data) == (re.search(rb"[0-9]{19}", data) is not None)


class _Opaque:
    """A compiled RE2 seen only through its public API (no `_regexp`)."""

    def __init__(self, regex: Any) -> None:
        self.search = regex.search
        self.fullmatch = regex.fullmatch
        self.groups = regex.groups


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["doc://", "docid-", "1", "0", "-c", "-p", "?id=", "a", ",", "x"]))
    .map("".join)
    .map(str.encode)
)
def test_raw_spans_equal_the_public_api(data: bytes) -> None:
    from schemas import uris
    from schemas.re2_spans import spans_finder

    for regex in (uris._DOC_RE, uris._PROSE_DOC_RE):
        for whole in (False, True):
            fast = spans_finder(regex, whole)(data, 0)
            slow = spans_finder(_Opaque(regex), whole)(data, 0)
            assert (None if fast is None else list(fast)) == (None if slow is None else list(slow))


_HTML_PIECES = st.sampled_from(
    [
        "<p>",
        "</p>",
        "<b>",
        "</b>",
        "<li>",
        "<br>",
        "word ",
        "x" * 90,
        "  \n ",
        "&amp;",
        "é",
        "</li>",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_HTML_PIECES, max_size=40).map("".join))
def test_html_preview_text_stops_early_with_the_same_line(html: str) -> None:
    from schemas.preview import html_text

    assert one_line(html_text(html, MAX_CODE_POINTS)) == one_line(html_text(html))


def _leak_atoms() -> list[str]:
    """One secret of each corpus rule, whole and halved, with the characters that decide
    whether a string has a decoded view or a JSON escape."""
    from pathlib import Path

    rows = [
        orjson.loads(line)
        for line in (Path(__file__).parents[1] / "leak_corpus" / "secrets.jsonl")
        .read_bytes()
        .decode()
        .splitlines()
        if line.strip()
    ]
    first = {row["rule"]: row for row in reversed(rows)}
    atoms = [
        *'"\\\n\t\r\x08 =:&%<>é…\u200b\u2060\U000e0041',
        "<b>",
        "password = ",
        "api_key: ",
        "sk-",
    ]
    for row in first.values():
        text = row["text"]
        atoms += [row["secret"], text, text[: len(text) // 2], text[len(text) // 2 :]]
    return atoms


_LEAK_TEXT = st.lists(st.sampled_from(_leak_atoms()), max_size=6).map("".join)
_LEAK_KEYS = st.sampled_from(["password", "api_key", "AUTH_TOKEN", "max_tokens", "text", "n"])
_LEAK_TREES = st.recursive(
    _LEAK_TEXT | st.integers() | st.none(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_LEAK_KEYS | _LEAK_TEXT, kids),
    max_leaves=12,
).filter(lambda tree: isinstance(tree, (dict, list)))


_FAST = Masker()
_WALK = Masker()
_WALK._rules.joinable = False  # every tree takes the per-string walk


@settings(max_examples=400, deadline=None)
@given(_LEAK_TREES)
def test_clean_tree_by_its_json_masks_as_the_walk(tree: Any) -> None:
    """The whole-JSON pre-filter never calls a tree clean that the per-string walk masks."""
    assert _FAST.mask_tree(tree) == _WALK.mask_tree(tree)


def test_tree_filter_in_two_passes_answers_as_the_one(monkeypatch: Any) -> None:
    """When the combined pattern cannot be built, the key search and the pre-filter run apart."""
    from streams.core import leak_compile

    def too_large(*_args: Any, **_kwargs: Any) -> Any:
        raise leak_compile.LeakRuleError("prefilter", "too large")

    one = _FAST._rules.tree_filter
    monkeypatch.setattr(leak_compile, "_compile", too_large)
    two = leak_compile._tree_filter(_FAST._rules.rules, _FAST._rules.prefilter)
    for dump in (b'{"password":"x"}', b'{"a":"AKIAVWTFKTANGPVYQE6B"}', b'{"a":"b"}', b'["token"]'):
        assert (one(dump, 0) is None) == (two(dump, 0) is None), dump


@settings(max_examples=400, deadline=None)
@given(_LEAK_TREES)
def test_plain_json_holds_every_string_between_quotes(tree: Any) -> None:
    """What the shortcut relies on: each string as it is, between quotes, none with a view."""
    from streams.core.leak_views import may_hide
    from streams.core.leak_walk import _plain_json, _tree_texts

    dump = _plain_json(tree)
    texts = _tree_texts(tree)
    if dump is None or texts is None:
        return
    for text in texts[0]:
        assert not may_hide(text)
        assert b'"' + text.encode() + b'"' in dump


def test_plain_json_takes_the_common_trees_and_refuses_the_others() -> None:
    from streams.core.leak_walk import _plain_json

    assert _plain_json({"a": ["x\ny", 'say "hi"\t', 1]}) == b'{"a":["x\ny","say "hi"\t",1]}'
    assert _plain_json({"a": "é…"}) == '{"a":"é…"}'.encode()  # no view: non-ASCII alone
    for tree in ({"a": "b\\nc"}, {"a": "&amp;"}, {"a": "50%"}, {"a": "<b>"}, {"a": "é\u200b"}):
        assert _plain_json(tree) is None, tree
    assert _plain_json({"a": "\x08"}) is None  # an escape other than \n, \t, \r, \"
    assert _plain_json({1: "x"}) is None  # not JSON: the walk decides


_INVISIBLE_SAMPLES = "\u00ad\u034f\u200b\u2060\ufeff\ufe0f\U000e0041\U000e0100\u3164"


@settings(max_examples=400, deadline=None)
@given(
    st.text(
        alphabet=st.characters(codec=None, exclude_categories=())
        | st.sampled_from(f"ab é…\ud800\udfff{_INVISIBLE_SAMPLES}")
    )
)
def test_invisible_characters_found_as_re_finds_them(text: str) -> None:
    """RE2 over UTF-8 (lone surrogates: `re`) answers as the `re` class it stands in for."""
    from streams.core.leak_views import _INVISIBLE, has_invisible

    assert has_invisible(text) == (_INVISIBLE.search(text) is not None)


@settings(max_examples=300, deadline=None)
@given(st.datetimes(timezones=st.timezones()), st.datetimes(timezones=st.timezones()))
def test_cached_timestamps_equal_the_formula(first: Any, second: Any) -> None:
    """Equal datetimes (one instant, any zone) share a cache entry: they spell the same."""
    from datetime import UTC

    from streams.core.decision import iso

    for moment in (first, second, first, second.astimezone(UTC)):
        expected = moment.astimezone(UTC).isoformat(timespec="milliseconds")
        assert iso(moment) == expected.replace("+00:00", "Z")


_MARKS = st.sampled_from(
    ["a", "é", "…", "中", "\u200b", "\u00ad", "&amp;", "%41", "<b>", "\\u0041", "\\/", " ", "\\"]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_MARKS, max_size=12).map("".join) | st.text(max_size=40))
def test_text_may_hide_denies_has_no_view(text: str) -> None:
    """`may_hide` answers no only where no decoding stage would change the text, non-ASCII
    text without invisible characters included (each stage asked directly)."""
    from streams.core import leak_views

    if leak_views.may_hide(text):
        return
    assert leak_views._chain(leak_views._DECODING, text, None) == []
    assert leak_views._chain(leak_views._RENDERING, text, None) == []


def test_non_ascii_without_invisible_characters_builds_no_views() -> None:
    from streams.core.leak_views import may_hide

    assert not may_hide("a preview cut here…")
    assert not may_hide("café 中文")
    assert may_hide("pass\u200bword")
    assert may_hide("caf&eacute;")
