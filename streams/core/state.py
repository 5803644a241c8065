"""A turn's durable state: one typed value per turn, written as one changelog record per step.

The value names the input record that wrote it (`source`) and keeps the state that record saw
(`before`). A replayed record that finds its own write therefore sees the state it saw the first
time and makes the identical decision: state can be made durable before the outputs it implies,
and a crash in between re-sends them. Once the group has committed past that record no replay
can come, and a finished turn is written again `settled`: its outcome and when it finished (tens
of bytes), enough to recognise a repeat until the horizon, nothing it saw. Nothing here imports
Faust or Kafka.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import orjson

from streams.core.chunks import ChunkBuffer
from streams.core.decision import PendingTurn, Source, iso, parse_iso
from streams.core.trace import NO_TRACE, Trace, trace_from_list, trace_to_list
from streams.core.versions import SETTINGS_VERSION, SWITCHES_KEY

# `open`: chunks of a streamed final reply are held and nothing else happened to the turn yet.
Status = Literal["open", "pending", "finished"]

# The `source` of a settled value: no record's (a record's source always holds colons).
SETTLED = ""


@dataclass(frozen=True, slots=True)
class TurnState:
    """A turn that waits for its correction (`pending`), has its one outcome (`finished`), or
    holds chunks of a streamed final reply (`open`; `stream` is also held while pending)."""

    status: Status
    source: str
    at: str
    pending: PendingTurn | None = None
    outcome: str | None = None
    before: TurnState | None = None
    stream: ChunkBuffer | None = None
    # A tool call's value (`tool_key`): the ToolResult sent, as JSON, kept for the call's replay
    result: str | None = None
    # A pending turn's trace headers (its attempt-0 record's): the deadline's failure notice
    # carries them, also when the deadline event is replayed.
    trace: Trace = NO_TRACE
    # The policy version that judged the turn's first record (None: the settings file), and the
    # record's tenant: its correction, deadline and cancel are judged under that scope.
    policy: str | None = None
    tenant: str | None = None

    def as_dict(self) -> dict[str, Any]:
        value: dict[str, Any] = {
            "status": self.status,
            "source": self.source,
            "at": self.at,
            "pending": self.pending.as_dict() if self.pending is not None else None,
            "outcome": self.outcome,
            "before": self.before.as_dict() if self.before is not None else None,
        }
        if self.stream is not None:
            value["stream"] = self.stream.as_dict()
        if self.result is not None:
            value["result"] = self.result
        if self.trace:
            value["trace"] = trace_to_list(self.trace)
        if self.policy is not None:
            value["policy"] = self.policy
        if self.tenant is not None:
            value["tenant"] = self.tenant
        return value

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> TurnState:
        pending, before, stream = value.get("pending"), value.get("before"), value.get("stream")
        return cls(
            value["status"],
            value["source"],
            value["at"],
            PendingTurn.from_dict(pending) if pending else None,
            value.get("outcome"),
            cls.from_dict(before) if before else None,
            ChunkBuffer.from_dict(stream) if stream else None,
            value.get("result"),
            trace_from_list(value.get("trace")),
            value.get("policy"),
            value.get("tenant"),
        )

    @property
    def is_settled(self) -> bool:
        """A finished value no replay can need any more (`settled`)."""
        return self.source == SETTLED and self.status == "finished"

    def encode(self) -> bytes:
        if self.is_settled:
            # `{"f": outcome, "t": epoch ms}`: what a million finished turns cost to hold
            return orjson.dumps({"f": self.outcome, "t": _epoch_ms(self.at)})
        return orjson.dumps(self.as_dict())

    @classmethod
    def decode(cls, raw: bytes) -> TurnState:
        value = orjson.loads(raw)
        if "f" in value:
            at = datetime.fromtimestamp(value["t"] / 1000, UTC)
            return cls("finished", SETTLED, iso(at), outcome=value["f"])
        return cls.from_dict(value)

    @property
    def version(self) -> str | None:
        """The version that judges the turn; None for a settled value, which takes no record
        a version decides (a repeat of a finished turn is dropped under any)."""
        if self.is_settled:
            return None
        return self.policy or SETTINGS_VERSION

    @property
    def finished_outcome(self) -> str | None:
        return self.outcome if self.status == "finished" else None

    @property
    def waiting(self) -> PendingTurn | None:
        return self.pending if self.status == "pending" else None


def seen_by(state: TurnState | None, source: str) -> tuple[TurnState | None, bool]:
    """The state as record `source` saw it, and whether this is a replay of that record."""
    if state is not None and state.source == source:
        return state.before, True
    return state, False


def written(
    before: TurnState | None,
    source: str,
    at: datetime,
    pending: PendingTurn | None,
    outcome: str | None,
    keep_chunks: bool = True,
    trace: Trace = NO_TRACE,
    policy: str | None = None,
    tenant: str | None = None,
) -> TurnState:
    """The value a step writes; `before` keeps one level only, so a value never grows.

    A final reply's step keeps the chunks it saw in `before` (its replay assembles them again);
    a cancel or a deadline drops them (`keep_chunks` False). The new value holds none. A
    pending value keeps the record's `trace` for the deadline's notice. The turn's policy
    version and tenant are `before`'s when there is one (the turn's first record's), else the
    record's own (`policy` None: the settings file).
    """
    if before is not None and not before.is_settled:
        policy, tenant = before.policy, before.tenant
    kept = _flat(before)
    if kept is not None and not keep_chunks:
        kept = replace(kept, stream=None)
    if outcome is not None:
        return TurnState(
            "finished", source, iso(at), outcome=outcome, before=kept, policy=policy, tenant=tenant
        )
    if pending is None:
        raise ValueError("a turn step writes either a pending turn or an outcome")
    return TurnState(
        "pending",
        source,
        iso(at),
        pending=pending,
        before=kept,
        trace=trace,
        policy=policy,
        tenant=tenant,
    )


def tool_key(call_id: str) -> bytes:
    """A tool call's key in the state store: never a turn's (0xFF is in no UTF-8 text)."""
    return b"\xfftool:" + call_id.encode()


def holds_replay(state: TurnState | None) -> bool:
    """A finished value that still keeps what its record's replay needs: the record's identity
    (`source`, so the replay finds its own write) and the state it saw (`before`: the pending
    turn's correction inputs, the chunks its final reply was assembled from), or the ToolResult
    a tool call sent."""
    return state is not None and state.status == "finished" and not state.is_settled


def settled(state: TurnState) -> TurnState:
    """Only what recognises a repeat of a finished turn until the horizon: its outcome and
    when it finished (the key is the turn id). Not the records it saw, nor what it sent."""
    return TurnState("finished", SETTLED, state.at, outcome=state.outcome)


def _epoch_ms(at: str) -> int:
    return round(parse_iso(at).timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class SourceId:
    """The input record that wrote a turn's value: its topic, partition and offset, spelled
    `topic:partition:offset` in the value's `source` (a topic name never holds a colon). The
    one place that spelling is written (`spell`) and read (`parse`)."""

    topic: str
    partition: int
    offset: int

    @classmethod
    def parse(cls, text: str) -> SourceId:
        topic, partition, offset = text.rsplit(":", 2)
        return cls(topic, int(partition), int(offset))

    @staticmethod
    def spell(source: Source | SourceId) -> str:
        """The spelling of a record's identity (no `SourceId` built on the hot path)."""
        return f"{source.topic}:{source.partition}:{source.offset}"

    def __str__(self) -> str:
        return SourceId.spell(self)


def _flat(state: TurnState | None) -> TurnState | None:
    if state is None or state.before is None:
        return state
    return replace(state, before=None)


def with_stream(
    state: TurnState | None,
    source: str,
    at: datetime,
    stream: ChunkBuffer,
    policy: str | None = None,
    tenant: str | None = None,
) -> TurnState:
    """The turn's value holding `stream`: a new `open` turn (judged under `policy`, the first
    chunk's version), or the same value with its chunks.

    `source` and `before` stay those of the step that wrote the value, so that step's replay
    still finds its own write; a chunk needs none (a replayed chunk is a repeat, dropped).
    """
    if state is None:
        return TurnState("open", source, iso(at), stream=stream, policy=policy, tenant=tenant)
    moment = iso(at) if state.status == "open" else state.at
    return replace(state, at=moment, stream=stream)


def expires_at(state: TurnState, keep: timedelta) -> datetime | None:
    """When a turn's state may go: `keep` after it finished, or after its last chunk while it
    is only `open` (a final record that never comes); pending never expires."""
    if state.status == "pending":
        return None
    return parse_iso(state.at) + keep


# How a settled value's encoding starts (`TurnState.encode`)
_SETTLED_HEAD = b'{"f":'

# An expiry entry's head: the moment (epoch seconds) and the key's length; the key follows.
_ENTRY = struct.Struct(">dI")
# Finished turns are filed by the minute they expire in: a buffer per minute, not an object per
# turn, so a million finished turns cost tens of MB of index, not hundreds.
BUCKET_SECONDS = 60


@dataclass
class ExpiryOrder:
    """One partition's finished turns in expiry order, keys packed into per-minute buffers."""

    buckets: dict[int, bytearray] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)  # a heap of bucket numbers

    def add(self, moment: float, key: bytes) -> None:
        number = int(moment // BUCKET_SECONDS)
        buffer = self.buckets.get(number)
        if buffer is None:
            buffer = self.buckets[number] = bytearray()
            heapq.heappush(self.order, number)
        buffer += _ENTRY.pack(moment, len(key))
        buffer += key

    def due(self, cutoff: float) -> Iterator[bytes]:
        """Keys filed with a moment at or before `cutoff`, earliest minute first. A caller may
        stop early: what it did not take stays filed."""
        while self.order and self.order[0] * BUCKET_SECONDS <= cutoff:
            number = self.order[0]
            buffer, kept, position = self.buckets[number], bytearray(), 0
            try:
                while position < len(buffer):
                    moment, size = _ENTRY.unpack_from(buffer, position)
                    end = position + _ENTRY.size + size
                    entry, position = buffer[position:end], end
                    if moment <= cutoff:
                        yield bytes(entry[_ENTRY.size :])
                    else:
                        kept += entry
            finally:
                rest = kept + buffer[position:]
                if rest:
                    self.buckets[number] = rest
                else:
                    del self.buckets[number]
                    heapq.heappop(self.order)
            if rest:  # this minute is not over yet, so no later one is due either
                return


@dataclass
class TurnIndex:
    """What the worker must find without reading every turn: pending turns and expiry order.

    Rebuilt from the store after each rebalance, kept up to date by every write. The expiry file
    may hold stale entries (a turn written again); `due` callers check the stored value.
    """

    keep: timedelta
    pending: dict[bytes, tuple[int, PendingTurn]] = field(default_factory=dict)
    _expiry: dict[int, ExpiryOrder] = field(default_factory=dict)
    # partition -> key -> input topic and offset of the record whose finished value still holds
    # what its replay needs (`holds_replay`): it goes once the group has committed past it
    _held: dict[int, dict[bytes, tuple[str, int]]] = field(default_factory=dict)

    def clear(self) -> None:
        self.pending.clear()
        self._expiry.clear()
        self._held.clear()

    def rebuild(self, items: Iterable[tuple[int, bytes, bytes]]) -> None:
        self.clear()
        self.load(items)

    def load(self, items: Iterable[tuple[int, bytes, bytes]]) -> None:
        """Track stored values of partitions this index does not hold yet. A settled value is
        filed by its `t` alone: a million of them after a rebalance cost seconds as objects."""
        keep = self.keep.total_seconds()
        for partition, key, raw in items:
            if key == SWITCHES_KEY:  # a partition's policy switches, not a turn
                continue
            if raw.startswith(_SETTLED_HEAD):
                moment = orjson.loads(raw)["t"] / 1000 + keep
                self._expiry.setdefault(partition, ExpiryOrder()).add(moment, key)
            else:
                self.note(partition, key, TurnState.decode(raw))

    def forget(self, partition: int) -> None:
        """Drop a partition this worker no longer owns (its turns are another's now)."""
        self._expiry.pop(partition, None)
        self._held.pop(partition, None)
        for key in [k for k, (p, _turn) in self.pending.items() if p == partition]:
            del self.pending[key]

    def note(self, partition: int, key: bytes, state: TurnState | None) -> None:
        """Track a value just written (None: the turn's state is gone)."""
        if holds_replay(state):
            assert state is not None  # for mypy: holds_replay says so
            written_by = SourceId.parse(state.source)
            self._held.setdefault(partition, {})[key] = (written_by.topic, written_by.offset)
        elif partition in self._held:
            self._held[partition].pop(key, None)
        if state is not None and state.status == "pending" and state.pending is not None:
            self.pending[key] = (partition, state.pending)
            return
        self.pending.pop(key, None)
        if state is not None:
            moment = expires_at(state, self.keep)
            if moment is not None:
                self.refile(partition, key, moment)

    def refile(self, partition: int, key: bytes, moment: datetime) -> None:
        """File `key` to expire at `moment`: a value written, or a key `due` gave to a batch
        run that was thrown away (its tombstone never written)."""
        self._expiry.setdefault(partition, ExpiryOrder()).add(moment.timestamp(), key)

    def releasable(
        self, partition: int, committed: Callable[[str, int], int | None]
    ) -> list[bytes]:
        """Keys on `partition` whose kept replay no replay can need any more: the group has
        committed (`committed(topic, partition)`) past the record that holds it."""
        held = self._held.get(partition, {})
        done = []
        for key, (topic, offset) in held.items():
            mark = committed(topic, partition)
            if mark is not None and offset < mark:
                done.append(key)
        return done

    def due(self, partition: int, now: datetime) -> Iterator[bytes]:
        """Keys on `partition` whose finished state may have expired by broker time `now`."""
        filed = self._expiry.get(partition)
        if filed is not None:
            yield from filed.due(now.timestamp())
