"""The decision table of docs/cli.md and the record rules of docs/records.md, through `Gate`."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.records import CorrectionRequest, DeadLetter, Delivery, ToolResult
from streams.cli.check_session import CheckSession
from streams.core.decision import Source
from streams.core.pipeline import Gate
from streams.settings import FileSettings, Settings
from tests.support.gates import disk_gate
from tests.support.samples import (
    GITHUB_PAT,
    NOW,
    SALES_CSV,
    csv_chart_arguments,
    encode,
    html_reply,
    im_text,
    raw_reply,
    tool_call,
)


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    (tmp_path / "ws" / "ws-3" / "reports").mkdir(parents=True)
    (tmp_path / "ws" / "ws-3" / "reports" / "sales.csv").write_text(SALES_CSV)
    (tmp_path / "media").mkdir()
    return disk_gate(
        Settings(
            workspaces_root=tmp_path / "ws",
            media_root=tmp_path / "media",
            leak_literals=["CANARY-7f3a9"],
        )
    )


def check(gate: Gate, record: Any, line_no: int = 1) -> dict[str, Any]:
    raw = record if isinstance(record, bytes) else encode(record)
    line = CheckSession(gate).line(raw, line_no, NOW).line()
    # every check line survives a JSON round trip unchanged
    assert orjson.loads(orjson.dumps(line)) == line
    return line


def codes(line: dict[str, Any]) -> list[str]:
    return [e["code"] for e in line["errors"]]


# ---- accepted ------------------------------------------------------------------------------


def test_valid_reply_is_delivered_whole(gate: Gate) -> None:
    line = check(gate, raw_reply())
    assert (line["id"], line["verdict"], line["action"], line["errors"]) == (
        "t-42",
        "accepted",
        "deliver",
        [],
    )
    delivery = Delivery.model_validate(line["output"])
    assert delivery.delivery_id == delivery.turn_id == "t-42"
    assert delivery.kind == "reply" and delivery.corrected is False
    assert delivery.message == orjson.loads(raw_reply()["output"]["text"])
    assert delivery.masked == [] and delivery.notices == []
    assert delivery.delivered_at == "2026-11-30T12:00:01.000Z"


def test_delivery_goes_to_the_platform_topic_keyed_by_conversation(gate: Gate) -> None:
    decision = gate.decide_reply(encode(raw_reply(platform="ide")), Source("replies.raw"), NOW)
    assert (decision.topic, decision.key) == ("delivery.ide", b"c-7")


def test_topic_prefix_applies_to_every_output(tmp_path: Path) -> None:
    gate = disk_gate(Settings(topic_prefix="prod.", workspaces_root=tmp_path))
    assert gate.decide_reply(encode(raw_reply()), Source("x"), NOW).topic == "prod.delivery.im"
    assert gate.decide_reply(b"{", Source("x"), NOW).topic == "prod.replies.dlq"


def test_json_tool_call_carries_the_reply(gate: Gate) -> None:
    segments = {"segments": [{"type": "text", "data": {"text": "from the tool"}}]}
    record = raw_reply(
        output={
            "tool_calls": [
                {"name": "lookup", "arguments": {"q": 1}},
                {"name": "json", "arguments": segments},
            ]
        }
    )
    line = check(gate, record)
    assert line["action"] == "deliver"
    assert line["output"]["message"] == segments


def test_reasoning_is_never_the_reply(gate: Gate) -> None:
    line = check(gate, raw_reply(output={"reasoning": im_text([])}))
    assert line["action"] == "request_correction"
    assert codes(line) == ["missing_reply"]


@pytest.mark.parametrize(
    ("output", "code"),
    [
        (
            {"text": im_text([]), "tool_calls": [{"name": "json", "arguments": {"segments": []}}]},
            "ambiguous_reply",
        ),
        ({}, "missing_reply"),
        ({"text": None, "tool_calls": []}, "missing_reply"),
        (
            {
                "tool_calls": [
                    {"name": "json", "arguments": {"segments": []}},
                    {"name": "json", "arguments": {"segments": []}},
                ]
            },
            "multiple_json_tool_calls",
        ),
    ],
)
def test_reply_selection_rules(gate: Gate, output: dict[str, Any], code: str) -> None:
    line = check(gate, raw_reply(output=output))
    assert (line["verdict"], line["action"]) == ("rejected", "request_correction")
    assert code in codes(line)


def test_empty_segments_mean_no_reply(gate: Gate) -> None:
    line = check(gate, raw_reply(output={"text": im_text([])}))
    assert line == {
        "id": "t-42",
        "verdict": "no_reply",
        "action": "none",
        "errors": [],
        "output": None,
    }


def test_optional_fields_may_be_null_or_absent(gate: Gate) -> None:
    record = raw_reply(provider=None, context=None)
    record["output"] = {"text": im_text([{"type": "text", "data": {"text": "hi"}}])}
    assert check(gate, record)["action"] == "deliver"
    del record["provider"], record["context"]
    assert check(gate, record)["action"] == "deliver"


# ---- correction ----------------------------------------------------------------------------


def test_invalid_first_attempt_requests_one_correction(gate: Gate) -> None:
    bad = "```json\n" + im_text([{"type": "text", "data": {"text": "x"}}]) + "\n```"
    line = check(gate, raw_reply(output={"text": bad}))
    assert (line["verdict"], line["action"]) == ("rejected", "request_correction")
    assert codes(line) == ["not_json"]
    request = CorrectionRequest.model_validate(line["output"])
    assert request.invalid_output == bad  # whole, never truncated
    assert request.errors[0].code == "not_json"
    assert request.deadline == "2026-11-30T12:00:31.000Z"  # 30 s after the request
    assert "JSON Schema" in request.instructions and '"segments"' in request.instructions
    assert "never delivered" not in orjson.dumps(line["output"]).decode()  # no history


def test_correction_deadline_comes_from_settings(tmp_path: Path) -> None:
    gate = disk_gate(Settings(correction_deadline_seconds=5, workspaces_root=tmp_path))
    line = CheckSession(gate).line(encode(raw_reply(output={"text": "nope"})), 1, NOW).line()
    assert line["output"]["deadline"] == (NOW + timedelta(seconds=5)).isoformat(
        timespec="milliseconds"
    ).replace("+00:00", "Z")


def test_invalid_correction_gets_the_host_failure_notice(gate: Gate) -> None:
    line = check(gate, raw_reply(attempt=1, output={"text": "I am prose, not JSON"}))
    assert (line["verdict"], line["action"]) == ("rejected", "failure_notice")
    delivery = Delivery.model_validate(line["output"])
    assert delivery.kind == "failure_notice"
    text = delivery.message["segments"][0]["data"]["text"]
    assert text == gate.settings.failure_notice_text
    assert "prose" not in orjson.dumps(line["output"]).decode()  # never model text


def test_html_failure_notice_has_the_html_shape(gate: Gate) -> None:
    line = check(gate, html_reply(attempt=1, output={"text": "<p>unfenced</p>"}))
    message = line["output"]["message"]
    assert set(message) == {"html", "citations", "rag_fragments_used"}
    assert message["citations"] == [] and message["rag_fragments_used"] == []


def test_valid_correction_is_delivered_as_corrected(gate: Gate) -> None:
    line = check(gate, raw_reply(attempt=1))
    assert line["action"] == "deliver" and line["output"]["corrected"] is True


@pytest.mark.parametrize("attempt", [2, -1, True, 1.0, "1", None])
def test_attempt_is_zero_or_one_only(gate: Gate, attempt: Any) -> None:
    line = check(gate, raw_reply(attempt=attempt))
    assert line["verdict"] == "dead_letter"
    assert line["output"]["reason"] == "invalid_envelope"
    assert any(e["path"] == "attempt" for e in line["errors"])


# ---- dead letters --------------------------------------------------------------------------


def test_not_json_is_a_dead_letter_named_by_line_number(gate: Gate) -> None:
    line = check(gate, b"{not json", line_no=3)
    assert (line["id"], line["verdict"], line["action"]) == (3, "dead_letter", "dead_letter")
    letter = DeadLetter.model_validate(line["output"])
    assert letter.reason == "not_json" and letter.record == "{not json"
    assert (letter.source_topic, letter.partition, letter.offset) == ("replies.raw", 0, 2)


def test_invalid_utf8_is_not_json(gate: Gate) -> None:
    line = check(gate, b'{"turn_id": "\xff"}')
    assert line["output"]["reason"] == "not_json"
    assert "\ufffd" in line["output"]["record"]


def test_unknown_contract_is_a_dead_letter(gate: Gate) -> None:
    line = check(gate, raw_reply(contract="im.segments.v9"))
    assert line["id"] == "t-42"
    assert line["output"]["reason"] == "unknown_contract"


@pytest.mark.parametrize(
    "change",
    [
        {"surprise": 1},
        {"turn_id": ""},
        {"turn_id": "x" * 201},
        {"turn_id": 42},
        {"platform": 7},
        {"produced_at": "yesterday"},
        {"output": {"text": "x", "extra": 1}},
        {"context": {"sender_id": 123}},
        {"context": {"members": [1, 2]}},
    ],
)
def test_envelopes_are_closed_and_strict(gate: Gate, change: dict[str, Any]) -> None:
    line = check(gate, raw_reply(**change))
    assert line["verdict"] == "dead_letter"
    assert line["output"]["reason"] == "invalid_envelope"
    assert line["errors"], "the error names the path and the rule"


def test_turn_id_of_200_chars_is_fine(gate: Gate) -> None:
    assert check(gate, raw_reply(turn_id="x" * 200))["verdict"] == "accepted"


def test_record_with_neither_id_is_a_dead_letter(gate: Gate) -> None:
    line = check(gate, {"hello": "world"}, line_no=9)
    assert (line["id"], line["verdict"]) == (9, "dead_letter")
    assert line["output"]["reason"] == "invalid_envelope"


def test_oversized_record_is_a_dead_letter_cut_at_64_kib(tmp_path: Path) -> None:
    gate = disk_gate(Settings(max_record_bytes=200_000, workspaces_root=tmp_path))
    record = encode(raw_reply(output={"text": "é" * 150_000}))
    line = CheckSession(gate).line(record, 1, NOW).line()
    assert line["output"]["reason"] == "record_too_large"
    assert len(line["output"]["record"].encode()) <= 64 * 1024


def test_dead_letter_record_is_masked(gate: Gate) -> None:
    line = check(gate, b'{"turn_id": "t", "token": "' + GITHUB_PAT.encode() + b'"')
    assert GITHUB_PAT not in orjson.dumps(line).decode()
    assert "[REDACTED:" in line["output"]["record"]


# ---- masking -------------------------------------------------------------------------------


def test_secrets_are_masked_in_the_delivery_with_rule_path_and_count(gate: Gate) -> None:
    text = f"token {GITHUB_PAT} and again {GITHUB_PAT}, canary CANARY-7f3a9"
    record = raw_reply(output={"text": im_text([{"type": "text", "data": {"text": text}}])})
    line = check(gate, record)
    dumped = orjson.dumps(line).decode()
    assert GITHUB_PAT not in dumped and "CANARY-7f3a9" not in dumped
    message_text = line["output"]["message"]["segments"][0]["data"]["text"]
    assert message_text.startswith("token [REDACTED:")
    masked = {(m["rule"], m["path"]): m["count"] for m in line["output"]["masked"]}
    assert masked[("literal", "segments[0].data.text")] == 1
    assert sum(masked.values()) == 3
    assert all(m["path"] == "segments[0].data.text" for m in line["output"]["masked"])


def test_correction_requests_are_masked(gate: Gate) -> None:
    line = check(gate, raw_reply(output={"text": f"oops {GITHUB_PAT}"}))
    assert line["action"] == "request_correction"
    assert GITHUB_PAT not in line["output"]["invalid_output"]
    assert line["output"]["invalid_output"].startswith("oops [REDACTED:")


# ---- HTML and media ------------------------------------------------------------------------


def test_html_answer_is_delivered_with_citations(gate: Gate) -> None:
    line = check(gate, html_reply())
    assert line["action"] == "deliver", line["errors"]
    message = line["output"]["message"]
    assert message["html"].startswith('<p id="text-8">')
    assert "doc://docid-17-c2-p3?id=text-21" in message["citations"]
    assert message["rag_fragments_used"] == ["doc://docid-17-c2-p3?id=text-21"]


def test_unavailable_media_is_replaced_and_noticed(gate: Gate) -> None:
    segments = [
        {"type": "text", "data": {"text": "see"}},
        {"type": "image", "data": {"media": {"kind": "path", "value": "missing.png"}}},
    ]
    line = check(gate, raw_reply(output={"text": im_text(segments)}))
    assert line["action"] == "deliver"
    assert line["output"]["message"]["segments"][1] == {
        "type": "text",
        "data": {"text": FileSettings().attachment_unavailable_text},
    }
    assert line["output"]["notices"] == [{"path": "segments[1]", "reason": "attachment_unreadable"}]


# ---- tool calls ----------------------------------------------------------------------------


def test_tool_call_without_csv_is_accepted(gate: Gate) -> None:
    line = check(gate, tool_call())
    assert (line["id"], line["verdict"], line["action"]) == ("call-1", "accepted", "tool_result")
    result = ToolResult.model_validate(line["output"])
    assert result.status == "ok" and result.text == "Rich output accepted."
    assert result.metadata.normalized.generic.output is None
    assert result.metadata.normalized.generic.input == tool_call()["arguments"]


def test_csv_chart_is_snapshotted(gate: Gate) -> None:
    line = check(gate, tool_call(csv_chart_arguments()))
    assert line["action"] == "tool_result", line["errors"]
    output = line["output"]["metadata"]["normalized"]["generic"]["output"]
    assert output == {
        "version": 1,
        "resolved_charts": [
            {
                "block_index": 0,
                "labels": ["Jan", "Feb", "Mar"],
                "series": [
                    {"label": "Sales (k)", "values": [10, None, 12.25]},
                    {"label": "cost", "values": [4.5, 5, 6]},
                ],
            }
        ],
    }
    assert orjson.loads(line["output"]["text"]) == output


def test_tool_error_names_path_and_rule(gate: Gate) -> None:
    line = check(gate, tool_call(csv_chart_arguments("../../etc/passwd.csv")))
    assert (line["verdict"], line["action"]) == ("rejected", "tool_error")
    result = line["output"]
    assert result["status"] == "error"
    assert "blocks[0].csv.path" in result["text"] and "parent_segment" in result["text"]
    assert result["metadata"]["normalized"]["generic"] == {"input": None, "output": None}


def test_tool_input_is_masked(gate: Gate) -> None:
    arguments = tool_call()["arguments"]
    arguments["description"] = f"token {GITHUB_PAT}"
    line = check(gate, tool_call(arguments))
    assert GITHUB_PAT not in orjson.dumps(line).decode()


def test_malformed_tool_call_is_a_dead_letter(gate: Gate) -> None:
    line = check(gate, {"call_id": "c", "task_id": 5})
    assert (line["id"], line["verdict"]) == ("c", "dead_letter")
    assert line["output"]["source_topic"] == "toolcalls.raw"


def test_closed_platforms_turn_an_unknown_platform_into_a_dead_letter(tmp_path: Path) -> None:
    gate = disk_gate(Settings(closed_platforms=True, workspaces_root=tmp_path))
    line = CheckSession(gate).line(encode(raw_reply(platform="fax")), 1, NOW).line()
    assert line["verdict"] == "dead_letter"
    assert [e["code"] for e in line["errors"]] == ["unknown_platform"]


def test_a_value_found_in_a_tool_calls_input_is_masked_in_its_output(tmp_path: Path) -> None:
    """Once known, masked everywhere: the input and the CSV snapshot are one record."""
    secret = "Zq8vN3xLw2pTqR7m"
    gate = disk_gate(Settings(workspaces_root=tmp_path / "ws", media_root=tmp_path))
    (tmp_path / "ws" / "ws-3" / "reports").mkdir(parents=True)
    (tmp_path / "ws" / "ws-3" / "reports" / "sales.csv").write_text(
        SALES_CSV.replace("Mar", secret)
    )
    arguments = csv_chart_arguments()
    arguments["description"] = f'db_password = "{secret}"'
    line = check(gate, tool_call(arguments))
    assert line["action"] == "tool_result", line["errors"]
    assert secret not in orjson.dumps(line).decode()
    (chart,) = line["output"]["metadata"]["normalized"]["generic"]["output"]["resolved_charts"]
    assert chart["labels"] == ["Jan", "Feb", "[REDACTED:password-assignment]"]


def test_shown_ids_do_not_depend_on_the_records_before(tmp_path: Path) -> None:
    """A secret-shaped id is masked (with its digest) and a plain one shown as it is, whichever
    ids the gate remembers from the records before."""
    ids = [("t-1", "c-1"), (GITHUB_PAT, "c-2"), ("t-3", GITHUB_PAT), ("t-4", "c-4")] * 3
    shared = disk_gate(Settings(workspaces_root=tmp_path))
    for turn_id, conversation_id in ids:
        record = raw_reply(turn_id=turn_id, conversation_id=conversation_id)
        fresh = disk_gate(Settings(workspaces_root=tmp_path))
        first = check(shared, record)["output"]
        assert first == check(fresh, record)["output"]
        for field, value in (("turn_id", turn_id), ("conversation_id", conversation_id)):
            if value == GITHUB_PAT:
                assert GITHUB_PAT not in first[field] and "#" in first[field]
            else:
                assert first[field] == value


_IDS = st.sampled_from(
    ["t-1", "c-1", "", GITHUB_PAT, f"x{GITHUB_PAT}", f"id/{GITHUB_PAT}", "password=Hunter2Hunter2",
     "&#103;hp_" + GITHUB_PAT[4:], "AKIAIOSFODNN7EXAMPLE", "t\n-2", "é-3", "tool.search"]
)  # fmt: skip


_ID_GATE = disk_gate(Settings())


@settings(max_examples=300, deadline=None)
@given(st.lists(_IDS, min_size=1, max_size=4))
def test_ids_shown_together_are_each_shown_as_alone(ids: list[str]) -> None:
    """`shown_ids` checks several ids in one pre-filter pass: the same forms as `shown_id`."""
    gate = _ID_GATE
    assert gate.shown_ids(*ids) == tuple(gate.shown_id(value) for value in ids)
