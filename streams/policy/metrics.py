"""The policy metrics (docs/policy.md): the versions a worker holds, bundles it refused, when it
last applied one, and where a shadow disagreed with the active version.

A version label holds at most the two live versions a worker has: a replaced version's series
is removed, so the series count stays bounded however often a bundle is published.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge

from streams.ops.metrics import OTHER, bound

ROLES: Final = ("active", "shadow")
DISAGREEMENT_KINDS: Final = frozenset({"verdict", "masking", "codes"})


class PolicyMetrics:
    """The policy's series in a worker's registry; platform and contract labels are bounded by
    the same allow-lists as the worker's other metrics."""

    def __init__(
        self, registry: CollectorRegistry, platforms: Iterable[str], contracts: Iterable[str]
    ) -> None:
        self.platforms = frozenset(platforms)
        self.contracts = frozenset(contracts)
        self._lock = threading.Lock()
        self._held: dict[str, str] = {}
        self._info = Gauge(
            "replygate_policy_info",
            "1 for each policy version this worker holds, by role (active, shadow).",
            ["version", "role"],
            registry=registry,
        )
        self._refused = Counter(
            "replygate_policy_refused",
            "Policy bundles this worker could not load and did not apply.",
            registry=registry,
        )
        self._applied = Gauge(
            "replygate_policy_applied_timestamp_seconds",
            "When this worker last applied a new policy version (Unix time).",
            registry=registry,
        )
        self._disagreements = Counter(
            "replygate_policy_shadow_disagreements",
            "Records the shadow version judged otherwise than the active one, by kind "
            "(verdict, masking, codes).",
            ["platform", "contract", "kind"],
            registry=registry,
        )

    def held(self, role: str, version: str | None) -> None:
        """The version a role now holds (None: none); the series of the one it replaced goes."""
        with self._lock:
            old = self._held.pop(role, None)
            if old is not None:
                self._info.remove(old, role)
            if version is not None:
                self._held[role] = version
                self._info.labels(version, role).set(1)

    def applied(self, at: float) -> None:
        self._applied.set(at)

    def refused(self) -> None:
        self._refused.inc()

    def disagreement(self, platform: str, contract: str, kind: str) -> None:
        self._disagreements.labels(
            bound(platform, self.platforms),
            bound(contract, self.contracts),
            kind if kind in DISAGREEMENT_KINDS else OTHER,
        ).inc()
