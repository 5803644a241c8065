"""Streamed final replies (docs/contracts.md, Streamed final replies): check, turn, batch, state."""

from __future__ import annotations

import itertools
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.cli.check_session import CheckSession
from streams.core.batch import _BatchView
from streams.core.chunks import MAX_STREAM_CHUNKS, ChunkBuffer, add_chunk, chunk_cost
from streams.core.pipeline import Gate
from streams.core.state import TurnState
from streams.settings import Settings
from tests.cli.test_cli_check import replygate
from tests.core.test_batch import T0, Harness, kinds
from tests.support.gates import disk_gate
from tests.support.samples import GITHUB_PAT, NOW, encode, im_text, raw_reply

REPLY_TEXT = raw_reply()["output"]["text"]


def chunk(seq: int, text: str, turn_id: str = "t-42", attempt: int = 0) -> dict[str, Any]:
    return {
        "turn_id": turn_id,
        "conversation_id": "c-7",
        "attempt": attempt,
        "chunk": {"seq": seq, "text": text},
        "produced_at": "2026-11-30T12:00:00Z",
    }


def final(count: int, **changes: Any) -> dict[str, Any]:
    """The final record of a streamed reply: `output.chunks` instead of `output.text`."""
    return raw_reply(output={"chunks": count}, **changes)


def pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def lines(judge: Gate | CheckSession, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`check`'s lines for the records; a gate gets a session of its own for them."""
    session = judge if isinstance(judge, CheckSession) else CheckSession(judge)
    return [session.line(encode(r), n, NOW).line() for n, r in enumerate(records, start=1)]


def small_gate(tmp_path: Path) -> Gate:
    return disk_gate(Settings(workspaces_root=tmp_path, media_root=tmp_path, max_record_bytes=1024))


# ---- the gate, as `replygate check` answers ---------------------------------------------------


def test_check_buffers_chunk_lines_and_assembles_the_final_one(gate: Gate) -> None:
    parts = pieces(REPLY_TEXT, [7, 30])
    out = lines(gate, [chunk(2, parts[2]), chunk(0, parts[0]), chunk(1, parts[1]), final(3)])
    for line in out[:3]:
        assert line == {
            "id": "t-42",
            "verdict": "accepted",
            "action": "buffer",
            "errors": [],
            "output": None,
        }
    unsplit = lines(gate, [raw_reply()])[0]
    assert out[3]["action"] == "deliver"
    assert {**out[3]["output"], "delivered_at": 0} == {**unsplit["output"], "delivered_at": 0}


def test_a_repeated_seq_is_dropped_and_the_first_stays(gate: Gate) -> None:
    parts = pieces(REPLY_TEXT, [10])
    out = lines(gate, [chunk(0, parts[0]), chunk(0, "garbage"), chunk(1, parts[1]), final(2)])
    assert out[1]["action"] == "buffer" and out[3]["action"] == "deliver"


def test_missing_chunks_are_an_incomplete_stream_and_go_to_correction(gate: Gate) -> None:
    parts = pieces(REPLY_TEXT, [10, 20])
    out = lines(gate, [chunk(0, parts[0]), chunk(2, parts[2]), final(3)])[-1]
    assert (out["verdict"], out["action"]) == ("rejected", "request_correction")
    assert [e["code"] for e in out["errors"]] == ["incomplete_stream"]
    assert out["errors"][0]["path"] == "output.chunks"
    # the correction request shows what came, in order
    assert out["output"]["invalid_output"] == parts[0] + parts[2]


def test_chunks_of_another_turn_or_attempt_do_not_count(gate: Gate) -> None:
    out = lines(
        gate, [chunk(0, REPLY_TEXT, turn_id="t-9"), chunk(0, REPLY_TEXT, attempt=1), final(1)]
    )[-1]
    assert [e["code"] for e in out["errors"]] == ["incomplete_stream"]


def test_a_final_line_uses_its_chunks_up(gate: Gate) -> None:
    out = lines(gate, [chunk(0, REPLY_TEXT), final(1), final(1)])
    assert out[1]["action"] == "deliver"
    assert [e["code"] for e in out[2]["errors"]] == ["incomplete_stream"]


def test_chunks_past_the_bound_are_a_stream_too_large(tmp_path: Path) -> None:
    gate = small_gate(tmp_path)
    out = lines(gate, [chunk(0, "a" * 600), chunk(1, "b" * 600), final(2)])[-1]
    assert (out["verdict"], out["action"]) == ("rejected", "request_correction")
    assert [e["code"] for e in out["errors"]] == ["stream_too_large"]
    # within the bound the same chunks assemble (and are judged by the contract)
    out = lines(
        gate, [chunk(0, "a" * 500, "t-1"), chunk(1, "b" * 500, "t-1"), final(2, turn_id="t-1")]
    )[-1]
    assert [e["code"] for e in out["errors"]] == ["not_json"]


def test_attempt_one_may_stream_too_and_is_a_failure_notice_when_incomplete(gate: Gate) -> None:
    out = lines(gate, [chunk(0, REPLY_TEXT, attempt=1), final(1, attempt=1)])[-1]
    assert (out["action"], out["output"]["corrected"]) == ("deliver", True)
    out = lines(gate, [final(2, attempt=1)])[-1]
    assert (out["verdict"], out["action"]) == ("rejected", "failure_notice")


def test_text_next_to_chunks_is_ambiguous(gate: Gate) -> None:
    out = lines(gate, [chunk(0, REPLY_TEXT), raw_reply(output={"text": REPLY_TEXT, "chunks": 1})])
    assert [e["code"] for e in out[-1]["errors"]] == ["ambiguous_reply"]


@pytest.mark.parametrize(
    "record",
    [
        {**chunk(0, "x"), "platform": "im"},
        {**chunk(0, "x"), "chunk": {"seq": 0, "text": "x", "extra": 1}},
        {**chunk(0, "x"), "chunk": {"seq": -1, "text": "x"}},
        {**chunk(0, "x"), "chunk": {"seq": "0", "text": "x"}},
        {**chunk(0, "x"), "attempt": 2},
        {k: v for k, v in chunk(0, "x").items() if k != "produced_at"},
        raw_reply(kind="progress", seq=0, output={"text": "working", "chunks": 1}),
        final(-1),
    ],
)
def test_a_chunk_record_is_closed_and_strict(gate: Gate, record: dict[str, Any]) -> None:
    out = lines(gate, [record])[0]
    assert (out["verdict"], out["output"]["reason"]) == ("dead_letter", "invalid_envelope")


def test_a_chunk_is_never_shown_before_validation_and_errors_hold_no_secret(gate: Gate) -> None:
    out = lines(gate, [chunk(0, f"{GITHUB_PAT} "), final(2)])
    assert out[0]["output"] is None
    assert GITHUB_PAT not in orjson.dumps(out).decode()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.sampled_from(
        [
            REPLY_TEXT,
            im_text([{"type": "text", "data": {"text": "é ✓ ok"}}]),
            "prose",
            f'{{"segments": [{{"type": "text", "data": {{"text": "{GITHUB_PAT}"}}}}]}}',
        ]
    ),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=8),
    shuffle=st.randoms(use_true_random=False),
)
def test_any_split_assembles_to_the_unsplit_decision(
    gate: Gate, text: str, cuts: list[int], shuffle: Any
) -> None:
    parts = pieces(text, [c for c in cuts if c <= len(text)])
    records = [chunk(seq, part) for seq, part in enumerate(parts)]
    shuffle.shuffle(records)  # the seq orders them, not the arrival
    split = lines(gate, [*records, final(len(parts))])[-1]
    whole = lines(gate, [raw_reply(output={"text": text})])[0]
    for line in (split, whole):
        if line["output"] is not None:
            line["output"].pop("delivered_at", None)
            line["output"].pop("deadline", None)
    assert split == whole


def test_check_on_the_command_line(tmp_path: Path) -> None:
    parts = pieces(REPLY_TEXT, [12])
    stdin = b"".join(encode(r) + b"\n" for r in [chunk(0, parts[0]), chunk(1, parts[1]), final(2)])
    done = replygate("check", "-", stdin=stdin)
    assert done.returncode == 0, done.stderr
    out = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [(o["verdict"], o["action"]) for o in out] == [
        ("accepted", "buffer"),
        ("accepted", "buffer"),
        ("accepted", "deliver"),
    ]


# ---- the buffer --------------------------------------------------------------------------------


def test_the_buffer_is_bounded_by_bytes_and_by_count() -> None:
    from schemas.records import StreamChunk

    held = add_chunk(None, 0, StreamChunk(seq=0, text="a" * 10), 10)
    assert held is not None and (held.size, held.overflow) == (10, False)
    over = add_chunk(held, 0, StreamChunk(seq=1, text="b"), 10)
    assert over is not None and over.overflow and 1 not in over.parts
    assert add_chunk(over, 0, StreamChunk(seq=2, text="c"), 10) is None  # nothing changes
    full = ChunkBuffer(0, {i: "" for i in range(MAX_STREAM_CHUNKS)})
    assert (added := add_chunk(full, 0, StreamChunk(seq=MAX_STREAM_CHUNKS, text=""), 10))
    assert added.overflow
    # the bound counts text as stored: escapes take room
    assert chunk_cost('"\x01') == len('\\"\\u0001')


def test_a_buffer_of_another_attempt_is_replaced() -> None:
    from schemas.records import StreamChunk

    held = ChunkBuffer(0, {0: "old"}, 3)
    fresh = add_chunk(held, 1, StreamChunk(seq=0, text="new"), 100)
    assert fresh == ChunkBuffer(1, {0: "new"}, 3)


# ---- the worker: turn state, batches, replays ---------------------------------------------------


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def streamed(h: Harness, records: list[dict[str, Any]], start: int = 1) -> list[Any]:
    return [(h.source("replies_raw", start + i), r) for i, r in enumerate(records)]


def test_the_worker_buffers_in_state_and_delivers_once_assembled(h: Harness) -> None:
    parts = pieces(REPLY_TEXT, [9, 25])
    first = h.run(streamed(h, [chunk(0, parts[0]), chunk(1, parts[1])]))
    assert first.outputs == [] and len(first.writes) == 1
    assert [j.step.outcome for j in first.judged] == ["buffered", "buffered"]
    state = h.state()
    assert state is not None and state.status == "open" and state.stream is not None
    assert dict(state.stream.parts) == {0: parts[0], 1: parts[1]}
    # a crash here loses nothing: the next batch reads the chunks from the store
    done = h.run(streamed(h, [chunk(2, parts[2]), final(3)], start=3))
    assert kinds(done) == ["deliver"]
    whole = CheckSession(h.gate).line(encode(raw_reply()), 1, T0).output
    assert done.outputs[0].output == whole
    state = h.state()
    assert state is not None and state.status == "finished" and state.stream is None


def test_a_repeat_and_a_late_chunk_are_dropped(h: Harness) -> None:
    result = h.run(streamed(h, [chunk(0, REPLY_TEXT), chunk(0, "x"), final(1), chunk(1, "y")]))
    assert [j.step.outcome for j in result.judged] == [
        "buffered",
        "duplicate_dropped",
        "delivered",
        "duplicate_dropped",
    ]
    assert kinds(result) == ["deliver"]


def test_a_replayed_stream_re_sends_the_identical_delivery(h: Harness) -> None:
    parts = pieces(REPLY_TEXT, [5, 40])
    records = streamed(h, [chunk(0, parts[0]), chunk(1, parts[1]), chunk(2, parts[2]), final(3)])
    h.run(records[:2])
    first = h.run(records[2:])
    replay = h.run(records)  # all four again: nothing was committed
    assert [d.output for d in replay.outputs] == [d.output for d in first.outputs]
    assert replay.replayed == 1


def test_the_kept_chunks_go_once_the_group_committed_past_the_final_reply(h: Harness) -> None:
    """The finished value keeps the chunks only while its final reply may be replayed."""
    parts = pieces(REPLY_TEXT, [5, 40])
    records = streamed(h, [chunk(0, parts[0]), chunk(1, parts[1]), chunk(2, parts[2]), final(3)])
    first = h.run(records)  # offsets 1..4, the final reply at 4
    kept = h.state()
    assert kept is not None and kept.before is not None and kept.before.stream is not None
    other = raw_reply(turn_id="t-9")
    h.committed = 4  # the final reply is not committed yet: its replay needs the chunks
    assert [w.key for w in h.run(streamed(h, [other], start=5)).writes] == [b"t-9"]
    replay = h.run(records)
    assert [d.output for d in replay.outputs] == [d.output for d in first.outputs]
    h.committed = 5  # committed past it: never read again, so its chunks go
    later = h.run(streamed(h, [raw_reply(turn_id="t-10")], start=6))
    assert sorted(w.key for w in later.writes) == [b"t-10", b"t-42"]
    state = h.state()
    assert state is not None and state.before is None and state.stream is None
    assert (state.status, state.outcome, state.at) == ("finished", "delivered", kept.at)
    assert state.is_settled and parts[1] not in state.encode().decode()
    # once released, nothing more is written for it
    again = h.run(streamed(h, [raw_reply(turn_id="t-11")], start=7))
    assert [w.key for w in again.writes] == [b"t-11"]


def test_kept_chunks_are_found_again_after_a_rebalance(h: Harness) -> None:
    h.run(streamed(h, [chunk(0, REPLY_TEXT), final(1)]))
    h.index.rebuild((0, key, value) for key, value in h.stored.items())
    replies = h.settings.topic("replies_raw")
    assert h.index.releasable(0, lambda t, _p: 3 if t == replies else None) == [b"t-42"]
    assert h.index.releasable(0, lambda _t, _p: 2) == []


def test_a_correction_request_survives_a_replay_past_attempt_one_chunks(h: Harness) -> None:
    records = streamed(h, [chunk(0, "prose"), final(1), chunk(0, REPLY_TEXT, attempt=1)])
    first = h.run(records)
    assert kinds(first) == ["request_correction"]
    state = h.state()
    assert state is not None and state.waiting is not None and state.stream is not None
    assert state.stream.attempt == 1
    replay = h.run(records)
    assert [d.output for d in replay.outputs] == [d.output for d in first.outputs]
    done = h.run(streamed(h, [final(1, attempt=1)], start=9))
    output = done.outputs[0].output
    assert kinds(done) == ["deliver"] and output is not None and output.corrected is True


def test_incomplete_and_oversized_streams_go_to_correction(tmp_path: Path) -> None:
    h = Harness(tmp_path, max_record_bytes=1024)
    result = h.run(
        streamed(
            h,
            [
                chunk(0, "a" * 600, "t-1"),
                chunk(1, "b" * 600, "t-1"),
                final(2, turn_id="t-1"),
                chunk(1, REPLY_TEXT, "t-2"),
                final(2, turn_id="t-2"),
            ],
        )
    )
    assert kinds(result) == ["request_correction", "request_correction"]
    assert [[e.code for e in d.errors] for d in result.outputs] == [
        ["stream_too_large"],
        ["incomplete_stream"],
    ]


def test_chunks_go_when_the_turn_is_cancelled(h: Harness) -> None:
    cancel = {"turn_id": "t-42", "conversation_id": "c-7", "action": "cancel"}
    h.run(streamed(h, [chunk(0, "x" * 50)]))
    h.run([(h.source("turns_control", 5), cancel)])
    state = h.state()
    assert state is not None and state.outcome == "cancelled"
    assert "x" * 50 not in state.encode().decode()
    late = h.run(streamed(h, [chunk(1, "y"), final(2)], start=6))
    assert late.outputs == [] and late.writes == []


def test_chunks_go_when_the_deadline_finishes_the_turn(h: Harness) -> None:
    h.run(streamed(h, [raw_reply(output={"text": "prose"}), chunk(0, "z" * 40, attempt=1)]))
    late = T0 + timedelta(seconds=40)
    from streams.core.decision import Source

    event = (Source(h.settings.deadline_topic(), 0, 7, late), b'{"turn_id": "t-42"}')
    noticed = h.run([event], wall=late)
    assert [d.action for d in noticed.outputs] == ["failure_notice"]
    state = h.state()
    assert state is not None and "z" * 40 not in state.encode().decode()


def test_an_open_stream_expires_with_the_horizon(h: Harness) -> None:
    h.run(streamed(h, [chunk(0, "x")]))
    state = h.state()
    assert state is not None and state.status == "open"
    later = T0 + h.settings.state_keep + timedelta(seconds=1)
    h.run([(h.source("replies_raw", 5, later), raw_reply(turn_id="t-other"))])
    assert h.state() is None


def test_the_state_round_trips_with_its_stream() -> None:
    state = TurnState(
        "open",
        "replies.raw:0:1",
        "2026-11-30T12:00:00.000Z",
        stream=ChunkBuffer(0, {0: "a", 3: "b"}, 2, True),
    )
    assert TurnState.decode(state.encode()) == state
    plain = TurnState("finished", "s", "2026-11-30T12:00:00.000Z", outcome="delivered")
    assert "stream" not in orjson.loads(plain.encode())


def test_a_final_reply_not_made_of_chunks_drops_them(h: Harness) -> None:
    result = h.run(streamed(h, [chunk(0, "x" * 50), raw_reply()]))
    assert kinds(result) == ["deliver"]
    state = h.state()
    assert state is not None and state.outcome == "delivered"
    assert "x" * 50 not in state.encode().decode()


def test_the_bound_leaves_room_for_the_state_in_one_changelog_record() -> None:
    from streams.core.chunks import chunk_limit

    assert chunk_limit(Settings()) == Settings().max_record_bytes
    big = Settings(max_record_bytes=16 * 2**20, max_output_bytes=8 * 2**20)
    assert chunk_limit(big) == big.max_output_bytes // 3


def test_check_keeps_a_bounded_number_of_streams(gate: Gate) -> None:
    from streams.cli.check_session import CHECK_STREAMS_MAX

    session = CheckSession(gate)
    records = [chunk(0, REPLY_TEXT, turn_id=f"t-{i}") for i in range(CHECK_STREAMS_MAX + 1)]
    lines(session, records)
    assert len(session.streams) == CHECK_STREAMS_MAX
    last_id = f"t-{CHECK_STREAMS_MAX}"
    first, last = lines(session, [final(1, turn_id="t-0"), final(1, turn_id=last_id)])
    assert [e["code"] for e in first["errors"]] == ["incomplete_stream"]
    assert last["action"] == "deliver"


def test_the_decision_says_whether_the_reply_was_assembled_from_held_chunks(gate: Gate) -> None:
    """The worker keeps a finished turn's chunks by what the decision says (`assembled`), not by
    what the gate asked its read-only TurnView."""
    session = CheckSession(gate)
    session.line(encode(chunk(0, REPLY_TEXT)), 1, NOW)
    held = session.line(encode(final(1)), 2, NOW)
    assert held.action == "deliver" and held.assembled
    missing = session.line(encode(final(1, turn_id="t-9")), 3, NOW)
    assert missing.action == "request_correction" and missing.assembled  # incomplete, still
    assert not session.line(encode(raw_reply()), 4, NOW).assembled
    assert not session.line(encode(chunk(0, "x")), 5, NOW).assembled


def test_the_batch_turn_view_is_read_only(h: Harness) -> None:
    """Reading what a reply's turn holds changes nothing: the gate's TurnView is a read."""
    h.run(streamed(h, [chunk(0, REPLY_TEXT)]))
    view = _BatchView(h.batch, h.source("replies_raw", 2))
    names = [name for name in dir(view) if not name.startswith("__")]
    before = {name: getattr(view, name) for name in names}
    assert view.held_chunks("t-42", 0) is not None
    assert view.kept_context("t-42") is None and view.asked_at("t-42") == h.batch.wall
    assert {name: getattr(view, name) for name in names} == before
    with pytest.raises(AttributeError):
        view.assembled = True  # type: ignore[attr-defined]
