"""Which policy version judges a record (docs/policy.md, One version per turn): pure choices and
the small durable value that makes them survive a crash.

A turn is judged under the version that judged its first record, kept in its state
(`TurnState.version`). A record that writes no turn state (progress, a dead letter, a repeat)
and is replayed after a crash or a rebalance is judged under the version it got the first time:
each partition keeps, under a reserved key of the turn table, the last offset of each input
topic judged under each version (`Switches`), written in the same durable step as the batch's
turn states, so a replay finds it and the next owner of the partition reads it with the rest.
Anything else is judged under the version the worker enforces now.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final, Protocol

import orjson

if TYPE_CHECKING:
    from streams.core.pipeline import Gate

# The version a worker enforces while no bundle is published: its settings file.
SETTINGS_VERSION: Final = "settings"
# The turn table key of a partition's switches: no turn id encodes to a 0xFF byte.
SWITCHES_KEY: Final = b"\xffpolicy"
# A partition keeps at most this many versions (they are released as the group commits, so
# only a flood of publications between two commits reaches it).
MAX_SWITCHES: Final = 64


def choose_version(turn: str | None, replayed: str | None, active: str) -> str:
    """The version that judges a record: its turn's (the version of the turn's first record),
    else the one it got the first time (a replay of a record that wrote no turn state), else
    the one enforced now."""
    if turn is not None:
        return turn
    if replayed is not None:
        return replayed
    return active


class VersionMissing(Exception):
    """A record needs a version that is not loaded: the shell loads it (off the event loop)
    and judges the batch again; the batch is pure, so nothing of the first try went out."""

    def __init__(self, version: str) -> None:
        super().__init__(version)
        self.version = version


class Judges(Protocol):
    """What judges a batch's records: the gate of each version, platform and tenant."""

    @property
    def active(self) -> str:
        """The version enforced now (a record with no other claim is judged under it)."""
        ...

    def judging(self, version: str) -> str:
        """The version that judges a record claiming `version`: itself when loaded, the active
        one when it is nowhere to be had; raises VersionMissing when it must be loaded first."""
        ...

    def gate(self, version: str, platform: str | None, tenant: str | None) -> Gate:
        """The gate of this version's scope (a version `judging` returned)."""
        ...

    def shadow(self, platform: str | None, tenant: str | None) -> tuple[str, Gate] | None:
        """The shadow version and its gate for this scope, or None (no shadow)."""
        ...


@dataclass(frozen=True)
class OneGate:
    """The settings file judges every record: what a worker without bundles, `check` and the
    tests use."""

    only: Gate
    active: str = SETTINGS_VERSION

    def judging(self, version: str) -> str:
        del version
        return self.active

    def gate(self, version: str, platform: str | None, tenant: str | None) -> Gate:
        del version, platform, tenant
        return self.only

    def shadow(self, platform: str | None, tenant: str | None) -> tuple[str, Gate] | None:
        del platform, tenant
        return None


@dataclass
class Switch:
    """One version and, per input topic, the last offset judged under it."""

    version: str
    upto: dict[str, int] = field(default_factory=dict)


@dataclass
class Switches:
    """A partition's versions in the order they judged, oldest first; each covers, per topic,
    the offsets after the previous one's up to its own `upto`."""

    entries: list[Switch] = field(default_factory=list)

    def judged(self, version: str, topic: str, offset: int) -> bool:
        """A record judged for the first time under `version`; whether the value changed."""
        if not self.entries or self.entries[-1].version != version:
            self.entries.append(Switch(version, {topic: offset}))
            del self.entries[:-MAX_SWITCHES]
            return True
        upto = self.entries[-1].upto
        if upto.get(topic, -1) >= offset:
            return False
        upto[topic] = offset
        return True

    def version_for(self, topic: str, offset: int) -> str | None:
        """The version this record was judged under before (a replay), or None: never judged
        here (a new record)."""
        for entry in self.entries:
            last = entry.upto.get(topic)
            if last is not None and offset <= last:
                return entry.version
        return None

    def released(self, committed: Callable[[str], int | None]) -> bool:
        """Drop the versions no replay can reach: every offset they cover is committed (the
        newest stays, so a steady partition does not add it again). Whether any was dropped."""
        kept = [
            entry
            for entry in self.entries[:-1]
            if not all(
                (done := committed(topic)) is not None and done > last
                for topic, last in entry.upto.items()
            )
        ]
        if len(kept) == len(self.entries) - 1:
            return False
        self.entries[:-1] = kept
        return True

    def encode(self) -> bytes:
        return orjson.dumps([{"v": e.version, "u": e.upto} for e in self.entries])

    @classmethod
    def decode(cls, raw: bytes | None) -> Switches:
        """The stored value (None: nothing judged under a bundle yet); a value that is not one
        is no switch."""
        if not raw:
            return cls()
        try:
            value = orjson.loads(raw)
            return cls([Switch(str(e["v"]), _offsets(e["u"])) for e in value][-MAX_SWITCHES:])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            return cls()


def _offsets(value: Mapping[str, object]) -> dict[str, int]:
    offsets: dict[str, int] = {}
    for topic, offset in value.items():
        if not isinstance(offset, int) or isinstance(offset, bool):
            raise ValueError("an offset is an integer")
        offsets[str(topic)] = offset
    return offsets
