"""When an owned input partition is stuck: the worker's guard against Faust's fetch faults.

Faust has been seen to leave a partition unfetched after a restart, or to hold its commit
behind a record it skipped; a restart reads it again from the committed offset. Each stall's
clock starts when its condition is first seen, or at the partition's last progress if that
is later: a partition idle for an hour that has just got records, or just had them read and
not committed yet, is not stuck.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Key = tuple[str, int]


@dataclass
class Stalls:
    """Per input partition: its last progress and since when each stall condition holds."""

    seconds: float
    # when a record was last read, or the partition first seen in this assignment
    read_at: dict[Key, float] = field(default_factory=dict)
    # the group's committed offset, and when it was first seen at that value
    commit_seen: dict[Key, tuple[int, float]] = field(default_factory=dict)
    # since when records were seen waiting, unread
    waiting_since: dict[Key, float] = field(default_factory=dict)
    # since when records were seen read and not committed
    ahead_since: dict[Key, float] = field(default_factory=dict)

    def reset(self) -> None:
        """A new assignment: every clock starts again."""
        for clocks in (self.read_at, self.commit_seen, self.waiting_since, self.ahead_since):
            clocks.clear()

    def read(self, key: Key, now: float) -> None:
        self.read_at[key] = now

    def check(self, key: Key, end: int, read: int, mark: int, now: float) -> str | None:
        """Why the partition is stuck, or None. `end`: its end offset; `read`: the next offset
        to read; `mark`: the group's committed offset (or the log start, never committed)."""
        topic, partition = key
        last_read = self.read_at.setdefault(key, now)
        if self.commit_seen.get(key, (None, 0.0))[0] != mark:
            self.commit_seen[key] = (mark, now)
        waiting = end - max(read, mark)
        if _held(self.waiting_since, key, waiting > 0, now, last_read) > self.seconds:
            return (
                f"no record of {topic}:{partition} for {self.seconds:.0f} s while {waiting} "
                "wait; a restart reads them again"
            )
        committed_at = self.commit_seen[key][1]
        if _held(self.ahead_since, key, read > mark, now, committed_at) > self.seconds:
            return (
                f"the commit of {topic}:{partition} stayed at {mark} for {self.seconds:.0f} s "
                f"while {read} were read: a hole; a restart reads it"
            )
        return None


def _held(since: dict[Key, float], key: Key, holds: bool, now: float, progress: float) -> float:
    """How long a condition has held without progress (0 when it does not hold now)."""
    if not holds:
        since.pop(key, None)
        return 0.0
    return now - max(since.setdefault(key, now), progress)
