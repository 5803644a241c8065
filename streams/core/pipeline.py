"""The gate's core: pure functions from one input record to one decision.

`replygate check` and the Faust worker both call `Gate`; the worker only adds turn state
(pending and finished turns) and Kafka I/O around it. Nothing here imports Faust or Kafka, and
the file reads (media, CSV charts) are the `FileStage` the gate is given; what a reply's turn
holds is the `TurnView` it is handed. Words: `decide_*` takes a record's bytes to its Decision,
`read_*` takes bytes to a value or record (or the dead letter of bytes that are not one),
`judge_*` decides a record already read. Every contract rule is the contract object's.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import InitVar, dataclass, field, replace
from datetime import datetime, timedelta
from functools import lru_cache, partial
from typing import Any, TypeVar, overload

import orjson
from pydantic import ValidationError

from schemas import codes
from schemas.contract import (
    ContractResult,
    ReplyContract,
    ReplyInput,
    correction_instructions,
)
from schemas.errors import issues_from_validation_error
from schemas.issue import Issue, Notice
from schemas.issue_sink import capped
from schemas.json_numbers import as_written, loads_wide, wide_integer
from schemas.json_read import KeyPath, duplicate_key_issues, duplicate_keys, lone_surrogate_issue
from schemas.preview import masked_line, preview_line
from schemas.progress import progress_text_issues
from schemas.records import (
    EMPTY_CONTEXT,
    Context,
    CorrectionRequest,
    DeadLetter,
    DeadReason,
    Delivery,
    ErrorEntry,
    GenericNormalized,
    MaskEntry,
    ModelOutput,
    Normalized,
    NoticeEntry,
    RawChunk,
    RawReply,
    ToolCall,
    ToolResult,
    ToolResultMetadata,
    TurnControl,
)
from schemas.rich_output import error_text
from schemas.text_rules import escape_controls
from schemas.verdicts import Action, Verdict
from streams.core.chunks import assemble, chunk_limit
from streams.core.decision import (
    Decision,
    DeliveryKind,
    PendingTurn,
    Source,
    Turn,
    iso,
)
from streams.core.leaks import Masker
from streams.core.mask_hit import MaskHit
from streams.core.ports import NO_TURNS, FileStage, TurnView
from streams.settings.model import GateSettings

# How many registered contracts an `unknown_contract` message lists.
_KNOWN_LISTED = 20
# How much of an error list a dead letter's `detail` may carry.
_DETAIL_MAX_CHARS = 4000
# What joins the keys of an error's path: `.`, `[0]`, `["` and `"]`.
_PATH_SEPARATORS = re.compile(r'(\.|\[[0-9]+\]|\["|"\])')
# Beyond a dead letter's cut, how much is still masked so a secret across the cut is caught.
MASK_SLACK_BYTES = 16 * 1024


E = TypeVar("E", RawReply, RawChunk, ToolCall, TurnControl)


def select_reply(output: ModelOutput) -> tuple[ReplyInput | None, list[Issue]]:
    """The final reply: the `json` tool call's arguments, else `output.text`; never reasoning."""
    calls = output.tool_calls or []
    json_calls = [i for i, call in enumerate(calls) if call.name == "json"]
    issues: list[Issue] = []
    if len(json_calls) > 1:
        issues.append(
            codes.MULTIPLE_JSON_TOOL_CALLS.issue("output.tool_calls", count=len(json_calls))
        )
    if json_calls and output.text is not None:
        issues.append(codes.AMBIGUOUS_REPLY.issue("output"))
    if not json_calls and output.text is None:
        issues.append(codes.MISSING_REPLY.issue("output"))
    if issues:
        return None, issues
    if json_calls:
        return ReplyInput("tool", arguments=calls[json_calls[0]].arguments), []
    return ReplyInput("text", text=output.text), []


def reply_as_text(output: ModelOutput) -> str:
    """The whole final reply as the model sent it, for a correction request (never truncated)."""
    if output.text is not None:
        return output.text
    for call in output.tool_calls or []:
        if call.name == "json":
            return _json_text(call.arguments)
    return ""


def _json_text(value: Any) -> str:
    """JSON text of a parsed value; orjson stops at 254 levels where its parser allows 1,024."""
    try:
        return orjson.dumps(value, default=as_written).decode()
    except TypeError:
        pass
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (RecursionError, TypeError):
        return "<the json tool call's arguments are nested too deeply to show>"


def _detail(issues: list[Issue]) -> str:
    text = "; ".join(f"{i.path}: {i.code}: {i.message}" for i in issues)
    return text if len(text) <= _DETAIL_MAX_CHARS else text[: _DETAIL_MAX_CHARS - 1] + "…"


def _cut_utf8(text: str, limit: int) -> str:
    data = text.encode("utf-8", "replace")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


# How many ids `Gate.shown_id` remembers: the ids of one record.
_SHOWN_IDS = 8
# How many distinct issues `Gate._masked` remembers as they leave: a contract's common errors.
_SHOWN_ISSUES = 1024


@dataclass
class Gate:
    """The pipeline of one deployment: contracts and masker built once, file reads delegated.

    `files` does the I/O (`streams.files.stage.DiskFiles` for the worker and `check`);
    `contracts` is the deployment's registry, built by the shell from its settings
    (`streams.settings.contracts.build_registry`): the gate reads no file and imports nothing.
    """

    settings: GateSettings  # only its own group: no connection, credentials or worker knobs
    files: FileStage
    contracts: dict[str, ReplyContract]
    masker: Masker = field(init=False)
    _instruction_cache: dict[str, str] = field(init=False, default_factory=dict)
    # The last few ids shown and their shown forms: a record shows one id several times (a
    # Delivery its turn id three times), and masking it once is enough. Emptied when full.
    _shown_ids: dict[str, str] = field(init=False, default_factory=dict)
    # Issues as they leave the gate (`outbound_issue`, remembered): replies repeat errors.
    _outbound: Callable[[Issue], Issue] = field(init=False)
    # A masker built already for these settings (a policy scope's, shared by its gates).
    shared_masker: InitVar[Masker | None] = None

    def __post_init__(self, shared_masker: Masker | None) -> None:
        if shared_masker is None:
            shared_masker = Masker.from_settings(self.settings)
        self.masker = shared_masker
        self._outbound = lru_cache(maxsize=_SHOWN_ISSUES)(partial(outbound_issue, shared_masker))

    # ---- entry points -------------------------------------------------------------------

    def decide_reply(
        self,
        raw: bytes,
        source: Source,
        now: datetime,
        turns: TurnView = NO_TURNS,
        fallback_id: int | None = None,
    ) -> Decision:
        """A `replies.raw` record: deliver, ask for a correction, notice, no reply, dead letter,
        or a chunk to buffer. `turns` is what the reply's turn holds (nothing, by default)."""
        fallback = source.offset if fallback_id is None else fallback_id
        decoded = self.read_json(raw, source, fallback)
        if isinstance(decoded, Decision):
            return decoded
        return self.decide_reply_json(raw, decoded, source, now, fallback, turns)

    def decide_reply_json(
        self,
        raw: bytes,
        decoded: Any,
        source: Source,
        now: datetime,
        fallback: str | int,
        turns: TurnView = NO_TURNS,
    ) -> Decision:
        """`decide_reply` for a record already read as JSON (`decoded`, the value of `raw`)."""
        record_id = _record_id(decoded, "turn_id", fallback)
        twice = duplicate_keys(raw, decoded)
        if isinstance(decoded, dict) and "chunk" in decoded:
            chunk = self._envelope(RawChunk, raw, decoded, source, record_id, twice)
            if isinstance(chunk, Decision):
                return chunk
            return Decision(
                id=self.shown_id(chunk.turn_id), verdict="accepted", action="buffer", chunk=chunk
            )
        in_output = _in_tool_arguments(twice, ("output", "tool_calls")) if twice else []
        reply = self._envelope(RawReply, raw, decoded, source, record_id, twice, in_output)
        if isinstance(reply, Decision):
            return reply
        key_issues = _output_key_issues(reply.output, twice) if twice else []
        if self.settings.closed_platforms and reply.platform not in self.settings.platforms:
            issue = codes.UNKNOWN_PLATFORM.issue("platform", platform=reply.platform)
            return self.dead_letter(raw, source, "invalid_envelope", [issue], record_id)
        contract = self.contracts.get(reply.contract)
        if contract is None:
            known = ", ".join(sorted(self.contracts)[:_KNOWN_LISTED])
            issue = codes.UNKNOWN_CONTRACT.issue("contract", contract=reply.contract, known=known)
            return self.dead_letter(raw, source, "unknown_contract", [issue], record_id)
        kind_issues = progress_envelope_issues(reply)
        if kind_issues:
            return self.dead_letter(raw, source, "invalid_envelope", kind_issues, record_id)
        if reply.is_progress:
            return self.judge_progress(reply, source.timestamp or now)
        context = reply.context
        if context is None and reply.attempt == 1:
            context = turns.kept_context(reply.turn_id)
        stream_issues: list[Issue] = []
        streamed = reply.output.chunks is not None
        if streamed:
            held = turns.held_chunks(reply.turn_id, reply.attempt)
            output, stream_issues = assemble(reply.output, held, chunk_limit(self.settings))
            reply = reply.model_copy(update={"output": output})
        decision = self.judge_reply(
            reply, contract, source.timestamp or now, context, stream_issues, turns, key_issues
        )
        return replace(decision, assembled=True) if streamed else decision

    def decide_tool_call(
        self, raw: bytes, source: Source, fallback_id: int | None = None
    ) -> Decision:
        """A `toolcalls.raw` record: a tool result (ok or error), or a dead letter."""
        fallback = source.offset if fallback_id is None else fallback_id
        decoded = self.read_json(raw, source, fallback)
        if isinstance(decoded, Decision):
            return decoded
        return self.decide_tool_call_json(raw, decoded, source, fallback)

    def decide_tool_call_json(
        self, raw: bytes, decoded: Any, source: Source, fallback: str | int
    ) -> Decision:
        """`decide_tool_call` for a record already read as JSON."""
        record_id = _record_id(decoded, "call_id", fallback)
        twice = duplicate_keys(raw, decoded)
        in_arguments = [path for path in twice if path[:1] == ("arguments",)]
        call = self._envelope(ToolCall, raw, decoded, source, record_id, twice, in_arguments)
        if isinstance(call, Decision):
            return call
        key_issues = duplicate_key_issues([path[1:] for path in in_arguments])
        return self.judge_tool_call(call, key_issues)

    def read_control(
        self, raw: bytes, source: Source, fallback_id: str | int | None = None
    ) -> TurnControl | Decision:
        """A `turns.control` record, or its dead letter (shown as `fallback_id` without an id:
        its offset by default)."""
        fallback = source.offset if fallback_id is None else fallback_id
        decoded = self.read_json(raw, source, fallback)
        if isinstance(decoded, Decision):
            return decoded
        record_id = _record_id(decoded, "turn_id", fallback)
        twice = duplicate_keys(raw, decoded)
        return self._envelope(TurnControl, raw, decoded, source, record_id, twice)

    # ---- decisions ----------------------------------------------------------------------

    def judge_reply(
        self,
        reply: RawReply,
        contract: ReplyContract,
        now: datetime,
        context: Context | None = None,
        stream_issues: Sequence[Issue] = (),
        turns: TurnView = NO_TURNS,
        key_issues: Sequence[Issue] = (),
    ) -> Decision:
        """The decision for an envelope-valid reply; the turn state is the worker's business.

        `stream_issues`: why a streamed reply could not be assembled; invalid like any other.
        `key_issues`: keys the model's tool calls give twice (`duplicate_key`); the reply is
        still validated, so the one correction names every error, transport first.
        `turns.asked_at`: when a correction request is made (default `now`, the record's time).
        """
        turn = Turn.of(reply)
        selected, issues = select_reply(reply.output)
        issues = [*stream_issues, *issues] if stream_issues else issues
        result = (
            contract.validate(selected, context or reply.context or EMPTY_CONTEXT)
            if selected is not None and not issues
            else ContractResult(issues=tuple(issues))
        )
        if key_issues:
            result = ContractResult(issues=tuple(capped([*key_issues, *result.issues])))
        if result.valid and result.no_reply:
            return Decision(
                id=self.shown_id(reply.turn_id), verdict="no_reply", action="none", turn=turn
            )
        if result.valid and result.message is not None:
            return self._deliver(turn, result.message, corrected=reply.attempt == 1, now=now)
        errors = self._masked(result.issues) or (codes.INVALID_REPLY.issue("$"),)
        if reply.attempt == 0:
            moment = turns.asked_at(turn.turn_id)
            asked = max(now, moment) if moment is not None else now
            return self._request_correction(turn, contract, reply, errors, asked)
        return replace(self.failure_notice(turn, now), errors=errors)

    def judge_progress(self, reply: RawReply, now: datetime) -> Decision:
        """A progress summary: its text delivered (masked) or dropped; never the turn's state.

        Not validated against the contract and never corrected; whether the turn is already
        finished is the worker's question (`streams.core.turns.on_progress`).
        """
        turn = Turn.of(reply)
        issues = progress_text_issues(reply.output.text)
        if issues:
            errors = self._masked(issues)
            return Decision(
                id=self.shown_id(reply.turn_id),
                verdict="rejected",
                action="drop",
                errors=errors,
                turn=turn,
            )
        message, hits = self.masker.mask_tree({"text": reply.output.text}, "$")
        delivery_id = f"{reply.turn_id}/progress/{reply.seq}"
        return self._delivery(
            turn, "progress", message, False, hits, [], now, message["text"], delivery_id
        )

    def failure_notice(self, turn: Turn, now: datetime) -> Decision:
        """The host's fixed notice for a turn whose correction failed or expired."""
        text = self.settings.failure_notice_text
        contract = self.contracts.get(turn.contract)
        message = contract.notice_message(text) if contract is not None else {"text": text}
        return self._delivery(turn, "failure_notice", message, False, [], [], now, text)

    def judge_tool_call(self, call: ToolCall, key_issues: Sequence[Issue] = ()) -> Decision:
        """A tool call's result; `key_issues` (keys its arguments give twice) make it an error
        that also lists everything else wrong with the call. An error's text is written from
        the masked, escaped issues, as every error that leaves the gate."""
        result = self.files.run_tool(call)
        ok = result.status == "ok" and not key_issues
        errors = () if ok else self._masked([*key_issues, *result.issues])
        # One tree: a value found by context in the input is masked in the output too.
        both, hits = self.masker.mask_tree({"input": result.input, "output": result.output})
        masked_input, masked_output = both["input"], both["output"]
        if ok:
            text = (
                "Rich output accepted."
                if masked_output is None
                else orjson.dumps(masked_output).decode()
            )
        else:
            text, _ = self.masker.mask_text(error_text(list(errors)))
        generic = GenericNormalized.model_construct(
            input=masked_input if ok else None, output=masked_output if ok else None
        )
        call_id, task_id, tool = self.shown_ids(call.call_id, call.task_id, call.tool)
        record = ToolResult.model_construct(
            call_id=call_id,
            task_id=task_id,
            tool=tool,
            status="ok" if ok else "error",
            text=text,
            metadata=ToolResultMetadata.model_construct(
                normalized=Normalized.model_construct(generic=generic)
            ),
        )
        return Decision(
            id=call_id,
            verdict="accepted" if ok else "rejected",
            action="tool_result" if ok else "tool_error",
            errors=errors,
            output=record,
            topic=self.settings.topic("toolresults"),
            key=call.task_id.encode(),
            masked=tuple(hits) if ok else (),
        )

    def dead_letter(
        self,
        raw: bytes,
        source: Source,
        reason: DeadReason,
        issues: list[Issue],
        record_id: str | int,
    ) -> Decision:
        """A record that cannot be processed at all: masked bytes go to the DLQ, cut at 64 KiB."""
        # Cut before masking (with room for a secret that straddles the cut), then cut again:
        # refusing a huge record costs what the dead letter keeps, not the record's size.
        limit = self.settings.dead_letter_record_bytes
        text, counts = self.masker.mask_text(
            raw[: limit + MASK_SLACK_BYTES].decode("utf-8", "replace")
        )
        detail, _ = self.masker.mask_text(_detail(list(self._masked(issues))))
        record = DeadLetter.model_construct(
            source_topic=source.topic,
            partition=source.partition,
            offset=source.offset,
            reason=reason,
            detail=detail,
            record=_cut_utf8(text, limit),
        )
        hits = tuple(MaskHit(rule, "record", n) for rule, n in sorted(counts.items()))
        return Decision(
            id=self.shown_id(record_id),
            verdict="dead_letter",
            action="dead_letter",
            errors=self._masked(issues),
            output=record,
            topic=self.settings.topic("dlq"),
            key=source.key,
            masked=hits,
        )

    # ---- helpers ------------------------------------------------------------------------

    @overload
    def shown_id(self, value: str) -> str: ...
    @overload
    def shown_id(self, value: str | int) -> str | int: ...
    def shown_id(self, value: str | int) -> str | int:
        """An id as an output carries it: a secret-shaped id is masked, with a digest of the id
        after the marker so that two masked ids stay two (an endpoint drops a repeated
        `delivery_id`). The turn's state keeps the id itself; the Kafka key is never changed."""
        if isinstance(value, int):
            return value
        shown = self._shown_ids.get(value)
        if shown is not None:
            return shown
        masked = self._mask(value)
        if masked != value:
            masked = f"{masked}#{hashlib.sha256(value.encode()).hexdigest()[:16]}"
        if len(self._shown_ids) >= _SHOWN_IDS:
            self._shown_ids.clear()
        self._shown_ids[value] = masked
        return masked

    def shown_ids(self, *values: str) -> tuple[str, ...]:
        """`shown_id` of each value; when none holds anything a rule finds (nearly always),
        one pre-filter pass over them all instead of one mask each."""
        if self.masker.is_clean(values):
            return values
        return tuple(self.shown_id(value) for value in values)

    def _mask(self, text: str) -> str:
        return self.masker.mask_text(text)[0]

    def _instructions(self, contract: ReplyContract) -> str:
        """What the model writes (`correction_instructions`), masked, cached per contract."""
        text = self._instruction_cache.get(contract.name)
        if text is None:
            text, _ = self.masker.mask_text(correction_instructions(contract))
            self._instruction_cache[contract.name] = text
        return text

    def _envelope(
        self,
        model: type[E],
        raw: bytes,
        decoded: Any,
        source: Source,
        record_id: str | int,
        twice: Sequence[KeyPath] = (),
        in_reply: Sequence[KeyPath] = (),
    ) -> E | Decision:
        """The record as its strict model, or the dead letter naming every broken rule.

        `twice`: the record's keys given twice; those outside the model's own output
        (`in_reply`, judged with the reply) make the envelope mean two things: a dead letter."""
        issues = duplicate_key_issues([p for p in twice if p not in in_reply]) if twice else []
        try:
            record = model.model_validate(decoded)
        except ValidationError as exc:
            issues += issues_from_validation_error(exc)
            return self.dead_letter(raw, source, "invalid_envelope", issues, record_id)
        if issues:
            return self.dead_letter(raw, source, "invalid_envelope", issues, record_id)
        return record

    def _masked(self, issues: Sequence[Issue]) -> tuple[Issue, ...]:
        """Errors leave the gate too: a path can name a secret key, a message quote a value."""
        return tuple(map(self._outbound, issues))

    def read_json(self, raw: bytes, source: Source, fallback_id: str | int) -> Any:
        """The parsed JSON value, or the dead-letter decision for bytes that are not one."""
        if len(raw) > self.settings.max_record_bytes:
            issue = codes.RECORD_TOO_LARGE.issue(
                "$", size=len(raw), limit=self.settings.max_record_bytes
            )
            return self.dead_letter(raw, source, "record_too_large", [issue], fallback_id)
        try:
            value = orjson.loads(raw)
            wide = wide_integer(raw) is not None  # orjson would read it as a float
        except orjson.JSONDecodeError as exc:
            wide = "infinity" in str(exc)  # a float literal beyond the doubles, e.g. 1e400
            if not wide:
                issue = codes.NOT_JSON.issue("$", error=exc)
                lone = lone_surrogate_issue(raw, exc)  # which reader is right: none
                return self.dead_letter(
                    raw, source, "not_json", [issue, *([lone] if lone else [])], fallback_id
                )
        if wide:
            # valid JSON whose numbers no 64-bit value holds: kept as written, so the reply
            # or arguments that hold one are invalid there (and corrected), not the record
            try:
                value = loads_wide(raw)
            except ValueError as exc:
                issue = codes.NOT_JSON.issue("$", error=exc)
                return self.dead_letter(raw, source, "not_json", [issue], fallback_id)
        return value

    def _deliver(self, turn: Turn, message: Any, *, corrected: bool, now: datetime) -> Decision:
        notices: list[Notice] = []
        contract = self.contracts[turn.contract]
        if contract.needs_file_stage:
            message, notices = self.files.inspect_media(message)
        text = contract.preview_text(message)  # the masked message's, when nothing is masked
        return self._delivery(
            turn, "reply", message, corrected, [], notices, now, text, unmasked=True
        )

    def _delivery(
        self,
        turn: Turn,
        kind: DeliveryKind,
        message: Any,
        corrected: bool,
        hits: list[MaskHit],
        notices: list[Notice],
        now: datetime,
        text: str,
        delivery_id: str | None = None,
        *,
        unmasked: bool = False,
    ) -> Decision:
        """A Delivery to the turn's platform topic, keyed by its conversation.

        `text` is what the preview shows: the projected reply, the notice or the progress text.
        `unmasked`: `message` (a reply's) is masked here, and `text` is its preview text.
        """
        line = preview_line(text)
        ids = (turn.turn_id, turn.conversation_id, delivery_id or turn.turn_id)
        checked = (line, *ids, message) if unmasked else (line, *ids)
        if self.masker.is_clean(checked):  # nearly always: one pre-filter pass for all
            shown_line, (shown_turn, shown_conversation, shown_delivery) = line, ids
        else:
            if unmasked:
                message, hits = self.masker.mask_tree(message, "$")
                line = preview_line(self.contracts[turn.contract].preview_text(message))
            shown_line = masked_line(line, self._mask)
            shown_turn, shown_conversation, shown_delivery = self.shown_ids(*ids)
        record = Delivery.model_construct(
            delivery_id=shown_delivery,
            turn_id=shown_turn,
            conversation_id=shown_conversation,
            platform=turn.platform,
            contract=turn.contract,
            kind=kind,
            message=message,
            preview=shown_line,
            corrected=corrected,
            masked=[
                MaskEntry.model_construct(rule=h.rule, path=h.path, count=h.count) for h in hits
            ],
            notices=[NoticeEntry.model_construct(path=n.path, reason=n.reason) for n in notices],
            delivered_at=iso(now),
        )
        verdict: Verdict = "rejected" if kind == "failure_notice" else "accepted"
        action: Action = {"reply": "deliver", "failure_notice": "failure_notice"}.get(
            kind, "progress"
        )  # type: ignore[assignment]  # the dict's values are Action literals
        return Decision(
            id=shown_turn,
            verdict=verdict,
            action=action,
            output=record,
            topic=self.settings.delivery_topic(turn.platform),
            key=turn.conversation_id.encode(),
            turn=turn,
            masked=tuple(hits),
            notices=tuple(notices),
        )

    def _request_correction(
        self,
        turn: Turn,
        contract: ReplyContract,
        reply: RawReply,
        errors: tuple[Issue, ...],
        asked: datetime,
    ) -> Decision:
        """The one correction request; its deadline counts from `asked`, when it is made."""
        deadline = iso(asked + timedelta(seconds=self.settings.correction_deadline_seconds))
        record = {
            "turn_id": turn.turn_id,
            "conversation_id": turn.conversation_id,
            "platform": turn.platform,
            "contract": turn.contract,
            "invalid_output": reply_as_text(reply.output),
            "errors": [e.as_dict() for e in errors],
        }
        masked, hits = self.masker.mask_tree(record, "$")
        request = CorrectionRequest.model_construct(
            turn_id=masked["turn_id"],
            conversation_id=masked["conversation_id"],
            platform=masked["platform"],
            contract=masked["contract"],
            invalid_output=masked["invalid_output"],
            errors=[
                ErrorEntry.model_construct(path=e["path"], code=e["code"], message=e["message"])
                for e in masked["errors"]
            ],
            # host text, the same for every request of a contract: built and masked once
            instructions=self._instructions(contract),
            deadline=deadline,
        )
        context = reply.context.model_dump(exclude_none=True) if reply.context else None
        pending = PendingTurn(
            turn.turn_id,
            turn.conversation_id,
            turn.platform,
            turn.contract,
            deadline,
            iso(asked),
            context,
        )
        return Decision(
            id=self.shown_id(turn.turn_id),
            verdict="rejected",
            action="request_correction",
            errors=errors,
            output=request,
            topic=self.settings.topic("corrections"),
            key=turn.conversation_id.encode(),
            turn=turn,
            masked=tuple(hits),
            pending=pending,
        )


def progress_envelope_issues(reply: RawReply) -> list[Issue]:
    """`seq` belongs to progress and progress needs it: otherwise the envelope is invalid."""
    if reply.is_progress and reply.seq is None:
        return [codes.MISSING_FIELD.issue("seq", "progress")]
    if not reply.is_progress and reply.seq is not None:
        return [codes.UNKNOWN_FIELD.issue("seq", "progress_only")]
    if reply.is_progress and reply.output.chunks is not None:
        return [codes.UNKNOWN_FIELD.issue("output.chunks", "final_only")]
    return []


def envelope_id(decoded: Any, key: str) -> str | None:
    """A record's id (`turn_id`, `call_id`) as its envelope allows one (1 to 200 characters),
    read from the parsed record before it is validated; None when it has none such."""
    if isinstance(decoded, dict):
        value = decoded.get(key)
        if isinstance(value, str) and 0 < len(value) <= 200:
            return value
    return None


def _record_id(decoded: Any, key: str, fallback: str | int) -> str | int:
    """The id a record is shown by: its own (`envelope_id`), else `fallback`."""
    found = envelope_id(decoded, key)
    return fallback if found is None else found


def _in_tool_arguments(twice: Sequence[KeyPath], calls: KeyPath) -> list[KeyPath]:
    """The keys given twice inside a tool call's `arguments` (`output.tool_calls[i].arguments`):
    the model's own output, corrected like the rest of its reply."""
    depth = len(calls)
    return [
        path
        for path in twice
        if path[:depth] == calls and len(path) > depth + 2 and path[depth + 1] == "arguments"
    ]


def _output_key_issues(output: ModelOutput, twice: Sequence[KeyPath]) -> list[Issue]:
    """`duplicate_key` for the model's tool calls: under the `json` call's arguments the path is
    the reply's own (as the contract's errors), under another call the record's."""
    inside = _in_tool_arguments(twice, ("output", "tool_calls"))
    if not inside:
        return []
    calls = output.tool_calls or []
    reply_paths: list[KeyPath] = []
    other_paths: list[KeyPath] = []
    for path in inside:
        index = path[2]
        is_reply = isinstance(index, int) and index < len(calls) and calls[index].name == "json"
        (reply_paths if is_reply else other_paths).append(path[4:] if is_reply else path)
    return [*duplicate_key_issues(reply_paths), *duplicate_key_issues(other_paths)]


def _mask_path(masker: Masker, path: str) -> str:
    """A path masked whole (a secret key holding a `.`, e.g. a JWT) and then key by key:
    leak rules want a boundary before a token, and `.` after a parent's name is none."""
    whole, _ = masker.mask_text(path)
    parts = _PATH_SEPARATORS.split(whole)
    return "".join(
        part if not part or _PATH_SEPARATORS.fullmatch(part) else masker.mask_text(part)[0]
        for part in parts
    )


def outbound_text(masker: Masker, text: str) -> str:
    """Text as it may leave replygate (a message, a log line): masked like the reply, and every
    control character shown escaped."""
    masked, _ = masker.mask_text(text)
    return escape_controls(masked)


def outbound_issue(masker: Masker, issue: Issue) -> Issue:
    """An issue as it may leave replygate (a record, a check line, a log): its path and message
    masked like the reply, and every control character shown escaped."""
    return Issue(
        escape_controls(_mask_path(masker, issue.path)),
        issue.code,
        outbound_text(masker, issue.message),
    )
