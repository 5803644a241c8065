"""Keys, partitions and trace context through the real broker and a real worker (integration).

One worker with the built-in corrector (a scripted LLM) judges records published with the
agent-side client: records keyed otherwise than their turn become `wrong_key` dead letters and
leave the turn alone; W3C trace headers travel from each input to every output it causes; the
corrector answers on the partition of the record it answers.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.partitioner import murmur2
from replygate_dev.scripted_llm import Canned, ScriptedLLM

from schemas.records import RawReply, ToolCall, TurnControl
from streams.client import AgentClient, record_bytes
from streams.client.agent import InputRecord
from tests.support.kafka import REPO, Deployment, collect_messages, worker_exit
from tests.support.samples import im_text, raw_reply

pytestmark = pytest.mark.kafka

PARTITIONS = 3
GOOD = im_text([{"type": "text", "data": {"text": "The corrected answer"}}])
OUTPUTS = ("delivery.im", "corrections.requests", "toolresults.kandev", "replies.dlq")


def traceparent(n: int) -> str:
    return f"00-{n:032x}-{n:016x}-01"


TS = "vendor=opaque-1,other=2"
ALL_ZERO = "00-" + "0" * 32 + "-00f067aa0ba902b7-01"


def murmur_partition(key: bytes, partitions: int = PARTITIONS) -> int:
    """Where aiokafka's (and Java's) default partitioner puts a key."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def invalid(turn: str, conv: str) -> RawReply:
    return RawReply.model_validate(
        raw_reply(turn_id=turn, conversation_id=conv, output={"text": f"prose {turn}"})
    )


@dataclass
class Run:
    deployment: Deployment
    records: list[Any]
    sent: dict[str, Any]  # turn -> RecordMetadata of its attempt 0

    def on(self, name: str) -> list[Any]:
        return [r for r in self.records if r.topic == self.deployment.topic(name)]

    def about(self, name: str, turn: str) -> list[Any]:
        return [r for r in self.on(name) if orjson.loads(r.value).get("turn_id") == turn]


def headers(record: Any) -> list[tuple[str, bytes]]:
    return [(k, bytes(v)) for k, v in record.headers or ()]


def trace(n: int, state: str | None = None) -> list[tuple[str, bytes]]:
    pairs = [("traceparent", traceparent(n).encode())]
    return pairs + ([("tracestate", state.encode())] if state else [])


async def publish(deployment: Deployment) -> dict[str, Any]:
    """Every input of the run; returns where each turn's attempt 0 landed."""
    sent: dict[str, Any] = {}
    async with AgentClient(deployment.settings()) as agent:
        raw = agent.producer  # for what the client refuses to send: other headers, bad keys

        async def send(record: InputRecord, key: bytes | None, hdrs: list[Any], **kw: Any) -> Any:
            return await raw.send_and_wait(
                agent.topic_of(record), record_bytes(record), key=key, headers=hdrs, **kw
            )

        # 1. a valid reply: traceparent and tracestate pass, no other header does
        ok = RawReply.model_validate(raw_reply(turn_id="t-valid", conversation_id="c-valid"))
        await send(ok, b"c-valid", [*trace(1, TS), ("x-tenant", b"acme"), ("b3", b"1-2-1")])
        # 2. an all-zero trace id is not a traceparent: dropped, the reply delivered
        bad = RawReply.model_validate(raw_reply(turn_id="t-badtp", conversation_id="c-badtp"))
        await send(bad, b"c-badtp", [("traceparent", ALL_ZERO.encode()), ("tracestate", b"a=1")])
        # 3. corrected by the built-in corrector; attempt 0 on a partition its own (murmur2)
        # partitioner would not choose, as another client's partitioner may put it
        key = b"c-fix"
        elsewhere = (murmur_partition(key) + 1) % PARTITIONS
        fix = RawReply.model_validate(
            raw_reply(turn_id="t-fix", conversation_id="c-fix", output={"text": "FIXME prose"})
        )
        sent["t-fix"] = await send(fix, key, trace(2), partition=elsewhere)
        # 4. the corrector fails (no scripted answer); the agent's own attempt 1 has its trace
        sent["t-manual"] = await agent.send(
            invalid("t-manual", "c-manual"), traceparent=traceparent(3)
        )
        # 5. no correction at all: the deadline's notice carries attempt 0's trace
        sent["t-late"] = await agent.send(invalid("t-late", "c-late"), traceparent=traceparent(5))
        # 6. keyed wrong three ways, then right: three dead letters and one delivery
        wk = RawReply.model_validate(raw_reply(turn_id="t-wk", conversation_id="c-wk"))
        for wrong in (b'"c-wk"', None, b"t-wk"):
            await send(wk, wrong, trace(6))
        call = ToolCall.model_validate(
            {
                "call_id": "call-wk",
                "task_id": "task-wk",
                "workspace": "ws-none",
                "tool": "show_rich_output_kandev",
                "arguments": {},
            }
        )
        await send(call, b"call-wk", [])
        cancel = TurnControl(turn_id="t-wk", conversation_id="c-wk", action="cancel")
        await send(cancel, None, [])
        await agent.send(wk, traceparent=traceparent(7))
        # 7. a tool call's ToolResult carries its trace
        await agent.tool_call("call-ok", "task-ok", "ws-none", {}, traceparent=traceparent(8))
    return sent


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    tmp = tmp_path_factory.mktemp("integration")
    (tmp / "ws").mkdir()
    deployment = Deployment(partitions=PARTITIONS)
    deployment.create_topics()
    with ScriptedLLM([Canned("FIXME", content=GOOD)]) as llm:
        deployment.start_worker(
            tmp,
            REPLYGATE_CORRECTOR__ENABLED="true",
            REPLYGATE_CORRECTOR__BASE_URL=llm.base_url,
            REPLYGATE_CORRECTION_DEADLINE_SECONDS="12",
            REPLYGATE_WORKSPACES_ROOT=str(tmp / "ws"),
            REPLYGATE_MEDIA_ROOT=str(tmp),
        )
        try:
            sent = asyncio.run(publish(deployment))
            t = deployment.topic
            # the agent answers t-manual's correction request itself, with another trace
            asyncio.run(
                collect_messages(
                    [t("corrections.requests")],
                    lambda rs: any(b"t-manual" in r.value for r in rs),
                    timeout=90,
                )
            )
            asyncio.run(answer_manual(deployment))

            def done(rs: list[Any]) -> bool:
                finals = [r for r in rs if r.topic == t("delivery.im")]
                return len(finals) >= 6 and any(r.topic == t("toolresults.kandev") for r in rs)

            records = asyncio.run(
                collect_messages(
                    [*(t(n) for n in OUTPUTS), t("replies.raw")], done, timeout=120, settle=2
                )
            )
        finally:
            deployment.stop_all()
    yield Run(deployment, records, sent)


async def answer_manual(deployment: Deployment) -> None:
    async with AgentClient(deployment.settings()) as agent:
        await agent.reply(
            "t-manual",
            "c-manual",
            platform="im",
            contract="im.segments.v1",
            text=GOOD,
            attempt=1,
            traceparent=traceparent(4),
        )


def test_only_the_trace_headers_pass_from_a_reply_to_its_delivery(run: Run) -> None:
    (delivery,) = run.about("delivery.im", "t-valid")
    assert headers(delivery) == trace(1, TS), run.deployment.log_tail()


def test_an_invalid_traceparent_is_dropped_and_the_reply_still_delivered(run: Run) -> None:
    (delivery,) = run.about("delivery.im", "t-badtp")
    assert headers(delivery) == []


def test_the_corrector_answers_on_the_partition_of_the_record_it_answers(run: Run) -> None:
    attempt0 = run.sent["t-fix"]
    (request,) = run.about("corrections.requests", "t-fix")
    assert request.partition == attempt0.partition and headers(request) == trace(2)
    attempts = [
        r for r in run.about("replies.raw", "t-fix") if orjson.loads(r.value)["attempt"] == 1
    ]
    assert [(r.partition, r.key, headers(r)) for r in attempts] == [
        (attempt0.partition, b"c-fix", trace(2))
    ]
    (delivery,) = run.about("delivery.im", "t-fix")
    assert orjson.loads(delivery.value)["corrected"] is True
    assert headers(delivery) == trace(2)


def test_a_corrected_turn_is_delivered_with_the_attempt_1_records_trace(run: Run) -> None:
    (request,) = run.about("corrections.requests", "t-manual")
    assert headers(request) == trace(3)
    (delivery,) = run.about("delivery.im", "t-manual")
    assert orjson.loads(delivery.value)["corrected"] is True
    assert headers(delivery) == trace(4)


def test_the_deadlines_failure_notice_carries_the_turns_trace(run: Run) -> None:
    (notice,) = run.about("delivery.im", "t-late")
    assert orjson.loads(notice.value)["kind"] == "failure_notice"
    assert headers(notice) == trace(5)


def test_a_record_keyed_otherwise_is_a_wrong_key_dead_letter_and_its_turn_untouched(
    run: Run,
) -> None:
    letters = [orjson.loads(r.value) for r in run.on("replies.dlq")]
    assert {r["reason"] for r in letters} == {"wrong_key"}
    on_replies = [r for r in letters if r["source_topic"] == run.deployment.topic("replies.raw")]
    assert len(on_replies) == 3
    assert all(
        "must be the UTF-8 bytes of its conversation_id" in r["detail"]
        for r in letters
        if r["source_topic"] != run.deployment.topic("toolcalls.raw")
    )
    (tool,) = [r for r in letters if r["source_topic"] == run.deployment.topic("toolcalls.raw")]
    assert "task_id" in tool["detail"]
    assert len(letters) == 5  # three replies, the tool call, the cancel
    traced = [
        r
        for r in run.on("replies.dlq")
        if orjson.loads(r.value)["source_topic"] == run.deployment.topic("replies.raw")
    ]
    assert all(headers(r) == trace(6) for r in traced)
    # the wrongly keyed cancel did not cancel it, nor did the wrongly keyed repeats count
    (delivery,) = run.about("delivery.im", "t-wk")
    assert orjson.loads(delivery.value)["kind"] == "reply" and headers(delivery) == trace(7)


def test_a_tool_result_carries_its_calls_trace(run: Run) -> None:
    (result,) = [
        r for r in run.on("toolresults.kandev") if orjson.loads(r.value)["call_id"] == "call-ok"
    ]
    assert result.key == b"task-ok" and headers(result) == trace(8)


# ---- partition counts ---------------------------------------------------------------------


async def make_topics(deployment: Deployment, counts: dict[str, int]) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=deployment.bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(deployment.topic(n), num_partitions=c, replication_factor=1)
                for n, c in counts.items()
            ]
        )
    finally:
        await admin.close()


def test_a_worker_whose_input_topics_differ_refuses_to_start(tmp_path: Path) -> None:
    deployment = Deployment(partitions=2)
    asyncio.run(make_topics(deployment, {"replies.raw": 2, "turns.control": 3}))
    proc = deployment.start_worker(tmp_path)
    try:
        status = worker_exit(proc)
    finally:
        deployment.stop_all()
    log = deployment.logs[0].read_text(errors="replace")
    assert status == 2, log[-3000:]
    # (after the escape codes of Faust's start-up spinner, when it drew one)
    (line,) = [x for x in log.splitlines() if "replygate worker: error:" in x]
    assert "WARNING" not in line  # written as it is, not through a logger
    assert f"{deployment.topic('replies.raw')} (2)" in line
    assert f"{deployment.topic('turns.control')} (3)" in line


def run_topics(deployment: Deployment, partitions: int) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": deployment.bootstrap_servers,
        "REPLYGATE_TOPIC_PREFIX": deployment.prefix,
        "REPLYGATE_APP_ID": deployment.app_id,
        "REPLYGATE_PARTITIONS": str(partitions),
    }
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", "topics"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_replygate_topics_never_changes_a_partition_count(tmp_path: Path) -> None:
    deployment = Deployment(partitions=2)
    first = run_topics(deployment, 2)
    assert first.returncode == 0, first.stderr
    raised = run_topics(deployment, 4)
    assert raised.returncode == 1
    (line,) = raised.stderr.strip().splitlines()
    assert line.startswith("replygate topics: error:")
    assert f"{deployment.topic('replies.raw')} (2)" in line and "drain" in line
    again = run_topics(deployment, 2)  # nothing was created or changed by the refusal
    assert again.returncode == 0 and "created" not in again.stdout
