"""`AgentClient` without a broker: what it would send (bytes, key, topic, headers).

The sends themselves run against the real broker in tests/deploy/test_producers_doc.py and
tests/worker/test_kafka_integration.py; here the producer is replaced by a recorder, since
these tests are about the records the client builds, not about Kafka.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from schemas.records import RawChunk, RawReply, ToolCall, TurnControl
from streams.client import AgentClient, input_record, record_bytes, record_key
from streams.client.agent import trace_headers
from streams.settings import Settings

TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
TURN: dict[str, Any] = {"platform": "im", "contract": "im.segments.v1"}


class Recorder:
    """Stands in for AIOKafkaProducer (no broker here): keeps what `send` was given."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def send(self, topic: str, value: bytes, **kw: Any) -> Any:
        self.sent.append({"topic": topic, "value": orjson.loads(value), **kw})

        async def ack() -> str:
            return "ack"

        return ack()


@pytest.fixture
def client() -> tuple[AgentClient, Recorder]:
    agent = AgentClient(Settings(topic_prefix="p."))
    recorder = Recorder()
    agent._producer = recorder  # type: ignore[assignment]
    return agent, recorder


def test_the_producer_is_idempotent_with_acks_all_whatever_the_options() -> None:
    agent = AgentClient(Settings(), acks=1, enable_idempotence=False, linger_ms=50)
    assert agent.options["acks"] == "all" and agent.options["enable_idempotence"] is True
    assert agent.options["linger_ms"] == 50
    with pytest.raises(RuntimeError, match="not started"):
        _ = agent.producer


async def test_each_record_goes_to_its_topic_keyed_by_its_id(
    client: tuple[AgentClient, Recorder],
) -> None:
    agent, sent = client
    await agent.reply("t-1", "c-ü", text="{}", traceparent=TP, **TURN)
    await agent.progress("t-1", "c-ü", 0, "working", **TURN)
    await agent.stream("t-2", "c-ü", ["{", "}"], **TURN)
    await agent.tool_call("call-1", "task-9", "ws-3", {"a": None})
    await agent.cancel("t-3", "c-2")
    got = [(s["topic"], s["key"]) for s in sent.sent]
    assert got == [
        ("p.replies.raw", "c-ü".encode()),
        ("p.replies.raw", "c-ü".encode()),
        ("p.replies.raw", "c-ü".encode()),
        ("p.replies.raw", "c-ü".encode()),
        ("p.replies.raw", "c-ü".encode()),
        ("p.toolcalls.raw", b"task-9"),
        ("p.turns.control", b"c-2"),
    ]
    assert sent.sent[0]["headers"] == [("traceparent", TP.encode())]
    assert all(s["headers"] is None for s in sent.sent[1:])
    progress, chunk0, _chunk1, final = (s["value"] for s in sent.sent[1:5])
    assert progress["kind"] == "progress" and progress["seq"] == 0
    assert chunk0["chunk"] == {"seq": 0, "text": "{"} and final["output"] == {"chunks": 2}
    assert sent.sent[5]["value"]["arguments"] == {"a": None}  # arguments kept as given


def test_a_record_is_serialized_with_only_the_fields_set() -> None:
    reply = input_record(
        {
            "turn_id": "t",
            "conversation_id": "c",
            "attempt": 0,
            "output": {"text": "x"},
            "produced_at": "2026-11-30T12:00:00Z",
            **TURN,
        }
    )
    assert isinstance(reply, RawReply)
    assert set(orjson.loads(record_bytes(reply))) == {
        "turn_id",
        "conversation_id",
        "platform",
        "contract",
        "attempt",
        "output",
        "produced_at",
    }
    assert record_key(reply) == b"c"


def test_input_records_are_told_apart_by_their_fields() -> None:
    call = {"call_id": "1", "task_id": "t", "workspace": "w", "tool": "x", "arguments": {}}
    assert isinstance(input_record(call), ToolCall)
    assert isinstance(
        input_record({"turn_id": "t", "conversation_id": "c", "action": "cancel"}), TurnControl
    )
    chunk = {
        "turn_id": "t",
        "conversation_id": "c",
        "attempt": 0,
        "chunk": {"seq": 0, "text": ""},
        "produced_at": "2026-11-30T12:00:00Z",
    }
    assert isinstance(input_record(chunk), RawChunk)
    with pytest.raises(ValidationError):
        input_record({"turn_id": "t", "conversation_id": "c", "action": "cancel", "x": 1})


async def test_a_bad_record_fails_in_the_agents_process(
    client: tuple[AgentClient, Recorder],
) -> None:
    agent, sent = client
    with pytest.raises(ValidationError):
        await agent.reply("t-1", "c-1", text="x", attempt=2, **TURN)
    with pytest.raises(ValueError, match="traceparent"):
        await agent.cancel("t-1", "c-1", traceparent="00-abc")
    assert sent.sent == []


def test_trace_headers_are_checked_before_sending() -> None:
    assert trace_headers(None) == ()
    assert trace_headers(TP, "a=1") == (("traceparent", TP.encode()), ("tracestate", b"a=1"))
    with pytest.raises(ValueError, match="tracestate"):
        trace_headers(TP, "NOT VALID")
