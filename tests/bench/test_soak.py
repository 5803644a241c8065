"""The soak's pause: the longest time without any outcome, per window between events."""

from __future__ import annotations

from bench.soak import Tally, in_windows, longest_gaps


def test_each_window_reports_its_longest_time_without_an_outcome() -> None:
    stamps = [20_000, 1_000, 2_000, 9_000, 9_500]  # any order
    assert longest_gaps(stamps, [0, 5_000, 10_000, 21_000]) == [3.0, 4.0, 10.0]


def test_a_window_without_any_outcome_is_one_gap() -> None:
    assert longest_gaps([100, 9_900], [0, 1_000, 9_000, 10_000]) == [0.9, 8.0, 0.9]


def _delivery(n: int, text: str = "done") -> bytes:
    return f'{{"delivery_id": "t-{n}", "text": "{text}"}}'.encode()


def test_lost_conflicting_and_identical_repeats_are_told_apart() -> None:
    tally = Tally()
    tally.add(_delivery(0), 5)
    tally.add(_delivery(0), 3)  # an identical copy: a repeat, not a second outcome
    tally.add(_delivery(0), 9)
    tally.add(_delivery(1), 4)
    tally.add(_delivery(1, "other"), 6)  # a second, different outcome for turn 1
    assert tally.lost({0, 1, 2}) == [2]
    assert tally.conflicting() == [1]
    assert sorted(tally.repeat_ms()) == [5, 9]  # the copies after the first written
    assert tally.first_ms == {0: 3, 1: 4}


def test_repeats_are_counted_in_the_window_they_were_written_in() -> None:
    assert in_windows([5, 9, 10, 25], [0, 10, 20, 30]) == [2, 1, 1]
