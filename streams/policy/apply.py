"""What a worker judges with, switched at batch boundaries: the settings file's gates until a
bundle is published, then the active bundle's; and the shadow's while there is one.

The worker owns one `WorkerPolicy`. Before its first batch it waits for the follower to have
read the policy topic (`ready`), so it never judges under a version already replaced; before
each batch it calls `at_batch_boundary`, which takes the newest loaded versions (built off the
event loop by the follower) in one assignment, so a batch is judged under one active version.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Final

from streams.core.pipeline import Gate
from streams.core.versions import SETTINGS_VERSION, VersionMissing
from streams.policy.follower import Held, PolicyFollower
from streams.policy.load import Correction, Policy, PolicyGates, Scope

log = logging.getLogger("replygate.policy")

# A tenant is a header value of 1-200 printable characters; anything else is no tenant.
MAX_TENANT_CHARS: Final = 200


def tenant_of(headers: Iterable[tuple[str, bytes]], name: str | None) -> str | None:
    """A record's tenant: the value of the configured header (its name compared without
    case, the first one wins), when it is UTF-8 text of 1-200 printable characters."""
    if name is None:
        return None
    wanted = name.lower()
    for key, value in headers:
        if key.lower() != wanted:
            continue
        try:
            text = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
        ok = 0 < len(text) <= MAX_TENANT_CHARS and text.isprintable() and text.strip() == text
        return text if ok else None
    return None


class WorkerPolicy:
    """The gates a worker judges with now, and the follower that brings the next ones.

    It is also what judges a batch (`streams.core.versions.Judges`): the gate of any version a
    turn or a replayed record names, from those loaded (`missing` says which the batch lacks;
    `load` brings them, off the event loop). A version the topic no longer holds is judged
    under the active one, counted in `lost` and logged once.
    """

    # Versions kept loaded besides the active and the shadow (turns begun under older ones).
    KEPT: Final = 8

    def __init__(self, settings_gates: PolicyGates, follower: PolicyFollower | None) -> None:
        self.settings_gates = settings_gates
        self.follower = follower
        self.active_gates = settings_gates
        self.shadow_gates: PolicyGates | None = None
        self._older: dict[str, PolicyGates] = {}
        self._lost: set[str] = set()
        self.lost = 0

    @property
    def version(self) -> str:
        return self.active_gates.version

    @property
    def active(self) -> str:
        """The version enforced now (`Judges.active`)."""
        return self.active_gates.version

    def judging(self, version: str) -> str:
        """`Judges.judging`: the version itself when loaded, the active one when lost."""
        return self.gates(version).version

    def gates(self, version: str) -> PolicyGates:
        """A version's gates (the active's for a version lost); raises VersionMissing when it
        is not loaded (`load` it)."""
        for held in (self.active_gates, self.shadow_gates, self.settings_gates):
            if held is not None and held.version == version:
                return held
        older = self._older.get(version)
        if older is not None:
            return older
        if version in self._lost:
            return self.active_gates
        raise VersionMissing(version)

    def gate(self, version: str, platform: str | None, tenant: str | None) -> Gate:
        return self.gates(version).gate(platform, tenant)

    def shadow(self, platform: str | None, tenant: str | None) -> tuple[str, Gate] | None:
        held = self.shadow_gates
        return None if held is None else (held.version, held.gate(platform, tenant))

    async def load(self, version: str) -> None:
        """Bring a version a batch needs (from the follower: held, recent, or the topic's
        store); one that is nowhere is judged under the active version from now on."""
        gates = None if self.follower is None else await self.follower.gates_for(version)
        if gates is None:
            self._lost.add(version)
            self.lost += 1
            log.error("policy %s is not on the policy topic; judged under %s", version, self.active)
            return
        self._older[version] = gates
        while len(self._older) > self.KEPT:
            del self._older[next(iter(self._older))]

    async def ready(self) -> None:
        """Wait until the follower has read the topic as it was at start, then take what it
        holds: the first batch is judged under the version published last."""
        if self.follower is not None:
            await self.follower.caught_up.wait()
            self.at_batch_boundary()

    def at_batch_boundary(self) -> bool:
        """Take the newest loaded versions, if new; whether anything changed."""
        if self.follower is None:
            return False
        held = self.follower.take()
        if held is None:
            return False
        self._hold(held)
        return True

    def _hold(self, held: Held) -> None:
        self._lost.clear()  # a version lost may be on the topic again: looked for once more
        for replaced in (self.active_gates, self.shadow_gates):
            if replaced is not None and replaced is not self.settings_gates:
                self._older[replaced.version] = replaced  # turns begun under it go on
        self.active_gates, self.shadow_gates = held.active or self.settings_gates, held.shadow
        for version in (self.active_gates.version, self.shadow_version):
            self._older.pop(version or "", None)
        while len(self._older) > self.KEPT:
            del self._older[next(iter(self._older))]

    @property
    def shadow_version(self) -> str | None:
        return None if self.shadow_gates is None else self.shadow_gates.version

    def active_gate(self, platform: str | None = None, tenant: str | None = None) -> Gate:
        """The active version's gate for a record of this platform and tenant."""
        return self.active_gates.gate(platform, tenant)

    def shadow_gate(self, platform: str | None = None, tenant: str | None = None) -> Gate | None:
        held = self.shadow_gates
        return None if held is None else held.gate(platform, tenant)


async def wait_ready(policy: WorkerPolicy, seconds: float) -> bool:
    """`ready` within a bound (False: the policy topic could not be read in time)."""
    try:
        await asyncio.wait_for(policy.ready(), seconds)
    except TimeoutError:
        return False
    return True


def settings_gates(gate: Gate) -> PolicyGates:
    """The settings file as a policy around the worker's own gate (its registry and masker,
    built once): what judges every record until a bundle is published."""
    correction = Correction(True, gate.settings.correction_deadline_seconds, None)
    scope = Scope(gate.settings, gate.contracts, gate.masker, correction, frozenset())
    return PolicyGates(Policy(SETTINGS_VERSION, None, {(None, None): scope}), gate.files)
