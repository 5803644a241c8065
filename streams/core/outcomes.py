"""What became of a record: the decision core's vocabulary, which the metrics count by."""

from __future__ import annotations

from typing import Final, Literal, get_args

Outcome = Literal[
    "delivered",
    "corrected",
    "failure_notice",
    "no_reply",
    "cancelled",
    "duplicate_dropped",
    "dead_letter",
    "tool_ok",
    "tool_error",
    "progress",
    "progress_rejected",
    "late_progress",
    "buffered",
]
OUTCOMES: Final = frozenset(get_args(Outcome))
