"""`AgentClient`: what an agent service publishes to replygate, keyed and serialized as it must be.

One object for the input side of records.md: final replies, streamed chunks and their final
record, progress summaries, rich-output tool calls and cancels. Every record is built from the
closed record models (a wrong field fails here, not as a dead letter), keyed by the UTF-8 bytes
of its `conversation_id` (`task_id` for a tool call), sent by one idempotent producer (acks=all)
with one partitioner for every input topic, and may carry a W3C `traceparent`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping
from datetime import UTC, datetime
from types import TracebackType
from typing import Any, Final, Self

import orjson

from streams.errors import MissingExtra
from streams.extras import install_command

try:
    from aiokafka import AIOKafkaProducer
    from aiokafka.structs import RecordMetadata
except ModuleNotFoundError as missing:  # a core install: say which extra, not which module
    raise ModuleNotFoundError(
        str(MissingExtra("endpoint", install_command("endpoint"), what="AgentClient")),
        name=missing.name,
    ) from None

from schemas.issue import Issue
from schemas.json_numbers import unsendable_issues
from schemas.json_read import duplicate_key_issues, duplicate_keys
from schemas.records import RawChunk, RawReply, ToolCall, TurnControl
from schemas.text_plain import NAME as TEXT_PLAIN_NAME
from streams.broker.options import aiokafka_options
from streams.broker.topology import Topology
from streams.core.decision import iso
from streams.core.trace import TRACEPARENT, TRACESTATE, Trace, trace_of
from streams.settings import Settings, load_settings

InputRecord = RawReply | RawChunk | ToolCall | TurnControl
RICH_OUTPUT_TOOL: Final = "show_rich_output_kandev"


def input_record(value: Mapping[str, Any]) -> InputRecord:
    """A record given as a JSON object, checked against its closed model (pydantic's
    ValidationError): a tool call has `call_id`, a cancel `action`, a chunk `chunk`."""
    if "call_id" in value:
        return ToolCall.model_validate(value)
    if "action" in value:
        return TurnControl.model_validate(value)
    if "chunk" in value:
        return RawChunk.model_validate(value)
    return RawReply.model_validate(value)


class UnsendableRecord(ValueError):
    """A record that cannot be sent as the JSON it claims to be (NaN, an infinity, an integer
    beyond 64 bits, a lone surrogate, a non-JSON value, a key given twice in a reply's JSON
    text): refused before anything is sent, with the field and the gate's code."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = issues
        lines = "; ".join(f"{i.path}: {i.code}: {i.message}" for i in issues[:20])
        super().__init__(f"the record cannot be sent: {lines}")


def record_bytes(record: InputRecord) -> bytes:
    """The record as replygate reads it: the fields that were set, as one orjson object.

    Nothing is coerced (pydantic's JSON mode would write NaN as null): every value is checked
    as it is, and the gate's own refusals are raised here (`UnsendableRecord`)."""
    value = record.model_dump(mode="python", exclude_unset=True)
    issues = unsendable_issues(value)
    if isinstance(record, RawReply) and record.output.text is not None:
        issues += _reply_text_issues(record)
    if issues:
        raise UnsendableRecord(issues)
    return orjson.dumps(value)


def _reply_text_issues(record: RawReply) -> list[Issue]:
    """A JSON reply text that gives a key twice (`duplicate_key`), read as the gate reads it;
    plain text is never JSON to the gate, so it is not looked at."""
    text = record.output.text
    if text is None or record.contract == TEXT_PLAIN_NAME:
        return []
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return []  # not JSON: the contract judges it
    return duplicate_key_issues(duplicate_keys(text, value), "output.text")


def record_key(record: InputRecord) -> bytes:
    """The Kafka key: the UTF-8 bytes of `task_id` (a tool call) or `conversation_id`."""
    value = record.task_id if isinstance(record, ToolCall) else record.conversation_id
    return value.encode("utf-8")


def trace_headers(traceparent: str | None, tracestate: str | None = None) -> Trace:
    """The trace headers to send; a `traceparent` that is not W3C is a ValueError here (the
    worker would drop it silently)."""
    if traceparent is None:
        return ()
    given = [(TRACEPARENT, traceparent)]
    if tracestate is not None:
        given.append((TRACESTATE, tracestate))
    trace = trace_of(given)
    if not trace:
        raise ValueError("traceparent is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)")
    if tracestate is not None and len(trace) < 2:
        raise ValueError("tracestate is not a W3C tracestate (key=value,...; at most 512 bytes)")
    return trace


def _now() -> str:
    return iso(datetime.now(UTC))


class AgentClient:
    """Publish an agent's records to replygate's input topics (`async with AgentClient(...)`).

    `settings` names the broker, its security and the topic names; by default they are read as
    the worker reads them (`streams.settings.load_settings()`: the config file, `REPLYGATE_*`).
    `producer_options` go to `AIOKafkaProducer`.
    """

    def __init__(self, settings: Settings | None = None, **producer_options: Any) -> None:
        settings = settings if settings is not None else load_settings()
        self.settings = settings
        self.topology = Topology.of(settings)
        self.options: dict[str, Any] = {
            **aiokafka_options(settings),
            "linger_ms": 5,
            **producer_options,
            # what makes a retried send not a second record: never overridden
            "acks": "all",
            "enable_idempotence": True,
        }
        self._producer: AIOKafkaProducer | None = None

    @property
    def producer(self) -> AIOKafkaProducer:
        """The started producer (aiokafka's: it belongs to the running event loop)."""
        if self._producer is None:
            raise RuntimeError("AgentClient is not started: use `async with AgentClient(...)`")
        return self._producer

    async def start(self) -> None:
        if self._producer is None:
            producer = AIOKafkaProducer(**self.options)
            await producer.start()
            self._producer = producer

    async def stop(self) -> None:
        if self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    def topic_of(self, record: InputRecord) -> str:
        if isinstance(record, ToolCall):
            return self.topology.toolcalls.name
        if isinstance(record, TurnControl):
            return self.topology.control.name
        return self.topology.replies.name

    async def submit(
        self, record: InputRecord, *, traceparent: str | None = None, tracestate: str | None = None
    ) -> Awaitable[RecordMetadata]:
        """Enqueue one record, keyed as replygate requires; returns its acknowledgement to
        await, so that many records can be in flight at once."""
        headers = list(trace_headers(traceparent, tracestate)) or None
        data = record_bytes(record)  # refused here, before the producer is touched
        future: Awaitable[RecordMetadata] = await self.producer.send(
            self.topic_of(record), data, key=record_key(record), headers=headers
        )
        return future

    async def send(
        self, record: InputRecord, *, traceparent: str | None = None, tracestate: str | None = None
    ) -> RecordMetadata:
        """Send one record to its topic and wait for the broker's acknowledgement."""
        return await (await self.submit(record, traceparent=traceparent, tracestate=tracestate))

    async def reply(
        self,
        turn_id: str,
        conversation_id: str,
        *,
        platform: str,
        contract: str,
        text: str | None = None,
        json: Any = None,
        attempt: int = 0,
        context: Mapping[str, Any] | None = None,
        provider: str | None = None,
        chunks: int | None = None,
        traceparent: str | None = None,
    ) -> RecordMetadata:
        """A final reply: its `text`, or `json` (sent as the `json` tool call's arguments), or
        `chunks` (the count of chunks already sent with `chunk`)."""
        output: dict[str, Any] = {}
        if text is not None:
            output["text"] = text
        if json is not None:
            output["tool_calls"] = [{"name": "json", "arguments": json}]
        if chunks is not None:
            output["chunks"] = chunks
        fields: dict[str, Any] = {"provider": provider, "context": context}
        record = RawReply.model_validate(
            {
                "turn_id": turn_id,
                "conversation_id": conversation_id,
                "platform": platform,
                "contract": contract,
                "attempt": attempt,
                "output": output,
                "produced_at": _now(),
                **{k: v for k, v in fields.items() if v is not None},
            }
        )
        return await self.send(record, traceparent=traceparent)

    async def chunk(
        self,
        turn_id: str,
        conversation_id: str,
        seq: int,
        text: str,
        *,
        attempt: int = 0,
        traceparent: str | None = None,
    ) -> RecordMetadata:
        """One chunk of a streamed final reply; `reply(..., chunks=N)` closes it."""
        record = RawChunk.model_validate(
            {
                "turn_id": turn_id,
                "conversation_id": conversation_id,
                "attempt": attempt,
                "chunk": {"seq": seq, "text": text},
                "produced_at": _now(),
            }
        )
        return await self.send(record, traceparent=traceparent)

    async def stream(
        self,
        turn_id: str,
        conversation_id: str,
        pieces: Iterable[str],
        *,
        platform: str,
        contract: str,
        attempt: int = 0,
        context: Mapping[str, Any] | None = None,
        traceparent: str | None = None,
    ) -> RecordMetadata:
        """A streamed final reply: each piece as a chunk, then the final record."""
        count = 0
        for seq, piece in enumerate(pieces):
            await self.chunk(turn_id, conversation_id, seq, piece, attempt=attempt)
            count = seq + 1
        return await self.reply(
            turn_id,
            conversation_id,
            platform=platform,
            contract=contract,
            attempt=attempt,
            context=context,
            chunks=count,
            traceparent=traceparent,
        )

    async def progress(
        self,
        turn_id: str,
        conversation_id: str,
        seq: int,
        text: str,
        *,
        platform: str,
        contract: str,
        traceparent: str | None = None,
    ) -> RecordMetadata:
        """A progress summary (`kind: progress`): plain text while the turn is under way."""
        record = RawReply.model_validate(
            {
                "turn_id": turn_id,
                "conversation_id": conversation_id,
                "platform": platform,
                "contract": contract,
                "attempt": 0,
                "kind": "progress",
                "seq": seq,
                "output": {"text": text},
                "produced_at": _now(),
            }
        )
        return await self.send(record, traceparent=traceparent)

    async def tool_call(
        self,
        call_id: str,
        task_id: str,
        workspace: str,
        arguments: Any,
        *,
        session_id: str | None = None,
        tool: str = RICH_OUTPUT_TOOL,
        traceparent: str | None = None,
    ) -> RecordMetadata:
        """A rich-output tool call; its ToolResult comes back keyed by `task_id`."""
        fields: dict[str, Any] = {
            "call_id": call_id,
            "task_id": task_id,
            "workspace": workspace,
            "tool": tool,
            "arguments": arguments,
        }
        if session_id is not None:
            fields["session_id"] = session_id
        return await self.send(ToolCall.model_validate(fields), traceparent=traceparent)

    async def cancel(
        self, turn_id: str, conversation_id: str, *, traceparent: str | None = None
    ) -> RecordMetadata:
        """Cancel a turn: nothing is delivered for it, now or later."""
        record = TurnControl(turn_id=turn_id, conversation_id=conversation_id, action="cancel")
        return await self.send(record, traceparent=traceparent)
