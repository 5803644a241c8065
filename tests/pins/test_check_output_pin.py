"""`replygate check` output, byte for byte, over the demo samples and the bench mix.

A refactor must not change a single output byte: each output line's sha256 is pinned in
`check_output.sha256` (clock readings normalised, since `check` stamps the wall clock). After an
intended change, re-pin with `PIN_CHECK_OUTPUT=1 pytest tests/pins` and say so in the commit.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import orjson
import pytest
from replygate_dev.demo import DEMO_SCHEMA_CONTRACT, SAMPLES_DIR, read_samples

from bench.workload import Workload, write_workspace
from streams.cli.main import main

PIN = Path(__file__).with_name("check_output.sha256")
BENCH_RECORDS = 400
# `delivered_at` and `deadline` are the wall clock's (or counted from it).
_CLOCK = re.compile(rb'"(delivered_at|deadline)":"[^"]*"')


def _fixed_invalid_replies() -> list[dict[str, object]]:
    """One reply per contract that is corrected, so every contract's instructions are pinned."""
    base = {
        "conversation_id": "c-pin",
        "platform": "im",
        "attempt": 0,
        "provider": "pin",
        "produced_at": "2026-11-30T12:00:00Z",
    }
    return [
        {**base, "turn_id": "pin-html", "contract": "assistant.html.v1", "output": {"text": "hi"}},
        {**base, "turn_id": "pin-im", "contract": "im.segments.v1", "output": {"text": "hi"}},
        {**base, "turn_id": "pin-plain", "contract": "text.plain.v1", "output": {"text": "a\x07"}},
        {
            **base,
            "turn_id": "pin-ticket",
            "contract": DEMO_SCHEMA_CONTRACT["name"],
            "output": {"text": "{}"},
        },
    ]


def input_lines() -> list[bytes]:
    """The demo's records in file order, four corrected replies, then the bench mix."""
    lines = [part.value for sample in read_samples() for part in sample.parts]
    lines += [orjson.dumps(record) for record in _fixed_invalid_replies()]
    lines += [record.value for record in Workload(seed=7).records(BENCH_RECORDS)]
    return lines


def check_output(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> list[bytes]:
    workspaces = tmp_path / "workspaces"
    shutil.copytree(SAMPLES_DIR / "workspaces", workspaces)
    write_workspace(workspaces)
    config = tmp_path / "replygate.toml"
    config.write_text(
        "[[schema_contracts]]\n"
        f"name = {DEMO_SCHEMA_CONTRACT['name']!r}\n"
        f"schema = {DEMO_SCHEMA_CONTRACT['schema']!r}\n"
        f"instructions = {DEMO_SCHEMA_CONTRACT['instructions']!r}\n",
        encoding="utf-8",
    )
    records = tmp_path / "records.jsonl"
    records.write_bytes(b"\n".join(input_lines()) + b"\n")
    status = main(
        [
            "check",
            str(records),
            "--config",
            str(config),
            "--workspaces",
            str(workspaces),
            "--media-root",
            str(SAMPLES_DIR / "media"),
        ]
    )
    assert status == 0
    out = capsysbinary.readouterr().out
    return [_CLOCK.sub(rb'"\1":"<clock>"', line) for line in out.splitlines()]


def pin_lines(lines: list[bytes]) -> str:
    """One line per output line: its id (for a readable diff) and its sha256."""
    return "".join(
        f"{orjson.loads(line)['id']} {hashlib.sha256(line).hexdigest()}\n" for line in lines
    )


def test_check_output_bytes_are_pinned(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    lines = check_output(tmp_path, capsysbinary)
    assert len(lines) == len(input_lines())
    text = pin_lines(lines)
    if os.environ.get("PIN_CHECK_OUTPUT") == "1":
        PIN.write_text(text, encoding="utf-8")
    assert text == PIN.read_text(encoding="utf-8")
