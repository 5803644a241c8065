"""One capped issue list: every contract cuts its errors the same way (at most MAX_ISSUES
distinct issues, then one `too_many_errors` at `$` saying how many are listed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import schemas
from schemas.codes import MAX_ISSUES, TOO_MANY_ERRORS
from schemas.contract import ReplyInput
from schemas.html_answer.contract import ASSISTANT_HTML_V1
from schemas.im_segments import IM_SEGMENTS_V1
from schemas.issue import Issue
from schemas.issue_sink import IssueSink, capped
from schemas.records import EMPTY_CONTEXT
from schemas.text_plain import TEXT_PLAIN_V1

_MANY = "\x01" * (MAX_ISSUES + 50)


def _cut(issues: tuple[Issue, ...] | list[Issue]) -> None:
    """The one shape of a cut list."""
    assert len(issues) == MAX_ISSUES + 1
    assert [i.code for i in issues].count(TOO_MANY_ERRORS.name) == 1
    assert issues[-1] == TOO_MANY_ERRORS.issue("$", listed=MAX_ISSUES)
    assert len(set(issues)) == len(issues)


@pytest.mark.parametrize(
    ("contract", "reply"),
    [
        (TEXT_PLAIN_V1, ReplyInput("text", text=f"hi{_MANY}")),
        (
            IM_SEGMENTS_V1,
            ReplyInput("tool", arguments={"segments": [{"type": "text", "data": {"text": _MANY}}]}),
        ),
        (ASSISTANT_HTML_V1, ReplyInput("text", text=f"```html\n<p>x{_MANY}</p>\n```")),
    ],
    ids=["text.plain", "im.segments", "assistant.html"],
)
def test_every_contract_cuts_a_flood_the_same_way(contract: Any, reply: ReplyInput) -> None:
    _cut(contract.validate(reply, EMPTY_CONTEXT).issues)


def test_a_sink_lists_an_issue_once_and_replaces_a_checks_own_cut() -> None:
    one = Issue("a", "invalid_value", "x")
    inner_cut = TOO_MANY_ERRORS.issue("text", listed=3)
    assert capped([one, one, inner_cut]) == [one, TOO_MANY_ERRORS.issue("$", listed=1)]
    assert capped([one, one]) == [one]


def test_a_sink_stops_at_its_limit() -> None:
    sink = IssueSink(limit=2)
    sink.extend(Issue(f"p{i}", "invalid_value", "x") for i in range(5))
    assert sink.full
    assert [i.path for i in sink.result()] == ["p0", "p1", "$"]


def test_only_the_sink_cuts_a_list() -> None:
    """No check writes its own `too_many_errors`: each hands its issues to the sink."""
    root = Path(schemas.__file__).parent
    cutting = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if "TOO_MANY_ERRORS.issue(" in path.read_text(encoding="utf-8")
    )
    assert cutting == ["issue_sink.py"]
