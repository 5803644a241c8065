"""Hostile inputs through the gate's entry point (`CheckSession.line`), with bounds.

Every case in tests/hostile/cases.py has its expected verdict and action (docs/cli.md's table),
error codes or dead-letter reason where they mean something, and bounds on the time taken and
on tracemalloc's peak. The fuzz tests feed arbitrary bytes, arbitrary JSON and mutated valid
records, and check that only the spec's verdict/action pairs come out, each with its output
record's shape, and that no secret from a generated set survives in any output record.
"""

from __future__ import annotations

import string
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from schemas.records import CorrectionRequest, DeadLetter, Delivery, ToolResult, record_json
from streams.cli.check_session import CheckSession
from streams.core.decision import Decision
from streams.core.pipeline import Gate
from streams.settings import Settings
from tests.hostile import (
    Case,
    MiB,
    csv_arguments,
    html_reply,
    im_reply,
    im_text,
    reply,
    text_segment,
    tool_call,
)
from tests.hostile import make_files as _make_files
from tests.hostile.cases import all_cases
from tests.support.gates import disk_gate

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

# docs/cli.md: verdict -> action -> the output record's model and discriminating field.
SPEC_TABLE: dict[tuple[str, str], tuple[type[Any] | None, dict[str, str]]] = {
    ("accepted", "deliver"): (Delivery, {"kind": "reply"}),
    ("accepted", "tool_result"): (ToolResult, {"status": "ok"}),
    ("rejected", "request_correction"): (CorrectionRequest, {}),
    ("rejected", "failure_notice"): (Delivery, {"kind": "failure_notice"}),
    ("rejected", "tool_error"): (ToolResult, {"status": "error"}),
    ("no_reply", "none"): (None, {}),
    ("dead_letter", "dead_letter"): (DeadLetter, {}),
}


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _make_files(tmp_path_factory.mktemp("hostile"))


_GATES: dict[tuple[Any, ...], Gate] = {}


def gate_for(roots: tuple[Path, Path], **overrides: Any) -> Gate:
    """One gate per distinct settings (building the masker is the expensive part)."""
    key = (roots, *sorted(overrides.items()))
    gate = _GATES.get(key)
    if gate is None:
        workspaces, media = roots
        gate = _GATES[key] = disk_gate(
            Settings(workspaces_root=workspaces, media_root=media, **overrides)
        )
    return gate


def assert_spec_output(decision: Decision) -> None:
    """The verdict/action pair is one of docs/cli.md's, with its record, and the line serialises."""
    pair = (decision.verdict, decision.action)
    assert pair in SPEC_TABLE, pair
    model, fields = SPEC_TABLE[pair]
    if model is None:
        assert decision.output is None
    else:
        assert decision.output is not None
        # built with model_construct: validating what it sends gives back the same record
        assert model.model_validate_json(record_json(decision.output)) == decision.output
        wire = decision.line()["output"]
        for key, value in fields.items():
            assert wire[key] == value
    orjson.dumps(decision.line())


def _run(gate: Gate, raw: bytes) -> tuple[Decision, int]:
    tracemalloc.start()
    try:
        decision = CheckSession(gate).line(raw, 1, NOW)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return decision, peak


def _params() -> list[Any]:
    """Each case bounded in time by its own timeout (a hang fails it), never by a stopwatch."""
    return [
        pytest.param(
            c,
            id=c.name,
            marks=[pytest.mark.timeout(c.max_seconds)]
            + ([pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []),
        )
        for c in all_cases()
    ]


@pytest.mark.parametrize("case", _params())
def test_hostile_case(case: Case, roots: tuple[Path, Path]) -> None:
    gate = gate_for(roots, **case.settings)
    raw = case.build()
    decision, peak = _run(gate, raw)
    codes = [e.code for e in decision.errors]
    assert (decision.verdict, decision.action) == (case.verdict, case.action), codes[:5]
    assert set(case.codes) <= set(codes), codes[:5]
    letter = decision.output if isinstance(decision.output, DeadLetter) else None
    assert (letter.reason if letter else None) == case.dead_reason
    assert tuple(n.reason for n in decision.notices) == case.notices
    assert_spec_output(decision)
    if case.check is not None:
        assert decision.output is not None
        assert case.check(decision.line()["output"]), f"{case.name}: the output check failed"
    assert peak <= case.max_peak, f"tracemalloc peak {peak / MiB:.1f} MiB"


@pytest.mark.timeout(60)
def test_a_fifo_never_blocks_the_gate(roots: tuple[Path, Path]) -> None:
    """Nobody writes to the FIFOs: a gate that opened one for reading would hang here."""
    gate = gate_for(roots)
    csv = CheckSession(gate).line(orjson.dumps(tool_call(csv_arguments("data/fifo.csv"))), 1, NOW)
    media = CheckSession(gate).line(
        im_reply({"type": "image", "data": {"media": {"kind": "path", "value": "fifo.png"}}}),
        2,
        NOW,
    )
    # a blocked open() would hang: the test's timeout mark fails it
    assert csv.action == "tool_error" and media.notices[0].reason == "attachment_unreadable"


# --- bugs found here and fixed ------------------------------------------------------------------


def test_deep_json_tool_call_arguments_get_a_verdict(roots: tuple[Path, Path]) -> None:
    record = orjson.dumps(reply({"tool_calls": [{"name": "json", "arguments": "@@HOLE@@"}]}))
    raw = record.replace(b'"@@HOLE@@"', b"[" * 300 + b"]" * 300)
    decision = CheckSession(gate_for(roots)).line(raw, 1, NOW)
    assert (decision.verdict, decision.action) == ("rejected", "request_correction")


@pytest.mark.parametrize(
    "raw",
    [
        im_reply({"type": "text", "data": {"text": "x", "canary-7Hq2xY9pLm": 1}}),
        html_reply('<p id="canary-7Hq2xY9pLm z">q</p>'),
    ],
    ids=["unknown_field_path", "html_attribute_message"],
)
def test_check_line_errors_are_masked(raw: bytes, roots: tuple[Path, Path]) -> None:
    gate = disk_gate(Settings(leak_literals=[SecretStr("canary-7Hq2xY9pLm")]))
    decision = CheckSession(gate).line(raw, 1, NOW)
    assert "canary-7Hq2xY9pLm" not in record_json(decision.output).decode()  # holds today
    assert "canary-7Hq2xY9pLm" not in orjson.dumps(decision.line()).decode()


def test_an_input_within_limits_makes_a_sendable_output(roots: tuple[Path, Path]) -> None:
    """Output topics and the producer allow max_output_bytes (streams/broker/topology.py)."""
    settings = Settings()
    raw = orjson.dumps(reply({"text": "word " * 199_000}))
    assert len(raw) < settings.max_record_bytes
    decision = CheckSession(gate_for(roots)).line(raw, 1, NOW)
    assert decision.action == "request_correction"
    assert len(record_json(decision.output)) < settings.max_output_bytes
    spam = orjson.dumps(reply({"text": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8 " * 25_000}))
    assert len(spam) < settings.max_record_bytes
    masked = CheckSession(gate_for(roots)).line(spam, 1, NOW)
    assert len(record_json(masked.output)) < settings.max_output_bytes


# --- fuzz --------------------------------------------------------------------------------------

# Deployment literals (canaries) are masked wherever they occur; built-in formats where they
# stand as a token. None of them may appear in any output record.
CANARIES = ["canary-7Hq2xY9pLm", "zz-canary-Q4w8Rt1uVb"]
BUILTIN_SECRETS = [
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "AKIA" + "QWERTYUIOPASDF12",
    "xoxb-" + "123456789012-123456789012-" + "AbCdEfGhIjKlMnOpQrStUvWx",
    "sk-proj-" + "Zx9" * 16,
    "glpat-" + "Ab3dEf6hIj9lMn2pQr5t",
]
SECRETS = CANARIES + BUILTIN_SECRETS
FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


@pytest.fixture(scope="module")
def fuzz_gate(roots: tuple[Path, Path]) -> Gate:
    workspaces, media = roots
    return disk_gate(
        Settings(
            workspaces_root=workspaces,
            media_root=media,
            leak_literals=[SecretStr(c) for c in CANARIES],
        )
    )


def assert_no_secret(decision: Decision) -> None:
    event(f"{decision.verdict}/{decision.action}")
    if decision.output is None:
        return
    out = record_json(decision.output).decode()
    leaked = [s[:6] for s in SECRETS if s in out]
    assert not leaked, f"secrets starting {leaked} survive in the {decision.action} record"


secret_token = st.sampled_from(SECRETS).map(lambda s: f" {s} ")
words = st.text(
    alphabet=string.ascii_letters + string.digits + " .,:;-_/'\"\n\t{}[]<>&=", max_size=40
)
text_with_secrets = st.lists(st.one_of(words, secret_token), max_size=6).map("".join)
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    text_with_secrets,
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(
            st.one_of(text_with_secrets, st.sampled_from(["turn_id", "call_id"])), inner, max_size=5
        ),
    ),
    max_leaves=30,
)


@FUZZ
@given(prefix=st.binary(max_size=300), secret=secret_token, suffix=st.binary(max_size=300))
def test_fuzz_arbitrary_bytes(fuzz_gate: Gate, prefix: bytes, secret: str, suffix: bytes) -> None:
    decision = CheckSession(fuzz_gate).line(prefix + secret.encode() + suffix, 1, NOW)
    assert_spec_output(decision)
    assert_no_secret(decision)


@FUZZ
@given(value=json_value)
def test_fuzz_arbitrary_json(fuzz_gate: Gate, value: Any) -> None:
    decision = CheckSession(fuzz_gate).line(orjson.dumps(value), 1, NOW)
    assert_spec_output(decision)
    assert_no_secret(decision)


def _valid_records(text: str) -> Iterator[dict[str, Any]]:
    """Valid records of every kind, with `text` (holding secrets) where a model writes."""
    yield reply(
        {"text": im_text([text_segment(text), {"type": "markdown", "data": {"content": text}}])}
    )
    call = {"name": "json", "arguments": {"segments": [text_segment(text)]}}
    yield reply({"tool_calls": [call]})
    yield reply(
        {"text": f"```html\n<p>{text.replace('<', ' ').replace('&', ' ')}</p>\n```"},
        "assistant.html.v1",
    )
    yield reply({"text": im_text([text_segment(text)])}, attempt=1)
    yield tool_call(
        {
            "version": 1,
            "title": "t",
            "description": text[:500],
            "blocks": [{"type": "metrics", "items": [{"label": "l", "value": text[:200] or "v"}]}],
        }
    )
    yield tool_call(csv_arguments("data/crlf.csv"), session_id="s-1")
    yield reply({"text": '{"segments": []}'}, attempt=1)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _mutate(record: dict[str, Any], path: tuple[Any, ...], how: str, new: Any) -> Any:
    if not path:
        return new if how == "replace" else record
    parent: Any = record
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "replace":
        parent[last] = new
    elif how == "duplicate" and isinstance(parent, list):
        parent.insert(last, parent[last])
    elif how == "add_key" and isinstance(parent, dict):
        parent[f"extra {new!s:.20}"] = new
    return record


@FUZZ
@given(
    text=text_with_secrets,
    which=st.integers(min_value=0, max_value=6),
    inner=st.booleans(),
    pick=st.integers(min_value=0, max_value=10_000),
    how=st.sampled_from(["delete", "replace", "duplicate", "add_key", "truncate", "none"]),
    new=json_value,
    cut=st.integers(min_value=0, max_value=10_000),
)
def test_fuzz_mutated_valid_records(
    fuzz_gate: Gate, text: str, which: int, inner: bool, pick: int, how: str, new: Any, cut: int
) -> None:
    record = list(_valid_records(text))[which]
    message = _inner_message(record) if inner and how not in ("truncate", "none") else None
    if message is not None:  # mutate the reply inside output.text, not the envelope
        paths = list(_paths(message))
        mutated = _mutate(message, paths[pick % len(paths)], how, new)
        record["output"]["text"] = orjson.dumps(mutated).decode()
        how = "none_mutated"
    paths = list(_paths(record))
    path = paths[pick % len(paths)]
    if how == "truncate":
        data = orjson.dumps(record)
        raw = data[: cut % (len(data) + 1)]
    elif how in ("none", "none_mutated"):
        raw = orjson.dumps(record)
    else:
        raw = orjson.dumps(_mutate(record, path, how, new))
    decision = CheckSession(fuzz_gate).line(raw, 1, NOW)
    assert_spec_output(decision)
    assert_no_secret(decision)
    if how == "none":  # the unmutated records are all valid
        assert decision.verdict in ("accepted", "no_reply"), [e.code for e in decision.errors]


def _inner_message(record: dict[str, Any]) -> Any:
    text = (record.get("output") or {}).get("text")
    if not isinstance(text, str) or not text.startswith("{"):
        return None
    return orjson.loads(text)
