"""Record builders shared by the tests: the spec's examples with one thing changed at a time."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import orjson

# The clock of the unit tests: one second after the samples were produced.
NOW = datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)

GITHUB_PAT = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def im_text(segments: list[dict[str, Any]]) -> str:
    return orjson.dumps({"segments": segments}).decode()


def raw_reply(**changes: Any) -> dict[str, Any]:
    """A valid im.segments.v1 RawReply (docs/records.md), with top-level keys replaced."""
    record: dict[str, Any] = {
        "turn_id": "t-42",
        "conversation_id": "c-7",
        "platform": "im",
        "contract": "im.segments.v1",
        "attempt": 0,
        "provider": "minimax",
        "output": {
            "text": im_text(
                [
                    {"type": "text", "data": {"text": "Hello there"}},
                    {"type": "mention", "data": {"target": "555000111"}},
                ]
            ),
            "reasoning": "never delivered",
        },
        "context": {
            "sender_id": "123456789",
            "members": ["123456789", "555000111"],
            "fragments": {"docid-17-c2-p3": ["text-21", "text-22"]},
            "language": "en",
        },
        "produced_at": "2026-11-30T12:00:00Z",
    }
    record.update(copy.deepcopy(changes))
    return record


HTML_ANSWER = (
    "```html\n"
    '<p id="text-8">Revenue grew 12% <b class="info-source" id="doc://docid-17-c2-p3?id=text-21">'
    "[1]</b>.</p>\n"
    '<p>See <a class="http-source" target="_blank" href="https://example.com/report">the report</a>'
    " and docid-113-c0.</p>\n"
    "```\n"
    "optional_rag_fragment_used: doc://docid-17-c2-p3?id=text-21"
)


def html_reply(**changes: Any) -> dict[str, Any]:
    base = raw_reply(
        contract="assistant.html.v1",
        platform="assistant",
        output={"text": HTML_ANSWER},
    )
    base.update(copy.deepcopy(changes))
    return base


def tool_call(arguments: dict[str, Any] | None = None, **changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "call_id": "call-1",
        "task_id": "task-9",
        "session_id": "s-3",
        "workspace": "ws-3",
        "tool": "show_rich_output_kandev",
        "arguments": arguments
        if arguments is not None
        else {
            "version": 1,
            "title": "Build health",
            "blocks": [{"type": "metrics", "items": [{"label": "Tests", "value": "1,204 passed"}]}],
        },
    }
    record.update(copy.deepcopy(changes))
    return record


def csv_chart_arguments(path: str = "reports/sales.csv") -> dict[str, Any]:
    return {
        "version": 1,
        "title": "Sales",
        "blocks": [
            {
                "type": "chart",
                "chart_type": "line",
                "title": "Monthly sales",
                "summary": "Sales per month",
                "csv": {
                    "path": path,
                    "x_column": "month",
                    "series": [{"column": "sales", "label": "Sales (k)"}, {"column": "cost"}],
                },
            }
        ],
    }


SALES_CSV = "\ufeffmonth, sales ,cost\nJan,10,4.5\nFeb,,5\n Mar ,12.25,6\n"


def encode(record: Any) -> bytes:
    return orjson.dumps(record)
