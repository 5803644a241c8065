"""Numbers no 64-bit value holds: carried exactly or refused at their path, never floats."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from schemas.json_numbers import (
    INT_MAX,
    INT_MIN,
    as_written,
    loads_wide,
    wide_integer,
    wide_number_issues,
)
from streams.cli.check_session import CheckSession
from streams.core.pipeline import Gate
from streams.settings import Settings
from tests.support.gates import disk_gate
from tests.support.samples import raw_reply, tool_call

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
BIG = "123456789012345678901234567890"


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Gate:
    root = tmp_path_factory.mktemp("numbers")
    (root / "ws").mkdir()
    (root / "media").mkdir()
    return disk_gate(Settings(workspaces_root=root / "ws", media_root=root / "media"))


def face_text(face_id: str) -> str:
    """An im.segments.v1 reply text with a face segment whose id is the literal `face_id`."""
    return '{"segments": [{"type": "face", "data": {"id": ' + face_id + "}}]}"


@pytest.mark.parametrize(
    "literal",
    [BIG, "-" + BIG, str(INT_MAX + 1), str(INT_MIN - 1), "1" + "0" * 5000],
)
def test_out_of_range_integers_are_found(literal: str) -> None:
    for text in (f"[{literal}]", f'{{"a": "x", "b": {literal}}}'):
        issue = wide_integer(text)
        assert issue is not None and issue.code == "integer_out_of_range"
        assert literal.lstrip("-") not in issue.message  # position and size, never the value
        assert wide_integer(text.encode()) == issue


@pytest.mark.parametrize(
    "text",
    [
        f"[{INT_MAX}, {INT_MIN}, 0, -1]",
        f'{{"id": "{BIG}"}}',  # in a string: text, not a number
        f'{{"k\\"{BIG}": 1}}',  # after an escaped quote, still inside the string
        f"[{BIG}.5, 1.{BIG}, 1e{'0' * 20}2, {BIG}e2, -{BIG}E-3]",  # written as floats: floats
        '{"plain": [1, 2, 3]}',
    ],
)
def test_in_range_integers_strings_and_floats_pass(text: str) -> None:
    orjson.loads(text)  # every case is valid JSON
    assert wide_integer(text) is None


def test_orjson_would_have_changed_the_value() -> None:
    # Why the check exists: the parser turns the literal into a float silently.
    assert orjson.loads(BIG) == 1.2345678901234568e29
    assert orjson.loads(str(INT_MAX)) == INT_MAX and orjson.loads(str(INT_MIN)) == INT_MIN


def check(gate: Gate, raw: bytes) -> dict[str, Any]:
    line = CheckSession(gate).line(raw, 1, NOW).line()
    assert orjson.loads(orjson.dumps(line)) == line
    return line


def test_reply_text_with_a_wide_integer_asks_for_a_correction(gate: Gate) -> None:
    line = check(gate, orjson.dumps(raw_reply(output={"text": face_text(BIG)})))
    assert (line["verdict"], line["action"]) == ("rejected", "request_correction")
    errors = [(e["path"], e["code"]) for e in line["errors"]]
    assert errors == [("segments[0].data.id", "integer_out_of_range")]  # its path, no offset
    assert "character" not in line["errors"][0]["message"]
    assert line["output"]["invalid_output"] == face_text(BIG)  # the reply as it came, exactly


def test_64_bit_integers_are_delivered_exactly(gate: Gate) -> None:
    for value in (INT_MAX, INT_MIN):
        line = check(gate, orjson.dumps(raw_reply(output={"text": face_text(str(value))})))
        assert line["action"] == "deliver"
        assert line["output"]["message"]["segments"][0]["data"]["id"] == value


def splice(record: dict[str, Any], literal: str) -> bytes:
    """`record` as JSON with its one `"@"` string replaced by the number `literal`, as written."""
    raw = orjson.dumps(record)
    assert raw.count(b'"@"') == 1
    return raw.replace(b'"@"', literal.encode())


WIDE = [
    (BIG, "integer_out_of_range"),
    ("-" + BIG, "integer_out_of_range"),
    ("1e400", "not_finite"),
    ("-1e999", "not_finite"),
]


@pytest.mark.parametrize(("literal", "code"), WIDE)
def test_a_reply_texts_wide_number_is_named_at_its_path_like_a_tool_calls(
    gate: Gate, literal: str, code: str
) -> None:
    """The same number, through `output.text`: the same code at the same path, alone."""
    line = check(gate, orjson.dumps(raw_reply(output={"text": face_text(literal)})))
    assert (line["verdict"], line["action"]) == ("rejected", "request_correction")
    assert [(e["path"], e["code"]) for e in line["errors"]] == [("segments[0].data.id", code)]
    assert literal.lstrip("-") not in line["errors"][0]["message"]
    assert line["output"]["invalid_output"] == face_text(literal)


def test_every_wide_number_in_a_text_is_named_and_fenced_ones_too(gate: Gate) -> None:
    text = '{"segments": [{"type": "face", "data": {"id": 1e400}}, {"type": "face", '
    text += '"data": {"id": ' + BIG + "}}]}"
    line = check(gate, orjson.dumps(raw_reply(output={"text": text})))
    assert [(e["path"], e["code"]) for e in line["errors"]] == [
        ("segments[0].data.id", "not_finite"),
        ("segments[1].data.id", "integer_out_of_range"),
    ]
    fenced = "Here it is:\n```json\n" + face_text("-1e999") + "\n```"
    line = check(gate, orjson.dumps(raw_reply(output={"text": fenced})))
    codes = [(e["path"], e["code"]) for e in line["errors"]]
    assert codes[0] == ("$", "not_json") and ("segments[0].data.id", "not_finite") in codes


@pytest.mark.parametrize(("literal", "code"), WIDE)
def test_a_json_tool_calls_wide_number_asks_for_a_correction_at_its_path(
    gate: Gate, literal: str, code: str
) -> None:
    """Valid JSON (RFC 8259) that no 64-bit value holds: the reply is invalid, not the record."""
    face = {"segments": [{"type": "face", "data": {"id": "@"}}]}
    reply = raw_reply(output={"tool_calls": [{"name": "json", "arguments": face}]})
    line = check(gate, splice(reply, literal))
    assert (line["id"], line["verdict"], line["action"]) == (
        "t-42",
        "rejected",
        "request_correction",
    )
    assert [(e["path"], e["code"]) for e in line["errors"]] == [("segments[0].data.id", code)]
    assert literal not in line["errors"][0]["message"]  # never the value
    # the reply as it came, its number as written (not a float, not a string)
    assert line["output"]["invalid_output"] == face_text(literal).replace(" ", "")


@pytest.mark.parametrize(("literal", "code"), WIDE)
def test_a_rich_output_calls_wide_number_is_a_tool_error_at_its_path(
    gate: Gate, literal: str, code: str
) -> None:
    chart = {
        "type": "chart",
        "chart_type": "line",
        "title": "C",
        "summary": "S",
        "labels": ["a"],
        "series": [{"label": "s", "values": ["@"]}],
    }
    line = check(gate, splice(tool_call({"version": 1, "title": "T", "blocks": [chart]}), literal))
    assert (line["id"], line["action"]) == ("call-1", "tool_error")
    assert [(e["path"], e["code"]) for e in line["errors"]] == [
        ("blocks[0].series[0].values[0]", code)
    ]


@pytest.mark.parametrize("literal", [BIG, "1e400"])
def test_a_wide_number_in_the_envelope_is_a_dead_letter(gate: Gate, literal: str) -> None:
    line = check(gate, splice(raw_reply(attempt="@"), literal))
    assert (line["verdict"], line["output"]["reason"]) == ("dead_letter", "invalid_envelope")
    assert [e["path"] for e in line["errors"]] == ["attempt"]
    assert literal in line["output"]["record"]  # the record as it came
    assert "e+29" not in orjson.dumps(line).decode() and "inf" not in line["output"]["record"]


def test_a_wide_number_the_reply_does_not_use_is_no_verdict(gate: Gate) -> None:
    other = {"name": "lookup", "arguments": {"n": "@"}}
    line = check(
        gate, splice(raw_reply(output={"text": face_text("7"), "tool_calls": [other]}), BIG)
    )
    assert line["action"] == "deliver"


def test_numbers_are_kept_exactly_as_written() -> None:
    text = f'{{"a": [1, {BIG}, 1e400, -1e999, 2.5, {INT_MAX}, {INT_MIN}], "b": "{BIG}"}}'
    value = loads_wide(text.encode())
    assert [type(v).__name__ for v in value["a"]] == [
        "int",
        "WideNumber",
        "WideNumber",
        "WideNumber",
        "float",
        "int",
        "int",
    ]
    written = f'{{"a":[1,{BIG},1e400,-1e999,2.5,{INT_MAX},{INT_MIN}],"b":"{BIG}"}}'
    assert orjson.dumps(value, default=as_written) == written.encode()
    with pytest.raises(TypeError):
        orjson.dumps(value)  # never delivered by accident
    assert [(i.path, i.code) for i in wide_number_issues(value)] == [
        ("a[1]", "integer_out_of_range"),
        ("a[2]", "not_finite"),
        ("a[3]", "not_finite"),
    ]


@pytest.mark.parametrize(
    "data",
    [b'{"a": NaN}', b"[Infinity]", b'"\\ud800"', '"\u00e9"'.encode("utf-16"), b"[" * 5000, b"[1,]"],
)
def test_what_orjson_would_not_carry_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        loads_wide(data)


def test_long_digit_runs_inside_strings_are_no_verdict() -> None:
    # A 19-digit run inside ordinary strings (IDs, snowflakes) costs a scan, never a verdict.
    text = orjson.dumps({"ids": ["1234567890123456789012", "x" * 100], "n": 7}).decode()
    assert wide_integer(text) is None
