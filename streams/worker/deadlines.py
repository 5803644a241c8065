"""The deadline scan: expired pending turns become deadline events on their own partition.

An event goes to the turn's partition of the deadline topic, so a correction and its deadline
are judged in one order by one worker. Only partitions this worker owns now are scanned: after a
rebalance the new owner scans them. The events are idempotent triggers; one not processed yet is
sent again after a while.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from streams.worker.sender import Out
from streams.worker.settling import settling
from streams.worker.store import PendingTurns

log = logging.getLogger("replygate.worker")

# A deadline event not yet processed is sent again after this long (it may have been lost).
DEADLINE_RESEND_SECONDS = 10.0


@dataclass
class DeadlineScan:
    """`scan` sends the due deadline events and `report`s how many turns are pending.

    `pending` is the turn index's read-only view of the pending turns
    (`StoredIndex.pending_now`; None: stale, and not to be rebuilt while a batch is judged off
    the loop). `acked` sends one record and awaits its acknowledgement.
    """

    app: Any
    pending: Callable[[], PendingTurns | None]
    topic: str
    acked: Callable[[Out], Awaitable[Any]]
    report: Callable[[int], None]
    # turn key -> monotonic time before which its deadline event is not sent again
    sent: dict[bytes, float] = field(default_factory=dict)

    async def scan(self) -> None:
        app = self.app
        if settling(app):
            return
        pending = self.pending()
        if pending is None:
            return
        topic = self.topic
        owned = {tp.partition for tp in app.assignor.assigned_actives() if tp.topic == topic}
        now, clock = datetime.now(UTC), time.monotonic()
        due: list[Out] = []
        count = 0
        for key, (partition, turn) in list(pending.items()):
            if partition not in owned:
                continue
            count += 1
            resend_at = self.sent.get(key, 0.0)
            if datetime.fromisoformat(turn.deadline) <= now and clock >= resend_at:
                event = orjson.dumps({"turn_id": key.decode()})
                due.append(Out(topic, turn.conversation_id.encode(), event, partition))
                self.sent[key] = clock + DEADLINE_RESEND_SECONDS
        self.report(count)
        for key in [k for k in self.sent if k not in pending]:
            del self.sent[key]
        for outcome in await asyncio.gather(*map(self.acked, due), return_exceptions=True):
            if isinstance(outcome, BaseException):  # sent again after DEADLINE_RESEND_SECONDS
                log.warning("deadline event not sent (%s)", type(outcome).__name__)
