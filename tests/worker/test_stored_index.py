"""After a rebalance the index reads only the partitions new to this worker from the store, and
forgets the ones it lost (`streams.worker.store.StoredIndex`): with a million finished turns a
full rebuild at every rebalance took seconds. The index's one owner applies every write; the
batch and the deadline scan get views without a writer, and nothing writes while a batch judged
in the judging thread reads it."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Set
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from streams.core.batch import TurnBatch, Write
from streams.core.decision import PendingTurn, Source, iso
from streams.core.state import TurnIndex, TurnState, settled
from streams.settings import Settings
from streams.worker import store as store_module
from streams.worker.batch_flow import OFF_LOOP_RECORD_BYTES, BatchFlow
from streams.worker.metrics_hooks import worker_metrics
from streams.worker.store import IndexLent, StoredIndex, TurnStore
from tests.support.gates import disk_gate

AT = datetime(2026, 12, 1, tzinfo=UTC)


def _pending(turn: str, partition: int) -> bytes:
    pending = PendingTurn(turn, "c-1", "im", "im.segments.v1", iso(AT), iso(AT))
    return TurnState("pending", f"replies:{partition}:1", iso(AT), pending=pending).encode()


def _scanned(index: StoredIndex) -> Mapping[bytes, object]:
    """The pending turns as the deadline scan reads them (refreshed first: nothing is lent)."""
    pending = index.pending_now()
    assert pending is not None
    return pending


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
    index = StoredIndex(store, timedelta(days=7))
    index.stale({0, 1})
    assert set(_scanned(index)) == {b"p-0", b"p-1"}
    assert store.read == [{0, 1}]
    index.stale({1, 2})
    assert set(_scanned(index)) == {b"p-1", b"p-2"} and store.read[-1] == {2}
    # the kept partition's finished turn is still filed for expiry, the lost one's are gone
    later, turns = AT + timedelta(days=8), index.for_batch()
    assert list(turns.due(1, later)) == [b"f-1"] and list(turns.due(0, later)) == []
    index.refresh()
    assert len(store.read) == 2  # fresh: nothing read again


def test_without_a_known_assignment_everything_stored_is_read() -> None:
    store = CountingStore()
    store.put(3, b"p-3", _pending("p-3", 3))
    index = StoredIndex(store, timedelta(days=7))
    index.stale()
    assert set(_scanned(index)) == {b"p-3"} and store.read == [None]


def _five_pending_on_partition_1() -> tuple[CountingStore, StoredIndex]:
    store = CountingStore()
    for i in range(5):
        store.put(1, f"p-{i}".encode(), _pending(f"p-{i}", 1))
    return store, StoredIndex(store, timedelta(days=7))


@pytest.fixture
def loading(monkeypatch: pytest.MonkeyPatch) -> tuple[CountingStore, StoredIndex]:
    """Five pending turns on partition 1, just assigned here, read two a step."""
    monkeypatch.setattr(store_module, "LOAD_STEP", 2)
    store, index = _five_pending_on_partition_1()
    index.stale({1})
    return store, index


def test_a_new_partition_is_read_behind_the_batches_and_read_again_if_interrupted(
    loading: tuple[CountingStore, StoredIndex],
) -> None:
    store, index = loading
    assert len(_scanned(index)) == 2 and index.loading == {1}
    index.stale({0, 1})  # a rebalance mid-load: partition 1 is read again from its start
    assert len(_scanned(index)) == 2 and index.loading == {0, 1}
    index.refresh()
    index.refresh()
    assert len(_scanned(index)) == 5 and index.loading == set()
    assert store.read == [{1}, {0, 1}]


def test_a_step_stops_once_its_time_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its time spent after one chunk, a step leaves the rest for the next batch: a batch never
    waits for LOAD_STEP turns read at once."""
    monkeypatch.setattr(store_module, "LOAD_CHUNK", 2)
    monkeypatch.setattr(store_module, "LOAD_SECONDS", 0.0)
    _, index = _five_pending_on_partition_1()
    index.stale({1})
    assert len(_scanned(index)) == 2 and index.loading == {1}
    assert len(_scanned(index)) == 4 and index.loading == {1}
    assert len(_scanned(index)) == 5 and index.loading == set()


def test_the_batch_and_the_scan_get_views_without_a_writer() -> None:
    """The batch's view has its two look-ups and the expiry order's give-back (`refile`, for a
    run thrown away) and nothing else; the scan's pending turns are a read-only mapping; the
    owner does not hand its TurnIndex out."""
    _, index = _five_pending_on_partition_1()
    index.stale({1})
    view = index.for_batch()
    assert {name for name in dir(view) if not name.startswith("_")} == {
        "due",
        "refile",
        "releasable",
    }
    writers = {"note", "load", "forget", "clear", "rebuild"}
    assert writers <= set(dir(TurnIndex)) and not writers & set(dir(view))
    pending = index.pending_now()
    assert pending is not None and len(pending) == 5
    with pytest.raises(TypeError):
        pending[b"p-9"] = pending[b"p-0"]  # type: ignore[index]
    public = [getattr(index, name) for name in dir(index) if not name.startswith("_")]
    assert not [value for value in public if isinstance(value, TurnIndex)]


def test_only_the_owner_builds_or_writes_a_turn_index() -> None:
    """Read from the source: outside `streams/core/state.py` (the index) and its owner, no
    module of the core or the worker builds a TurnIndex or calls an index's writer."""
    root = Path(store_module.__file__).parents[1]
    owner = {root / "core" / "state.py", root / "worker" / "store.py"}
    paths = sorted((root / "core").glob("*.py")) + sorted((root / "worker").glob("*.py"))
    assert len(paths) > 20
    written = re.compile(r"TurnIndex\(|index\.(note|load|forget|clear|rebuild)\(")
    found = [p.name for p in paths if p not in owner and written.search(p.read_text("utf-8"))]
    assert found == []


def test_nothing_writes_the_index_while_a_batch_judged_off_the_loop_reads_it(
    loading: tuple[CountingStore, StoredIndex],
) -> None:
    store, index = loading
    assert len(_scanned(index)) == 2
    with index.lent():
        with pytest.raises(IndexLent):
            index.refresh()
        with pytest.raises(IndexLent):
            index.apply([Write(1, b"p-0", None)])
        with pytest.raises(IndexLent), index.lent():
            pass
        lent = index.pending_now()  # read as it is: not a step further
        assert lent is not None and len(lent) == 2 and store.read == [{1}]
        index.stale({0, 1})  # a rebalance meanwhile only marks the index stale
        assert index.pending_now() is None and store.read == [{1}]
    index.apply([Write(1, b"p-0", None)])
    assert len(_scanned(index)) == 2 and store.read == [{1}, {0, 1}]


def _judging_flow(
    tmp: Path, read: Callable[[int, bytes], bytes | None]
) -> tuple[BatchFlow, StoredIndex, tuple[Source, bytes]]:
    """A BatchFlow whose batch reads the store through `read`, its index, and one record large
    enough to be judged in the judging thread. The flow's sending parts are never reached."""
    settings = Settings(workspaces_root=tmp, media_root=tmp)
    gate = disk_gate(settings)
    index = StoredIndex(CountingStore(), settings.state_keep)
    not_reached: Any = None
    flow = BatchFlow(
        TurnBatch(gate, read, index.for_batch()),
        not_reached,
        index,
        "changelog",
        not_reached,
        not_reached,
        worker_metrics(settings, gate),
    )
    large = (Source(settings.topic("replies_raw"), 0, 1, AT, b"c-7"), b"x" * OFF_LOOP_RECORD_BYTES)
    return flow, index, large


async def test_a_batch_judged_off_the_loop_has_the_index_lent(tmp_path: Path) -> None:
    """A real batch of one large record, judged in the judging thread: while its store reads
    run there, the loop's writes to the index are refused, and once it is judged they are not."""
    refused: list[bool] = []

    def read(_partition: int, _key: bytes) -> bytes | None:
        try:
            index.apply([])
        except IndexLent:
            refused.append(True)
        else:
            refused.append(False)
        return None

    flow, index, large = _judging_flow(tmp_path, read)
    result = await flow._judge([large])
    assert [j.step.outcome for j in result.judged] == ["dead_letter"]
    assert refused and all(refused)
    index.apply([])  # judged: the loop writes again
    small = (large[0], b"x")
    refused.clear()
    await flow._judge([small])
    assert refused and not any(refused)


async def test_a_cancelled_wait_keeps_the_index_lent_until_the_thread_ends(tmp_path: Path) -> None:
    """A stop cancels the task that awaits the judging thread; the thread cannot be stopped and
    goes on reading the index, so it stays lent until the thread ends."""
    inside, release = threading.Event(), threading.Event()

    def read(_partition: int, _key: bytes) -> bytes | None:
        inside.set()
        release.wait(timeout=60)
        return None

    flow, index, large = _judging_flow(tmp_path, read)
    task = asyncio.ensure_future(flow._judge([large]))
    await asyncio.get_running_loop().run_in_executor(None, inside.wait, 60)
    task.cancel()
    await asyncio.sleep(0)  # the cancellation reaches the awaiting task
    with pytest.raises(IndexLent):
        index.apply([])  # the thread is still in the store read
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    index.apply([])  # the thread has ended: the loop writes again
