"""`replygate check`'s session: lines judged one by one by the worker's `Gate`, no Kafka.

Its one piece of state: the chunk lines of a streamed final reply, held (bounded) until a later
final line of the same turn and attempt assembles them. Turn state beyond that (repeats, cancels,
deadlines) is the worker's alone.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from schemas import codes
from schemas.records import Context
from streams.broker.topology import Topology
from streams.core.chunks import ChunkBuffer, add_chunk, chunk_limit
from streams.core.decision import Decision, Source
from streams.core.pipeline import Gate

# How many streams `replygate check` keeps open at once; the oldest goes first.
CHECK_STREAMS_MAX: Final = 1000


class CheckSession:
    """One `check` run over a JSON Lines input: each line's decision, chunks held between lines.

    It is the gate's `TurnView` for the lines it judges: it holds chunks, nothing else.
    """

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        topology = Topology.of(gate.settings)  # a file reads like one partition of each input
        self.replies, self.toolcalls = topology.replies.name, topology.toolcalls.name
        # the chunk lines read so far, by (turn_id, attempt), oldest first
        self.streams: dict[tuple[str, int], ChunkBuffer] = {}

    def line(
        self, raw: bytes, line_no: int, now: datetime, fallback_id: str | int | None = None
    ) -> Decision:
        """A line with `turn_id` is a RawReply, with `call_id` a ToolCall.

        A JSON Lines file reads like one partition: the offset is the 0-based line index. A
        record without an id is shown as `fallback_id` (its line number by default).
        """
        gate = self.gate
        shown = line_no if fallback_id is None else fallback_id
        replies = Source(self.replies, 0, line_no - 1)
        decoded = gate.read_json(raw, replies, shown)
        if isinstance(decoded, Decision):
            return decoded
        if isinstance(decoded, dict) and "turn_id" in decoded:
            decision = gate.decide_reply_json(raw, decoded, replies, now, shown, self)
            self._held(decision)
            return decision
        if isinstance(decoded, dict) and "call_id" in decoded:
            tools = Source(self.toolcalls, 0, line_no - 1)
            return gate.decide_tool_call_json(raw, decoded, tools, shown)
        issue = codes.UNKNOWN_RECORD.issue("$")
        return gate.dead_letter(raw, replies, "invalid_envelope", [issue], shown)

    # ---- the TurnView the gate reads ------------------------------------------------------

    def kept_context(self, turn_id: str) -> Context | None:
        return None

    def held_chunks(self, turn_id: str, attempt: int) -> ChunkBuffer | None:
        return self.streams.get((turn_id, attempt))

    def asked_at(self, turn_id: str) -> datetime | None:
        return None

    def _held(self, decision: Decision) -> None:
        """A chunk line is held for a later final line of its turn and attempt; a final line
        uses its chunks up (each attempt is answered once)."""
        chunk, turn = decision.chunk, decision.turn
        if turn is not None and decision.action not in ("progress", "drop"):
            self.streams.pop((turn.turn_id, turn.attempt), None)
        if chunk is None:
            return
        key = (chunk.turn_id, chunk.attempt)
        held = self.streams.get(key)
        added = add_chunk(held, chunk.attempt, chunk.chunk, chunk_limit(self.gate.settings))
        if added is not None:
            self.streams.pop(key, None)
            self.streams[key] = added
        while len(self.streams) > CHECK_STREAMS_MAX:
            del self.streams[next(iter(self.streams))]
