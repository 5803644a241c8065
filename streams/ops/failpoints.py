"""Chosen kill points for crash tests: `REPLYGATE_FAILPOINT=name` or `name@N` (the Nth hit).

A crash test names the point where the worker dies with SIGKILL, so every gap between two
durable steps is proven, not just the one a random kill happens to hit. Unset: one dict lookup.
"""

from __future__ import annotations

import logging
import os
import signal

log = logging.getLogger("replygate.worker")

# Every point the worker passes through, in the order of one batch.
POINTS = (
    "before_state_write",  # the batch is judged; nothing of it is durable
    "after_state_write",  # its turn state is durable; no output is sent
    "mid_outputs",  # half of its outputs are acknowledged
    "after_outputs",  # every output is acknowledged; the input is not
    "deadline_state_written",  # a deadline's failure notice is decided and its state durable
    "pending_state_written",  # a correction request's pending state is durable, not yet sent
    "chunk_state_written",  # a streamed reply's chunks are durable; its final record may not be
    "revoke_before_commit",  # a rebalance takes partitions away; what they handled is uncommitted
    "partitions_revoked",  # a rebalance took partitions away; what they handled is committed
    "warmup_step",  # a fetched batch of the turn changelog is in the local store before joining
)
# The points of `replygate deliveries`, in the order of one delivery.
ENDPOINT_POINTS = (
    "endpoint_handed_on",  # handed on; its id is not recorded yet (the documented repeat window)
    "endpoint_recorded",  # handed on and its id recorded; its offset is not committed
)


def _parse(spec: str) -> tuple[str, int] | None:
    if not spec:
        return None
    name, _, count = spec.partition("@")
    known = POINTS + ENDPOINT_POINTS
    if name not in known:
        raise ValueError(f"REPLYGATE_FAILPOINT: unknown point {name!r}; known: {', '.join(known)}")
    return name, int(count or 1)


_armed = _parse(os.environ.get("REPLYGATE_FAILPOINT", ""))
_hits: dict[str, int] = {}


def hit(name: str) -> None:
    """Die here with SIGKILL if this is the armed point's Nth pass."""
    if _armed is None or _armed[0] != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] == _armed[1]:
        log.warning("failpoint %s: SIGKILL", name)
        os.kill(os.getpid(), signal.SIGKILL)


def armed(name: str) -> bool:
    """Whether a test armed this point (some points change the path only when armed)."""
    return _armed is not None and _armed[0] == name
