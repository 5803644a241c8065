"""A Faust Monitor that records nothing per event: replygate keeps its own Prometheus metrics.

Faust's default `Monitor` runs on every message and event (`on_message_in`, `on_stream_event_in`
and `_out`, `on_message_out`), every send (`on_send_initiated` / `_completed`) and every table
read and write: counters by topic, stream and task, timestamps on the message, a deque of
latencies. Nothing in replygate reads them (its metrics are `streams.metrics`, and Faust's web
server is off). What Faust itself needs from the monitor stays: the time a partition's stream
last took an event (`stream_inbound_time`, read by the consumer's stalled-stream warning), and
the rare commit and offset hooks, which are inherited unchanged.
"""

from __future__ import annotations

from time import monotonic
from typing import Any

from faust.sensors import Monitor


class QuietMonitor(Monitor):
    """`Monitor` with its per-message, per-event, per-send and per-table-access hooks emptied."""

    def on_message_in(self, tp: Any, offset: int, message: Any) -> None:
        return None

    def on_stream_event_in(self, tp: Any, offset: int, stream: Any, event: Any) -> None:
        # The one figure Faust reads back: when this partition's stream last took an event.
        self.stream_inbound_time[tp] = monotonic()

    def on_stream_event_out(
        self, tp: Any, offset: int, stream: Any, event: Any, state: Any = None
    ) -> None:
        return None

    def on_message_out(self, tp: Any, offset: int, message: Any) -> None:
        return None

    def on_send_initiated(
        self, producer: Any, topic: str, message: Any, keysize: int, valsize: int
    ) -> None:
        return None

    def on_send_completed(self, producer: Any, state: Any, metadata: Any) -> None:
        return None

    def on_table_get(self, table: Any, key: Any) -> None:
        return None

    def on_table_set(self, table: Any, key: Any, value: Any) -> None:
        return None

    def on_table_del(self, table: Any, key: Any) -> None:
        return None
