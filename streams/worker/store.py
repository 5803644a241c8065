"""The turn table's local store, read and written by partition outside Faust's event context.

Faust writes a table through `table[key] = value`, which needs the current event and sends the
changelog record through a queue that a commit may not wait for. replygate sends the changelog
record itself (awaited, `streams.worker.sender`) and then applies the acknowledged record to the
local store through the store's own `apply_changelog_batch`, the very path recovery takes, so the
local store and a store recovered from the changelog always agree.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from streams.core.batch import Write
from streams.core.decision import PendingTurn
from streams.core.ports import ExpiryIndex
from streams.core.state import TurnIndex
from streams.worker.faust_fixes import read_own_writes


@dataclass(frozen=True, slots=True)
class _Message:
    """The part of a Faust message that `apply_changelog_batch` reads."""

    tp: Any
    partition: int
    offset: int
    key: bytes
    value: bytes | None


@dataclass(frozen=True, slots=True)
class _Event:
    key: bytes
    value: bytes | None
    message: _Message


def _same(value: Any) -> Any:
    return value


# A changelog record as the store takes it: topic-partition, partition, offset, key, value.
ChangelogRecord = tuple[Any, int, int, bytes, bytes | None]


def apply_changelog(store: Any, records: Iterable[ChangelogRecord]) -> None:
    """Changelog records into a Faust store through its own `apply_changelog_batch`, the path
    recovery takes: keys and values stay bytes."""
    events = [
        _Event(key, value, _Message(tp, partition, offset, key, value))
        for tp, partition, offset, key, value in records
    ]
    store.apply_changelog_batch(events, to_key=_same, to_value=_same)


class TurnStore:
    """Raw bytes per turn key in the Faust table's store (memory or RocksDB)."""

    def __init__(self, table: Any) -> None:
        self.table = table

    @property
    def _rocksdb(self) -> bool:
        return hasattr(self.table.data, "_db_for_partition")

    def get(self, partition: int, key: bytes) -> bytes | None:
        store = self.table.data
        if self._rocksdb:
            value: bytes | None = store._db_for_partition(partition).get(key)
            return value
        return store.data.get(key)  # type: ignore[no-any-return]

    def apply(self, writes: Sequence[Write], offsets: Sequence[Any]) -> None:
        """Apply acknowledged changelog records (`offsets`: their RecordMetadata, in order)."""
        acknowledged = zip(writes, offsets, strict=True)
        apply_changelog(
            self.table.data,
            ((m.topic_partition, w.partition, m.offset, w.key, w.value) for w, m in acknowledged),
        )
        read_own_writes(self.table.app.tables.recovery, offsets)

    def items(self, only: Set[int] | None = None) -> Iterator[tuple[int, bytes, bytes]]:
        """Every stored turn as (partition, key, value), for rebuilding the index; `only`: of
        these partitions alone."""
        store = self.table.data
        if self._rocksdb:
            dbs = (
                list(store._dbs.items())
                if only is None
                else [(p, store._db_for_partition(p)) for p in sorted(only)]
            )
            for partition, db in dbs:
                for key, value in db.items():
                    if key != store.offset_key and value is not None:
                        yield partition, key, value
            return
        partitions = store._key_partition
        for key, value in list(store.data.items()):
            partition = partitions.get(key, 0)
            if value is not None and (only is None or partition in only):
                yield partition, key, value


# Stored turns read into the index per call of `StoredIndex.refresh` (a batch, a deadline scan)
# while a partition new to this worker is loaded: at most LOAD_STEP, and no more once
# LOAD_SECONDS of it have passed (checked every LOAD_CHUNK), so a million finished turns load
# behind the batches instead of pausing them: a step of 20,000 took 0.2-0.35 s at load 13, and
# a batch waited for each (bench/README.md, `rebalance_1m`).
LOAD_STEP = 20_000
LOAD_CHUNK = 1_000
LOAD_SECONDS = 0.02


class IndexLent(RuntimeError):
    """The turn index written while a batch judged in the judging thread reads it (a bug)."""


# The pending turns as the deadline scan reads them: turn key -> (partition, pending turn).
PendingTurns = Mapping[bytes, tuple[int, PendingTurn]]


class StoredIndex:
    """The one owner of the worker's `TurnIndex`: it alone writes it, and hands each caller the
    narrow view it needs. The index holds the turns of the partitions this worker owns, brought
    up to date after a rebalance changed them (`stale`), so pending turns are never looked for
    by a scan.

    A partition kept through the rebalance keeps its entries (every write kept them current,
    and no one else wrote to it meanwhile); one it lost is forgotten; one new to this worker is
    read from the store LOAD_STEP turns a call, behind the batches. Until it is read whole its
    pending turns' deadlines and its expiries may come late, never wrongly: a value read after a
    batch rewrote it is a stale entry, and every user of the index checks the stored value.

    The threading rule: while a batch is judged in the judging thread (`lent`), the thread reads
    the expiry order and the kept replays (`for_batch`) and the event loop writes nothing:
    `refresh` and `apply` raise IndexLent, and the deadline scan reads the pending turns, which
    the thread never touches, only if no rebalance made them stale.
    """

    def __init__(self, store: TurnStore, keep: timedelta) -> None:
        self._index = TurnIndex(keep)
        self.store = store
        self.fresh = False
        self.owned: set[int] | None = None  # None: not known, read everything stored
        self.held: set[int] | None = None  # the partitions the index holds (None: all)
        self.loading: set[int] | None = set()  # partitions not read whole yet (None: all)
        self._loader: Iterator[tuple[int, bytes, bytes]] | None = None
        self._lent = False

    # ---- Caller: Worker and its rebalance handlers, on the event loop ------------------------

    def for_batch(self) -> ExpiryIndex:
        """The view the worker's `TurnBatch` judges with, on the loop or in the judging thread:
        no writer in it. Affects: nothing here; the view's `due` takes each key it gives from
        the expiry order."""
        return _ExpiryView(self._index)

    def stale(self, owned: Set[int] | None = None) -> None:
        """A rebalance: `owned` the input partitions now assigned here, when known.
        Affects: the next `refresh` plans what to forget and read (nothing is written now,
        so a rebalance while a batch is lent is safe)."""
        self.fresh = False
        if owned is not None:
            self.owned = set(owned)

    def refresh(self) -> None:
        """Before a batch: the index brought up to date if a rebalance came since, and the next
        LOAD_STEP stored turns read of the partitions still loading.
        Affects: the index's entries (raises IndexLent while a batch is lent)."""
        self._not_lent("refresh")
        if not self.fresh:
            self._plan()
            self.fresh = True
        if self._loader is not None:
            self._step()

    # ---- Caller: BatchFlow, on the event loop ------------------------------------------------

    @contextmanager
    def lent(self) -> Iterator[None]:
        """Around a batch judged in the judging thread. Affects: until it ends, `refresh` and
        `apply` raise IndexLent, and `pending_now` neither refreshes nor steps."""
        self._not_lent("lend")
        self._lent = True
        try:
            yield
        finally:
            self._lent = False

    def apply(self, writes: Iterable[Write]) -> None:
        """A batch's writes, acknowledged and applied to the store, tracked by the index.
        Affects: the index's entries (raises IndexLent while a batch is lent)."""
        self._not_lent("apply")
        note = self._index.note
        for write in writes:
            if write.is_turn:
                note(write.partition, write.key, write.state)

    # ---- Caller: DeadlineScan, on the event loop ---------------------------------------------

    def pending_now(self) -> PendingTurns | None:
        """The pending turns, read only, brought up to date first (`refresh`); while a batch is
        lent, as they are, or None if a rebalance made them stale (the next batch refreshes
        the index before anything else). Affects: as `refresh`, when not lent."""
        if self._lent:
            if not self.fresh:
                return None
        else:
            self.refresh()
        return MappingProxyType(self._index.pending)

    # ---- the owner's own ---------------------------------------------------------------------

    def _not_lent(self, what: str) -> None:
        if self._lent:
            raise IndexLent(
                f"the turn index cannot {what} while a batch judged off the loop reads it"
            )

    def _step(self) -> None:
        """Read the next stored turns of the partitions loading, bounded in count and time."""
        assert self._loader is not None  # for mypy: refresh checked
        size, read = min(LOAD_CHUNK, LOAD_STEP), 0
        until = time.perf_counter() + LOAD_SECONDS
        while read < LOAD_STEP:
            chunk = list(itertools.islice(self._loader, min(size, LOAD_STEP - read)))
            self._index.load(chunk)
            read += len(chunk)
            if len(chunk) < size and read < LOAD_STEP:
                self._loader, self.loading = None, set()
                return
            if time.perf_counter() >= until:
                return

    def _plan(self) -> None:
        """What to forget and what to read after a rebalance; a partition half read is
        forgotten and read again from its start."""
        interrupted = self.loading
        if self.owned is None or self.held is None or interrupted is None:
            self._index.clear()
            todo = self.owned
        else:
            for partition in (self.held - self.owned) | interrupted:
                self._index.forget(partition)
            todo = (self.owned - self.held) | (interrupted & self.owned)
        self._loader = self.store.items(todo)
        self.loading = None if todo is None else set(todo)
        self.held = None if self.owned is None else set(self.owned)


class _ExpiryView:
    """The turn index as a batch sees it (`ExpiryIndex`): its look-ups and the expiry order's
    give-back, no writer of turns."""

    __slots__ = ("due", "refile", "releasable")

    def __init__(self, index: TurnIndex) -> None:
        self.due = index.due
        self.refile = index.refile
        self.releasable = index.releasable
