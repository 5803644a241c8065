"""`replygate check` end to end, as a subprocess on JSON Lines (docs/cli.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.support.samples import SALES_CSV, csv_chart_arguments, encode, raw_reply, tool_call

REPO = Path(__file__).resolve().parents[2]


def replygate(
    *args: str, stdin: bytes | None = None, cwd: Path = REPO
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "workspaces"
    (ws / "ws-3" / "reports").mkdir(parents=True)
    (ws / "ws-3" / "reports" / "sales.csv").write_text(SALES_CSV)
    media = tmp_path / "media"
    media.mkdir()
    (media / "cat.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    return ws, media


def mixed_lines() -> list[bytes]:
    image = {"type": "image", "data": {"media": {"kind": "path", "value": "cat.png"}}}
    return [
        encode(raw_reply()),
        encode(
            raw_reply(turn_id="t-2", output={"text": orjson.dumps({"segments": [image]}).decode()})
        ),
        encode(raw_reply(turn_id="t-3", output={"text": '{"segments": []}'})),
        encode(raw_reply(turn_id="t-4", output={"text": "prose"})),
        encode(raw_reply(turn_id="t-5", attempt=1, output={"text": "prose"})),
        encode(tool_call(csv_chart_arguments())),
        encode(tool_call(csv_chart_arguments("/etc/passwd.csv"), call_id="call-2")),
        b"this is not json",
        encode({"neither": True}),
    ]


EXPECTED = [
    ("t-42", "accepted", "deliver"),
    ("t-2", "accepted", "deliver"),
    ("t-3", "no_reply", "none"),
    ("t-4", "rejected", "request_correction"),
    ("t-5", "rejected", "failure_notice"),
    ("call-1", "accepted", "tool_result"),
    ("call-2", "rejected", "tool_error"),
    (8, "dead_letter", "dead_letter"),
    (9, "dead_letter", "dead_letter"),
]


def test_check_writes_one_line_per_input_line(tmp_path: Path, roots: tuple[Path, Path]) -> None:
    ws, media = roots
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"\n".join(mixed_lines()) + b"\n")
    done = replygate("check", str(path), "--workspaces", str(ws), "--media-root", str(media))
    assert done.returncode == 0, done.stderr.decode()
    lines = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [(x["id"], x["verdict"], x["action"]) for x in lines] == EXPECTED
    assert all(set(x) == {"id", "verdict", "action", "errors", "output"} for x in lines)
    assert lines[1]["output"]["notices"] == []  # the PNG under the media root is fine
    assert lines[2]["output"] is None
    assert done.stderr == b""


def test_check_reads_stdin(roots: tuple[Path, Path]) -> None:
    ws, _ = roots
    for args in (["check"], ["check", "-"]):
        done = replygate(*args, "--workspaces", str(ws), stdin=encode(raw_reply()) + b"\n")
        assert done.returncode == 0
        assert orjson.loads(done.stdout)["verdict"] == "accepted"


def test_check_reads_a_config_file(tmp_path: Path) -> None:
    config = tmp_path / "gate.toml"
    config.write_text('failure_notice_text = "Host says no."\n')
    record = encode(raw_reply(attempt=1, output={"text": "prose"}))
    done = replygate("check", "--config", str(config), stdin=record)
    line = orjson.loads(done.stdout)
    assert line["output"]["message"]["segments"][0]["data"]["text"] == "Host says no."


def test_unreadable_input_file_exits_2(tmp_path: Path) -> None:
    done = replygate("check", str(tmp_path / "missing.jsonl"))
    assert done.returncode == 2
    assert b"missing.jsonl" in done.stderr and b"Traceback" not in done.stderr


def test_usage_error_exits_2() -> None:
    done = replygate("check", "--no-such-option")
    assert done.returncode == 2


def test_missing_config_file_is_a_usage_error(tmp_path: Path) -> None:
    done = replygate("check", "--config", str(tmp_path / "nope.toml"), stdin=b"")
    assert done.returncode == 2 and b"nope.toml" in done.stderr


def test_malformed_lines_never_crash(tmp_path: Path) -> None:
    hostile = [b"", b"[]", b"null", b"\xff\xfe", b"{" * 5000, b'{"turn_id": null}', b"\x00"]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(hostile) + b"\n")
    done = replygate("check", str(path))
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    lines = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == len(hostile)
    assert {x["verdict"] for x in lines} == {"dead_letter"}
    assert [x["id"] for x in lines] == list(range(1, len(hostile) + 1))


def test_schema_command_prints_each_contract_schema() -> None:
    for name in ("im.segments.v1", "assistant.html.v1", "kandev.rich_output.v1"):
        done = replygate("schema", name)
        assert done.returncode == 0
        schema = orjson.loads(done.stdout)
        assert schema["$schema"].startswith("https://json-schema.org/")
    assert replygate("schema", "nope.v1").returncode == 2


@pytest.mark.parametrize(
    "command", [["check", "-"], ["topics"], ["demo"], ["schema", "x.v1"], ["worker"]]
)
def test_bad_settings_are_one_line_for_every_command(tmp_path: Path, command: list[str]) -> None:
    missing = replygate(*command, "--config", str(tmp_path / "nope.toml"), stdin=b"")
    assert missing.returncode == 2 and b"Traceback" not in missing.stderr
    assert "settings: config file" in missing.stderr.decode()
    bad = tmp_path / "bad.toml"
    bad.write_text('partitions = "many"\n')
    invalid = replygate(*command, "--config", str(bad), stdin=b"")
    assert invalid.returncode == 2 and b"Traceback" not in invalid.stderr
    (line,) = invalid.stderr.decode().splitlines()
    assert line.endswith(
        "settings: partitions: Input should be a valid integer, unable to parse string as an "
        "integer"
    )
