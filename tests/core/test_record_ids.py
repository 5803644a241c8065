"""A record's ids: the one rule for an id read before validation, and the one spelling of the
input record that wrote a turn's state."""

from __future__ import annotations

import pytest

from streams.core.decision import Source
from streams.core.pipeline import envelope_id
from streams.core.state import SourceId


@pytest.mark.parametrize(
    ("value", "found"),
    [("t-1", "t-1"), ("x" * 200, "x" * 200), ("x" * 201, None), ("", None), (7, None)],
)
def test_an_id_is_read_only_as_the_envelope_allows_it(value: object, found: str | None) -> None:
    assert envelope_id({"call_id": value}, "call_id") == found
    assert envelope_id([value], "call_id") is None


def test_a_source_is_spelled_and_read_back_by_one_type() -> None:
    source = Source("p.replies.raw", 3, 1017)
    spelled = SourceId.spell(source)
    assert spelled == "p.replies.raw:3:1017"
    assert SourceId.parse(spelled) == SourceId("p.replies.raw", 3, 1017)
    assert str(SourceId.parse(spelled)) == spelled
