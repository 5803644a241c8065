"""`AgentClient` refuses, never coerces: NaN, the infinities and integers beyond 64 bits raise a
clear error naming the field before anything is sent (pydantic's JSON mode would have written
NaN as `null`, and a wide integer was a raw orjson TypeError). The same values written by a raw
producer are refused by the gate too (`replygate check`'s path): the same verdict, nothing
delivered. The producer is a recorder (no broker here): these tests are about what would be
sent, and the client refuses before it touches the producer."""

from __future__ import annotations

import math
from typing import Any

import orjson
import pytest

from streams.cli.check_session import CheckSession
from streams.client import AgentClient
from streams.client.agent import UnsendableRecord
from streams.core.pipeline import Gate
from streams.settings import Settings
from tests.client.test_agent_client import TURN, Recorder
from tests.support.samples import NOW, csv_chart_arguments, raw_reply, tool_call

FACE = "output.tool_calls[0].arguments.segments[0].data.id"
# value, the client's code, how a raw producer writes it, the gate's verdict and codes
CASES: list[tuple[Any, str, str, str, list[str]]] = [
    (math.nan, "not_finite", "NaN", "dead_letter", ["not_json"]),
    (math.inf, "not_finite", "1e400", "rejected", ["not_finite"]),
    (-math.inf, "not_finite", "-1e400", "rejected", ["not_finite"]),
    (2**64, "integer_out_of_range", str(2**64), "rejected", ["integer_out_of_range"]),
    (-(2**63) - 1, "integer_out_of_range", str(-(2**63) - 1), "rejected", ["integer_out_of_range"]),
    (10**30, "integer_out_of_range", str(10**30), "rejected", ["integer_out_of_range"]),
]


@pytest.fixture
def client() -> tuple[AgentClient, Recorder]:
    agent = AgentClient(Settings())
    recorder = Recorder()
    agent._producer = recorder  # type: ignore[assignment]
    return agent, recorder


def face(value: Any) -> dict[str, Any]:
    return {"segments": [{"type": "face", "data": {"id": value}}]}


def raw_line(gate: Gate, literal: str) -> dict[str, Any]:
    """What a producer writing the value as JSON text sends, through the gate."""
    record = raw_reply(output={"tool_calls": [{"name": "json", "arguments": face("@@")}]})
    raw = orjson.dumps(record).replace(b'"@@"', literal.encode())
    return CheckSession(gate).line(raw, 1, NOW).line()


@pytest.mark.parametrize(("value", "code", "literal", "verdict", "gate_codes"), CASES)
async def test_a_number_no_reader_carries_is_refused_by_both(
    client: tuple[AgentClient, Recorder],
    gate: Gate,
    value: Any,
    code: str,
    literal: str,
    verdict: str,
    gate_codes: list[str],
) -> None:
    agent, recorder = client
    with pytest.raises(UnsendableRecord) as refused:
        await agent.reply("t-1", "c-1", json=face(value), **TURN)
    assert [(i.path, i.code) for i in refused.value.issues] == [(FACE, code)]
    assert FACE in str(refused.value) and code in str(refused.value)
    assert recorder.sent == []
    line = raw_line(gate, literal)
    assert line["verdict"] == verdict and line["action"] != "deliver"
    assert [e["code"] for e in line["errors"]] == gate_codes


async def test_the_largest_integers_a_reader_carries_are_sent(
    client: tuple[AgentClient, Recorder], gate: Gate
) -> None:
    agent, recorder = client
    for value in (2**64 - 1, -(2**63)):
        await agent.reply("t-1", "c-1", json=face(value), **TURN)
        assert raw_line(gate, str(value))["action"] == "deliver"
    assert [r["value"]["output"]["tool_calls"][0]["arguments"] for r in recorder.sent] == [
        face(2**64 - 1),
        face(-(2**63)),
    ]


async def test_a_tool_calls_nan_is_refused_not_sent_as_null(
    client: tuple[AgentClient, Recorder], gate: Gate
) -> None:
    agent, recorder = client
    arguments = csv_chart_arguments()
    block = arguments["blocks"][0]
    del block["csv"]
    block["labels"] = ["a", "b"]
    block["series"] = [{"label": "s", "values": [1.0, math.nan]}]
    with pytest.raises(UnsendableRecord) as refused:
        await agent.tool_call("call-1", "task-9", "ws-3", arguments)
    path = "arguments.blocks[0].series[0].values[1]"
    assert [(i.path, i.code) for i in refused.value.issues] == [(path, "not_finite")]
    assert recorder.sent == []
    raw = orjson.dumps(tool_call(arguments), option=orjson.OPT_SERIALIZE_NUMPY)
    assert b"null" in raw  # orjson itself writes NaN as null: what the gate must never see
    line = CheckSession(gate).line(raw.replace(b"null", b"1e400"), 1, NOW).line()
    assert line["action"] == "tool_error"
    assert [(e["path"], e["code"]) for e in line["errors"]] == [
        ("blocks[0].series[0].values[1]", "not_finite")
    ]


async def test_values_that_are_not_json_are_refused(
    client: tuple[AgentClient, Recorder],
) -> None:
    agent, recorder = client
    for value in ({1, 2}, b"bytes", {1: "int key"}):
        with pytest.raises(UnsendableRecord):
            await agent.reply("t-1", "c-1", json={"segments": [], "x": value}, **TURN)
    with pytest.raises(UnsendableRecord, match="duplicate_key"):
        await agent.reply("t-1", "c-1", text='{"segments": [], "segments": []}', **TURN)
    assert recorder.sent == []
