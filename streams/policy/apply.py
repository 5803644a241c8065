"""What a worker judges with, switched at batch boundaries: the settings file's gates until a
bundle is published, then the active bundle's; and the shadow's while there is one.

The worker owns one `WorkerPolicy`. Before its first batch it waits for the follower to have
read the policy topic (`ready`), so it never judges under a version already replaced; before
each batch it calls `at_batch_boundary`, which takes the newest loaded versions (built off the
event loop by the follower) in one assignment, so a batch is judged under one active version.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Final

from streams.core.pipeline import Gate
from streams.policy.follower import Held, PolicyFollower
from streams.policy.load import PolicyGates

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
    """The gates a worker judges with now, and the follower that brings the next ones."""

    def __init__(self, settings_gates: PolicyGates, follower: PolicyFollower | None) -> None:
        self.settings_gates = settings_gates
        self.follower = follower
        self.active = settings_gates
        self.shadow: PolicyGates | None = None

    @property
    def version(self) -> str:
        return self.active.version

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
        self.active, self.shadow = held.active or self.settings_gates, held.shadow

    def gate(self, platform: str | None = None, tenant: str | None = None) -> Gate:
        """The active version's gate for a record of this platform and tenant."""
        return self.active.gate(platform, tenant)

    def shadow_gate(self, platform: str | None = None, tenant: str | None = None) -> Gate | None:
        return None if self.shadow is None else self.shadow.gate(platform, tenant)


async def wait_ready(policy: WorkerPolicy, seconds: float) -> bool:
    """`ready` within a bound (False: the policy topic could not be read in time)."""
    try:
        await asyncio.wait_for(policy.ready(), seconds)
    except TimeoutError:
        return False
    return True
