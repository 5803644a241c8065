"""The audit record (closed, no reply text, no message) and `replygate audit` against the
real broker: filters, records that are not audit records skipped, follow."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from schemas.audit import AuditRecord
from streams.broker.topology import Topology, create_topics
from streams.policy.audit import AuditFilter
from streams.settings import Settings

REPO = Path(__file__).resolve().parents[2]
VERSION = "sha256:" + "ab" * 32


def audit(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "turn_id": "t-1",
        "conversation_id": "c-1",
        "platform": "im",
        "tenant": "acme",
        "contract": "im.segments.v1",
        "attempt": 1,
        "outcome": "failure_notice",
        "verdict": "rejected",
        "action": "failure_notice",
        "errors": [{"path": "segments[1].data.target", "code": "unknown_mention_target"}],
        "masked": [{"rule": "github-pat", "count": 2}],
        "policy_version": VERSION,
        "shadow": None,
        "produced_at": "2026-11-30T12:00:00Z",
        "judged_at": "2026-11-30T12:00:01Z",
        "delivered_at": "2026-11-30T12:00:01Z",
    }
    return {**record, **changes}


def test_the_record_is_closed_and_holds_no_text() -> None:
    record = AuditRecord.model_validate(audit())
    assert record.outcome == "failure_notice"
    for extra in ({"message": {"text": "hi"}}, {"invalid_output": "x"}):
        with pytest.raises(ValidationError):
            AuditRecord.model_validate(audit(**extra))
    with pytest.raises(ValidationError):  # an error's message can quote the reply
        AuditRecord.model_validate(
            audit(errors=[{"path": "$", "code": "schema.type", "message": "quoted"}])
        )
    with pytest.raises(ValidationError):  # a masked entry names a rule and a count, no value
        AuditRecord.model_validate(audit(masked=[{"rule": "literal", "count": 1, "value": "v"}]))
    for bad in ({"outcome": "delivered"}, {"policy_version": "v1"}, {"attempt": 2}):
        with pytest.raises(ValidationError):
            AuditRecord.model_validate(audit(**bad))
    assert AuditRecord.model_validate(audit(policy_version="settings")).policy_version


def test_a_shadow_judgement_sits_beside_the_active_one() -> None:
    shadow = {
        "policy_version": "sha256:" + "cd" * 32,
        "verdict": "rejected",
        "action": "request_correction",
        "errors": [{"path": "$", "code": "schema.required"}],
        "masked": [],
        "disagreements": ["verdict", "codes"],
    }
    record = AuditRecord.model_validate(audit(verdict="accepted", action="deliver", shadow=shadow))
    assert record.shadow is not None and record.shadow.disagreements == ["verdict", "codes"]
    with pytest.raises(ValidationError):
        AuditRecord.model_validate(audit(shadow={**shadow, "disagreements": ["mood"]}))


def test_a_filter_matches_every_field_it_sets() -> None:
    record = AuditRecord.model_validate(audit())
    assert AuditFilter().matches(record)
    assert AuditFilter(conversation_id="c-1", outcome="failure_notice").matches(record)
    assert not AuditFilter(conversation_id="c-1", outcome="reply").matches(record)
    assert AuditFilter(policy_version=VERSION, platform="im", turn_id="t-1").matches(record)
    assert not AuditFilter(platform="web").matches(record)


# ---- `replygate audit` against the broker ----------------------------------------------------


def audit_cli(settings: Settings, *args: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLYGATE_")}
    env |= {
        "PYTHONPATH": str(REPO),
        "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        "REPLYGATE_TOPIC_PREFIX": settings.topic_prefix,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "audit", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env=env,
    )


async def produce(settings: Settings, values: list[bytes]) -> None:
    from aiokafka import AIOKafkaProducer

    topic = Topology.of(settings).audit.name
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap_servers)
    await producer.start()
    try:
        for value in values:
            await producer.send_and_wait(topic, value, key=b"c")
    finally:
        await producer.stop()


@pytest.mark.kafka
def test_replygate_audit_filters_skips_what_is_not_a_record_and_follows() -> None:
    from tests.support.kafka import bootstrap

    prefix = f"a{uuid.uuid4().hex[:10]}."
    settings = Settings(kafka_bootstrap_servers=bootstrap(), topic_prefix=prefix, partitions=2)
    records = [
        audit(turn_id="t-1", conversation_id="c-1", outcome="reply", verdict="accepted"),
        audit(turn_id="t-2", conversation_id="c-2"),
        audit(turn_id="t-3", conversation_id="c-1", outcome="failure_notice"),
    ]
    asyncio.run(create_topics(Topology.of(settings), settings))
    asyncio.run(produce(settings, [orjson.dumps(r) for r in records] + [b"not an audit record"]))

    done = audit_cli(settings, "--conversation", "c-1")
    out, err = done.communicate(timeout=60)
    assert done.returncode == 0, err.decode()
    shown = [orjson.loads(line) for line in out.splitlines()]
    assert sorted(r["turn_id"] for r in shown) == ["t-1", "t-3"]
    assert shown[0] == next(r for r in records if r["turn_id"] == shown[0]["turn_id"])
    assert err.decode().strip() == "skipped 1 records that are not audit records"

    done = audit_cli(settings, "--outcome", "failure_notice", "--conversation", "c-1")
    out, _ = done.communicate(timeout=60)
    assert [orjson.loads(line)["turn_id"] for line in out.splitlines()] == ["t-3"]

    follower = audit_cli(settings, "--follow", "--turn", "t-4")
    try:
        asyncio.run(produce(settings, [orjson.dumps(audit(turn_id="t-4"))]))
        assert follower.stdout is not None
        line = follower.stdout.readline()  # blocks until the followed record is printed
        assert orjson.loads(line)["turn_id"] == "t-4"
    finally:  # ending it is cleanup, not what this test measures
        follower.terminate()
        try:
            follower.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            follower.kill()
            follower.communicate()
