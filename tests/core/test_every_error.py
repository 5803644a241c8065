"""The one correction carries every error that can be known: where the transport is broken but
the payload can still be located (text or a fence around one JSON object, a key given twice), the
payload is validated too, transport errors first. A scripted model that fixes exactly what it is
told, and nothing else, then succeeds at attempt 1 for every combination built here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas.schema_contract import SchemaContract
from streams.cli.check_session import CheckSession
from streams.core.pipeline import Gate
from streams.settings import Settings
from tests.support.gates import disk_gate
from tests.support.samples import NOW, SALES_CSV, csv_chart_arguments, encode, raw_reply, tool_call

SENDER = "123456789"
GOOD_IM = {
    "segments": [
        {"type": "text", "data": {"text": "Revenue grew"}},
        {"type": "mention", "data": {"target": SENDER}},
    ]
}
_PART = re.compile(r'\[([0-9]+)\]|\["((?:[^"\\]|\\.)*)"\]|\.?([A-Za-z_][A-Za-z0-9_]*)')


def _parts(path: str) -> list[str | int]:
    if path == "$":
        return []
    parts: list[str | int] = []
    for index, quoted, name in _PART.findall(path):
        parts.append(int(index) if index else json.loads(f'"{quoted}"') if quoted else name)
    return parts


def literal_fix(text: str, errors: list[dict[str, str]]) -> str:
    """What a model that does exactly what each error says sends back (and nothing more)."""
    codes = {e["code"] for e in errors}
    if "not_json" in codes:  # "no text around it": keep the one object
        text = text[text.find("{") : text.rfind("}") + 1]
    value = json.loads(text)  # "give each key once": the one the errors were about
    cuts: dict[tuple[str | int, ...], list[int]] = {}
    for error in errors:
        parts = _parts(error["path"])
        if not parts:
            continue
        *parents, last = parts
        node = value
        for part in parents:
            node = node[part]
        if error["code"] == "unknown_field":  # "not a field": remove it
            del node[last]
        elif error["code"] == "unknown_mention_target":  # "mention only a given ID"
            node[last] = SENDER
        elif error["code"] == "control_character":  # the character at that index goes
            assert isinstance(last, int)
            cuts.setdefault(tuple(parents), []).append(last)
    for where, indexes in cuts.items():
        *owner, field = where
        holder = value
        for part in owner:
            holder = holder[part]
        chars = list(holder[field])
        for index in sorted(indexes, reverse=True):
            del chars[index]
        holder[field] = "".join(chars)
    return json.dumps(value)


TRANSPORTS = {
    "none": lambda body: body,
    "prose_around": lambda body: f"Sure! Here is the reply:\n{body}\nHope this helps.",
    "fence": lambda body: f"```json\n{body}\n```",
    "fence_and_a_trailing_line": lambda body: f"```json\n{body}\n```\nLet me know.",
    "key_twice": lambda body: body.replace('{"segments":', '{"segments":[],"segments":', 1),
}
PAYLOADS = {
    "none": lambda m: m,
    "unknown_field": lambda m: {**m, "colour": "red"},
    "stranger_mentioned": lambda m: {
        "segments": [m["segments"][0], {"type": "mention", "data": {"target": "999"}}]
    },
    "control_character": lambda m: {
        "segments": [{"type": "text", "data": {"text": "Deploy \x1b[2J \u202egnp.exe"}}]
    },
    "nested_unknown_field": lambda m: {
        "segments": [{"type": "text", "data": {"text": "hi", "bold": True}}, *m["segments"][1:]]
    },
}


def judge(gate: Gate, text: str, attempt: int) -> dict[str, Any]:
    record = raw_reply(output={"text": text}, attempt=attempt)
    return CheckSession(gate).line(encode(record), 1, NOW).line()


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_a_literal_model_succeeds_with_the_one_correction(
    gate: Gate, transport: str, payload: str
) -> None:
    body = json.dumps(PAYLOADS[payload](GOOD_IM), separators=(",", ":"))
    text = TRANSPORTS[transport](body)
    first = judge(gate, text, 0)
    if transport == payload == "none":
        assert first["action"] == "deliver"
        return
    assert first["action"] == "request_correction"
    codes = [e["code"] for e in first["errors"]]
    if transport != "none" and payload != "none":
        assert len(set(codes)) >= 2, codes  # the transport's error and the payload's together
    if transport in ("prose_around", "fence", "fence_and_a_trailing_line"):
        assert codes[0] == "not_json"  # transport first
    second = judge(gate, literal_fix(text, first["errors"]), 1)
    assert (second["verdict"], second["action"]) == ("accepted", "deliver"), second["errors"]


def test_a_located_payload_is_never_delivered(gate: Gate) -> None:
    line = judge(gate, "Here: " + json.dumps(GOOD_IM), 0)
    assert (line["action"], [e["code"] for e in line["errors"]]) == (
        "request_correction",
        ["not_json"],
    )


def test_a_caller_owned_contract_gets_the_payload_errors_with_the_transport_error() -> None:
    contract = SchemaContract(
        "acme.ticket.v1",
        {"type": "object", "properties": {"n": {"type": "integer"}}, "additionalProperties": False},
    )
    from schemas.contract import ReplyInput

    result = contract.validate(ReplyInput("text", text='Ticket: {"n": "1", "x": 2} done'))
    assert [i.code for i in result.issues] == [
        "not_json",
        "schema.type",
        "schema.additionalProperties",
    ]


# ---- the rich-output tool: bad arguments and a bad CSV in one answer -------------------------


@pytest.fixture
def tool_gate(tmp_path: Path) -> Gate:
    (tmp_path / "ws-3" / "reports").mkdir(parents=True)
    bad = SALES_CSV.replace("Feb,,5", "Feb,n/a,5")
    (tmp_path / "ws-3" / "reports" / "sales.csv").write_text(bad, encoding="utf-8")
    return disk_gate(Settings(workspaces_root=tmp_path, media_root=tmp_path))


def test_a_tool_call_with_bad_arguments_and_a_bad_csv_names_both(tool_gate: Gate) -> None:
    arguments = csv_chart_arguments()
    arguments["title"] = "x" * 121
    arguments["blocks"].append({"type": "metrics", "items": [], "colour": 1})
    line = CheckSession(tool_gate).line(encode(tool_call(arguments)), 1, NOW).line()
    assert line["action"] == "tool_error"
    codes = [e["code"] for e in line["errors"]]
    assert "too_long" in codes and "unknown_field" in codes
    assert codes[-1] == "csv_invalid_number"  # the file's error after the arguments'
    assert "csv_invalid_number" in line["output"]["text"]


def test_fixing_everything_the_tool_error_names_is_accepted(
    tool_gate: Gate, tmp_path: Path
) -> None:
    (tmp_path / "ws-3" / "reports" / "sales.csv").write_text(SALES_CSV, encoding="utf-8")
    line = CheckSession(tool_gate).line(encode(tool_call(csv_chart_arguments())), 1, NOW).line()
    assert line["action"] == "tool_result"
    assert orjson.loads(line["output"]["text"])["version"] == 1
