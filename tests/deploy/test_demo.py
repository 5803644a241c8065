"""`replygate demo` (docs/cli.md): the bundled samples, their expectations, and a real run."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from replygate_dev.demo import (
    CORRECTOR_TIMEOUT_SECONDS,
    SAMPLES_DIR,
    Part,
    Sample,
    Seen,
    Tracker,
    evaluate,
    expected_outcomes,
    llm_script,
    load_samples,
    read_rss,
    read_samples,
    stop_worker,
    with_demo_contract,
)
from replygate_dev.scripted_llm import choose

from schemas.records import CorrectionRequest
from streams.core.decision import Decision, Source
from streams.core.keys import CONVERSATION, TASK, key_issue
from streams.core.pipeline import Gate
from streams.settings import Settings
from streams.worker.corrector import build_messages, reply_from_completion, reply_json
from tests.support.gates import disk_gate
from tests.support.kafka import REPO, PrivateBroker, free_port

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
STORIES = {
    "t-wrong-key",
    "t-valid",
    "t-noreply",
    "t-corrected",
    "t-still-bad",
    "t-llm-slow",
    "t-llm-down",
    "t-leak",
    "t-html",
    "t-image",
    "call-chart",
    "call-escape",
    "t-cancel",
    "t-repeat",
    "malformed",
    "t-plain",
    "t-ticket",
    "t-progress",
}
LOGICAL = {"delivery.im", "delivery.assistant", "toolresults", "dlq", None}


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return read_samples()


@pytest.fixture
def gate() -> Gate:
    return disk_gate(
        with_demo_contract(
            Settings(workspaces_root=SAMPLES_DIR / "workspaces", media_root=SAMPLES_DIR / "media")
        )
    )


def logical_topic(decision: Decision) -> str | None:
    settings = Settings()
    names = {settings.topic(n): n for n in ("toolresults", "dlq", "corrections")}
    if decision.topic is None:
        return None
    return names.get(decision.topic, decision.topic)


def run_offline(gate: Gate, sample: Sample, samples: list[Sample]) -> Seen:
    """What the worker would emit for a sample, through the same pure pipeline, no Kafka."""
    seen = Seen()
    finished = False
    for part in sample.parts:
        for _ in range(part.times):
            if part.topic == "turns_control":
                finished = True  # cancel: nothing delivered for the turn, now or later
                continue
            if finished:
                continue  # a repeat of a finished turn is dropped
            field = TASK if part.topic == "toolcalls_raw" else CONVERSATION
            wrong = key_issue(part.value, part.key, field)
            if wrong is not None:  # never judged (the worker's TurnBatch)
                letter = gate.dead_letter(part.value, Source(part.topic), "wrong_key", [wrong], 0)
                seen.finals.append(("dlq", letter.line()["output"]))
                continue
            if part.topic == "toolcalls_raw":
                decision = gate.decide_tool_call(part.value, Source("toolcalls.raw"))
            else:
                decision = gate.decide_reply(part.value, Source("replies.raw"), NOW)
            if decision.action == "request_correction":
                seen.corrections += 1
                finished = True
                outcome = correct_offline(gate, decision, samples)
                if outcome is None:  # no answer: the deadline's notice
                    assert decision.turn is not None
                    decision = gate.failure_notice(decision.turn, NOW)
                else:
                    seen.llm_replies += 1
                    decision = outcome
                if any(p.topic == "turns_control" for p in sample.parts):
                    continue  # cancelled while pending: the late correction is dropped
            finished = finished or decision.action != "dead_letter"
            if decision.output is not None and decision.topic is not None:
                seen.finals.append((str(logical_topic(decision)), decision.line()["output"]))
    return seen


def correct_offline(gate: Gate, decision: Decision, samples: list[Sample]) -> Decision | None:
    assert isinstance(decision.output, CorrectionRequest)
    canned = choose(llm_script(samples), {"messages": build_messages(decision.output)})
    if canned.status != 200 or canned.delay >= CORRECTOR_TIMEOUT_SECONDS:
        return None
    reply = reply_from_completion(decision.output, canned.content, "scripted", NOW)
    return gate.decide_reply(reply_json(reply), Source("replies.raw"), NOW)


# ---- the sample file ---------------------------------------------------------------------


def test_every_story_of_the_brief_has_a_sample(samples: list[Sample]) -> None:
    assert {s.id for s in samples} == STORIES
    for sample in samples:
        assert sample.what and sample.expect.get("outcomes")
        assert sample.expect.get("topic") in LOGICAL


def test_expectations_live_beside_the_records_not_inside(samples: list[Sample]) -> None:
    for sample in samples:
        for part in sample.parts:
            assert b"_demo" not in part.value and b"expect" not in part.value


def test_sample_files_the_records_use_are_bundled() -> None:
    assert (SAMPLES_DIR / "workspaces" / "ws-demo" / "reports" / "sales.csv").is_file()
    assert (SAMPLES_DIR / "media" / "logo.png").read_bytes().startswith(b"\x89PNG")
    assert not (SAMPLES_DIR / "media" / "not-a-picture.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("sample_id", sorted(STORIES))
def test_each_sample_meets_its_expectation_offline(
    sample_id: str, samples: list[Sample], gate: Gate
) -> None:
    """The same pipeline without Kafka agrees with the sample file (and the scripted LLM)."""
    sample = next(s for s in samples if s.id == sample_id)
    result = evaluate(sample, run_offline(gate, sample, samples))
    assert result.ok, result.problems


def test_each_corrector_answer_matches_only_its_own_sample(
    samples: list[Sample], gate: Gate
) -> None:
    script = llm_script(samples)
    for sample in samples:
        if sample.llm is None:
            continue
        decision = gate.decide_reply(sample.parts[0].value, Source("replies.raw"), NOW)
        assert isinstance(decision.output, CorrectionRequest)
        assert decision.action == "request_correction"
        canned = choose(script, {"messages": build_messages(decision.output)})
        assert canned.match == sample.llm["match"], sample.id


# ---- loading and judging -----------------------------------------------------------------


def line(meta: dict[str, Any], record: Any = None, raw: str | None = None) -> bytes:
    entry: dict[str, Any] = {"_demo": meta}
    if raw is not None:
        entry["raw"] = raw
    else:
        entry["record"] = record
    return orjson.dumps(entry)


def test_lines_with_one_id_are_parts_of_one_sample() -> None:
    reply = {"turn_id": "t-1", "conversation_id": "c-1"}
    loaded = load_samples(
        [
            line({"id": "a", "topic": "replies_raw", "times": 2, "expect": {}}, reply),
            b"",
            line({"id": "a", "topic": "turns_control", "after": "correction_requested"}, reply),
            line({"id": "b", "topic": "replies_raw", "key": "k", "expect": {}}, raw="{oops"),
        ]
    )
    assert [s.id for s in loaded] == ["a", "b"]
    first, second = loaded[0].parts
    assert (first.times, first.key, loaded[0].ref) == (2, b"c-1", "t-1")
    assert second.after == "correction_requested"
    assert loaded[1].parts[0] == Part("replies_raw", b"k", b"{oops")


def test_sample_lines_are_checked() -> None:
    with pytest.raises(ValueError, match="needs expect"):
        load_samples([line({"id": "a", "topic": "replies_raw"}, {})])
    with pytest.raises(ValueError, match="unknown topic"):
        load_samples([line({"id": "a", "topic": "elsewhere", "expect": {}}, {})])


def sample(**expect: Any) -> Sample:
    return Sample("s", "what", expect, [Part("replies_raw", b"c", b"{}")], ref="t-1")


DELIVERY = {
    "turn_id": "t-1",
    "kind": "reply",
    "corrected": False,
    "masked": [{"rule": "github-pat", "path": "$", "count": 1}],
    "notices": [],
    "message": {"segments": []},
}


def test_matching_outcome_passes() -> None:
    seen = Seen(finals=[("delivery.im", DELIVERY)])
    expect = {
        "topic": "delivery.im",
        "kind": "reply",
        "masked": ["github-pat"],
        "correction": False,
    }
    result = evaluate(sample(**expect), seen, {"delivery.im": "delivery.im"})
    assert result.ok and result.outcome == "delivery.im · reply"
    assert "masked github-pat" in result.detail


@pytest.mark.parametrize(
    ("expect", "seen", "problem"),
    [
        ({"topic": "delivery.im"}, Seen(), "got 0"),
        ({"topic": "delivery.im"}, Seen(finals=[("delivery.im", DELIVERY)] * 2), "got 2"),
        ({"topic": None}, Seen(finals=[("delivery.im", DELIVERY)]), "expected nothing"),
        ({"topic": "delivery.assistant"}, Seen(finals=[("delivery.im", DELIVERY)]), "went to"),
        ({"topic": "delivery.im", "kind": "failure_notice"}, None, "kind is 'reply'"),
        ({"topic": "delivery.im", "corrected": True}, None, "corrected is False"),
        ({"topic": "delivery.im", "masked": []}, None, "masked rules"),
        ({"topic": "delivery.im", "notices": ["attachment_wrong_kind"]}, None, "notices"),
        ({"topic": "delivery.im", "citations": 1}, None, "citations"),
        ({"topic": "delivery.im", "correction": True}, None, "correction requested"),
        ({"topic": "delivery.im", "llm_reply": True}, None, "corrector answered"),
    ],
)
def test_every_mismatch_is_named(expect: dict[str, Any], seen: Seen | None, problem: str) -> None:
    result = evaluate(sample(**expect), seen or Seen(finals=[("delivery.im", DELIVERY)]))
    assert not result.ok
    assert any(problem in p for p in result.problems), result.problems


def test_tool_results_are_judged_by_status_and_snapshot() -> None:
    record = {
        "call_id": "call-1",
        "status": "ok",
        "metadata": {"normalized": {"generic": {"input": {}, "output": None}}},
    }
    seen = Seen(finals=[("toolresults", record)])
    assert evaluate(sample(topic="toolresults", status="ok", snapshot=False), seen).ok
    assert not evaluate(sample(topic="toolresults", status="ok", snapshot=True), seen).ok
    assert not evaluate(sample(topic="toolresults", status="error"), seen).ok


def test_expected_worker_outcomes_add_up() -> None:
    one = sample(outcomes=["delivered", "duplicate_dropped"])
    two = sample(outcomes=["cancelled"])
    counts = expected_outcomes([one, two], {"cancelled": 1, "delivered": 5})
    assert counts == {"delivered": 6, "duplicate_dropped": 1, "cancelled": 2}


def test_tracker_routes_outputs_to_their_samples() -> None:
    settings = Settings(topic_prefix="p.")
    dead = Sample("bad", "", {}, [Part("replies_raw", None, b"{")])
    turn = sample()
    tracker = Tracker(settings, [turn, dead])
    tracker.produced(dead, dead.parts[0], 1, 7)
    t = settings.topic

    def add(topic: str, record: dict[str, Any]) -> None:
        tracker.add(topic, orjson.dumps(record))

    add(t("corrections"), {"turn_id": "t-1"})
    add(t("replies_raw"), {"turn_id": "t-1", "attempt": 0, "provider": "corrector"})
    add(t("replies_raw"), {"turn_id": "t-1", "attempt": 1, "provider": "agent"})
    add(t("replies_raw"), {"turn_id": "t-1", "attempt": 1, "provider": "corrector:m"})
    add(settings.delivery_topic("im"), {"turn_id": "t-1", "kind": "reply"})
    add(settings.delivery_topic("im"), {"turn_id": "burst-00001", "kind": "reply"})
    add(settings.delivery_topic("im"), {"turn_id": "someone-else", "kind": "reply"})
    add("other.topic", {"turn_id": "t-1"})
    tracker.add(t("replies_raw"), b"{not json")
    dlq = {"source_topic": t("replies_raw"), "partition": 1, "offset": 7, "reason": "not_json"}
    add(t("dlq"), dlq)
    add(t("dlq"), {**dlq, "offset": 8})
    seen = tracker.seen
    assert (seen["s"].corrections, seen["s"].llm_replies) == (1, 1)
    assert seen["s"].finals == [("delivery.im", {"turn_id": "t-1", "kind": "reply"})]
    assert seen["bad"].finals == [("dlq", dlq)]
    assert tracker.burst_delivered == 1


def test_worker_rss_comes_from_proc() -> None:
    rss, peak = read_rss(os.getpid())
    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc here")
    assert 0 < rss <= peak
    assert read_rss(2**22 + 12345) == (0, 0)


def test_a_worker_that_ignores_sigterm_is_killed_after_the_bounded_wait() -> None:
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print(1, flush=True); time.sleep(60)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"1\n"
    # the process ignores SIGTERM and sleeps 60 s: SIGKILL proves the bounded wait ended it
    assert stop_worker(proc, seconds=0.5) == -signal.SIGKILL


# ---- the command -------------------------------------------------------------------------


def demo_command(bootstrap: str, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": bootstrap}
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", "demo"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_demo_without_a_broker_says_how_to_start_one() -> None:
    # 127.0.0.2 refuses at once like any free local port, but is no address the demo starts
    # the checkout's broker on (127.0.0.1 or localhost): whether one runs here changes nothing.
    done = demo_command(f"127.0.0.2:{free_port()}", timeout=60)
    assert done.returncode == 1
    assert "make kafka-up" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


@pytest.mark.kafka
def test_demo_runs_every_sample_to_its_expected_outcome() -> None:
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not bootstrap:
        pytest.fail("KAFKA_BOOTSTRAP_SERVERS is not set: run the suite with `make test`")
    done = demo_command(bootstrap, timeout=170)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    table = done.stdout.split("what happened to each sample", 1)[1]
    for story in STORIES:
        assert story in table
    assert "✗" not in table
    assert "records/s" in done.stdout and "worker RSS" in done.stdout


async def _groups_and_offsets_topic(servers: str) -> tuple[list[Any], bool]:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=servers)
    await admin.start()
    try:
        groups = await admin.list_consumer_groups()
        return list(groups), "__consumer_offsets" in await admin.list_topics()
    finally:
        await admin.close()


@pytest.mark.kafka
def test_the_first_demo_on_a_broker_started_a_moment_before_passes(tmp_path: Path) -> None:
    """A fresh clone's first `make demo`: no consumer group, no group coordinator yet."""
    broker = PrivateBroker(tmp_path / "broker")
    broker.up()
    try:
        groups, has_offsets_topic = asyncio.run(_groups_and_offsets_topic(broker.bootstrap))
        assert groups == [] and not has_offsets_topic, "the broker is not a fresh one"
        done = demo_command(broker.bootstrap, timeout=170)
    finally:
        broker.down(purge=True)
    output = done.stdout + done.stderr
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "Traceback" not in output
    assert f"all {len(STORIES)} samples ended as expected" in done.stdout


def test_the_demo_starts_a_local_broker_only_for_a_loopback_address() -> None:
    from replygate_dev.demo import start_local_broker

    assert start_local_broker("kafka.example.com:9092") is False
    assert start_local_broker("10.0.0.5:9092,127.0.0.1:9092") is False
    assert start_local_broker("localhost:not-a-port") is False
