"""Integers beyond 64 bits: carried exactly or refused with `integer_out_of_range`, never floats."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson
import pytest

from schemas.json_numbers import INT_MAX, INT_MIN, wide_integer
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
    line = gate.check_line(raw, 1, NOW).line()
    assert orjson.loads(orjson.dumps(line)) == line
    return line


def test_reply_text_with_a_wide_integer_asks_for_a_correction(gate: Gate) -> None:
    line = check(gate, orjson.dumps(raw_reply(output={"text": face_text(BIG)})))
    assert (line["verdict"], line["action"]) == ("rejected", "request_correction")
    assert [(e["path"], e["code"]) for e in line["errors"]] == [("$", "integer_out_of_range")]
    assert line["output"]["invalid_output"] == face_text(BIG)  # the reply as it came, exactly


def test_64_bit_integers_are_delivered_exactly(gate: Gate) -> None:
    for value in (INT_MAX, INT_MIN):
        line = check(gate, orjson.dumps(raw_reply(output={"text": face_text(str(value))})))
        assert line["action"] == "deliver"
        assert line["output"]["message"]["segments"][0]["data"]["id"] == value


@pytest.mark.parametrize(
    "record",
    [
        # a json tool call's arguments, spliced in as raw JSON
        orjson.dumps(raw_reply(output={"tool_calls": [{"name": "json", "arguments": "@"}]})),
        # rich-output tool call arguments
        orjson.dumps(tool_call({"version": 1, "title": "@", "blocks": []})),
    ],
)
def test_record_with_a_wide_integer_is_a_dead_letter_not_a_float(gate: Gate, record: bytes) -> None:
    raw = record.replace(b'"@"', BIG.encode(), 1)
    assert orjson.loads(raw)  # parses, as a float
    line = check(gate, raw)
    assert (line["verdict"], line["action"]) == ("dead_letter", "dead_letter")
    assert [e["code"] for e in line["errors"]] == ["integer_out_of_range"]
    assert line["output"]["reason"] == "not_json"
    assert BIG in line["output"]["record"]  # the record as it came, not as a float
    assert "e+29" not in orjson.dumps(line).decode()


def test_long_digit_runs_inside_strings_are_no_verdict() -> None:
    # A 19-digit run inside ordinary strings (IDs, snowflakes) costs a scan, never a verdict.
    text = orjson.dumps({"ids": ["1234567890123456789012", "x" * 100], "n": 7}).decode()
    assert wide_integer(text) is None
