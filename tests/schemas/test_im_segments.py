"""The im.segments.v1 contract: transport, every row of the type table, mentions, schema."""

from __future__ import annotations

import copy
import functools
from typing import Any

import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.codes import MAX_ISSUES
from schemas.contract import ContractResult, ReplyContract, ReplyInput
from schemas.im_segments import (
    IM_SEGMENTS_V1,
    MAX_SEGMENTS,
    SEGMENT_TYPES,
    message_issues,
)
from schemas.records import Context
from schemas.uris import is_http_url

CTX = Context(sender_id="100", members=["200", "300"])

VALID_SEGMENTS: list[dict[str, Any]] = [
    {"type": "text", "data": {"text": "hello"}},
    {"type": "text", "data": {"text": ""}},
    {"type": "markdown", "data": {"content": "**hi**"}},
    {"type": "mention", "data": {"target": "100"}},
    {"type": "mention", "data": {"target": "200"}},
    {"type": "image", "data": {"media": {"kind": "url", "value": "https://x.example/a.png"}}},
    {"type": "audio", "data": {"media": {"kind": "path", "value": "a/b.mp3"}}},
    {"type": "video", "data": {"media": {"kind": "base64", "value": "AAAA"}}},
    {"type": "file", "data": {"media": {"kind": "file", "value": "platform-ref-1"}}},
    {"type": "reply", "data": {"message_id": "m-1"}},
    {"type": "forward", "data": {"forward_id": "f-1"}},
    {"type": "face", "data": {"id": "123"}},
    {"type": "face", "data": {"id": 123}},
    {"type": "face", "data": {"id": 1.5}},
    {"type": "face", "data": {"id": -7}},
    {"type": "dice", "data": {}},
    {"type": "rps", "data": {}},
    {"type": "share", "data": {"url": "http://x.example/p?q=1#f", "title": "A page"}},
]


def text_reply(value: Any) -> ReplyInput:
    return ReplyInput(
        "text", text=value if isinstance(value, str) else orjson.dumps(value).decode()
    )


def check(value: Any, context: Context | None = CTX) -> ContractResult:
    return IM_SEGMENTS_V1.validate(text_reply(value), context)


def codes(value: Any, context: Context | None = CTX) -> list[tuple[str, str]]:
    result = check(value, context)
    assert result.message is None
    return [(i.path, i.code) for i in result.issues]


def one(segment: Any) -> dict[str, Any]:
    return {"segments": [segment]}


def seg_codes(segment: Any, context: Context | None = CTX) -> list[tuple[str, str]]:
    return codes(one(segment), context)


# --- the contract object ----------------------------------------------------------------------
def test_contract_identity() -> None:
    contract: ReplyContract = IM_SEGMENTS_V1
    assert contract.name == "im.segments.v1"


def test_notice_message_is_a_valid_text_message() -> None:
    message = IM_SEGMENTS_V1.notice_message("Sorry.")
    assert message == {"segments": [{"type": "text", "data": {"text": "Sorry."}}]}
    assert check(message).message == message


def test_instructions_are_short_and_format_only() -> None:
    text = IM_SEGMENTS_V1.instructions()
    assert len(text) < 1000
    low = text.lower()
    assert "exactly one json object" in low
    assert "fence" in low
    assert "keep the content" in low
    assert "mention only" in low


# --- valid replies ----------------------------------------------------------------------------
@pytest.mark.parametrize("segment", VALID_SEGMENTS, ids=lambda s: s["type"])
def test_every_type_valid(segment: dict[str, Any]) -> None:
    result = check(one(segment))
    assert result.valid
    assert result.message == one(segment)
    assert not result.no_reply


def test_message_is_the_parsed_object_in_order() -> None:
    text = orjson.dumps({"segments": VALID_SEGMENTS}).decode()
    result = check(text)
    assert result.valid and result.message is not None
    assert result.message == orjson.loads(text)
    assert [s["type"] for s in result.message["segments"]] == [s["type"] for s in VALID_SEGMENTS]


def test_tool_transport_valid_returns_the_arguments_untouched() -> None:
    args = {"segments": copy.deepcopy(VALID_SEGMENTS)}
    before = copy.deepcopy(args)
    result = IM_SEGMENTS_V1.validate(ReplyInput("tool", arguments=args), CTX)
    assert result.valid
    assert result.message == before
    assert args == before


def test_empty_segments_is_no_reply() -> None:
    result = check({"segments": []})
    assert result.valid and result.no_reply and result.message is None
    tool = IM_SEGMENTS_V1.validate(ReplyInput("tool", arguments={"segments": []}), CTX)
    assert tool.valid and tool.no_reply


def test_empty_segments_with_extra_key_is_invalid() -> None:
    result = check({"segments": [], "x": 1})
    assert not result.no_reply
    assert [(i.path, i.code) for i in result.issues] == [("x", "unknown_field")]


# --- text transport ---------------------------------------------------------------------------
GOOD = '{"segments": [{"type": "text", "data": {"text": "hi"}}]}'


@pytest.mark.parametrize("text", [GOOD, f"  {GOOD}  ", f"\n\t{GOOD}\r\n", f"\n\n{GOOD}\n"])
def test_surrounding_whitespace_is_fine(text: str) -> None:
    assert check(text).message == orjson.loads(GOOD)


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{GOOD}\n```",
        f"```\n{GOOD}\n```",
        f"Here you go: {GOOD}",
        f"{GOOD}\nHope this helps!",
        f"{GOOD}{GOOD}",
        f"{GOOD}\n{GOOD}",
        f"[{GOOD}]",
        '"segments"',
        "42",
        "null",
        "true",
        "",
        "   ",
        "{",
        "{'segments': []}",
        '{"segments": [],}',
    ],
)
def test_not_one_json_object_is_not_json(text: str) -> None:
    assert codes(text) == [("$", "not_json")]


def test_missing_text_is_not_json() -> None:
    result = IM_SEGMENTS_V1.validate(ReplyInput("text", text=None), CTX)
    assert [(i.path, i.code) for i in result.issues] == [("$", "not_json")]


def test_too_deep_is_not_json_and_says_so() -> None:
    deep = '{"segments": ' + "[" * 2000 + "]" * 2000 + "}"
    result = check(deep)
    assert [(i.path, i.code) for i in result.issues] == [("$", "not_json")]
    assert "deep" in result.issues[0].message


@pytest.mark.parametrize("surrogate", ["\ud800", "\\ud800", "\\udc00x", "\\ud800\\u0041"])
def test_a_lone_surrogate_has_no_one_meaning(surrogate: str) -> None:
    text = '{"segments": [{"type": "text", "data": {"text": "' + surrogate + '"}}]}'
    assert codes(text) == [("$", "lone_surrogate")]


def test_a_surrogate_pair_is_one_character() -> None:
    result = check('{"segments": [{"type": "text", "data": {"text": "\\ud83d\\ude00"}}]}')
    assert result.valid


# --- tool transport ---------------------------------------------------------------------------
@pytest.mark.parametrize("arguments", [None, [], [{"segments": []}], "x", GOOD, 1, True])
def test_tool_arguments_must_be_an_object(arguments: Any) -> None:
    result = IM_SEGMENTS_V1.validate(ReplyInput("tool", arguments=arguments), CTX)
    assert [(i.path, i.code) for i in result.issues] == [("$", "not_json")]


def test_tool_arguments_validated_like_text() -> None:
    args = {"segments": [{"type": "text", "data": {"text": 1}}], "extra": True}
    result = IM_SEGMENTS_V1.validate(ReplyInput("tool", arguments=args), CTX)
    assert [(i.path, i.code) for i in result.issues] == [
        ("extra", "unknown_field"),
        ("segments[0].data.text", "wrong_type"),
    ]


# --- top level --------------------------------------------------------------------------------
def test_segments_required() -> None:
    assert codes({}) == [("segments", "missing_field")]
    assert codes({"segment": []}) == [("segment", "unknown_field"), ("segments", "missing_field")]


@pytest.mark.parametrize("value", [None, {}, "[]", 0, True])
def test_segments_must_be_an_array(value: Any) -> None:
    assert codes({"segments": value}) == [("segments", "wrong_type")]


def test_segment_count_is_bounded() -> None:
    seg = {"type": "dice", "data": {}}
    assert check({"segments": [seg] * MAX_SEGMENTS}).valid
    assert codes({"segments": [seg] * (MAX_SEGMENTS + 1)}) == [("segments", "too_long")]


# --- segment shape ----------------------------------------------------------------------------
@pytest.mark.parametrize("segment", [None, 1, "text", [], ["text", {}], True])
def test_segment_must_be_an_object(segment: Any) -> None:
    assert seg_codes(segment) == [("segments[0]", "wrong_type")]


def test_segment_extra_key() -> None:
    seg = {"type": "dice", "data": {}, "id": 1}
    assert seg_codes(seg) == [("segments[0].id", "unknown_field")]


def test_segment_missing_type_and_data() -> None:
    assert seg_codes({"data": {}}) == [("segments[0].type", "missing_field")]
    assert seg_codes({"type": "dice"}) == [("segments[0].data", "missing_field")]
    assert seg_codes({}) == [
        ("segments[0].type", "missing_field"),
        ("segments[0].data", "missing_field"),
    ]


@pytest.mark.parametrize("seg_type", ["sticker", "TEXT", "Text", "", " text", "image/png"])
def test_unknown_segment_type(seg_type: str) -> None:
    assert seg_codes({"type": seg_type, "data": {}}) == [
        ("segments[0].type", "unknown_segment_type")
    ]


@pytest.mark.parametrize("seg_type", [1, None, ["text"], {"t": 1}, True])
def test_segment_type_must_be_a_string(seg_type: Any) -> None:
    assert seg_codes({"type": seg_type, "data": {}}) == [("segments[0].type", "wrong_type")]


@pytest.mark.parametrize("data", [None, [], "x", 1])
def test_data_must_be_an_object(data: Any) -> None:
    assert seg_codes({"type": "text", "data": data}) == [("segments[0].data", "wrong_type")]
    assert seg_codes({"type": "sticker", "data": data}) == [
        ("segments[0].type", "unknown_segment_type"),
        ("segments[0].data", "wrong_type"),
    ]


# --- every row of the table: missing, extra and wrong-typed fields -----------------------------
FIELDS = {
    "text": ["text"],
    "markdown": ["content"],
    "mention": ["target"],
    "image": ["media"],
    "audio": ["media"],
    "video": ["media"],
    "file": ["media"],
    "reply": ["message_id"],
    "forward": ["forward_id"],
    "face": ["id"],
    "dice": [],
    "rps": [],
    "share": ["url", "title"],
}


def test_fields_table_covers_every_type() -> None:
    assert set(FIELDS) == set(SEGMENT_TYPES)


@pytest.mark.parametrize("seg_type", [t for t, f in FIELDS.items() if f])
def test_every_field_is_required(seg_type: str) -> None:
    expected = [(f"segments[0].data.{f}", "missing_field") for f in FIELDS[seg_type]]
    assert seg_codes({"type": seg_type, "data": {}}) == expected


@pytest.mark.parametrize("segment", VALID_SEGMENTS, ids=lambda s: s["type"])
def test_data_is_closed(segment: dict[str, Any]) -> None:
    seg = copy.deepcopy(segment)
    seg["data"]["extra"] = "x"
    assert seg_codes(seg) == [("segments[0].data.extra", "unknown_field")]


@pytest.mark.parametrize(
    ("seg_type", "field", "value"),
    [
        ("text", "text", 123),
        ("text", "text", None),
        ("text", "text", ["hi"]),
        ("markdown", "content", 1.5),
        ("markdown", "content", {"md": "x"}),
        ("mention", "target", 100),
        ("mention", "target", 200),
        ("mention", "target", None),
        ("reply", "message_id", 123),
        ("reply", "message_id", True),
        ("forward", "forward_id", 123),
        ("face", "id", True),
        ("face", "id", False),
        ("face", "id", None),
        ("face", "id", ["1"]),
        ("face", "id", {"id": 1}),
        ("share", "url", 1),
        ("share", "title", 2),
        ("share", "title", None),
        ("image", "media", "https://x.example/a.png"),
        ("image", "media", None),
    ],
)
def test_strict_json_types(seg_type: str, field: str, value: Any) -> None:
    data = {f: v for f, v in _valid_data(seg_type).items()}
    data[field] = value
    assert seg_codes({"type": seg_type, "data": data}) == [
        (f"segments[0].data.{field}", "wrong_type")
    ]


def _valid_data(seg_type: str) -> dict[str, Any]:
    for seg in VALID_SEGMENTS:
        if seg["type"] == seg_type:
            return copy.deepcopy(seg["data"])
    raise AssertionError(seg_type)


def test_numbers_are_never_coerced_to_strings_and_back() -> None:
    ctx = Context(sender_id="123", members=["456"])
    assert check(one({"type": "mention", "data": {"target": "123"}}), ctx).valid
    assert seg_codes({"type": "mention", "data": {"target": 123}}, ctx) == [
        ("segments[0].data.target", "wrong_type")
    ]
    assert seg_codes({"type": "reply", "data": {"message_id": 123}}) == [
        ("segments[0].data.message_id", "wrong_type")
    ]
    # face accepts both, and keeps each exactly as sent
    for value in ("123", 123):
        result = check(one({"type": "face", "data": {"id": value}}))
        assert result.message is not None
        assert result.message["segments"][0]["data"]["id"] == value
        assert type(result.message["segments"][0]["data"]["id"]) is type(value)


@pytest.mark.parametrize("seg_type", ["dice", "rps"])
@pytest.mark.parametrize("data", [{"value": 3}, {"result": "rock"}])
def test_dice_and_rps_take_an_empty_object(seg_type: str, data: dict[str, Any]) -> None:
    (key,) = data
    assert seg_codes({"type": seg_type, "data": data}) == [
        (f"segments[0].data.{key}", "unknown_field")
    ]


# --- media ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seg_type", ["image", "audio", "video", "file"])
@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("url", "https://cdn.example/x"),
        ("url", "http://cdn.example"),  # lower case: the one URL rule (test_uris.py)
        ("path", "x/y.bin"),
        ("path", "ftp://not-checked-here"),
        ("base64", "not checked here"),
        ("file", "opaque-platform-ref"),
    ],
)
def test_media_kinds_valid(seg_type: str, kind: str, value: str) -> None:
    assert check(one({"type": seg_type, "data": {"media": {"kind": kind, "value": value}}})).valid


@pytest.mark.parametrize(
    ("media", "expected"),
    [
        ({"kind": "data", "value": "x"}, [("kind", "invalid_value")]),
        ({"kind": "URL", "value": "https://a"}, [("kind", "invalid_value")]),
        ({"kind": 1, "value": "x"}, [("kind", "invalid_value")]),
        ({"kind": "path", "value": ""}, [("value", "too_short")]),
        ({"kind": "path", "value": 5}, [("value", "wrong_type")]),
        ({"kind": "path"}, [("value", "missing_field")]),
        ({"value": "x"}, [("kind", "missing_field")]),
        ({"kind": "path", "value": "x", "mime": "image/png"}, [("mime", "unknown_field")]),
        ({}, [("kind", "missing_field"), ("value", "missing_field")]),
    ],
)
def test_media_object_rules(media: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    got = seg_codes({"type": "image", "data": {"media": media}})
    assert got == [(f"segments[0].data.media.{p}", c) for p, c in expected]


BAD_URLS = [
    "ftp://x.example/a.png",
    "javascript:alert(1)",
    "data:image/png;base64,AAAA",
    "file:///etc/passwd",
    "/relative/a.png",
    "relative/a.png",
    "//x.example/a.png",
    "http://",
    "http:///path",
    "http:/x.example",
    "http:x.example",
    "https://:443/",
    "https://user@/",
    "http://x.example/a b",
    " http://x.example",
    "http://x.example\n",
    "http://x.example\\@evil.example",
    "http://[::1/",
    "http://x.example:80x/",
    "mailto:a@x.example",
    # Refused since segments share the one URL rule of schemas.uris (see test_uris.py):
    "HTTPS://X.EXAMPLE/a?b=c#d",
    "https://user:pw@x.example/",
    "https://zh.wikipedia.org/wiki/中文",
]
GOOD_URLS = [
    "http://x.example",
    "https://x.example/",
    "https://x.example/a?b=c#d",
    "https://x.example:8443/a",
    "http://[::1]:8080/",
    "http://127.0.0.1/x",
    "https://zh.wikipedia.org/wiki/%E4%B8%AD%E6%96%87",
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_media_url_must_be_absolute_http(url: str) -> None:
    seg = {"type": "image", "data": {"media": {"kind": "url", "value": url}}}
    assert seg_codes(seg) == [("segments[0].data.media.value", "invalid_url")]
    assert not is_http_url(url)


@pytest.mark.parametrize("url", [*BAD_URLS, ""])
def test_share_url_must_be_absolute_http(url: str) -> None:
    seg = {"type": "share", "data": {"url": url, "title": "t"}}
    assert seg_codes(seg) == [("segments[0].data.url", "invalid_url")]


@pytest.mark.parametrize("url", GOOD_URLS)
def test_good_urls(url: str) -> None:
    assert is_http_url(url)
    assert check(one({"type": "share", "data": {"url": url, "title": ""}})).valid
    assert check(one({"type": "video", "data": {"media": {"kind": "url", "value": url}}})).valid


@pytest.mark.timeout(30)  # a backtracking URL rule would not end on these
def test_url_check_is_linear() -> None:
    for hostile in (
        "http://" + "a" * 200_000 + "@",
        "http://" + "a:" * 100_000,
        "http://[" * 50_000,
    ):
        assert not is_http_url(hostile)


# --- mentions ---------------------------------------------------------------------------------
def mention(target: Any) -> dict[str, Any]:
    return one({"type": "mention", "data": {"target": target}})


@pytest.mark.parametrize("target", ["100", "200", "300"])
def test_mention_sender_or_member(target: str) -> None:
    assert check(mention(target)).valid


@pytest.mark.parametrize("target", ["999", "", "100 ", " 200", "Alice", "@100", "0100"])
def test_mention_unknown_target(target: str) -> None:
    assert codes(mention(target)) == [("segments[0].data.target", "unknown_mention_target")]


def test_mention_sender_only_or_members_only() -> None:
    assert check(mention("1"), Context(sender_id="1")).valid
    assert check(mention("2"), Context(members=["2"])).valid
    assert codes(mention("1"), Context(members=["2"])) == [
        ("segments[0].data.target", "unknown_mention_target")
    ]


@pytest.mark.parametrize("context", [None, Context(), Context(sender_id=None, members=[])])
def test_no_context_allows_no_mention(context: Context | None) -> None:
    assert codes(mention("100"), context) == [("segments[0].data.target", "unknown_mention_target")]
    assert check({"segments": [{"type": "text", "data": {"text": "x"}}]}, context).valid


def test_mention_case_is_exact() -> None:
    ctx = Context(members=["u_Abc"])
    assert check(mention("u_Abc"), ctx).valid
    assert codes(mention("u_abc"), ctx) == [("segments[0].data.target", "unknown_mention_target")]


# --- all issues, bounded ----------------------------------------------------------------------
def test_all_issues_are_reported_in_order() -> None:
    message = {
        "segments": [
            {"type": "text", "data": {"text": 1}},
            {"type": "dice", "data": {}},
            {"type": "mention", "data": {"target": "nobody"}},
            {"type": "sticker", "data": {}},
            {"type": "share", "data": {"url": "ftp://x", "title": "t", "z": 0}},
            {"type": "image", "data": {"media": {"kind": "url", "value": "/a.png"}}},
        ],
        "meta": {},
    }
    assert codes(message) == [
        ("meta", "unknown_field"),
        ("segments[0].data.text", "wrong_type"),
        ("segments[2].data.target", "unknown_mention_target"),
        ("segments[3].type", "unknown_segment_type"),
        ("segments[4].data.z", "unknown_field"),
        ("segments[4].data.url", "invalid_url"),
        ("segments[5].data.media.value", "invalid_url"),
    ]


def test_issue_count_is_bounded() -> None:
    message = {"segments": [{"type": "text", "data": {"text": i}} for i in range(500)]}
    issues = check(message).issues
    assert len(issues) == MAX_ISSUES + 1
    assert issues[-1].code == "too_many_errors" and issues[-1].path == "$"
    assert [i.path for i in issues[:3]] == [f"segments[{i}].data.text" for i in range(3)]


def test_exactly_max_issues_has_no_too_many_errors() -> None:
    message = {"segments": [{"type": "text", "data": {"text": i}} for i in range(MAX_ISSUES)]}
    issues = check(message).issues
    assert len(issues) == MAX_ISSUES
    assert all(i.code == "wrong_type" for i in issues)


@pytest.mark.timeout(30)  # an unbounded issue list would run far past this
@pytest.mark.parametrize("level", ["top", "segment", "data", "media"])
def test_many_extra_keys_are_bounded_and_fast(level: str) -> None:
    extras = {f"k{i}": i for i in range(50_000)}
    media = {"kind": "path", "value": "a"}
    data: dict[str, Any] = {"media": media}
    seg: dict[str, Any] = {"type": "image", "data": data}
    message: dict[str, Any] = {"segments": [seg]}
    {"top": message, "segment": seg, "data": data, "media": media}[level].update(extras)
    issues = check(message).issues
    assert len(issues) == MAX_ISSUES + 1
    assert issues[0].code == "unknown_field"
    assert issues[-1].code == "too_many_errors"


def test_weird_keys_get_quoted_paths() -> None:
    assert seg_codes({"type": "dice", "data": {"a b": 1}}) == [
        ('segments[0].data["a b"]', "unknown_field")
    ]


# --- JSON Schema ------------------------------------------------------------------------------
@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    schema = IM_SEGMENTS_V1.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_is_draft_2020_12_and_closed() -> None:
    schema = IM_SEGMENTS_V1.json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    branches = schema["properties"]["segments"]["items"]["oneOf"]
    assert [b["properties"]["type"]["const"] for b in branches] == list(SEGMENT_TYPES)
    assert all(b["additionalProperties"] is False for b in branches)
    assert all(
        b["properties"]["data"].get("additionalProperties") is False
        or "$ref" in b["properties"]["data"]["properties"].get("media", {})
        for b in branches
    )


def test_schema_is_a_fresh_copy() -> None:
    IM_SEGMENTS_V1.json_schema()["properties"].clear()
    assert "segments" in IM_SEGMENTS_V1.json_schema()["properties"]


def test_schema_accepts_valid_samples() -> None:
    v = validator()
    v.validate({"segments": VALID_SEGMENTS})
    v.validate({"segments": []})
    for url in GOOD_URLS:
        v.validate(one({"type": "share", "data": {"url": url, "title": "t"}}))


INVALID_SAMPLES: list[Any] = [
    [],
    {},
    {"segments": [], "x": 1},
    {"segments": {}},
    one({"type": "text", "data": {"text": 1}}),
    one({"type": "text", "data": {"text": "a", "x": 1}}),
    one({"type": "text", "data": {"text": "a"}, "x": 1}),
    one({"type": "text"}),
    one({"type": "sticker", "data": {}}),
    one({"type": "face", "data": {"id": True}}),
    one({"type": "face", "data": {"id": None}}),
    one({"type": "dice", "data": {"n": 1}}),
    one({"type": "mention", "data": {"target": 1}}),
    one({"type": "image", "data": {"media": {"kind": "x", "value": "a"}}}),
    one({"type": "image", "data": {"media": {"kind": "path", "value": ""}}}),
    one({"type": "image", "data": {"media": {"kind": "path", "value": "a", "z": 1}}}),
    one({"type": "share", "data": {"url": "https://a"}}),
    {"segments": [{"type": "dice", "data": {}}] * (MAX_SEGMENTS + 1)},
    *[one({"type": "image", "data": {"media": {"kind": "url", "value": u}}}) for u in BAD_URLS],
    *[one({"type": "share", "data": {"url": u, "title": "t"}}) for u in BAD_URLS],
]


@pytest.mark.parametrize("sample", INVALID_SAMPLES)
def test_schema_rejects_invalid_samples(sample: Any) -> None:
    assert not validator().is_valid(sample)
    assert message_issues(sample, frozenset({"100"}))


def test_schema_does_not_check_mentions() -> None:
    assert validator().is_valid(mention("anyone"))


# Near-valid messages: random field sets and values, so both sides see valid and invalid shapes.
_SCALARS = st.one_of(
    st.text(max_size=4),
    st.integers(-5, 5),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.none(),
    st.sampled_from(GOOD_URLS + BAD_URLS + ["url", "path", "base64", "file", ""]),
)
_MEDIA = st.dictionaries(st.sampled_from(["kind", "value", "x"]), _SCALARS, max_size=3)
_ALL_FIELDS = sorted({f for fs in FIELDS.values() for f in fs} | {"x"})
_DATA = st.one_of(
    st.dictionaries(st.sampled_from(_ALL_FIELDS), st.one_of(_SCALARS, _MEDIA), max_size=3),
    _SCALARS,
)
_URL_VALUES = st.sampled_from(GOOD_URLS + BAD_URLS)
_FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "text": st.text(max_size=4),
    "content": st.text(max_size=4),
    "target": st.text(max_size=4),
    "message_id": st.text(max_size=4),
    "forward_id": st.text(max_size=4),
    "id": st.one_of(st.text(max_size=3), st.integers(), st.floats(allow_nan=False)),
    "url": _URL_VALUES,
    "title": st.text(max_size=4),
    "media": st.sampled_from(["url", "path", "base64", "file"]).flatmap(
        lambda kind: st.fixed_dictionaries(
            {"kind": st.just(kind), "value": _URL_VALUES if kind == "url" else st.text(max_size=3)}
        )
    ),
}


@st.composite
def _mostly_valid_segment(draw: st.DrawFn) -> dict[str, Any]:
    """A well-formed segment, then at most one random mutation (or none)."""
    seg_type = draw(st.sampled_from(SEGMENT_TYPES))
    data = {f: draw(_FIELD_VALUES[f]) for f in FIELDS[seg_type]}
    seg: dict[str, Any] = {"type": seg_type, "data": data}
    mutation = draw(st.sampled_from(["none", "none", "drop", "add", "retype", "media", "type"]))
    if mutation == "drop" and data:
        del data[draw(st.sampled_from(sorted(data)))]
    elif mutation == "add":
        target = draw(st.sampled_from(["seg", "data"]))
        (seg if target == "seg" else data)[draw(st.sampled_from(_ALL_FIELDS))] = draw(_SCALARS)
    elif mutation == "retype" and data:
        data[draw(st.sampled_from(sorted(data)))] = draw(_SCALARS)
    elif mutation == "media" and "media" in data:
        data["media"] = draw(_MEDIA)
    elif mutation == "type":
        seg["type"] = draw(st.sampled_from([*SEGMENT_TYPES, "sticker"]))
    return seg


_SEGMENT = st.one_of(
    _mostly_valid_segment(),
    st.fixed_dictionaries(
        {"type": st.sampled_from([*SEGMENT_TYPES, "sticker"]), "data": _DATA},
        optional={"x": _SCALARS},
    ),
    st.dictionaries(st.sampled_from(["type", "data", "x"]), _SCALARS, max_size=3),
    _SCALARS,
)
_MESSAGE = st.one_of(
    st.fixed_dictionaries({"segments": st.lists(_mostly_valid_segment(), max_size=4)}),
    st.fixed_dictionaries({"segments": st.lists(_SEGMENT, max_size=4)}, optional={"x": _SCALARS}),
    st.fixed_dictionaries({"segments": _SCALARS}),
    _SCALARS,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_MESSAGE)
def test_schema_agrees_with_the_gate_on_structure(message: Any) -> None:
    issues = [i for i in message_issues(message) if i.code != "unknown_mention_target"]
    assert validator().is_valid(message) == (not issues), issues


# --- never raises -----------------------------------------------------------------------------
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


def _consistent(result: ContractResult) -> None:
    if result.valid:
        assert (result.message is not None) != result.no_reply
    else:
        assert result.message is None and not result.no_reply
        assert all(i.path and i.code and i.message for i in result.issues)


@settings(max_examples=300, deadline=None)
@given(_JSON | st.fixed_dictionaries({"segments": st.lists(_JSON | _SEGMENT, max_size=4)}))
def test_arbitrary_json_never_raises(value: Any) -> None:
    _consistent(IM_SEGMENTS_V1.validate(ReplyInput("tool", arguments=value), CTX))
    try:
        text = orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):
        return
    _consistent(IM_SEGMENTS_V1.validate(ReplyInput("text", text=text), CTX))


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=60)
    | st.builds(lambda a, b: a + GOOD + b, st.text(max_size=5), st.text(max_size=5))
)
def test_arbitrary_text_never_raises(text: str) -> None:
    result = IM_SEGMENTS_V1.validate(ReplyInput("text", text=text), None)
    _consistent(result)
