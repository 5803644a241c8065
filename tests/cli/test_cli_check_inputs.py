"""`replygate check` on files as people save and pass them: a byte order mark, blank lines, an
empty file, a Latin-1 byte, a huge line, several files, `--now`, streamed chunks; the lines
it says on standard error (`--strict`'s reason, the summary), and shell completion."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.cli.test_cli_commands import replygate
from tests.core.test_chunks import REPLY_TEXT, chunk, final
from tests.support.samples import encode, raw_reply

REPLY = encode(raw_reply())


def outputs(done: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in done.stdout.splitlines()]


def test_a_byte_order_mark_and_blank_lines_are_not_records(tmp_path: Path) -> None:
    path = tmp_path / "saved.jsonl"
    other = encode(raw_reply(turn_id="t-2"))
    path.write_bytes(b"\xef\xbb\xbf" + REPLY + b"\r\n\r\n  \n" + other + b"\n\n")
    done = replygate("check", "--strict", "--summary", str(path))
    assert done.returncode == 0, done.stderr.decode()
    assert [line["verdict"] for line in outputs(done)] == ["accepted", "accepted"]
    assert done.stderr.decode().splitlines()[0] == (
        "replygate check: 5 lines: accepted 2, rejected 0, no_reply 0, dead_letter 0, blank 3"
    )


@pytest.mark.parametrize("content", [b"", b"\n\n", b"\xef\xbb\xbf"])
def test_an_empty_input_says_so_and_fails_strict(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    done = replygate("check", str(path))
    assert done.returncode == 0 and done.stdout == b""
    assert done.stderr.decode().startswith(f"replygate check: {path} holds no records")
    strict = replygate("check", "--strict", str(path))
    assert strict.returncode == 1
    assert strict.stderr.decode() == (
        "replygate check: error: --strict: the input holds no records: nothing was checked\n"
    )


def test_strict_says_why_it_failed_without_summary() -> None:
    bad = encode(raw_reply(output={"text": "prose"}))
    done = replygate("check", "--strict", "-", stdin=REPLY + b"\n" + bad + b"\nnope\n")
    assert done.returncode == 1
    assert done.stderr.decode() == (
        "replygate check: error: --strict: 2 records of 3 not accepted "
        "(dead_letter 1, rejected 1); see each line's errors\n"
    )


def test_one_line_is_one_line() -> None:
    done = replygate("check", "--summary", "-", stdin=REPLY + b"\n")
    assert done.stderr.decode().splitlines()[0].startswith("replygate check: 1 line: accepted 1")


@pytest.mark.parametrize("line_no", [1, 2])
def test_a_latin1_byte_is_named_by_line_and_offset(tmp_path: Path, line_no: int) -> None:
    latin1 = '{"turn_id": "t-9", "note": "café"}'.encode("latin-1")
    lines = [REPLY, latin1] if line_no == 2 else [latin1, REPLY]
    done = replygate("check", "-", stdin=b"\n".join(lines) + b"\n")
    assert done.returncode == 0, done.stderr.decode()
    letter = outputs(done)[line_no - 1]
    assert letter["verdict"] == "dead_letter"
    (error,) = letter["errors"]
    assert error["code"] == "not_json"
    assert f"line {line_no}, byte 31 (0xE9) is not UTF-8" in error["message"]
    assert "surrogates" not in error["message"]


def test_a_huge_line_is_said_with_its_whole_length() -> None:
    huge = b'{"turn_id": "t-1", "pad": "' + b"x" * (3 * 1024 * 1024) + b'"}'
    done = replygate("check", "-", stdin=huge + b"\n" + REPLY + b"\n")
    first, second = outputs(done)
    (error,) = first["errors"]
    assert error["code"] == "record_too_large"
    assert error["message"] == f"{len(huge)} bytes; the limit is 1048576"
    assert second["verdict"] == "accepted"


def test_several_files_in_order_and_a_missing_one_before_any_output(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_bytes(encode(raw_reply(turn_id="t-a")) + b"\n")
    b.write_bytes(encode(raw_reply(turn_id="t-b")) + b"\n")
    done = replygate("check", str(a), str(b))
    assert done.returncode == 0 and [o["id"] for o in outputs(done)] == ["t-a", "t-b"]
    missing = replygate("check", str(a), str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and missing.stdout == b""
    assert missing.stderr.decode().startswith("replygate check: error: cannot read ")


def test_a_record_without_an_id_names_its_file_when_several_are_given(tmp_path: Path) -> None:
    """Line numbers count within each file: with several files the id says which file, for
    every kind of record without an id (not JSON, not UTF-8, no turn_id or call_id, a control
    line whose id is unusable); one file keeps the bare line number."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    control = orjson.dumps({"turn_id": "t" * 201, "action": "cancel"})
    a.write_bytes(b"not json\n" + REPLY + b"\n")
    b.write_bytes(b"\n" + b'{"x": 1}\n' + b"caf\xe9\n" + control + b"\n" + REPLY + b"\n")
    done = replygate("check", str(a), str(b))
    assert done.returncode == 0, done.stderr.decode()
    assert [o["id"] for o in outputs(done)] == [
        f"{a}:1",
        "t-42",
        f"{b}:2",
        f"{b}:3",
        f"{b}:4",
        "t-42",
    ]
    alone = replygate("check", str(b))
    assert [o["id"] for o in outputs(alone)] == [2, 3, 4, "t-42"]


def test_an_unknown_option_is_refused_by_check_with_its_usage() -> None:
    done = replygate("check", "--bogus")
    assert done.returncode == 2
    said = done.stderr.decode()
    assert said.startswith("usage: replygate check ")
    assert said.splitlines()[-1] == "replygate check: error: unrecognized arguments: --bogus"


def test_now_makes_the_output_repeat(tmp_path: Path) -> None:
    records = REPLY + b"\n" + encode(raw_reply(turn_id="t-2", output={"text": "prose"})) + b"\n"
    runs = [replygate("check", "--now", "2026-12-01T12:00:00Z", "-", stdin=records)]
    runs.append(replygate("check", "--now", "2026-12-01T13:00:00+01:00", "-", stdin=records))
    assert runs[0].returncode == 0 and runs[0].stdout == runs[1].stdout
    delivered, request = outputs(runs[0])
    assert delivered["output"]["delivered_at"] == "2026-12-01T12:00:00.000Z"
    assert request["output"]["deadline"].startswith("2026-12-01T12:00:30")
    naive = replygate("check", "--now", "2026-12-01T12:00:00", "-", stdin=records)
    assert naive.returncode == 2 and b"has no offset" in naive.stderr


def test_chunk_lines_are_counted_as_chunks() -> None:
    half = len(REPLY_TEXT) // 2
    records = [chunk(0, REPLY_TEXT[:half]), chunk(1, REPLY_TEXT[half:]), final(2)]
    stdin = b"".join(encode(r) + b"\n" for r in records)
    done = replygate("check", "--summary", "-", stdin=stdin)
    assert done.stderr.decode().splitlines()[0] == (
        "replygate check: 3 lines: accepted 1, rejected 0, no_reply 0, dead_letter 0, chunks 2"
    )


def test_a_config_file_typo_gets_the_closest_setting(tmp_path: Path) -> None:
    config = tmp_path / "gate.toml"
    config.write_text("partitons = 4\n")
    done = replygate("check", "--config", str(config), "-", stdin=REPLY)
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "replygate check: error: settings: partitons names no setting (did you mean partitions?)\n"
    )


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts_know_every_command_and_option(shell: str, tmp_path: Path) -> None:
    done = replygate("completion", shell)
    assert done.returncode == 0
    script = done.stdout.decode()
    for word in ("check", "schema", "deliveries", "--strict", "--summary", "--now", "--record"):
        assert word in script
    path = tmp_path / f"replygate.{shell}"
    path.write_text(script)
    interpreter = shutil.which(shell)
    if shell == "bash":
        assert interpreter is not None
    if interpreter is not None:  # zsh is not on every machine; its script is still written
        syntax = subprocess.run([interpreter, "-n", str(path)], capture_output=True, check=False)
        assert syntax.returncode == 0, syntax.stderr.decode()


def test_paths_in_a_config_file_are_read_beside_it_and_the_folder_is_named(
    tmp_path: Path,
) -> None:
    """Run from elsewhere: the workspace is found beside the config file; a missing one is
    said with the absolute folder searched, on stderr only, never in the record."""
    from tests.support.samples import SALES_CSV, csv_chart_arguments, tool_call

    conf = tmp_path / "conf"
    (conf / "ws" / "ws-3" / "reports").mkdir(parents=True)
    (conf / "ws" / "ws-3" / "reports" / "sales.csv").write_text(SALES_CSV)
    (conf / "gate.toml").write_text('workspaces_root = "ws"\n')
    chart = csv_chart_arguments()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = replygate(
        "check", "--config", str(conf / "gate.toml"), "-", stdin=encode(tool_call(chart)),
        cwd=elsewhere,
    )  # fmt: skip
    assert outputs(found)[0]["verdict"] == "accepted", found.stdout.decode()
    missing = replygate(
        "check", "--config", str(conf / "gate.toml"), "-",
        stdin=encode(tool_call(chart, workspace="ws-4")), cwd=elsewhere,
    )  # fmt: skip
    (line,) = outputs(missing)
    assert [e["code"] for e in line["errors"]] == ["workspace_unavailable"]
    assert str(tmp_path) not in missing.stdout.decode()  # no host path in the ToolResult
    assert missing.stderr.decode() == (
        f"replygate check: note: workspaces were looked for in {(conf / 'ws').resolve()} "
        "(workspaces_root, --workspaces; relative in a config file: beside it)\n"
    )


def test_an_unknown_column_lists_the_headers_found(tmp_path: Path) -> None:
    """A `;`-separated file reads as one header: the message shows it."""
    from tests.support.samples import csv_chart_arguments, tool_call

    reports = tmp_path / "ws-3" / "reports"
    reports.mkdir(parents=True)
    (reports / "sales.csv").write_text("month;sales;cost\nJan;10;4.5\n")
    done = replygate(
        "check", "--workspaces", str(tmp_path), "-", stdin=encode(tool_call(csv_chart_arguments()))
    )
    messages = {e["message"] for e in outputs(done)[0]["errors"]}
    assert "'month' is not a header of the CSV (its headers: 'month;sales;cost')" in messages
