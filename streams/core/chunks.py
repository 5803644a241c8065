"""Streamed final replies: the chunks a turn holds until its final record. Pure, bounded.

An agent may send a final reply in pieces (chunk records, then a RawReply with
`output.chunks: N`). The pieces wait in the turn's durable state, never delivered or shown,
until the final record assembles them; `replygate check` keeps the same buffer between lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from schemas.codes import AMBIGUOUS_REPLY, INCOMPLETE_STREAM, STREAM_TOO_LARGE
from schemas.issue import Issue
from schemas.records import ModelOutput, StreamChunk
from streams.settings.model import BoundsSettings

# At most this many chunks are held per turn and attempt, whatever their size: an empty chunk
# costs no text, yet every held one is stored and re-read with the turn's state.
MAX_STREAM_CHUNKS = 10_000


def chunk_limit(settings: BoundsSettings) -> int:
    """The bytes of chunks held per turn and attempt: `max_record_bytes`, yet at most a third of
    `max_output_bytes`, so a state value (two attempts' chunks at most) fits a changelog record."""
    return min(settings.max_record_bytes, settings.max_output_bytes // 3)


def chunk_cost(text: str) -> int:
    """A chunk's text as the turn's state stores it (JSON, escapes counted): what the bound is."""
    return len(orjson.dumps(text)) - 2


@dataclass(frozen=True, slots=True)
class ChunkBuffer:
    """The chunks of one attempt of a turn, by `seq`; `size` is their summed `chunk_cost`.

    A chunk that would pass the bound is not held: `overflow` remembers it, so the final reply
    is invalid (`stream_too_large`) rather than assembled from a part.
    """

    attempt: int
    parts: Mapping[int, str] = field(default_factory=dict)
    size: int = 0
    overflow: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "parts": [[seq, text] for seq, text in sorted(self.parts.items())],
            "size": self.size,
            "overflow": self.overflow,
        }

    @classmethod
    def from_dict(cls, value: Mapping[str, Any]) -> ChunkBuffer:
        parts = {int(seq): str(text) for seq, text in value["parts"]}
        return cls(int(value["attempt"]), parts, int(value["size"]), bool(value["overflow"]))


def add_chunk(
    held: ChunkBuffer | None, attempt: int, chunk: StreamChunk, limit: int
) -> ChunkBuffer | None:
    """The buffer with `chunk` added, or None when it changes nothing (a `seq` already held).

    A buffer of another attempt is not this one's: the chunk starts a new buffer.
    """
    buffer = held if held is not None and held.attempt == attempt else ChunkBuffer(attempt)
    if chunk.seq in buffer.parts:
        return None
    cost = chunk_cost(chunk.text)
    if buffer.size + cost > limit or len(buffer.parts) >= MAX_STREAM_CHUNKS:
        return None if buffer.overflow else replace(buffer, overflow=True)
    return replace(buffer, parts={**buffer.parts, chunk.seq: chunk.text}, size=buffer.size + cost)


def assemble(
    output: ModelOutput, held: ChunkBuffer | None, limit: int
) -> tuple[ModelOutput, list[Issue]]:
    """The final reply's output with its text made of chunks `0 .. chunks-1`, and why not.

    Missing or over-bound chunks make the reply invalid; the text is then what was held, so
    the correction request shows the model what arrived.
    """
    count = output.chunks or 0
    parts = held.parts if held is not None else {}
    present = sorted(seq for seq in parts if seq < count)
    if output.text is not None:
        issue = AMBIGUOUS_REPLY.issue("output", "chunks")
        return output.model_copy(update={"chunks": None}), [issue]
    text = "".join(parts[seq] for seq in present)
    assembled = output.model_copy(update={"text": text, "chunks": None})
    if held is not None and held.overflow:
        issue = STREAM_TOO_LARGE.issue("output.chunks", limit=limit, chunks=MAX_STREAM_CHUNKS)
        return assembled, [issue]
    if len(present) < count:
        first = next((i for i, seq in enumerate(present) if seq != i), len(present))
        missing = count - len(present)
        issue = INCOMPLETE_STREAM.issue("output.chunks", missing=missing, count=count, first=first)
        return assembled, [issue]
    return assembled, []
