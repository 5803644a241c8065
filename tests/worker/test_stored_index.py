"""After a rebalance the index reads only the partitions new to this worker from the store, and
forgets the ones it lost (`streams.worker.store.StoredIndex`): with a million finished turns a
full rebuild at every rebalance took seconds."""

from __future__ import annotations

from collections.abc import Iterator, Set
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from streams.core.decision import PendingTurn, iso
from streams.core.state import TurnIndex, TurnState, settled
from streams.worker import store as store_module
from streams.worker.store import StoredIndex, TurnStore

AT = datetime(2026, 12, 1, tzinfo=UTC)


def _pending(turn: str, partition: int) -> bytes:
    pending = PendingTurn(turn, "c-1", "im", "im.segments.v1", iso(AT), iso(AT))
    return TurnState("pending", f"replies:{partition}:1", iso(AT), pending=pending).encode()


class CountingStore(TurnStore):
    """A memory store's layout (Faust's `data` and `_key_partition`) that records which
    partitions were read."""

    def __init__(self) -> None:
        super().__init__(SimpleNamespace(data=SimpleNamespace(data={}, _key_partition={})))
        self.read: list[Set[int] | None] = []

    def put(self, partition: int, key: bytes, value: bytes) -> None:
        self.table.data.data[key] = value
        self.table.data._key_partition[key] = partition

    def items(self, only: Set[int] | None = None) -> Iterator[tuple[int, bytes, bytes]]:
        self.read.append(None if only is None else set(only))
        return super().items(only)


def test_a_rebalance_reads_only_the_new_partitions_and_forgets_the_lost() -> None:
    store = CountingStore()
    for partition in (0, 1, 2):
        store.put(partition, f"p-{partition}".encode(), _pending(f"p-{partition}", partition))
    done = settled(TurnState("finished", "replies:1:2", iso(AT), outcome="delivered"))
    store.put(1, b"f-1", done.encode())
    index = StoredIndex(TurnIndex(timedelta(days=7)), store)
    index.stale({0, 1})
    assert set(index.refresh().pending) == {b"p-0", b"p-1"}
    assert store.read == [{0, 1}]
    index.stale({1, 2})
    turns = index.refresh()
    assert set(turns.pending) == {b"p-1", b"p-2"} and store.read[-1] == {2}
    # the kept partition's finished turn is still filed for expiry, the lost one's are gone
    later = AT + timedelta(days=8)
    assert list(turns.due(1, later)) == [b"f-1"] and list(turns.due(0, later)) == []
    assert index.refresh() is turns and len(store.read) == 2  # fresh: nothing read again


def test_without_a_known_assignment_everything_stored_is_read() -> None:
    store = CountingStore()
    store.put(3, b"p-3", _pending("p-3", 3))
    index = StoredIndex(TurnIndex(timedelta(days=7)), store)
    index.stale()
    assert set(index.refresh().pending) == {b"p-3"} and store.read == [None]


def _five_pending_on_partition_1() -> tuple[CountingStore, StoredIndex]:
    store = CountingStore()
    for i in range(5):
        store.put(1, f"p-{i}".encode(), _pending(f"p-{i}", 1))
    return store, StoredIndex(TurnIndex(timedelta(days=7)), store)


def test_a_new_partition_is_read_behind_the_batches_and_read_again_if_interrupted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(store_module, "LOAD_STEP", 2)
    store, index = _five_pending_on_partition_1()
    index.stale({1})
    assert len(index.refresh().pending) == 2 and index.loading == {1}
    index.stale({0, 1})  # a rebalance mid-load: partition 1 is read again from its start
    assert len(index.refresh().pending) == 2 and index.loading == {0, 1}
    index.refresh()
    index.refresh()
    assert len(index.refresh().pending) == 5 and index.loading == set()
    assert store.read == [{1}, {0, 1}]


def test_a_step_stops_once_its_time_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its time spent after one chunk, a step leaves the rest for the next batch: a batch never
    waits for LOAD_STEP turns read at once."""
    monkeypatch.setattr(store_module, "LOAD_CHUNK", 2)
    monkeypatch.setattr(store_module, "LOAD_SECONDS", 0.0)
    _, index = _five_pending_on_partition_1()
    index.stale({1})
    assert len(index.refresh().pending) == 2 and index.loading == {1}
    assert len(index.refresh().pending) == 4 and index.loading == {1}
    assert len(index.refresh().pending) == 5 and index.loading == set()
