"""Progress summaries, plain text and a caller-owned contract through the real broker.

One worker; every record of one conversation goes in at once (same key, same partition, in
order), so progress arrives before the reply, while its correction is pending, between the
correction request and the corrected reply, and after the turn finished. A barrier turn on the
same conversation shows that everything before it was judged.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas.records import Delivery
from tests.support.kafka import Deployment, by_topic, collect, publish
from tests.support.samples import GITHUB_PAT, raw_reply
from tests.worker.test_kafka_flows import metric, wait_for

pytestmark = pytest.mark.kafka

CONV = "c-progress"
TICKET_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["title"],
    "properties": {"title": {"type": "string"}},
}


def progress(turn: str, seq: int, text: str) -> tuple[str, dict[str, Any]]:
    return CONV, raw_reply(
        turn_id=turn, conversation_id=CONV, kind="progress", seq=seq, output={"text": text}
    )


def reply(turn: str, **changes: Any) -> tuple[str, dict[str, Any]]:
    return CONV, raw_reply(turn_id=turn, conversation_id=CONV, **changes)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp: Path = tmp_path_factory.mktemp("progress")
    (tmp / "ticket.schema.json").write_text(json.dumps(TICKET_SCHEMA))
    deployment = Deployment(partitions=1)
    deployment.create_topics()
    worker = deployment.start_worker(
        tmp,
        REPLYGATE_CORRECTION_DEADLINE_SECONDS="120",
        REPLYGATE_SCHEMA_CONTRACTS=json.dumps(
            [{"name": "acme.ticket.v1", "schema": str(tmp / "ticket.schema.json")}]
        ),
    )
    port = worker.metrics_port  # type: ignore[attr-defined]
    t = deployment.topic
    try:
        records = [
            progress("p", 0, "Searching the docs…"),
            reply("p", output={"text": "prose, not the JSON object"}),
            progress("p", 1, f"Still   looking\nwith {GITHUB_PAT}"),
            progress("p", 2, "\u0007"),
            reply("p", attempt=1, context=None),
            progress("p", 3, "too late"),
            reply("plain", contract="text.plain.v1", output={"text": "Plain  @bob\ntext"}),
            reply("ticket", contract="acme.ticket.v1", output={"text": '{"title": "Jammed"}'}),
            reply("barrier"),
        ]
        asyncio.run(publish(deployment.settings(), t("replies.raw"), records))

        def done(seen: list[tuple[str, bytes | None, bytes]]) -> bool:
            return any(b'"delivery_id":"barrier"' in value for _, _, value in seen)

        out = asyncio.run(
            collect([t("delivery.im"), t("corrections.requests"), t("replies.dlq")], done, 120)
        )
        wait_for(
            "the outcome counters",
            lambda: metric(port, "replygate_outcomes_total", outcome="delivered") >= 3,
            30,
        )
        yield {"deployment": deployment, "topics": by_topic(out), "port": port}
    finally:
        deployment.stop_all()
        print(deployment.log_tail())


def deliveries(run: dict[str, Any]) -> list[dict[str, Any]]:
    return run["topics"].get(run["deployment"].topic("delivery.im"), [])


def test_progress_before_and_during_the_correction_is_delivered_in_order(
    run: dict[str, Any],
) -> None:
    of_p = [d["delivery_id"] for d in deliveries(run) if d["turn_id"] == "p"]
    assert of_p == ["p/progress/0", "p/progress/1", "p"]
    requests = run["topics"][run["deployment"].topic("corrections.requests")]
    assert [r["turn_id"] for r in requests] == ["p"]


def test_progress_never_changes_the_turn_the_correction_is_still_taken(
    run: dict[str, Any],
) -> None:
    (final,) = [d for d in deliveries(run) if d["delivery_id"] == "p"]
    assert final["kind"] == "reply" and final["corrected"] is True


def test_progress_deliveries_are_closed_masked_and_previewed(run: dict[str, Any]) -> None:
    (second,) = [d for d in deliveries(run) if d["delivery_id"] == "p/progress/1"]
    Delivery.model_validate(second)
    assert second["kind"] == "progress"
    assert second["preview"] == "Still looking with [REDACTED:github-pat]"
    assert GITHUB_PAT not in orjson.dumps(second).decode()


def test_invalid_and_late_progress_are_dropped_and_counted(run: dict[str, Any]) -> None:
    ids = {d["delivery_id"] for d in deliveries(run)}
    assert "p/progress/2" not in ids and "p/progress/3" not in ids
    assert run["topics"].get(run["deployment"].topic("replies.dlq"), []) == []
    port = run["port"]
    assert metric(port, "replygate_outcomes_total", outcome="late_progress") == 1
    assert metric(port, "replygate_outcomes_total", outcome="progress_rejected") == 1
    assert metric(port, "replygate_outcomes_total", outcome="progress") == 2
    assert metric(port, "replygate_validation_errors_total", code="control_character") == 1


def test_plain_text_and_caller_owned_contracts_are_delivered(run: dict[str, Any]) -> None:
    (plain,) = [d for d in deliveries(run) if d["delivery_id"] == "plain"]
    assert plain["message"] == {"text": "Plain  @bob\ntext"}
    assert plain["preview"] == "Plain @bob text"
    (ticket,) = [d for d in deliveries(run) if d["delivery_id"] == "ticket"]
    assert ticket["message"] == {"title": "Jammed"}
    assert ticket["preview"] == '{"title":"Jammed"}'
    port = run["port"]
    assert metric(port, "replygate_outcomes_total", contract="acme.ticket.v1") == 1
    assert metric(port, "replygate_outcomes_total", contract="text.plain.v1") == 1
