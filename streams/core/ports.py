"""What the decision core asks of the layers around it, so the core itself does no I/O.

`Gate` is given a `FileStage` (`streams.files.stage.DiskFiles` reads the disk) and, per reply,
a `TurnView`: what the turn's state holds (the worker's store, `check`'s held chunks, or nothing).
`TurnBatch` is given an `ExpiryIndex`: the turn index's view a batch needs (the worker's
`streams.worker.store.StoredIndex` owns the index and alone writes it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol

from schemas.issue import Issue, Notice
from schemas.records import Context, ToolCall

if TYPE_CHECKING:
    from streams.core.chunks import ChunkBuffer


class ToolOutcome(Protocol):
    """A rich-output tool call judged: `input` the arguments, `output` the CSV snapshot."""

    @property
    def status(self) -> Literal["ok", "error"]: ...
    @property
    def text(self) -> str: ...
    @property
    def input(self) -> dict[str, Any] | None: ...
    @property
    def output(self) -> dict[str, Any] | None: ...
    @property
    def issues(self) -> Sequence[Issue]: ...


class FileStage(Protocol):
    """The gate's two file operations: media attachments of a reply, CSVs of a tool call."""

    def inspect_media(self, message: dict[str, Any]) -> tuple[dict[str, Any], list[Notice]]:
        """The message with unreadable attachments replaced, and why (a contract whose
        `needs_file_stage` is set)."""
        ...

    def run_tool(self, call: ToolCall) -> ToolOutcome:
        """The tool call checked and its CSV charts read from the workspace."""
        ...


class TurnView(Protocol):
    """What a reply's turn holds, as the gate may ask while judging it (read only).

    Caller: `Gate.decide_reply_json` (`kept_context`, `held_chunks`) and `Gate.judge_reply`
    (`asked_at`). Affects: nothing; whether the reply was assembled from held chunks comes
    back on its decision (`Decision.assembled`).
    """

    def kept_context(self, turn_id: str) -> Context | None:
        """The context kept with a turn waiting for its correction (a correction may come
        back without one: the built-in corrector knows only the correction request)."""
        ...

    def held_chunks(self, turn_id: str, attempt: int) -> ChunkBuffer | None:
        """The chunks held for a streamed final reply of this attempt, None when none are."""
        ...

    def asked_at(self, turn_id: str) -> datetime | None:
        """When the turn's correction request is made (its deadline counts from then): the
        worker's clock, or on a replay the moment it first made it; None: the record's time."""
        ...


class ExpiryIndex(Protocol):
    """What a batch asks the turn index: the turns whose stored value it may rewrite. It is
    asked in the judging thread too, so it holds no writer of the index (no `note`, `load`).

    Caller: `streams.core.batch.TurnBatch`, on the event loop or in the judging thread; each
    key it gives is checked against the stored value (an entry may be stale).
    """

    def due(self, partition: int, now: datetime) -> Iterator[bytes]:
        """Keys on `partition` whose finished state may have expired by broker time `now`.

        Affects: the expiry order only: a key given is taken from it (a later value of the
        turn filed its own entry when it was written; the batch expires or keeps this one).
        """
        ...

    def releasable(
        self, partition: int, committed: Callable[[str, int], int | None]
    ) -> list[bytes]:
        """Keys on `partition` whose kept replay no replay can need any more (the group has
        committed past the record that holds it). Affects: nothing."""
        ...

    def refile(self, partition: int, key: bytes, moment: datetime) -> None:
        """A key `due` gave to a run the batch throws away (a policy version to load first),
        filed again at the moment it expires. Affects: the expiry order only."""
        ...


class NoTurns:
    """A view of no turn state: nothing kept, nothing held."""

    def kept_context(self, turn_id: str) -> Context | None:
        return None

    def held_chunks(self, turn_id: str, attempt: int) -> ChunkBuffer | None:
        return None

    def asked_at(self, turn_id: str) -> datetime | None:
        return None


NO_TURNS: TurnView = NoTurns()
