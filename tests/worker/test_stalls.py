"""`streams.worker.stalls.Stalls`: the worker stops for a stuck partition, not a quiet one.

Both stalls were first measured from the partition's last change alone, so a partition quiet
for longer than the bound that had just got records (a deadline topic, say) looked stuck if
the check came before the worker read them, or before the next commit.
"""

from __future__ import annotations

from streams.worker.stalls import Stalls

KEY = ("t-deadlines", 1)
STALL = 8.0


def test_records_just_arrived_on_a_quiet_partition_are_not_a_stall() -> None:
    stalls = Stalls(STALL)
    assert stalls.check(KEY, end=0, read=0, mark=0, now=0.0) is None
    assert stalls.check(KEY, end=37, read=0, mark=0, now=100.0) is None
    assert stalls.check(KEY, end=37, read=0, mark=0, now=105.0) is None
    assert stalls.check(KEY, end=37, read=0, mark=0, now=108.5) == (
        "no record of t-deadlines:1 for 8 s while 37 wait; a restart reads them again"
    )


def test_a_record_read_starts_the_wait_again() -> None:
    stalls = Stalls(STALL)
    assert stalls.check(KEY, end=10, read=0, mark=0, now=0.0) is None
    stalls.read(KEY, 6.0)
    assert stalls.check(KEY, end=20, read=5, mark=0, now=13.0) is None
    assert stalls.check(KEY, end=20, read=5, mark=0, now=14.5) is not None


def test_records_read_and_committed_in_time_are_not_a_hole() -> None:
    stalls = Stalls(STALL)
    assert stalls.check(KEY, end=0, read=0, mark=0, now=0.0) is None
    stalls.read(KEY, 100.0)
    assert stalls.check(KEY, end=69, read=69, mark=0, now=100.0) is None
    assert stalls.check(KEY, end=69, read=69, mark=69, now=103.0) is None
    assert stalls.check(KEY, end=69, read=69, mark=69, now=500.0) is None


def test_a_commit_that_stays_behind_what_was_read_is_a_hole() -> None:
    stalls = Stalls(STALL)
    assert stalls.check(KEY, end=0, read=0, mark=0, now=0.0) is None
    stalls.read(KEY, 100.0)
    assert stalls.check(KEY, end=69, read=69, mark=0, now=100.0) is None
    assert stalls.check(KEY, end=69, read=69, mark=0, now=108.5) == (
        "the commit of t-deadlines:1 stayed at 0 for 8 s while 69 were read: a hole; "
        "a restart reads it"
    )


def test_a_partition_with_nothing_to_read_never_stalls() -> None:
    stalls = Stalls(STALL)
    for now in (0.0, 50.0, 5000.0):
        assert stalls.check(KEY, end=12, read=12, mark=12, now=now) is None


def test_a_new_assignment_starts_every_clock_again() -> None:
    stalls = Stalls(STALL)
    assert stalls.check(KEY, end=5, read=0, mark=0, now=0.0) is None
    stalls.reset()
    assert stalls.check(KEY, end=5, read=0, mark=0, now=8.5) is None
    assert stalls.check(KEY, end=5, read=0, mark=0, now=17.0) is not None
