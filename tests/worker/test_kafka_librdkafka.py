"""A producer that is not Python's: librdkafka (confluent-kafka) with its DEFAULT partitioner.

librdkafka's `consistent_random` (CRC32 of the key) puts conversations on other partitions than
the murmur2 that aiokafka, Java and the worker's own producer use. With the built-in corrector
answering corrections, every turn still ends in exactly one outcome: the corrector writes each
attempt 1 to the partition of the attempt 0 it answers, where the turn's state is.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka.partitioner import murmur2
from confluent_kafka import Producer
from replygate_dev.scripted_llm import Canned, ScriptedLLM

from tests.support.kafka import Deployment, collect_messages, wait_ready
from tests.support.samples import im_text, raw_reply

pytestmark = pytest.mark.kafka

PARTITIONS = 4
TURNS = 16
GOOD = im_text([{"type": "text", "data": {"text": "The corrected answer"}}])


def traceparent(i: int) -> bytes:
    return f"00-{i + 1:032x}-{i + 1:016x}-01".encode()


def records() -> list[tuple[str, dict[str, Any]]]:
    """Even turns need a correction, odd ones are valid; each its own conversation."""
    out = []
    for i in range(TURNS):
        conv, turn = f"c-lib-{i}", f"t-lib-{i}"
        changes: dict[str, Any] = {} if i % 2 else {"output": {"text": f"prose {i}"}}
        out.append((turn, raw_reply(turn_id=turn, conversation_id=conv, **changes)))
    return out


def produce_with_librdkafka(deployment: Deployment) -> dict[str, int]:
    """Each turn's record through librdkafka's default partitioner; turn -> its partition."""
    producer = Producer(
        {
            "bootstrap.servers": deployment.bootstrap_servers,
            "enable.idempotence": True,
            "acks": "all",
        }
    )
    landed: dict[str, int] = {}
    errors: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            landed[orjson.loads(msg.value())["turn_id"]] = msg.partition()

    for i, (_turn, record) in enumerate(records()):
        producer.produce(
            deployment.topic("replies.raw"),
            value=orjson.dumps(record),
            key=record["conversation_id"].encode(),
            headers=[("traceparent", traceparent(i))],
            on_delivery=delivered,
        )
    assert producer.flush(30) == 0 and not errors, errors
    return landed


@pytest.mark.timeout(300)
def test_librdkafka_default_partitioner_with_the_corrector_one_outcome_per_turn(
    tmp_path: Path,
) -> None:
    deployment = Deployment(partitions=PARTITIONS)
    deployment.create_topics()
    t = deployment.topic
    with ScriptedLLM([Canned("", content=GOOD)]) as llm:
        # two workers: the partitions are split, so a record on another partition than its
        # turn's is read by a worker that does not hold the turn
        workers = [
            deployment.start_worker(
                tmp_path,
                REPLYGATE_CORRECTOR__ENABLED="true",
                REPLYGATE_CORRECTOR__BASE_URL=llm.base_url,
                REPLYGATE_CORRECTION_DEADLINE_SECONDS="30",
            )
            for _ in range(2)
        ]
        try:
            wait_ready(workers)
            landed = produce_with_librdkafka(deployment)
            found = asyncio.run(
                collect_messages(
                    [t("delivery.im"), t("replies.dlq"), t("replies.raw")],
                    lambda rs: sum(r.topic == t("delivery.im") for r in rs) >= TURNS,
                    timeout=180,
                    settle=3,
                )
            )
        finally:
            deployment.stop_all()
    corrected_turns = [turn for i, (turn, _r) in enumerate(records()) if i % 2 == 0]
    # the test proves something only if librdkafka put some of them where murmur2 would not
    murmur = {
        turn: (murmur2(r["conversation_id"].encode()) & 0x7FFFFFFF) % PARTITIONS
        for turn, r in records()
    }
    moved = [turn for turn in corrected_turns if landed[turn] != murmur[turn]]
    assert moved, "every corrected turn landed where murmur2 puts it: choose other keys"
    deliveries: dict[str, list[Any]] = {}
    for r in found:
        if r.topic == t("delivery.im"):
            deliveries.setdefault(orjson.loads(r.value)["turn_id"], []).append(r)
    assert sorted(deliveries) == sorted(turn for turn, _ in records()), deployment.log_tail()
    assert all(len(v) == 1 for v in deliveries.values()), {k: len(v) for k, v in deliveries.items()}
    assert [r for r in found if r.topic == t("replies.dlq")] == []
    for i, (turn, _record) in enumerate(records()):
        (delivery,) = deliveries[turn]
        value = orjson.loads(delivery.value)
        assert value["kind"] == "reply", (turn, value)
        assert value["corrected"] is (turn in corrected_turns)
        # a corrected turn's: the corrector's attempt 1 carries its request's trace
        assert list(delivery.headers) == [("traceparent", traceparent(i))]
    attempts = [
        (orjson.loads(r.value)["turn_id"], r.partition)
        for r in found
        if r.topic == t("replies.raw") and orjson.loads(r.value)["attempt"] == 1
    ]
    assert sorted(attempts) == sorted((turn, landed[turn]) for turn in corrected_turns)
