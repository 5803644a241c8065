"""What a judgement says of a record, in `replygate check`'s words (docs/cli.md): the verdict and
the action. One definition for the gate's decisions and the audit record that reports them."""

from __future__ import annotations

from typing import Literal

Verdict = Literal["accepted", "rejected", "no_reply", "dead_letter"]
Action = Literal[
    "deliver",
    "tool_result",
    "request_correction",
    "failure_notice",
    "tool_error",
    "none",
    "dead_letter",
    "progress",
    "drop",
    "buffer",
]
