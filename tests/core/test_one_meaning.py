"""One meaning per record: a key given twice, or a lone surrogate escape, is refused wherever it
stands (the reply, tool-call arguments, a caller-owned schema's reply, the record envelope, a
delivery an endpoint reads), since two JSON readers would see two different records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.contract import ReplyInput
from schemas.json_read import duplicate_keys
from schemas.registry import CONTRACTS
from schemas.schema_contract import SchemaContract
from streams.cli.check import check_one
from streams.cli.check_session import CheckSession
from streams.core.pipeline import Gate
from streams.endpoint.deliveries import judge
from tests.support.deliveries import delivery
from tests.support.samples import encode, im_text, raw_reply, tool_call

SAFE = {"type": "text", "data": {"text": "SAFE"}}
EVIL = {"type": "text", "data": {"text": "EVIL"}}


def line(gate: Gate, raw: bytes) -> dict[str, Any]:
    return check_one(CheckSession(gate), raw, 1).line()


def errors(result: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["path"], e["code"]) for e in result["errors"]]


def with_text(text: str, **changes: Any) -> bytes:
    return encode(raw_reply(output={"text": text}, **changes))


def test_the_issue_example_is_corrected_not_delivered_as_either_value(gate: Gate) -> None:
    safe, evil = im_text([SAFE])[13:-2], im_text([EVIL])[13:-2]
    text = '{"segments":[' + safe + '],"segments":[' + evil + "]}"
    result = line(gate, with_text(text))
    assert (result["verdict"], result["action"]) == ("rejected", "request_correction")
    assert errors(result) == [("segments", "duplicate_key")]


def test_a_key_twice_deep_in_the_reply_names_its_path(gate: Gate) -> None:
    text = '{"segments":[{"type":"text","data":{"text":"a","text":"b"}}]}'
    assert errors(line(gate, with_text(text))) == [("segments[0].data.text", "duplicate_key")]


def test_a_key_twice_in_the_json_tool_call_is_corrected_with_every_other_error(
    gate: Gate,
) -> None:
    arguments = '{"segments":[{"type":"text","data":{"text":"a","text":"b"}},{"type":"gif"}]}'
    record = raw_reply(output={"tool_calls": [{"name": "json", "arguments": "@@"}]})
    raw = encode(record).replace(b'"@@"', arguments.encode())
    result = line(gate, raw)
    assert result["action"] == "request_correction"
    assert errors(result)[0] == ("segments[0].data.text", "duplicate_key")  # transport first
    assert ("segments[1].type", "unknown_segment_type") in errors(result)


@pytest.mark.parametrize(
    ("old", "new", "path"),
    [
        (b'"contract":"im', b'"contract":"x.v1","contract":"im', "contract"),
        (b'"language":"en"', b'"language":"en","language":"fr"', "context.language"),
        (b'"reasoning":', b'"reasoning":"a","reasoning":', "output.reasoning"),
    ],
)
def test_a_key_twice_in_the_envelope_is_a_dead_letter(
    gate: Gate, old: bytes, new: bytes, path: str
) -> None:
    raw = encode(raw_reply())
    assert old in raw
    result = line(gate, raw.replace(old, new, 1))
    assert (result["verdict"], result["output"]["reason"]) == ("dead_letter", "invalid_envelope")
    assert errors(result) == [(path, "duplicate_key")]
    assert "duplicate_key" in result["output"]["detail"]


def test_a_cancel_with_a_key_twice_is_a_dead_letter(gate: Gate) -> None:
    raw = b'{"turn_id":"t-1","conversation_id":"c-1","action":"cancel","action":"cancel"}'
    result = line(gate, raw)
    assert result["verdict"] == "dead_letter" and errors(result) == [("action", "duplicate_key")]


def test_a_key_twice_in_rich_output_arguments_is_a_tool_error_at_its_path(gate: Gate) -> None:
    raw = encode(tool_call()).replace(b'"title":"Build health"', b'"title":"a","title":"b"')
    result = line(gate, raw)
    assert (result["verdict"], result["action"]) == ("rejected", "tool_error")
    assert errors(result) == [("title", "duplicate_key")]
    assert "title: duplicate_key" in result["output"]["text"]


def test_escaped_colons_neither_hide_a_duplicate_nor_invent_one(gate: Gate) -> None:
    clean = '{"segments":[{"type":"text","data":{"text":"a\\u003ab\\u003A"}}]}'
    assert line(gate, with_text(clean))["action"] == "deliver"
    hidden = '{"segments":[{"type":"text","data":{"text":"\\u003a","text":"b"}}]}'
    assert errors(line(gate, with_text(hidden))) == [("segments[0].data.text", "duplicate_key")]


def test_a_caller_owned_schema_reply_with_a_key_twice_is_invalid() -> None:
    contract = SchemaContract("acme.note.v1", {"type": "object"})
    result = contract.validate(ReplyInput("text", text='{"a": {"b": 1, "b": 2}}'))
    assert [(i.path, i.code) for i in result.issues] == [("a.b", "duplicate_key")]
    assert contract.validate(ReplyInput("text", text='{"a": {"b": 1, "c": 2}}')).valid


def test_a_lone_surrogate_in_the_reply_is_corrected(gate: Gate) -> None:
    result = line(gate, with_text('{"segments":[{"type":"text","data":{"text":"\\ud800"}}]}'))
    assert result["action"] == "request_correction"
    assert errors(result) == [("$", "lone_surrogate")]


def test_a_lone_surrogate_in_the_envelope_is_a_dead_letter(gate: Gate) -> None:
    raw = encode(raw_reply()).replace(b'"minimax"', b'"mini\\udc00max"')
    result = line(gate, raw)
    assert result["output"]["reason"] == "not_json"
    assert [c for _, c in errors(result)] == ["not_json", "lone_surrogate"]


def test_an_endpoint_refuses_a_delivery_with_a_key_twice() -> None:
    raw = orjson.dumps(delivery("t-1", "SAFE"))
    assert judge(raw, CONTRACTS, "im", max_bytes=1 << 20)[0].valid
    doubled = raw.replace(b'"text":"SAFE"', b'"text":"SAFE","text":"EVIL"', 1)
    checked, _ = judge(doubled, CONTRACTS, "im", max_bytes=1 << 20)
    assert not checked.valid
    assert [(i.path, i.code) for i in checked.issues] == [
        ("message.segments[0].data.text", "duplicate_key")
    ]


# ---- the detector against the standard library's own pairs ------------------------------------

KEYS = st.sampled_from(["a", "b", ":", "a:b", "\u003a", "é", ""])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(':ab\\"', max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(KEYS, inner), max_size=4),
    max_leaves=12,
)


def _text(value: Any, escape: bool) -> str:
    """JSON text of a value whose objects are lists of pairs (keys may repeat); `escape`
    writes the colons in strings as `\\u003a`."""
    if isinstance(value, list) and value and all(isinstance(p, tuple) for p in value):
        pairs = (f"{_text(k, escape)}:{_text(v, escape)}" for k, v in value)
        return "{" + ",".join(pairs) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_text(v, escape) for v in value) + "]"
    text = json.dumps(value)
    return text.replace(":", "\\u003a") if escape and isinstance(value, str) else text


def _has_duplicate(text: str) -> bool:
    found: list[bool] = []

    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        found.append(len({k for k, _ in pairs}) != len(pairs))
        return dict(pairs)

    json.loads(text, object_pairs_hook=hook)
    return any(found)


@given(JSON_VALUES, st.booleans())
@settings(max_examples=400, deadline=None)
def test_property_a_duplicate_is_found_exactly_when_there_is_one(value: Any, escape: bool) -> None:
    text = _text(value, escape)  # colons written as escapes must not change the answer
    data = text.encode()
    assert bool(duplicate_keys(data, orjson.loads(data))) == _has_duplicate(text)
    assert bool(duplicate_keys(text, orjson.loads(text))) == _has_duplicate(text)  # as a reply
    spaced = text.replace(",", ", ")  # not as orjson writes it: the colons are counted
    assert bool(duplicate_keys(spaced, orjson.loads(spaced))) == _has_duplicate(text)


def test_a_value_nested_deeper_than_orjson_writes_is_still_checked(tmp_path: Path) -> None:
    del tmp_path
    deep = "[" * 600 + '{"a":1,"a":2}' + "]" * 600
    assert duplicate_keys(deep, orjson.loads(deep)) == [(*([0] * 600), "a")]
    clean = "[" * 600 + '{"a":1}' + "]" * 600
    assert duplicate_keys(clean, orjson.loads(clean)) == []
