"""The expiry file behind `TurnIndex`: packed per-minute buffers that lose nothing."""

from __future__ import annotations

import tracemalloc
from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from streams.core.state import BUCKET_SECONDS, ExpiryOrder, TurnIndex, TurnState

T0 = 1_764_500_000.0

entries = st.lists(
    st.tuples(st.floats(T0, T0 + 5 * BUCKET_SECONDS), st.binary(min_size=1, max_size=40)),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(entries, st.lists(st.tuples(st.floats(T0, T0 + 6 * BUCKET_SECONDS), st.integers(0, 10))))
def test_taking_some_and_later_all_yields_each_due_entry_once(
    filed: list[tuple[float, bytes]], rounds: list[tuple[float, int]]
) -> None:
    """Any rounds of partial takes, then a full drain, yield each entry exactly once, and
    never before its moment."""
    expiry = ExpiryOrder()
    for moment, key in filed:
        expiry.add(moment, key)
    taken: Counter[bytes] = Counter()
    for cutoff, limit in sorted(rounds):
        for count, key in enumerate(expiry.due(cutoff)):
            assert min(m for m, k in filed if k == key) <= cutoff
            taken[key] += 1
            if count + 1 >= limit:
                break
    taken.update(expiry.due(float("inf")))
    assert taken == Counter(key for _, key in filed)
    assert expiry.buckets == {} and expiry.order == []


@given(entries, st.floats(T0, T0 + 6 * BUCKET_SECONDS))
def test_a_full_take_yields_exactly_the_due_entries(
    filed: list[tuple[float, bytes]], cutoff: float
) -> None:
    expiry = ExpiryOrder()
    for moment, key in filed:
        expiry.add(moment, key)
    assert Counter(expiry.due(cutoff)) == Counter(k for m, k in filed if m <= cutoff)
    assert Counter(expiry.due(float("inf"))) == Counter(k for m, k in filed if m > cutoff)


def test_a_turn_is_due_exactly_at_its_horizon() -> None:
    keep = timedelta(days=7)
    at = datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)
    state = TurnState("finished", "replies:0:7", at.isoformat(), outcome="delivered")
    index = TurnIndex(keep)
    index.note(0, b"t-1", state)
    assert list(index.due(0, at + keep - timedelta(milliseconds=1))) == []
    assert list(index.due(1, at + keep)) == []
    assert list(index.due(0, at + keep)) == [b"t-1"]


def test_a_hundred_thousand_finished_turns_cost_a_few_megabytes() -> None:
    """Packed, not a tuple, float and bytes object per turn (about 160 bytes each)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        expiry = ExpiryOrder()
        for i in range(100_000):
            expiry.add(T0 + i * 0.5, f"9f1c2d3e-4b5a-6789-abcd-{i:012d}".encode())
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert used < 6_000_000, used  # 48-byte entries: about 4.8 MB
