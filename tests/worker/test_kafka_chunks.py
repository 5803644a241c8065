"""A streamed final reply through the real broker, with the worker SIGKILLed mid-stream.

The first worker dies once the first chunk's state is durable (between two chunks), the next
one once the last chunk's state is durable and before the final record was even produced; the
changelog shows what each held when it died. A clean worker then takes the final record: one
delivery, assembled from every chunk, and the incomplete stream of another turn corrected.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from streams.cli.check_session import CheckSession
from streams.core.decision import iso
from tests.support.crash_harness import Supervisor, wait_killed
from tests.support.gates import disk_gate
from tests.support.kafka import Deployment, collect, publish
from tests.support.samples import GITHUB_PAT, encode, im_text, raw_reply

pytestmark = pytest.mark.kafka

CONV = "c-stream"
TEXT = im_text([{"type": "text", "data": {"text": f"streamed answer, key {GITHUB_PAT}"}}])
PARTS = [TEXT[:9], TEXT[9:30], TEXT[30:]]
KILL = "chunk_state_written@1"
# As the crash harness: a worker that Faust leaves unfed stops itself soon, and is restarted.
ENV = {"REPLYGATE_SESSION_TIMEOUT_SECONDS": "6", "REPLYGATE_STALL_SECONDS": "8"}


def chunk(seq: int, text: str, turn_id: str = "t-stream") -> tuple[str, dict[str, Any]]:
    return CONV, {
        "turn_id": turn_id,
        "conversation_id": CONV,
        "attempt": 0,
        "chunk": {"seq": seq, "text": text},
        "produced_at": "2026-11-30T12:00:00Z",
    }


def final(count: int, turn_id: str = "t-stream") -> tuple[str, dict[str, Any]]:
    return CONV, raw_reply(turn_id=turn_id, conversation_id=CONV, output={"chunks": count})


def held_chunks(d: Deployment) -> dict[int, str]:
    """The chunks the turn's last durable state holds, read from the worker's changelog."""
    changelog = f"{d.app_id}-turns-changelog"
    records = asyncio.run(collect([changelog], lambda r: bool(r), timeout=20, settle=1))
    values = [v for _t, k, v in records if k == b"t-stream" and v]
    assert values, "no state was written for the turn"
    state = orjson.loads(values[-1])
    assert state["status"] == "open", state["status"]
    return {seq: text for seq, text in state["stream"]["parts"]}


def die_holding(d: Deployment, tmp: Path, want: int) -> None:
    """Start armed workers until one dies with `want` chunks durable (a worker's first batch
    may hold only the replayed chunk it already has, which writes nothing; one that stopped
    itself, exit 1, is replaced as Kubernetes would)."""
    for _ in range(4):
        victim: subprocess.Popen[bytes] = d.start_worker(tmp, REPLYGATE_FAILPOINT=KILL, **ENV)
        if not wait_killed(victim, 90):
            assert victim.returncode == 1, f"the worker did not die at {KILL}\n{d.log_tail()}"
            continue
        assert b"failpoint chunk_state_written: SIGKILL" in d.logs[-1].read_bytes()
        if len(held_chunks(d)) == want:
            return
    raise AssertionError(f"no kill with {want} chunks held\n{d.log_tail()}")


def test_a_kill_between_chunks_and_before_the_final_record_delivers_once(
    tmp_path: Path,
) -> None:
    d = Deployment(partitions=1)
    d.create_topics()
    raw = d.topic("replies.raw")
    try:
        asyncio.run(publish(d.settings(), raw, [chunk(0, PARTS[0])]))
        die_holding(d, tmp_path, 1)  # between chunk 0 and chunk 1
        assert held_chunks(d) == {0: PARTS[0]}
        asyncio.run(
            publish(
                d.settings(), raw, [chunk(1, PARTS[1]), chunk(1, "a repeat"), chunk(2, PARTS[2])]
            )
        )
        die_holding(d, tmp_path, 3)  # the last chunk is durable, the final record not sent
        assert held_chunks(d) == dict(enumerate(PARTS))
        d.start_worker(tmp_path, **ENV)
        supervisor = Supervisor(d, tmp_path, ENV)
        supervisor.start()
        asyncio.run(
            publish(d.settings(), raw, [chunk(0, '{"segm', "t-gap"), final(3), final(2, "t-gap")])
        )
        out = [d.topic(t) for t in ("delivery.im", "corrections.requests", "replies.dlq")]

        def done(seen: list[tuple[str, bytes | None, bytes]]) -> bool:
            return len({t for t, _k, _v in seen}) >= 2

        records = asyncio.run(collect(out, done, timeout=90, settle=2))
        supervisor.done.set()
        supervisor.join()
    finally:
        d.stop_all()
    deliveries = [orjson.loads(v) for t, _k, v in records if t == out[0]]
    requests = [orjson.loads(v) for t, _k, v in records if t == out[1]]
    assert [r for t, _k, r in records if t == out[2]] == []
    assert [x["delivery_id"] for x in deliveries] == ["t-stream"], d.log_tail()
    unsplit = raw_reply(turn_id="t-stream", conversation_id=CONV, output={"text": TEXT})
    gate = disk_gate(d.settings())
    expected = CheckSession(gate).line(encode(unsplit), 1, datetime.now(UTC)).line()["output"]
    assert expected is not None and "[REDACTED:" in orjson.dumps(expected).decode()
    assert {**deliveries[0], "delivered_at": 0} == {**expected, "delivered_at": 0}
    assert all(GITHUB_PAT.encode() not in v for _t, _k, v in records)
    assert [(r["turn_id"], [e["code"] for e in r["errors"]]) for r in requests] == [
        ("t-gap", ["incomplete_stream"])
    ]


def test_the_chunks_kept_for_a_replay_go_once_the_final_reply_is_committed(
    tmp_path: Path,
) -> None:
    """The finished value keeps its chunks only until the group commits past the final reply;
    a later record of the partition then writes it again without them (bounded state)."""
    d = Deployment(partitions=1)
    d.create_topics()
    raw = d.topic("replies.raw")
    changelog = f"{d.app_id}-turns-changelog"

    def finished() -> list[dict[str, Any]]:
        records = asyncio.run(collect([changelog], lambda r: bool(r), timeout=20, settle=1))
        states = [orjson.loads(v) for _t, k, v in records if k == b"t-stream" and v]
        return [s for s in states if s.get("status") == "finished" or "f" in s]

    try:
        d.start_worker(tmp_path)
        asyncio.run(
            publish(d.settings(), raw, [*(chunk(i, p) for i, p in enumerate(PARTS)), final(3)])
        )
        asyncio.run(collect([d.topic("delivery.im")], lambda r: len(r) >= 1, timeout=90))
        values = finished()
        for n in range(15):  # a later record of the partition, once the worker has committed
            if len(values) > 1:
                break
            time.sleep(2)
            nudge = raw_reply(turn_id=f"t-nudge-{n}", conversation_id=CONV)
            asyncio.run(publish(d.settings(), raw, [(CONV, nudge)]))
            values = finished()
    finally:
        d.stop_all()
    assert len(values) == 2, d.log_tail()
    kept, released = values
    assert {seq: text for seq, text in kept["before"]["stream"]["parts"]} == dict(enumerate(PARTS))
    # settled: the outcome and when it finished, nothing the turn saw
    assert released == {"f": "delivered", "t": released["t"]}
    assert iso(datetime.fromtimestamp(released["t"] / 1000, UTC)) == kept["at"]
