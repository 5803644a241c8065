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
from collections.abc import Iterable, Iterator, Sequence, Set
from dataclasses import dataclass
from typing import Any

from streams.core.batch import Write
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


class StoredIndex:
    """The `TurnIndex` of the turns of the partitions this worker owns, brought up to date after
    a rebalance changed them (`stale`), so pending turns are never looked for by a scan.

    A partition kept through the rebalance keeps its entries (every write kept them current,
    and no one else wrote to it meanwhile); one it lost is forgotten; one new to this worker is
    read from the store LOAD_STEP turns a call, behind the batches. Until it is read whole its
    pending turns' deadlines and its expiries may come late, never wrongly: a value read after a
    batch rewrote it is a stale entry, and every user of the index checks the stored value.
    """

    def __init__(self, index: TurnIndex, store: TurnStore) -> None:
        self.index = index
        self.store = store
        self.fresh = False
        self.owned: set[int] | None = None  # None: not known, read everything stored
        self.held: set[int] | None = None  # the partitions the index holds (None: all)
        self.loading: set[int] | None = set()  # partitions not read whole yet (None: all)
        self._loader: Iterator[tuple[int, bytes, bytes]] | None = None

    def stale(self, owned: Set[int] | None = None) -> None:
        """A rebalance: `owned` the input partitions now assigned here, when known."""
        self.fresh = False
        if owned is not None:
            self.owned = set(owned)

    def refresh(self, step: bool = True) -> TurnIndex:
        """The index, brought up to date first if a rebalance came since; `step` reads the
        next LOAD_STEP stored turns of the partitions still loading."""
        if not self.fresh:
            self._plan()
            self.fresh = True
        if step and self._loader is not None:
            self._step()
        return self.index

    def _step(self) -> None:
        """Read the next stored turns of the partitions loading, bounded in count and time."""
        assert self._loader is not None  # for mypy: refresh checked
        size, read = min(LOAD_CHUNK, LOAD_STEP), 0
        until = time.perf_counter() + LOAD_SECONDS
        while read < LOAD_STEP:
            chunk = list(itertools.islice(self._loader, min(size, LOAD_STEP - read)))
            self.index.load(chunk)
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
            self.index.clear()
            todo = self.owned
        else:
            for partition in (self.held - self.owned) | interrupted:
                self.index.forget(partition)
            todo = (self.owned - self.held) | (interrupted & self.owned)
        self._loader = self.store.items(todo)
        self.loading = None if todo is None else set(todo)
        self.held = None if self.owned is None else set(self.owned)
