"""Where a partition's policy versions took effect: the version a replayed record got the first
time, for records that write no turn state (docs/policy.md, One version per turn).

A worker that applies a new version notes, for each input topic of a partition, the offset of
the first record it judged under it (`Switches.judged`); the value goes into the turn table
under the partition's reserved key (`SWITCHES_KEY`) in the same durable write as the batch's
turn states, so it survives a crash and moves with the partition. A replayed record at offset
`o` of topic `t` was judged under the last version whose offset for `t` is at most `o`
(`version_for`). Once the group has committed past a later switch's offsets on every topic,
no replay can reach an earlier one, and it is dropped (`released`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

import orjson

# The turn table key of a partition's switches: no turn id encodes to a 0xFF byte.
SWITCHES_KEY: Final = b"\xffpolicy"
# A partition keeps at most this many switches (each published version is one; they are
# released as the group commits, so only a flood of publications between commits reaches it).
MAX_SWITCHES: Final = 64


@dataclass
class Switch:
    """One version and, per input topic, the offset of its first record judged under it."""

    version: str
    first: dict[str, int] = field(default_factory=dict)


@dataclass
class Switches:
    """A partition's switches, oldest first; the last is the version in force."""

    entries: list[Switch] = field(default_factory=list)

    def applied(self, version: str) -> bool:
        """A new version in force from the next record on; whether that changed anything."""
        if self.entries and self.entries[-1].version == version:
            return False
        self.entries.append(Switch(version))
        del self.entries[:-MAX_SWITCHES]
        return True

    def judged(self, topic: str, offset: int) -> bool:
        """A record judged under the version in force: its offset is noted when it is the
        first of its topic under that version; whether the value changed (to be written)."""
        if not self.entries:
            return False
        current = self.entries[-1].first
        if topic in current and current[topic] <= offset:
            return False
        current[topic] = offset
        return True

    def version_for(self, topic: str, offset: int) -> str | None:
        """The version a record of this topic and offset was judged under; None when no
        switch says (no switch noted yet: the record is judged under the version in force)."""
        for entry in reversed(self.entries):
            start = entry.first.get(topic)
            if start is not None and start <= offset:
                return entry.version
        return None

    def released(self, committed: Callable[[str], int | None]) -> bool:
        """Drop the switches no replay can reach: those before a switch whose every noted
        offset the group has committed past. Whether anything was dropped."""
        for n in range(len(self.entries) - 1, 0, -1):
            later = self.entries[n].first
            if later and all(
                (done := committed(topic)) is not None and done > offset
                for topic, offset in later.items()
            ):
                del self.entries[:n]
                return True
        return False

    def encode(self) -> bytes:
        return orjson.dumps([{"v": e.version, "f": e.first} for e in self.entries])

    @classmethod
    def decode(cls, raw: bytes | None) -> Switches:
        """The stored value (None: no switch yet); a value that is not one is no switch."""
        if not raw:
            return cls()
        try:
            value = orjson.loads(raw)
            return cls([Switch(str(e["v"]), _offsets(e["f"])) for e in value][-MAX_SWITCHES:])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return cls()


def _offsets(value: Mapping[str, object]) -> dict[str, int]:
    return {str(topic): int(offset) for topic, offset in value.items()}  # type: ignore[call-overload]
