"""The gate's outputs are the `schemas.records` models, written as the bytes the worker sends.

The gate builds them with `model_construct` (no validation on the hot path); these tests show
the validated record is the same record, and pin the bytes of each kind of output.
"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import orjson
import pytest
from replygate_dev.demo import SAMPLES_DIR

from schemas.records import (
    VERSION_FIELD,
    DeadLetter,
    MaskEntry,
    OutputRecord,
    Written,
    record_json,
)
from streams.cli.check_session import CheckSession
from streams.core.pipeline import Gate
from streams.settings import Settings
from tests.support.gates import disk_gate
from tests.support.samples import GITHUB_PAT, NOW, encode, im_text, raw_reply, tool_call

VERSION = "sha256:" + "ab" * 32


def test_every_output_of_the_samples_is_its_validated_record() -> None:
    gate = disk_gate(
        Settings(workspaces_root=SAMPLES_DIR / "workspaces", media_root=SAMPLES_DIR / "media")
    )
    kinds = set()
    for number, sample in enumerate((SAMPLES_DIR / "demo.jsonl").read_bytes().splitlines(), 1):
        record = orjson.loads(sample).get("record")
        line = orjson.dumps(record) if record is not None else sample
        output = CheckSession(gate).line(line, number, NOW).output
        if output is None:
            continue
        assert isinstance(output, get_args(OutputRecord))
        sent = record_json(output)
        validated = type(output).model_validate_json(sent)
        assert validated == output
        # every field in the model's order, what the worker sends; without a policy bundle
        # the outcome names no version, and the bytes are what they always were
        assert validated.policy_version is None
        assert orjson.dumps(validated.model_dump(exclude={"policy_version"})) == sent
        versioned = output.model_copy(update={"policy_version": VERSION})
        written = record_json(versioned)
        assert written == sent[:-1] + b',"policy_version":"' + VERSION.encode() + b'"}'
        assert type(output).model_validate_json(written) == versioned
        assert CheckSession(gate).line(line, number, NOW).line()["output"] == orjson.loads(sent)
        kinds.add(type(output).__name__)
    assert kinds == {"Delivery", "CorrectionRequest", "ToolResult", "DeadLetter"}


@pytest.mark.parametrize("version", ["sha256:AB", "sha256:" + "a" * 63, "v2", ""])
def test_a_policy_version_is_a_digest_or_settings(version: str) -> None:
    letter = DeadLetter.model_construct(
        source_topic="t", partition=0, offset=0, reason="not_json", detail="d", record="r"
    )
    with pytest.raises(ValueError):
        DeadLetter.model_validate_json(
            record_json(letter)[:-1] + b',"policy_version":"%b"}' % version.encode()
        )


@pytest.fixture
def bare(tmp_path: Path) -> Gate:
    return disk_gate(Settings(workspaces_root=tmp_path, media_root=tmp_path))


def test_a_delivery_is_written_as_before(bare: Gate) -> None:
    segments = [
        {"type": "text", "data": {"text": f"key {GITHUB_PAT}"}},
        {"type": "image", "data": {"media": {"kind": "path", "value": "nope.png"}}},
    ]
    output = (
        CheckSession(bare)
        .line(encode(raw_reply(output={"text": im_text(segments)})), 1, NOW)
        .output
    )
    assert record_json(output) == (
        b'{"delivery_id":"t-42","turn_id":"t-42","conversation_id":"c-7","platform":"im",'
        b'"contract":"im.segments.v1","kind":"reply","message":{"segments":[{"type":"text",'
        b'"data":{"text":"key [REDACTED:github-pat]"}},{"type":"text","data":{"text":'
        b'"[attachment unavailable]"}}]},"preview":"key [REDACTED:github-pat][attachment '
        b'unavailable]","corrected":false,"masked":[{"rule":"github-pat","path":'
        b'"segments[0].data.text","count":1}],"notices":[{"path":"segments[1]","reason":'
        b'"attachment_unreadable"}],"delivered_at":"2026-11-30T12:00:01.000Z"}'
    )


def test_a_dead_letter_and_a_tool_result_are_written_as_before(bare: Gate) -> None:
    letter = CheckSession(bare).line(b'{"turn_id": "t-9"', 3, NOW).output
    assert record_json(letter) == (
        b'{"source_topic":"replies.raw","partition":0,"offset":2,"reason":"not_json","detail":'
        b'"$: not_json: not one UTF-8 JSON value: unexpected end of data: line 1 column 18 '
        b'(char 17)","record":"{\\"turn_id\\": \\"t-9\\""}'
    )
    result = CheckSession(bare).line(encode(tool_call()), 4, NOW).output
    assert record_json(result) == (
        b'{"call_id":"call-1","task_id":"task-9","tool":"show_rich_output_kandev","status":"ok",'
        b'"text":"Rich output accepted.","metadata":{"normalized":{"generic":{"input":{"version":'
        b'1,"title":"Build health","blocks":[{"type":"metrics","items":[{"label":"Tests",'
        b'"value":"1,204 passed"}]}]},"output":null}}}}'
    )


def test_a_correction_request_is_written_as_before(bare: Gate) -> None:
    """The instructions are the contract's own text (tests/schemas pin it); the rest here."""
    request = CheckSession(bare).line(encode(raw_reply(output={"text": "prose"})), 1, NOW).output
    sent = orjson.loads(record_json(request))
    assert list(sent) == [
        "turn_id",
        "conversation_id",
        "platform",
        "contract",
        "invalid_output",
        "errors",
        "instructions",
        "deadline",
    ]
    del sent["instructions"]
    assert orjson.dumps(sent) == (
        b'{"turn_id":"t-42","conversation_id":"c-7","platform":"im","contract":"im.segments.v1",'
        b'"invalid_output":"prose","errors":[{"path":"$","code":"not_json","message":"must be '
        b"exactly one JSON object and nothing else: no Markdown fence, no text around it, no "
        b"second value (unexpected character, expected a JSON value: line 1 column 1 (char 0))"
        b'"}],"deadline":"2026-11-30T12:00:31.000Z"}'
    )


def test_written_records_are_ones_the_short_construct_can_build() -> None:
    """`Written.model_construct` skips defaults, validators and private attributes: none exist,
    but for the outcome records' `policy_version` (None when not given)."""
    models = Written.__subclasses__()
    assert set(get_args(OutputRecord)) <= set(models)
    for model in models:
        optional = {n for n, f in model.model_fields.items() if not f.is_required()}
        assert optional == ({VERSION_FIELD} if model in get_args(OutputRecord) else set()), model
        assert not model.__private_attributes__ and model.__pydantic_post_init__ is None, model
        assert not model.__pydantic_decorators__.field_validators, model
    with pytest.raises(KeyError):
        DeadLetter.model_construct(source_topic="replies.raw")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        MaskEntry.model_construct(rule="r", path="$", count=1, extra=True)
