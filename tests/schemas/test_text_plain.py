"""`text.plain.v1` (docs/contracts.md section 4): each rule, positive and negative."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from schemas.contract import ReplyInput
from schemas.records import CorrectionRequest, Delivery
from schemas.text_plain import TEXT_PLAIN_V1
from schemas.text_rules import control_character_issues
from streams.cli.check_session import CheckSession
from streams.core.pipeline import Gate
from streams.settings import Settings
from tests.support.samples import GITHUB_PAT, NOW, encode, raw_reply


def plain(**changes: Any) -> dict[str, Any]:
    output = changes.pop("output", {"text": "Hello"})
    return raw_reply(contract="text.plain.v1", output=output, **changes)


def check(gate: Gate, record: dict[str, Any]) -> dict[str, Any]:
    return CheckSession(gate).line(encode(record), 1, NOW).line()


def codes(line: dict[str, Any]) -> list[str]:
    return [e["code"] for e in line["errors"]]


def test_text_is_delivered_as_text_never_parsed(gate: Gate) -> None:
    text = '{"segments": []} **not bold** @555000111 # not a heading\n\ttabbed\r\n'
    line = check(gate, plain(output={"text": text}))
    assert (line["verdict"], line["action"]) == ("accepted", "deliver")
    delivery = Delivery.model_validate(line["output"])
    assert delivery.message == {"text": text}
    assert delivery.contract == "text.plain.v1" and delivery.kind == "reply"


def test_the_text_is_masked(gate: Gate) -> None:
    line = check(gate, plain(output={"text": f"token {GITHUB_PAT} here"}))
    assert line["output"]["message"] == {"text": "token [REDACTED:github-pat] here"}
    assert line["output"]["masked"] == [{"rule": "github-pat", "path": "text", "count": 1}]
    assert GITHUB_PAT not in orjson.dumps(line).decode()


@pytest.mark.parametrize("text", ["", " ", "\n\t \r\n"])
def test_blank_text_is_no_reply(gate: Gate, text: str) -> None:
    line = check(gate, plain(output={"text": text}))
    assert (line["verdict"], line["action"], line["output"]) == ("no_reply", "none", None)


def test_a_json_tool_call_instead_of_text_is_missing_reply(gate: Gate) -> None:
    line = check(gate, plain(output={"tool_calls": [{"name": "json", "arguments": {"a": 1}}]}))
    assert (line["verdict"], line["action"]) == ("rejected", "request_correction")
    assert codes(line) == ["missing_reply"]


def test_a_json_tool_call_next_to_text_is_ambiguous(gate: Gate) -> None:
    output = {"text": "hi", "tool_calls": [{"name": "json", "arguments": {}}]}
    assert codes(check(gate, plain(output=output))) == ["ambiguous_reply"]


def test_neither_text_nor_tool_call_is_missing_reply(gate: Gate) -> None:
    assert codes(check(gate, plain(output={"reasoning": "thinking"}))) == ["missing_reply"]


def test_reasoning_never_counts_and_other_tool_calls_are_not_the_reply(gate: Gate) -> None:
    output = {
        "text": "answer",
        "reasoning": "secret plan",
        "tool_calls": [{"name": "x", "arguments": {}}],
    }
    line = check(gate, plain(output=output))
    assert line["output"]["message"] == {"text": "answer"}


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x0b", "\x0c", "\x1f", "\x80", "\x9f"])
def test_control_characters_are_invalid_and_located(gate: Gate, char: str) -> None:
    line = check(gate, plain(output={"text": f"ab{char}c"}))
    assert (line["verdict"], line["action"]) == ("rejected", "request_correction")
    assert line["errors"][0]["code"] == "control_character"
    assert line["errors"][0]["path"] == "text[2]"
    assert char not in line["errors"][0]["message"]


@pytest.mark.parametrize("char", ["\t", "\n", "\r", "\x7f", "\xa0", "é", "😀"])
def test_tab_newline_return_and_ordinary_characters_are_fine(gate: Gate, char: str) -> None:
    line = check(gate, plain(output={"text": f"a{char}b"}))
    assert line["action"] == "deliver"


def test_each_control_character_is_one_error_bounded() -> None:
    issues = control_character_issues("\x01a\x02", "text")
    assert [(i.path, i.code) for i in issues] == [
        ("text[0]", "control_character"),
        ("text[2]", "control_character"),
    ]
    many = control_character_issues("\x01" * 500, "text")
    assert len(many) == 101 and many[-1].code == "too_many_errors"


def test_correction_instructions_say_what_plain_text_may_not_hold(gate: Gate) -> None:
    line = check(gate, plain(output={"text": "bell\x07"}))
    request = CorrectionRequest.model_validate(line["output"])
    assert "control character" in request.instructions
    assert "JSON Schema" not in request.instructions  # the model writes text, not JSON
    assert "segments" not in request.instructions
    assert request.invalid_output == "bell\x07"


def test_a_corrected_plain_reply_and_the_failure_notice(gate: Gate) -> None:
    fixed = check(gate, plain(attempt=1, output={"text": "fine"}))
    assert fixed["output"]["corrected"] is True
    failed = check(gate, plain(attempt=1, output={"text": "\x00"}))
    assert failed["action"] == "failure_notice"
    notice = Delivery.model_validate(failed["output"])
    assert notice.message == {"text": Settings().failure_notice_text}
    assert notice.preview == Settings().failure_notice_text


def test_contract_alone_tool_transport_and_schema() -> None:
    result = TEXT_PLAIN_V1.validate(ReplyInput("tool", arguments={"text": "x"}), None)
    assert [i.code for i in result.issues] == ["missing_reply"]
    assert TEXT_PLAIN_V1.validate(ReplyInput("text", text="x"), None).message == {"text": "x"}
    assert TEXT_PLAIN_V1.model_schema() is None  # the model writes text, not JSON
    assert TEXT_PLAIN_V1.json_schema()["required"] == ["text"]  # the delivered message
