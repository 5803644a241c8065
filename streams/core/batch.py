"""One batch of input records in, the records to send and the state to write out: no I/O.

The worker's Kafka shell (`streams.worker.app`) reads a batch, calls `TurnBatch.run`, makes the
state writes durable, then the outputs, and only then acknowledges the input. Every turn touched in
the batch is written once, with its last value.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import orjson

from schemas.codes import PROCESSING_ERROR, TURN_EXPIRED
from schemas.records import Context, CorrectionRequest, RawChunk, ToolResult, record_json
from streams.core.chunks import ChunkBuffer, chunk_limit
from streams.core.decision import Decision, Source, Turn, iso, parse_iso
from streams.core.keys import CONVERSATION, TASK, is_quoted_key, key_issue
from streams.core.outcomes import Outcome
from streams.core.pipeline import Gate, envelope_id
from streams.core.ports import ExpiryIndex
from streams.core.state import (
    SourceId,
    TurnState,
    expires_at,
    holds_replay,
    seen_by,
    settled,
    tool_key,
    with_stream,
    written,
)
from streams.core.trace import Trace
from streams.core.turns import Step, on_cancel, on_chunk, on_deadline, on_reply, pending_turn
from streams.core.versions import (
    SETTINGS_VERSION,
    SWITCHES_KEY,
    Judges,
    OneGate,
    Switches,
    VersionMissing,
    choose_version,
)

log = logging.getLogger("replygate.worker")

NEVER = datetime.min.replace(tzinfo=UTC)

# Tombstones one batch may write for expired turns (each is one more record to send).
EXPIRE_PER_BATCH = 1000

# The stored value of a turn on a partition (None: no state), as the store has it now.
ReadState = Callable[[int, bytes], bytes | None]
# The group's committed offset of an input topic on a partition (None: not known here).
Committed = Callable[[str, int], int | None]


def nothing_committed(_topic: str, _partition: int) -> int | None:
    """Without a consumer group (tests, tools), nothing kept for a replay is ever released."""
    return None


TOOL_OUTCOMES: dict[str, Outcome] = {"tool_result": "tool_ok", "tool_error": "tool_error"}


def source_id(source: Source) -> str:
    """A record's identity in turn state, as its value spells it (`SourceId`)."""
    return SourceId.spell(source)


@dataclass(frozen=True, slots=True)
class Write:
    """One turn's new state on its partition; `state` None is a tombstone (the state expired),
    unless `raw` holds a value that is not a turn's (a partition's policy switches)."""

    partition: int
    key: bytes
    state: TurnState | None
    raw: bytes | None = None

    @property
    def value(self) -> bytes | None:
        if self.raw is not None:
            return self.raw
        return self.state.encode() if self.state is not None else None

    @property
    def is_turn(self) -> bool:
        return self.raw is None


@dataclass(frozen=True, slots=True)
class Judged:
    """One input record's step, for metrics and the audit once the batch is durable: the
    policy version and tenant that judged it, the shadow's judgement of the same record
    (its version and decision; None: no shadow), and its turn when the decision does not
    name it (a deadline, a cancel)."""

    topic: str
    step: Step
    decision: Decision | None
    version: str = SETTINGS_VERSION
    tenant: str | None = None
    shadow: tuple[str, Decision] | None = None
    turn: Turn | None = None
    judged_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Send:
    """One output record as it goes out: the decision, the trace headers of the input that
    caused it, and its partition (None: the producer's partitioner, by key)."""

    decision: Decision
    trace: Trace = ()
    partition: int | None = None


def send_of(decision: Decision, source: Source, trace: Trace) -> Send:
    """A CorrectionRequest goes to its turn's partition number, so a corrector can answer on
    the partition of the record it answers, whatever partitioner either side uses."""
    to_turn = isinstance(decision.output, CorrectionRequest)
    return Send(decision, trace, source.partition if to_turn else None)


@dataclass
class BatchResult:
    sends: list[Send] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)
    judged: list[Judged] = field(default_factory=list)
    replayed: int = 0
    expired: int = 0
    quoted_keys: int = 0  # records judged under `accept_quoted_keys` (the 0.1.0 key form)

    @property
    def outputs(self) -> list[Decision]:
        return [send.decision for send in self.sends]


def stamped(decision: Decision, version: str) -> Decision:
    """The decision with its output naming the policy version that judged it; under the
    settings file the output is left as it always was (no field added)."""
    output = decision.output
    if version == SETTINGS_VERSION or output is None or output.policy_version is not None:
        return decision
    return replace(decision, output=output.model_copy(update={"policy_version": version}))


@dataclass
class TurnBatch:
    """The worker's decisions for one batch, against the stored state plus the batch's writes.

    `gate` is the settings file's (topic names, horizons); `judges` gives each record's gate by
    its policy version (`streams.core.versions`): without it the settings file judges all.
    """

    gate: Gate
    read: ReadState
    index: ExpiryIndex  # the turn index's view for a batch: no writer (`StoredIndex` owns it)
    committed: Committed = nothing_committed
    judges: Judges | None = None
    _overlay: dict[bytes, Write] = field(default_factory=dict)
    # What this run tombstones as expired (partition, key, moment): filed again if thrown away.
    _expiring: list[tuple[int, bytes, datetime]] = field(default_factory=list)
    _result: BatchResult = field(default_factory=BatchResult)
    wall: datetime = NEVER  # the running batch's clock (set by `run`)
    # The record being judged: its version, whether that is a replay's (from the switches),
    # its tenant, the shadow's judgement and its turn (for the audit).
    _version: str = SETTINGS_VERSION
    _replayed: str | None = None
    _tenant: str | None = None
    _shadow: tuple[str, Decision] | None = None
    _turn: Turn | None = None
    _switches: dict[int, Switches] = field(default_factory=dict)
    _moved: set[int] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.judges is None:
            self.judges = OneGate(self.gate)
        self.versions: Judges = self.judges
        settings = self.gate.settings
        self.horizon = timedelta(seconds=settings.state_horizon_seconds)
        self.keep = settings.state_keep
        self.handlers: dict[str, Callable[[Source, bytes, datetime], None]] = {
            settings.topic("replies_raw"): self._reply,
            settings.topic("turns_control"): self._control,
            settings.topic("toolcalls_raw"): self._tool_call,
            settings.deadline_topic(): self._deadline,
        }
        # the field whose UTF-8 bytes key each input topic (`streams.core.keys`)
        self.key_fields: dict[str, str] = {
            settings.topic("replies_raw"): CONVERSATION,
            settings.topic("turns_control"): CONVERSATION,
            settings.topic("toolcalls_raw"): TASK,
        }

    def run(self, records: Sequence[tuple[Source, bytes]], wall: datetime) -> BatchResult:
        """Judge the records in order; a failure in the gate is that record's dead letter.

        Raises VersionMissing when a record needs a policy version that is not loaded: the
        shell loads it and runs the batch again (nothing of this run was written or sent).
        """
        self._overlay, self._result, self.wall = {}, BatchResult(), wall
        self._switches, self._moved = {}, set()
        active = self.versions.active
        for partition in {source.partition for source, _ in records}:
            self._release(partition)
            self._release_switches(partition)
        self._expiring = []
        try:
            self._judge_all(records, wall, active)
        except VersionMissing:  # this run is thrown away: what it was to expire stays filed
            for partition, key, moment in self._expiring:
                self.index.refile(partition, key, moment)
            raise
        result = self._result
        result.writes = list(self._overlay.values())
        result.writes += [
            Write(p, SWITCHES_KEY, None, self._switches[p].encode()) for p in sorted(self._moved)
        ]
        return result

    def _judge_all(
        self, records: Sequence[tuple[Source, bytes]], wall: datetime, active: str
    ) -> None:
        """`run`'s records, each judged under its version; raises VersionMissing."""
        for source, raw in records:
            now = source.timestamp or wall
            self._expire(source.partition, now)
            switches = self._switches[source.partition]
            replayed = (
                switches.version_for(source.topic, source.offset) if switches.entries else None
            )
            if replayed is not None:
                replayed = self.versions.judging(replayed)
            self._version, self._replayed = choose_version(None, replayed, active), replayed
            self._tenant, self._shadow, self._turn = source.tenant, None, None
            try:
                if not self._wrong_key(source, raw):
                    self.handlers[source.topic](source, raw, now)
            except VersionMissing:
                raise
            except Exception as exc:
                # the type only: an exception's text could quote the record
                log.error("record %s failed: %s", source_id(source), type(exc).__name__)
                issue = PROCESSING_ERROR.issue("$", error=type(exc).__name__)
                letter = self._gate().dead_letter(raw, source, "processing_error", [issue], 0)
                self._emit(source, Step("dead_letter", (letter,)), None)
            tracked = active != SETTINGS_VERSION or switches.entries
            if replayed is None and tracked and switches.judged(active, *_at(source)):
                self._moved.add(source.partition)

    def _gate(self, platform: str | None = None) -> Gate:
        """The gate of the record being judged: its version's, for its platform and tenant."""
        return self.versions.gate(self._version, platform, self._tenant)

    def _judged_under(self, state: TurnState | None) -> None:
        """A record of a turn with state is judged under the turn's version and tenant (those
        of its first record); without state its own version and tenant stand."""
        version = state.version if state is not None else None
        if version is not None and state is not None:
            chosen = choose_version(version, self._replayed, self.versions.active)
            self._version = self.versions.judging(chosen)
            if state.tenant is not None:
                self._tenant = state.tenant

    def _release_switches(self, partition: int) -> None:
        """The partition's switches for this batch, without those no replay can reach."""
        switches = Switches.decode(self.read(partition, SWITCHES_KEY))
        if switches.entries and switches.released(lambda topic: self.committed(topic, partition)):
            self._moved.add(partition)
        self._switches[partition] = switches

    def _wrong_key(self, source: Source, raw: bytes) -> bool:
        """A record keyed otherwise than its turn is a `wrong_key` dead letter, never judged;
        an oversized one is left to the gate's own dead letter (not decoded here)."""
        field = self.key_fields.get(source.topic)
        if field is None or len(raw) > self.gate.settings.max_record_bytes:
            return False
        issue = key_issue(raw, source.key, field)
        if issue is None:
            return False
        if self.gate.settings.accept_quoted_keys and is_quoted_key(raw, source.key, field):
            self._result.quoted_keys += 1
            return False
        letter = self._gate().dead_letter(raw, source, "wrong_key", [issue], 0)
        self._emit(source, Step("dead_letter", (letter,)), letter)
        return True

    # ---- state ------------------------------------------------------------------------------

    def stored(self, partition: int, key: bytes) -> TurnState | None:
        """A turn's state as this batch sees it: its own unflushed write, else the store's."""
        unflushed = self._overlay.get(key)
        if unflushed is not None:
            return unflushed.state
        raw = self.read(partition, key)
        return TurnState.decode(raw) if raw else None

    def seen(self, source: Source, turn_id: str) -> TurnState | None:
        """The state `source` saw: on a replay, the state before its own write."""
        return seen_by(self.stored(source.partition, turn_id.encode()), source_id(source))[0]

    def _expire(self, partition: int, now: datetime) -> None:
        """Finished turns past the horizon go, by broker time, before the record that sees it.

        At most EXPIRE_PER_BATCH a batch, so a backlog of old turns costs many small batches,
        not one huge one; the rest go in the next batches.
        """
        if self._result.expired >= EXPIRE_PER_BATCH:
            return
        for key in self.index.due(partition, now):
            state = self.stored(partition, key)
            moment = expires_at(state, self.keep) if state is not None else None
            if moment is not None and moment <= now:
                self._overlay[key] = Write(partition, key, None)
                self._expiring.append((partition, key, moment))
                self._result.expired += 1
                if self._result.expired >= EXPIRE_PER_BATCH:
                    return

    def _release(self, partition: int) -> None:
        """A finished turn keeps what its record's replay needs (`streams.core.state.written`:
        the record's identity and the state it saw, correction inputs and chunks included; a
        tool call the ToolResult it sent); once the group has committed past the record, no
        replay can come, and the value is written again `settled`, tens of bytes (at most
        EXPIRE_PER_BATCH a partition)."""
        for key in self.index.releasable(partition, self.committed)[:EXPIRE_PER_BATCH]:
            stored = self.stored(partition, key)
            if stored is not None and holds_replay(stored):
                self._overlay[key] = Write(partition, key, settled(stored))

    def _step(
        self, source: Source, turn_id: str, now: datetime, step: Step, keep_chunks: bool = True
    ) -> None:
        """Record the step's new state, if it changes it, as the turn's one write."""
        key = turn_id.encode()
        if step.stream is not None:
            stored = self.stored(source.partition, key)
            state = with_stream(stored, source_id(source), now, step.stream, *self._kept())
            self._overlay[key] = Write(source.partition, key, state)
        if not step.changes_state:
            return
        stored = self.stored(source.partition, key)
        before, replay = seen_by(stored, source_id(source))
        self._result.replayed += replay
        state = written(
            before,
            source_id(source),
            now,
            step.pending,
            step.finished,
            keep_chunks,
            source.trace,
            *self._kept(),
        )
        self._overlay[key] = Write(source.partition, key, state)

    def _kept(self) -> tuple[str | None, str | None]:
        """What a new turn's state keeps of its first record: its version (None: the settings
        file, as a value without a bundle always was) and tenant."""
        version = self._version
        return (None if version == SETTINGS_VERSION else version), self._tenant

    def _emit(
        self,
        source: Source,
        step: Step,
        decision: Decision | None,
        trace: Trace | None = None,
        stamp: bool = True,
    ) -> None:
        """The step's records, each with the trace of the input that caused it (`trace`
        overrides the source's own: a deadline's notice carries its pending turn's), each
        naming the version that judged it (`stamp` False: a record sent again as it was)."""
        headers = source.trace if trace is None else trace
        version = self._version
        emit = step.emit
        if stamp and version != SETTINGS_VERSION:
            emit = tuple(stamped(d, version) for d in emit)
            step = replace(step, emit=emit)
            decision = None if decision is None else stamped(decision, version)
        self._result.sends.extend(send_of(d, source, headers) for d in emit)
        self._result.judged.append(
            Judged(
                source.topic,
                step,
                decision,
                version,
                self._tenant,
                self._shadow,
                self._turn,
                source.timestamp or self.wall,
            )
        )

    # ---- records ----------------------------------------------------------------------------

    def _reply(self, source: Source, raw: bytes, now: datetime) -> None:
        """Read once; judged under its turn's version (from the stored state), else the one
        it got the first time, else the active one; and under the shadow, which sends nothing."""
        view = _BatchView(self, source)
        gate = self._gate()
        decoded = gate.read_json(raw, source, source.offset)
        if isinstance(decoded, Decision):
            self._emit(source, Step("dead_letter", (decoded,)), decoded)
            return
        turn_id, platform = _named(decoded, "turn_id"), _named(decoded, "platform")
        stored = self.stored(source.partition, turn_id.encode()) if turn_id else None
        self._judged_under(stored)
        gate = self._gate(platform)
        decision = self._decide(gate, raw, decoded, source, now, view)
        shadow = self.versions.shadow(platform, self._tenant)
        if shadow is not None and decision.chunk is None:
            judged = self._decide(shadow[1], raw, decoded, source, now, view)
            self._shadow = shadow[0], judged
        if decision.chunk is not None:
            self._chunk(source, raw, now, decision, decision.chunk, gate)
            return
        turn = decision.turn
        self._turn = turn
        state = seen_by(stored, source_id(source))[0] if turn is not None else None
        if turn is not None and state is None and self._too_old(turn.produced_at, now):
            if decision.action in ("progress", "drop"):
                # its turn finished, or was given up, long ago: late, not a record to look at
                self._emit(source, Step("late_progress"), decision)
            else:
                self._expired_turn(source, raw, turn.turn_id, gate)
            return
        step = on_reply(gate, decision, state, now)
        if turn is not None:
            self._step(source, turn.turn_id, now, step, keep_chunks=self._assembled(decision))
            if stored is None and step.outcome in ("progress", "progress_rejected"):
                self._opened(source, turn.turn_id, now)
        self._emit(source, step, decision)

    def _assembled(self, decision: Decision) -> bool:
        """Whether the reply was assembled from its turn's held chunks, as the gate or the
        shadow judged it: the state keeps them for either's replay."""
        shadow = self._shadow
        return decision.assembled or (shadow is not None and shadow[1].assembled)

    def _opened(self, source: Source, turn_id: str, now: datetime) -> None:
        """Under a bundle, a turn's first record that is progress opens the turn's state with
        its version, so the turn's outcome is judged under the version its progress was (the
        settings file keeps no state for progress, as it never did)."""
        policy, tenant = self._kept()
        if policy is not None:
            key = turn_id.encode()
            state = TurnState("open", source_id(source), iso(now), policy=policy, tenant=tenant)
            self._overlay[key] = Write(source.partition, key, state)

    @staticmethod
    def _decide(
        gate: Gate, raw: bytes, decoded: object, source: Source, now: datetime, view: _BatchView
    ) -> Decision:
        """`Gate.decide_reply` of a record read already; a gate whose record bound is smaller
        than the one that read it refuses it as too large."""
        if len(raw) > gate.settings.max_record_bytes:
            refused = gate.read_json(raw, source, source.offset)
            if isinstance(refused, Decision):
                return refused
        return gate.decide_reply_json(raw, decoded, source, now, source.offset, view)

    def _chunk(
        self,
        source: Source,
        raw: bytes,
        now: datetime,
        decision: Decision,
        chunk: RawChunk,
        gate: Gate,
    ) -> None:
        """A chunk joins its turn's stored state as it is now: a replayed chunk is a repeat."""
        turn_id = chunk.turn_id
        state = self.stored(source.partition, turn_id.encode())
        if state is None and self._too_old(chunk.produced_at, now):
            self._expired_turn(source, raw, turn_id, gate)
            return
        step = on_chunk(decision, state, chunk_limit(gate.settings))
        self._step(source, turn_id, now, step)
        self._emit(source, step, decision)

    def _expired_turn(self, source: Source, raw: bytes, turn_id: str, gate: Gate) -> None:
        """A record for a turn with no state, older than the horizon: a dead letter."""
        issue = TURN_EXPIRED.issue("produced_at")
        letter = gate.dead_letter(raw, source, "turn_expired", [issue], turn_id)
        self._emit(source, Step("dead_letter", (letter,)), letter)

    def _too_old(self, produced_at: str | None, now: datetime) -> bool:
        if produced_at is None:
            return False
        stamp = parse_iso(produced_at)
        return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)) + self.horizon <= now

    def _control(self, source: Source, raw: bytes, now: datetime) -> None:
        parsed = self._gate().read_control(raw, source)
        if isinstance(parsed, Decision):
            self._emit(source, Step("dead_letter", (parsed,)), parsed)
            return
        stored = self.stored(source.partition, parsed.turn_id.encode())
        self._judged_under(stored)
        seen = seen_by(stored, source_id(source))[0]
        self._turn = _turn_of(seen)
        step = on_cancel(seen)
        self._step(source, parsed.turn_id, now, step, keep_chunks=False)
        self._emit(source, step, None)

    def _deadline(self, source: Source, raw: bytes, now: datetime) -> None:
        turn_id = orjson.loads(raw)["turn_id"]
        # The batch's wall clock: a deadline event fires only once its deadline has passed.
        stored = self.stored(source.partition, turn_id.encode())
        self._judged_under(stored)
        seen = seen_by(stored, source_id(source))[0]
        self._turn = _turn_of(seen)
        gate = self._gate(self._turn.platform if self._turn is not None else None)
        step = on_deadline(gate, seen, self.wall)
        self._step(source, turn_id, now, step, keep_chunks=False)
        self._emit(source, step, None, seen.trace if seen is not None else ())

    def _tool_call(self, source: Source, raw: bytes, now: datetime) -> None:
        """A call runs once (its CSVs are read once): its ToolResult is kept in state, so a
        replay re-sends that very record, and a repeat of its `call_id` is dropped."""
        # read once: its `call_id` finds a call already made before the call is judged (an
        # oversized record or bytes that are no JSON are the gate's dead letter)
        gate = self._gate()
        decoded = gate.read_json(raw, source, source.offset)
        is_json = not isinstance(decoded, Decision)
        call_id = envelope_id(decoded, "call_id") if is_json else None
        key = tool_key(call_id) if call_id is not None else None
        stored = self.stored(source.partition, key) if key is not None else None
        if stored is not None:
            self._tool_call_again(source, stored)
            return
        if is_json:
            shadow = self.versions.shadow(None, self._tenant)
            if shadow is not None:  # it reads the call's files again: tool calls are few
                judged = shadow[1].decide_tool_call_json(raw, decoded, source, source.offset)
                self._shadow = shadow[0], judged
            decoded = gate.decide_tool_call_json(raw, decoded, source, source.offset)
        decision = stamped(decoded, self._version)
        outcome: Outcome = TOOL_OUTCOMES.get(decision.action, "dead_letter")
        if key is not None and isinstance(decision.output, ToolResult):
            result = record_json(decision.output).decode()
            state = TurnState(
                "finished", source_id(source), iso(now), outcome=outcome, result=result
            )
            self._overlay[key] = Write(source.partition, key, state)
        emit = (decision,) if decision.output is not None else ()
        self._emit(source, Step(outcome, emit), decision)

    def _tool_call_again(self, source: Source, stored: TurnState) -> None:
        """The replay of a call whose state was written (its ToolResult again, byte for byte,
        the workspace not read), or a repeat of a call already made (dropped)."""
        if stored.source != source_id(source) or stored.result is None:
            self._emit(source, Step("duplicate_dropped"), None)
            return
        self._result.replayed += 1
        output = ToolResult.model_validate_json(stored.result)
        self._version = output.policy_version or SETTINGS_VERSION
        ok = stored.outcome == "tool_ok"
        decision = Decision(
            id=output.call_id,
            verdict="accepted" if ok else "rejected",
            action="tool_result" if ok else "tool_error",
            output=output,
            topic=self.gate.settings.topic("toolresults"),
            key=output.task_id.encode(),
        )
        step = Step(TOOL_OUTCOMES[decision.action], (decision,))
        self._emit(source, step, decision, stamp=False)


def _at(source: Source) -> tuple[str, int]:
    return source.topic, source.offset


def _named(decoded: object, key: str) -> str | None:
    """A record's `turn_id` or `platform` as its envelope may hold it (read before the gate
    judges the record, to find its turn's state and its scope)."""
    value = decoded.get(key) if isinstance(decoded, dict) else None
    return value if isinstance(value, str) and 0 < len(value) <= 200 else None


def _turn_of(state: TurnState | None) -> Turn | None:
    """The turn a pending state waits for, as the audit names a deadline's or cancel's turn."""
    pending = state.waiting if state is not None else None
    return pending_turn(pending) if pending is not None else None


class _BatchView:
    """What one reply's turn holds in this batch: the stored state plus the batch's own writes
    (read only: whether the reply was assembled from chunks is the decision's `assembled`)."""

    __slots__ = ("batch", "source")

    def __init__(self, batch: TurnBatch, source: Source) -> None:
        self.batch, self.source = batch, source

    def kept_context(self, turn_id: str) -> Context | None:
        state = self.batch.seen(self.source, turn_id)
        waiting = state.waiting if state is not None else None
        return waiting.stored_context() if waiting is not None else None

    def held_chunks(self, turn_id: str, attempt: int) -> ChunkBuffer | None:
        state = self.batch.seen(self.source, turn_id)
        stream = state.stream if state is not None else None
        return stream if stream is not None and stream.attempt == attempt else None

    def asked_at(self, turn_id: str) -> datetime:
        """By the batch's wall clock: a consumer behind by more than the deadline still gives
        the corrector its whole window; a replay finds its own write and asks as it first did."""
        stored = self.batch.stored(self.source.partition, turn_id.encode())
        waiting = stored.pending if stored is not None else None
        if waiting is not None and stored is not None and stored.source == source_id(self.source):
            return parse_iso(waiting.requested_at)
        return self.batch.wall
