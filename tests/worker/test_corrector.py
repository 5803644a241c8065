"""The built-in corrector (docs/contracts.md, "Correction"), its scripted endpoint."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from replygate_dev.scripted_llm import Canned, ScriptedLLM, choose, completion_body

from schemas.records import CorrectionRequest, RawReply, record_json
from streams.broker.topology import Topology
from streams.core.decision import Source
from streams.settings import CorrectorSettings, Settings
from streams.worker.corrector import (
    CorrectionFailed,
    build_messages,
    complete,
    content_of,
    correct,
    parse_request,
    register_corrector,
    reply_from_completion,
    reply_json,
)
from tests.support.gates import disk_gate
from tests.support.kafka import (
    Deployment,
    by_topic,
    collect,
    free_port,
    produce,
    publish,
    wait_ready,
)
from tests.support.samples import im_text, raw_reply

NOW = datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)
GOOD = im_text([{"type": "text", "data": {"text": "The corrected answer"}}])
API_KEY = "sk-test-corrector-key-0001"


def request(**changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "turn_id": "t-42",
        "conversation_id": "c-7",
        "platform": "im",
        "contract": "im.segments.v1",
        "invalid_output": "Sure! " + GOOD,
        "errors": [
            {"path": "$", "code": "not_json", "message": "must be exactly one JSON object"},
            {"path": "segments[1].data.target", "code": "unknown_mention_target", "message": "m"},
        ],
        "instructions": "Reply with one JSON object {segments: [...]}.",
        "deadline": "2026-11-30T12:00:30Z",
    }
    record.update(changes)
    return record


def typed(**changes: Any) -> CorrectionRequest:
    """The request as the corrector reads it."""
    return CorrectionRequest.model_validate(request(**changes))


def corrector(llm: ScriptedLLM | None = None, **changes: Any) -> CorrectorSettings:
    base = llm.base_url if llm is not None else "http://127.0.0.1:9/v1"
    return CorrectorSettings(enabled=True, base_url=base, **changes)


# ---- pure parts --------------------------------------------------------------------------


def test_messages_are_the_instructions_then_the_invalid_reply_and_errors() -> None:
    messages = build_messages(typed())
    assert [m["role"] for m in messages] == ["system", "user"]
    assert all(set(m) == {"role", "content"} for m in messages)
    assert messages[0]["content"] == request()["instructions"]
    user = messages[1]["content"]
    assert request()["invalid_output"] in user
    for error in request()["errors"]:
        assert f"{error['path']}: {error['code']}: {error['message']}" in user


def test_messages_carry_nothing_but_the_request_content() -> None:
    text = "\n".join(m["content"] for m in build_messages(typed()))
    for other in ("t-42", "c-7", "2026-11-30T12:00:30Z", "im.segments.v1"):
        assert other not in text


def test_invalid_output_is_sent_whole() -> None:
    long = "x" * 300_000
    assert long in build_messages(typed(invalid_output=long))[1]["content"]


def test_reply_is_the_turns_attempt_1_raw_reply() -> None:
    reply = orjson.loads(reply_json(reply_from_completion(typed(), GOOD, "gpt-test", NOW)))
    RawReply.model_validate(reply)  # closed and strict
    assert list(reply) == [
        "turn_id",
        "conversation_id",
        "platform",
        "contract",
        "attempt",
        "provider",
        "output",
        "context",
        "produced_at",
    ]
    assert reply["turn_id"] == "t-42" and reply["conversation_id"] == "c-7"
    assert (reply["platform"], reply["contract"]) == ("im", "im.segments.v1")
    assert reply["attempt"] == 1
    assert reply["output"] == {"text": GOOD}
    assert reply["context"] is None
    assert reply["produced_at"] == "2026-11-30T12:00:05.000Z"
    assert reply["provider"].startswith("corrector")


def test_reply_is_delivered_as_corrected_by_the_gate(tmp_path: Path) -> None:
    gate = disk_gate(Settings(workspaces_root=tmp_path, media_root=tmp_path))
    raw = reply_json(reply_from_completion(typed(), GOOD, "m", NOW))
    decision = gate.decide_reply(raw, Source("replies.raw"), NOW)
    assert decision.action == "deliver"
    assert decision.output is not None and decision.output.corrected is True


def test_provider_stays_within_the_envelope_limit() -> None:
    reply = reply_from_completion(typed(), GOOD, "m" * 500, NOW)
    assert reply.provider is not None and len(reply.provider) == 200


def test_request_must_be_a_closed_correction_request() -> None:
    assert parse_request(orjson.dumps(request())) == typed()
    for bad in (
        b"not json",
        b"[]",
        orjson.dumps({**request(), "history": []}),
        orjson.dumps({k: v for k, v in request().items() if k != "instructions"}),
        orjson.dumps(request(errors="none")),
    ):
        with pytest.raises(ValueError):
            parse_request(bad)


@pytest.mark.parametrize(
    "body",
    [
        b"<html>",
        b"[]",
        b"{}",
        b'{"choices": []}',
        b'{"choices": [{"message": {"content": null}}]}',
        b'{"choices": [{"message": {"content": 7}}]}',
        b'{"choices": [{"text": "legacy"}]}',
    ],
)
def test_malformed_completion_bodies_are_failures(body: bytes) -> None:
    with pytest.raises(CorrectionFailed) as info:
        content_of(body)
    assert info.value.reason == "malformed_response"


def test_completion_content_is_read_from_the_first_choice() -> None:
    assert content_of(completion_body("hello", "m", 1)) == "hello"


# ---- the scripted endpoint ---------------------------------------------------------------


def test_script_picks_the_first_matching_canned_reply() -> None:
    script = [Canned("alpha", content="A"), Canned("", content="fallback")]
    body = {"messages": [{"role": "user", "content": "... alpha ..."}]}
    assert choose(script, body).content == "A"
    assert choose(script, {"messages": []}).content == "fallback"
    assert choose([Canned("zzz")], body).status == 404
    assert choose(lambda b: "from a callable", body).content == "from a callable"


# ---- one completion against the endpoint -------------------------------------------------


async def test_complete_sends_one_plain_chat_request() -> None:
    with ScriptedLLM([Canned("", content=GOOD)]) as llm:
        settings = corrector(llm, api_key=API_KEY, model="m-1")
        async with httpx.AsyncClient() as client:
            assert await complete(client, settings, build_messages(typed())) == GOOD
    (seen,) = llm.requests()
    assert seen.body == {"model": "m-1", "messages": build_messages(typed()), "temperature": 0}
    assert seen.headers["authorization"] == f"Bearer {API_KEY}"


async def test_no_authorization_header_without_a_key() -> None:
    with ScriptedLLM([Canned("", content=GOOD)]) as llm:
        async with httpx.AsyncClient() as client:
            await complete(client, corrector(llm), build_messages(typed()))
    assert "authorization" not in llm.requests()[0].headers


async def test_timeout_is_one_attempt_and_bounded() -> None:
    with ScriptedLLM([Canned("", content=GOOD, delay=5)]) as llm:
        async with httpx.AsyncClient() as client:
            with pytest.raises(CorrectionFailed) as info:
                await complete(client, corrector(llm, timeout_seconds=0.3), build_messages(typed()))
        # the call has returned, so any retry was sent already; a loaded box (CI) may read the
        # request only after the client gave up, so wait for it, and a moment for a second one
        llm.requests_after(1, 5)
        arrived = llm.requests_after(2, 0.5)
    # the scripted answer takes 5 s: "timeout" proves the 0.3 s bound held
    assert info.value.reason == "timeout"
    assert len(arrived) == 1


async def test_timeout_bounds_the_whole_call_not_each_read() -> None:
    """A body dripping in slowly passes every read timeout; the whole call is still bounded."""
    body = completion_body("z" * 100, "m", 1)
    with ScriptedLLM([Canned("", body=body, drip=0.1)]) as llm:
        async with httpx.AsyncClient() as client:
            with pytest.raises(CorrectionFailed) as info:
                await complete(client, corrector(llm, timeout_seconds=0.5), [])
    # the body drips for 10 s, each read well within the bound: "timeout" proves the whole call
    # was bounded
    assert info.value.reason == "timeout"


async def test_http_error_is_a_failure_without_retry() -> None:
    with ScriptedLLM([Canned("", status=500)]) as llm:
        async with httpx.AsyncClient() as client:
            with pytest.raises(CorrectionFailed) as info:
                await complete(client, corrector(llm), build_messages(typed()))
    assert info.value.reason == "http_status" and "500" in str(info.value)
    assert len(llm.requests()) == 1


@pytest.mark.parametrize("unsized", [False, True])
async def test_oversized_body_is_refused(unsized: bool) -> None:
    body = completion_body("y" * 5000, "m", 1)
    with ScriptedLLM([Canned("", body=body, unsized=unsized)]) as llm:
        async with httpx.AsyncClient() as client:
            with pytest.raises(CorrectionFailed) as info:
                await complete(client, corrector(llm), [], max_response_bytes=4096)
            # the same body fits a larger bound, whether sized or streamed
            assert await complete(client, corrector(llm), [], max_response_bytes=len(body)) == (
                "y" * 5000
            )
    assert info.value.reason == "response_too_large"


async def test_malformed_body_is_a_failure() -> None:
    with ScriptedLLM([Canned("", body=b'{"choices": "nope"}')]) as llm:
        async with httpx.AsyncClient() as client:
            with pytest.raises(CorrectionFailed) as info:
                await complete(client, corrector(llm), [])
    assert info.value.reason == "malformed_response"


async def test_unreachable_endpoint_is_a_transport_failure() -> None:
    settings = CorrectorSettings(enabled=True, base_url=f"http://127.0.0.1:{free_port()}/v1")
    async with httpx.AsyncClient() as client:
        with pytest.raises(CorrectionFailed) as info:
            await complete(client, settings, [])
    assert info.value.reason == "transport"


# ---- one correction request, end to end in process ----------------------------------------


def settings_for(llm: ScriptedLLM, **changes: Any) -> CorrectorSettings:
    return corrector(llm, api_key=API_KEY, **changes)


async def test_correct_turns_a_request_into_the_attempt_1_reply() -> None:
    with ScriptedLLM([Canned("", content=GOOD)]) as llm:
        async with httpx.AsyncClient() as client:
            reply = await correct(client, settings_for(llm), orjson.dumps(request()), NOW)
    assert reply == reply_from_completion(typed(), GOOD, "gpt-4o-mini", NOW)


async def test_failed_call_publishes_nothing_and_logs_no_secret(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    secret_text = "PRIVATE-CONVERSATION-TEXT"
    raw = orjson.dumps(request(invalid_output=secret_text))
    with ScriptedLLM([Canned("", status=503)]) as llm:
        async with httpx.AsyncClient() as client:
            assert await correct(client, settings_for(llm), raw, NOW) is None
    assert "t-42" in caplog.text and "503" in caplog.text
    assert API_KEY not in caplog.text and secret_text not in caplog.text


async def test_timed_out_call_logs_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with ScriptedLLM([Canned("", delay=3)]) as llm:
        settings = settings_for(llm, timeout_seconds=0.2)
        async with httpx.AsyncClient() as client:
            assert await correct(client, settings, orjson.dumps(request()), NOW) is None
    assert "timeout" in caplog.text
    assert API_KEY not in caplog.text and "Sure!" not in caplog.text


async def test_malformed_request_is_skipped_without_a_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    raw = orjson.dumps({**request(invalid_output="HIDDEN"), "extra": 1})
    with ScriptedLLM([Canned("", content=GOOD)]) as llm:
        async with httpx.AsyncClient() as client:
            assert await correct(client, settings_for(llm), raw, NOW) is None
    assert llm.requests() == []
    assert "malformed correction request" in caplog.text and "HIDDEN" not in caplog.text


# A real-format GitHub token (ghp_ + 36 characters), written here so no scanner flags a file.
GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xYz1A2"


async def test_a_malformed_requests_log_line_is_masked_and_escaped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The reason names the request's fields: a field named by a secret or by terminal controls
    is logged masked and escaped, like everything else replygate writes."""
    caplog.set_level(logging.ERROR)
    raw = orjson.dumps({**request(), GITHUB_TOKEN: 1, "\x1b[2J\x07": 2})
    with ScriptedLLM([Canned("", content=GOOD)]) as llm:
        async with httpx.AsyncClient() as client:
            assert await correct(client, settings_for(llm), raw, NOW) is None
    assert llm.requests() == []
    logged = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert len(logged) == 1
    assert "fields:" in logged[0]  # still says what was wrong
    assert GITHUB_TOKEN not in logged[0] and "[REDACTED:" in logged[0]
    assert "\x1b" not in logged[0] and "\x07" not in logged[0]
    assert "\\x1b" in logged[0] or "\\u001b" in logged[0]


# ---- through the real broker and a real worker --------------------------------------------


@pytest.mark.kafka
def test_worker_corrects_an_invalid_reply_through_the_scripted_endpoint(tmp_path: Path) -> None:
    turn = "t-corr-1"
    original = raw_reply(
        turn_id=turn,
        conversation_id="c-corr",
        output={"text": "Here you go: " + GOOD, "reasoning": "HIDDEN-REASONING"},
    )
    deployment = Deployment(partitions=2)
    deployment.create_topics()
    t = deployment.topic
    with ScriptedLLM([Canned("The corrected answer", content=GOOD)]) as llm:
        deployment.start_worker(
            tmp_path,
            REPLYGATE_CORRECTOR__ENABLED="true",
            REPLYGATE_CORRECTOR__BASE_URL=llm.base_url,
            REPLYGATE_CORRECTOR__API_KEY=API_KEY,
            REPLYGATE_CORRECTION_DEADLINE_SECONDS="60",
        )
        try:
            # A malformed request first: skipped, and the agent keeps going.
            asyncio.run(produce(t("corrections.requests"), [("c-corr", b"{broken")]))
            asyncio.run(publish(deployment.settings(), t("replies.raw"), [("c-corr", original)]))
            records = asyncio.run(
                collect(
                    [t("delivery.im"), t("corrections.requests"), t("replies.raw")],
                    until=lambda rs: any(topic == t("delivery.im") for topic, _, _ in rs),
                    timeout=90,
                    settle=1.0,
                )
            )
        finally:
            deployment.stop_all()
        seen = llm.requests()
    out = by_topic([r for r in records if r[2] != b"{broken"])
    assert t("delivery.im") in out, deployment.log_tail()
    (delivery,) = out[t("delivery.im")]
    assert delivery["turn_id"] == turn and delivery["kind"] == "reply"
    assert delivery["corrected"] is True
    assert delivery["message"] == orjson.loads(GOOD)
    (correction,) = out[t("corrections.requests")]
    attempts = [r for r in out[t("replies.raw")] if r["attempt"] == 1]
    assert len(attempts) == 1 and attempts[0]["context"] is None
    assert attempts[0]["provider"].startswith("corrector")
    # Exactly one completion, with no tools and nothing but the request's own content.
    assert len(seen) == 1
    assert set(seen[0].body) == {"model", "messages", "temperature"}
    assert seen[0].messages == build_messages(CorrectionRequest.model_validate(correction))
    assert "HIDDEN-REASONING" not in seen[0].text() and "555000111" not in seen[0].text()
    assert seen[0].headers["authorization"] == f"Bearer {API_KEY}"
    log = "\n".join(p.read_text(errors="replace") for p in deployment.logs)
    assert API_KEY not in log


def test_register_corrector_adds_a_concurrent_agent_on_the_corrections_topic(
    tmp_path: Path,
) -> None:
    import faust

    app = faust.App(
        "t-corrector-app",
        broker="kafka://127.0.0.1:1",
        store="memory://",
        datadir=str(tmp_path),
        key_serializer="raw",
        value_serializer="raw",
    )
    settings = Settings(topic_prefix="p.", corrector=CorrectorSettings(enabled=True))
    agent = register_corrector(app, settings.corrector, Topology.of(settings), settings.partitions)
    assert agent.concurrency == settings.corrector.concurrency == 16
    assert tuple(agent.channel.topics) == ("p.corrections.requests",)
    assert agent in app.agents.values()
    many = CorrectorSettings(enabled=True, concurrency=64)
    app.agents.clear()
    assert register_corrector(app, many, Topology.of(settings), 8).concurrency == 64


@pytest.mark.parametrize("contract", ["im.segments.v1", "text.plain.v1"])
def test_a_100000_character_invalid_reply_is_never_cut(tmp_path: Path, contract: str) -> None:
    """Long replies (32,000 characters and more) reach the corrector whole, end included."""
    text = "prose " * 16_666 + "THE-END\x07"
    assert len(text) > 100_000
    gate = disk_gate(Settings(workspaces_root=tmp_path, media_root=tmp_path))
    record = {
        "turn_id": "t-long",
        "conversation_id": "c-7",
        "platform": "im",
        "contract": contract,
        "attempt": 0,
        "output": {"text": text},
        "produced_at": "2026-11-30T12:00:00Z",
    }
    decision = gate.decide_reply(orjson.dumps(record), Source("replies.raw"), NOW)
    assert decision.action == "request_correction" and decision.output is not None
    assert decision.output.invalid_output == text
    parsed = parse_request(record_json(decision.output))
    (_, user) = build_messages(parsed)
    assert text in user["content"]


@pytest.mark.kafka
def test_a_restarted_corrector_does_not_ask_the_model_again(tmp_path: Path) -> None:
    """The corrector's reading position is committed like the gate's: a worker that takes its
    partitions over (a restart, a rebalance) starts after the requests already answered, and
    the model is not asked again for turns long finished."""
    deployment = Deployment(partitions=2)
    deployment.create_topics()
    t = deployment.topic
    turns = [f"t-once-{i}" for i in range(4)]
    replies = [
        ("c-once", raw_reply(turn_id=turn, conversation_id="c-once", output={"text": "prose"}))
        for turn in turns
    ]
    env = {"REPLYGATE_CORRECTOR__ENABLED": "true", "REPLYGATE_CORRECTION_DEADLINE_SECONDS": "60"}
    with ScriptedLLM([Canned("prose", content=GOOD)]) as llm:
        env["REPLYGATE_CORRECTOR__BASE_URL"] = llm.base_url
        deployment.start_worker(tmp_path, **env)
        try:
            asyncio.run(publish(deployment.settings(), t("replies.raw"), replies))
            delivered = asyncio.run(
                collect(
                    [t("delivery.im")],
                    until=lambda rs: len(rs) >= len(turns),
                    timeout=90,
                    settle=2.0,
                )
            )
            assert len(delivered) == len(turns), deployment.log_tail()
            time.sleep(2.0)  # past the commit interval
        finally:
            deployment.stop_all()
        assert len(llm.requests()) == len(turns)
        worker = deployment.start_worker(tmp_path, **env)
        try:
            wait_ready([worker])  # ready twice, seconds apart: time to read what is left
        finally:
            deployment.stop_all()
        asked = llm.requests()
    assert len(asked) == len(turns), f"asked {len(asked)} times for {len(turns)} turns"
