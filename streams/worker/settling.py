"""Whether the app is between assignments: the one test the worker's timers and /readyz ask."""

from __future__ import annotations

from typing import Any


def settling(app: Any) -> bool:
    """A rebalance or the table's recovery is under way: owned partitions and stored turns are
    not yet what they will be, so nothing may judge them as settled."""
    recovery = app.tables.recovery  # untyped in Faust's TableManagerT
    return bool(app.rebalancing or not recovery.completed.is_set())
