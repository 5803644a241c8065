"""A batch's keys, trace headers and output partitions, without Kafka (`streams.core.batch`)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import orjson
import pytest

from schemas.records import CorrectionRequest, DeadLetter, Delivery
from streams.core.decision import Source
from streams.core.state import TurnState
from tests.core.test_batch import T0, Harness
from tests.support.samples import raw_reply, tool_call

TRACE = (("traceparent", b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),)
OTHER = (("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),)


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def traced(source: Source, trace: tuple[tuple[str, bytes], ...] = TRACE) -> Source:
    return replace(source, trace=trace)


def test_a_wrongly_keyed_record_is_a_dead_letter_and_its_turn_untouched(h: Harness) -> None:
    invalid = raw_reply(output={"text": "prose"})
    wrong = traced(h.source("replies_raw", 1, key=b'"c-7"'))
    result = h.run([(wrong, invalid)])
    (send,) = result.sends
    letter = send.decision.output
    assert isinstance(letter, DeadLetter) and letter.reason == "wrong_key"
    assert "conversation_id" in letter.detail and send.trace == TRACE
    assert send.decision.key == b'"c-7"'  # a dead letter keeps the original key
    assert result.writes == [] and h.state() is None
    # the same turn keyed right is judged as if the other never came
    again = h.run([(h.source("replies_raw", 2), invalid)])
    assert [s.decision.action for s in again.sends] == ["request_correction"]


def test_a_cancel_or_a_tool_call_keyed_otherwise_is_never_judged(h: Harness) -> None:
    h.run([(h.source("replies_raw", 1), raw_reply(output={"text": "prose"}))])
    cancel = {"turn_id": "t-42", "conversation_id": "c-7", "action": "cancel"}
    result = h.run(
        [
            (h.source("turns_control", 2, key=b"t-42"), cancel),
            (h.source("toolcalls_raw", 3, key=b"call-1"), tool_call()),
        ]
    )
    reasons = [s.decision.output.reason for s in result.sends if s.decision.output]  # type: ignore[union-attr]
    assert reasons == ["wrong_key", "wrong_key"]
    state = h.state()
    assert state is not None and state.waiting is not None  # still pending, not cancelled


def test_every_output_carries_the_trace_of_the_input_that_caused_it(h: Harness) -> None:
    first = h.run([(traced(h.source("replies_raw", 1)), raw_reply(output={"text": "prose"}))])
    (request,) = first.sends
    assert isinstance(request.decision.output, CorrectionRequest) and request.trace == TRACE
    # the correction's own trace goes on the delivery
    fixed = h.run([(traced(h.source("replies_raw", 2), OTHER), raw_reply(attempt=1))])
    (delivery,) = fixed.sends
    assert isinstance(delivery.decision.output, Delivery) and delivery.decision.output.corrected
    assert delivery.trace == OTHER and delivery.partition is None


def test_a_correction_request_goes_to_its_turns_partition_number(h: Harness) -> None:
    source = h.source("replies_raw", 1, partition=5)
    (request,) = h.run([(source, raw_reply(output={"text": "prose"}))]).sends
    assert request.partition == 5


def test_the_deadline_notice_carries_the_pending_turns_trace_also_on_replay(h: Harness) -> None:
    h.run([(traced(h.source("replies_raw", 1)), raw_reply(output={"text": "prose"}))])
    stored = h.state()
    assert stored is not None and stored.trace == TRACE
    assert TurnState.decode(stored.encode()).trace == TRACE  # it survives the changelog
    late = T0 + timedelta(seconds=40)
    event = (Source(h.settings.deadline_topic(), 0, 7, late), orjson.dumps({"turn_id": "t-42"}))
    noticed = h.run([event], wall=late)
    (notice,) = noticed.sends
    assert isinstance(notice.decision.output, Delivery)
    assert notice.decision.output.kind == "failure_notice" and notice.trace == TRACE
    replay = h.run([event], wall=late)  # the crash fell after the state write
    assert replay.replayed == 1 and [(s.decision.output, s.trace) for s in replay.sends] == [
        (notice.decision.output, TRACE)
    ]
