"""Which partition counts a deployment refuses (`streams.broker.partitions`), without a broker."""

from __future__ import annotations

from streams.broker.partitions import copartitioned, mismatch
from streams.broker.topology import Topology
from streams.settings import Settings


def test_the_topics_of_a_turn_share_one_count() -> None:
    topology = Topology.of(Settings(topic_prefix="p.", app_id="gate"))
    assert copartitioned(topology) == (
        "p.replies.raw",
        "p.turns.control",
        "p.toolcalls.raw",
        "gate-deadlines",
        "p.corrections.requests",
        "gate-turns-changelog",
    )


def test_equal_counts_as_configured_pass() -> None:
    assert mismatch({"a": 4, "b": 4}, 4) is None
    assert mismatch({}, 4) is None  # nothing exists yet: everything is created with 4


def test_topics_that_differ_are_named_with_their_counts() -> None:
    problem = mismatch({"p.replies.raw": 4, "p.turns.control": 8}, 4)
    assert problem == (
        "topics differ in partition count: p.replies.raw (4), p.turns.control (8); "
        "they must be equal"
    )


def test_a_count_other_than_the_setting_is_never_changed_and_says_how() -> None:
    problem = mismatch({"p.replies.raw": 4, "p.turns.control": 4}, 8)
    assert problem is not None
    assert "p.replies.raw (4), p.turns.control (4)" in problem and "partitions = 8" in problem
    assert "drain" in problem and "docs/producers.md" in problem
