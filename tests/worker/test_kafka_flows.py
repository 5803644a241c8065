"""Every flow end to end through the real broker and a real worker process (records.md)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest

from tests.support.kafka import Deployment, bootstrap, by_topic, collect, metric, publish
from tests.support.samples import (
    GITHUB_PAT,
    SALES_CSV,
    csv_chart_arguments,
    im_text,
    raw_reply,
    tool_call,
)
from tests.support.waiting import wait_for

pytestmark = pytest.mark.kafka

OUTPUTS = ("delivery.im", "corrections.requests", "toolresults.kandev", "replies.dlq")


def reply(turn: str, conv: str, **changes: Any) -> tuple[str, dict[str, Any]]:
    return conv, raw_reply(turn_id=turn, conversation_id=conv, **changes)


def invalid(turn: str, conv: str, attempt: int = 0) -> tuple[str, dict[str, Any]]:
    return reply(turn, conv, attempt=attempt, output={"text": f"prose for {turn}"})


@dataclass(frozen=True)
class Flows:
    """What the one worker run left: every output record, by topic, and where to ask for more."""

    deployment: Deployment
    records: list[tuple[str, bytes | None, bytes]]
    topics: dict[str, list[dict[str, Any]]]
    port: int

    def on(self, name: str) -> list[dict[str, Any]]:
        """The records on one of the run's topics (by its unprefixed name)."""
        return self.topics.get(self.deployment.topic(name), [])

    def deliveries(self, turn: str) -> list[dict[str, Any]]:
        return [d for d in self.on("delivery.im") if d["turn_id"] == turn]


def first_wave() -> list[tuple[str, Any]]:
    """One reply per flow: valid, empty, corrected, failed twice, expiring, cancelled, repeated,
    leaking, malformed, an exploding contract; each `barrier-*` turn orders after its flow."""
    leaking = im_text([{"type": "text", "data": {"text": f"here: {GITHUB_PAT}"}}])
    return [
        reply("valid", "c-valid"),
        reply("empty", "c-empty", output={"text": im_text([])}),
        reply("barrier-empty", "c-empty"),
        invalid("fixed", "c-fixed"),
        reply("fixed", "c-fixed", attempt=1, context=None),
        invalid("twice", "c-twice"),
        invalid("twice", "c-twice", attempt=1),
        invalid("expired", "c-expired"),
        invalid("cancelled", "c-cancelled"),
        reply("repeated", "c-repeated"),
        reply("repeated", "c-repeated"),
        reply("repeated", "c-repeated", output={"text": im_text([])}),
        reply("leaky", "c-leaky", output={"text": leaking}),
        invalid("leaky-invalid", "c-leaky", attempt=0),
        ("c-bad", b'{"turn_id": "broken", ' + GITHUB_PAT.encode()),
        reply("exploding", "c-boom", contract="boom.v1"),
        reply("barrier-boom", "c-boom"),
    ]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Flows]:
    """One worker, every flow at once; later phases wait for what they depend on."""
    tmp = tmp_path_factory.mktemp("flows")
    (tmp / "ws" / "ws-3" / "reports").mkdir(parents=True)
    (tmp / "ws" / "ws-3" / "reports" / "sales.csv").write_text(SALES_CSV)
    deployment = Deployment(partitions=2)
    deployment.create_topics()
    worker = deployment.start_worker(
        tmp,
        # long enough that the cancel below lands before it on a loaded machine
        REPLYGATE_CORRECTION_DEADLINE_SECONDS="8",
        REPLYGATE_WORKSPACES_ROOT=str(tmp / "ws"),
        REPLYGATE_MEDIA_ROOT=str(tmp),
        REPLYGATE_EXTRA_CONTRACTS='{"boom.v1": "tests.support.kafka:BOOM_CONTRACT"}',
    )
    port = worker.metrics_port  # type: ignore[attr-defined]
    t = deployment.topic
    try:
        asyncio.run(
            publish(
                deployment.settings(),
                t("replies.raw"),
                first_wave(),
            )
        )
        asyncio.run(
            publish(
                deployment.settings(),
                t("toolcalls.raw"),
                [("task-9", tool_call(csv_chart_arguments(), call_id="csv-1"))],
            )
        )
        # cancel only once the turn is pending, then a late correction that must be dropped
        wait_for(
            "the correction requests",
            lambda: (
                metric(port, "replygate_records_out_total", topic=t("corrections.requests")) >= 4
            ),
            90,
            poll=0.2,
        )
        asyncio.run(
            publish(
                deployment.settings(),
                t("turns.control"),
                [
                    (
                        "c-cancelled",
                        {
                            "turn_id": "cancelled",
                            "conversation_id": "c-cancelled",
                            "action": "cancel",
                        },
                    )
                ],
            )
        )
        wait_for(
            "the cancel",
            lambda: metric(port, "replygate_outcomes_total", outcome="cancelled") >= 1,
            60,
            poll=0.2,
        )
        asyncio.run(
            publish(
                deployment.settings(),
                t("replies.raw"),
                [
                    reply("cancelled", "c-cancelled", attempt=1),
                    reply("barrier-cancelled", "c-cancelled"),
                ],
            )
        )

        def done(records: list[tuple[str, bytes | None, bytes]]) -> bool:
            ids = {
                orjson.loads(v).get("delivery_id") for topic, _, v in records if "delivery" in topic
            }
            return {
                "valid",
                "fixed",
                "twice",
                "expired",
                "barrier-cancelled",
                "barrier-empty",
            } <= ids

        records = asyncio.run(collect([t(o) for o in OUTPUTS], done, timeout=120, settle=3))
        yield Flows(deployment, records, by_topic(records), port)
    finally:
        deployment.stop_all()
        print(deployment.log_tail())


def test_valid_reply_is_delivered_once(run: Flows) -> None:
    (delivery,) = run.deliveries("valid")
    assert delivery["kind"] == "reply" and delivery["corrected"] is False
    assert delivery["delivery_id"] == "valid"


def test_no_reply_delivers_nothing(run: Flows) -> None:
    assert run.deliveries("barrier-empty"), "the later turn of the conversation was delivered"
    assert run.deliveries("empty") == []


def test_invalid_then_corrected(run: Flows) -> None:
    (delivery,) = run.deliveries("fixed")
    assert delivery["kind"] == "reply" and delivery["corrected"] is True


def test_invalid_twice_gets_the_failure_notice(run: Flows) -> None:
    (delivery,) = run.deliveries("twice")
    assert delivery["kind"] == "failure_notice"
    assert "prose" not in orjson.dumps(delivery).decode()


def test_no_correction_before_the_deadline_gets_the_failure_notice(run: Flows) -> None:
    (delivery,) = run.deliveries("expired")
    assert delivery["kind"] == "failure_notice"
    (request,) = [r for r in run.on("corrections.requests") if r["turn_id"] == "expired"]
    assert delivery["delivered_at"] == request["deadline"]


def test_cancelled_turn_gets_nothing_even_from_a_late_correction(run: Flows) -> None:
    assert run.deliveries("barrier-cancelled")
    assert run.deliveries("cancelled") == []


def test_repeated_turn_is_delivered_once(run: Flows) -> None:
    assert len(run.deliveries("repeated")) == 1
    assert metric(run.port, "replygate_outcomes_total", outcome="duplicate_dropped") >= 2


def test_csv_chart_result_carries_the_snapshot(run: Flows) -> None:
    results = run.on("toolresults.kandev")
    (result,) = [r for r in results if r["call_id"] == "csv-1"]
    assert result["status"] == "ok"
    snapshot = result["metadata"]["normalized"]["generic"]["output"]
    assert snapshot["resolved_charts"][0]["labels"] == ["Jan", "Feb", "Mar"]


def test_malformed_record_goes_to_the_dlq_with_its_key(run: Flows) -> None:
    dlq = run.deployment.topic("replies.dlq")
    letters = [(k, orjson.loads(v)) for topic, k, v in run.records if topic == dlq]
    (key, letter) = next((k, x) for k, x in letters if "broken" in x["record"])
    assert key == b"c-bad"
    assert letter["reason"] == "not_json"
    assert letter["source_topic"] == run.deployment.topic("replies.raw")


def test_a_record_that_fails_in_the_gate_is_a_dead_letter_and_the_worker_goes_on(
    run: Flows,
) -> None:
    dlq = run.deployment.topic("replies.dlq")
    letters = [orjson.loads(v) for topic, _, v in run.records if topic == dlq]
    (letter,) = [x for x in letters if '"exploding"' in x["record"]]
    assert letter["reason"] == "processing_error" and "RuntimeError" in letter["detail"]
    assert run.deliveries("barrier-boom"), "the next record of the conversation was processed"


def test_secret_never_visible_on_any_output_topic(run: Flows) -> None:
    raw = b"".join(v for _, _, v in run.records)
    assert GITHUB_PAT.encode() not in raw
    (delivery,) = run.deliveries("leaky")
    assert delivery["masked"] and "[REDACTED:" in orjson.dumps(delivery["message"]).decode()


def test_kcat_reads_what_the_worker_wrote_and_writes_what_it_reads(
    run: Flows,
) -> None:
    """An independent client (librdkafka's kcat) on both sides of the worker."""
    kcat = shutil.which("kcat")
    assert kcat, "kcat is installed by scripts/install-tools.sh"
    t = run.deployment.topic
    line = orjson.dumps(raw_reply(turn_id="via-kcat", conversation_id="c-kcat")).decode()
    subprocess.run(
        [kcat, "-b", bootstrap(), "-P", "-t", t("replies.raw"), "-K", "\t"],
        input=f"c-kcat\t{line}\n".encode(),
        check=True,
        timeout=30,
    )
    deadline = time.monotonic() + 60
    found: dict[str, Any] | None = None
    while found is None and time.monotonic() < deadline:
        out = subprocess.run(
            [kcat, "-b", bootstrap(), "-C", "-t", t("delivery.im"), "-e", "-q", "-f", "%k\t%s\n"],
            capture_output=True,
            check=True,
            timeout=30,
        ).stdout.decode()
        for row in out.splitlines():
            key, _, value = row.partition("\t")
            if key == "c-kcat":
                found = orjson.loads(value)
        time.sleep(0.5)
    assert found is not None and found["delivery_id"] == "via-kcat"


def test_consumer_lag_is_reported_per_input_partition(run: Flows) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    topic = run.deployment.topic("replies.raw")

    def lag_samples() -> list[Any]:
        body = urllib.request.urlopen(f"http://127.0.0.1:{run.port}/metrics", timeout=5).read()
        return [
            s
            for family in text_string_to_metric_families(body.decode())
            for s in family.samples
            if s.name == "replygate_consumer_lag" and s.labels["topic"] == topic
        ]

    both = "lag for both partitions of replies.raw"
    wait_for(both, lambda: len(lag_samples()) == 2, 30, poll=0.2)
    wait_for("the lag to drain", lambda: sum(s.value for s in lag_samples()) == 0, 30, poll=0.2)
    assert {s.labels["partition"] for s in lag_samples()} == {"0", "1"}
