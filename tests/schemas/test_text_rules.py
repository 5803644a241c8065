"""Text a reader's terminal or client interprets: refused in every string of every contract's
reply (`control_character`), shown escaped in everything replygate writes itself."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from schemas.contract import ReplyInput
from schemas.rich_output import validate_rich_output
from schemas.schema_contract import SchemaContract
from schemas.text_plain import TEXT_PLAIN_V1
from schemas.text_rules import control_character_issues, escape_controls, find_control
from streams.cli.check_session import CheckSession
from streams.core.pipeline import Gate
from tests.support.samples import NOW, encode, im_text, raw_reply, tool_call

REFUSED = ["\x00", "\x07", "\x1b", "\x0b", "\x1f", "\x80", "\x9b", "\x9f", "\u202a", "\u202b",
           "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"]  # fmt: skip
# Tab, line feed, carriage return; the marks a right-to-left language needs; DEL (neither C0
# nor C1); ordinary letters.
KEPT = ["\t", "\n", "\r", "\u200e", "\u200f", "\u061c", "\x7f", "\xa0", "é", "ש", "😀"]


def check(gate: Gate, record: dict[str, Any]) -> dict[str, Any]:
    return CheckSession(gate).line(encode(record), 1, NOW).line()


def errors(line: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["path"], e["code"]) for e in line["errors"]]


@pytest.mark.parametrize("char", REFUSED)
def test_the_rule_refuses_c0_c1_and_bidi_controls(char: str) -> None:
    assert find_control(f"ab{char}") == 2
    assert [(i.path, i.code) for i in control_character_issues(f"a{char}", "t")] == [
        ("t[1]", "control_character")
    ]


@pytest.mark.parametrize("char", KEPT)
def test_the_rule_keeps_text_and_the_rtl_marks(char: str) -> None:
    assert find_control(f"a{char}b") is None


SEGMENTS = [
    ({"type": "text", "data": {"text": "X"}}, "segments[0].data.text[0]"),
    ({"type": "markdown", "data": {"content": "X"}}, "segments[0].data.content[0]"),
    ({"type": "share", "data": {"url": "https://e.com", "title": "X"}},
     "segments[0].data.title[0]"),
    ({"type": "reply", "data": {"message_id": "X"}}, "segments[0].data.message_id[0]"),
    ({"type": "face", "data": {"id": "X"}}, "segments[0].data.id[0]"),
    ({"type": "file", "data": {"media": {"kind": "file", "value": "X"}}},
     "segments[0].data.media.value[0]"),
]  # fmt: skip


@pytest.mark.parametrize(("segment", "path"), SEGMENTS)
@pytest.mark.parametrize("char", ["\x1b", "\u202e", "\x85"])
def test_every_im_string_refuses_a_control(
    gate: Gate, segment: dict[str, Any], path: str, char: str
) -> None:
    text = im_text([segment]).replace("X", json.dumps(char)[1:-1])  # as JSON writes it
    line = check(gate, raw_reply(output={"text": text}))
    assert (line["verdict"], line["action"]) == ("rejected", "request_correction")
    assert errors(line) == [(path, "control_character")]


def test_the_issue_example_is_corrected_and_its_preview_never_shown(gate: Gate) -> None:
    text = "Deploy \x1b[2J\x1b[31mFAILED\x07 \u202egnp.exe"
    line = check(
        gate, raw_reply(output={"text": im_text([{"type": "text", "data": {"text": text}}])})
    )
    assert line["action"] == "request_correction"
    assert [c for _, c in errors(line)] == ["control_character"] * 4


@pytest.mark.parametrize("char", KEPT)
def test_an_im_reply_keeps_text_and_marks(gate: Gate, char: str) -> None:
    text = im_text([{"type": "text", "data": {"text": f"a{char}b"}}])
    assert check(gate, raw_reply(output={"text": text}))["action"] == "deliver"


def test_a_key_with_a_control_is_refused_and_its_path_shown_escaped(gate: Gate) -> None:
    text = '{"segments": [], "a\\u001b[2Jb": 1}'
    line = check(gate, raw_reply(output={"text": text}))
    assert ('["a\\x1b[2Jb"]', "control_character") in errors(line)
    written = orjson.dumps(line["errors"]).decode()
    assert "\\u001b" not in written  # never the character itself


def test_a_caller_owned_schema_reply_refuses_controls_in_strings_and_keys() -> None:
    contract = SchemaContract("acme.note.v1", {"type": "object"})
    result = contract.validate(ReplyInput("text", text='{"n": ["ok", "a\\u202eb"], "\\u0007": 1}'))
    assert sorted((i.path, i.code) for i in result.issues) == [
        ('["\x07"]', "control_character"),
        ("n[1][1]", "control_character"),
    ]


def test_rich_output_arguments_refuse_controls() -> None:
    arguments = tool_call()["arguments"]
    arguments["title"] = "Build \u202ehealth"
    arguments["blocks"][0]["items"][0]["label"] = "T\x1bests"
    _, issues = validate_rich_output(arguments)
    assert [(i.path, i.code) for i in issues] == [
        ("title[6]", "control_character"),
        ("blocks[0].items[0].label[1]", "control_character"),
    ]


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\x9b"])
def test_plain_text_refuses_bidi_and_c1(char: str) -> None:
    result = TEXT_PLAIN_V1.validate(ReplyInput("text", text=f"ab{char}"))
    assert [(i.path, i.code) for i in result.issues] == [("text[2]", "control_character")]


def test_escape_shows_every_control_and_keeps_everything_else() -> None:
    assert escape_controls("a\x1b\x00\u202e\x7f\x9b\n\ud800ok\u200eé") == (
        "a\\x1b\\x00\\u202e\\x7f\\x9b\\x0a\\ud800ok\u200eé"
    )
