"""`replygate check` end to end, as a subprocess on JSON Lines (docs/cli.md)."""

from __future__ import annotations

import io
import resource
import selectors
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from streams.cli.check import lines as _lines
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
    hostile = [b"[]", b"null", b"\xff\xfe", b"{" * 5000, b'{"turn_id": null}', b"\x00", b"\x0c"]
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(hostile) + b"\n")
    done = replygate("check", str(path))
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    lines = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == len(hostile)
    assert {x["verdict"] for x in lines} == {"dead_letter"}
    assert [x["id"] for x in lines] == list(range(1, len(hostile) + 1))


def test_schema_command_prints_each_contract_schema() -> None:
    for args in (
        ["im.segments.v1"],
        ["assistant.html.v1", "--delivered"],  # the model writes HTML: no schema of its own
        ["kandev.rich_output.v1"],
    ):
        done = replygate("schema", *args)
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


def reference_lines(data: bytes) -> list[bytes]:
    """What `check` read before reading was bounded: each whole line, without its line end."""
    return [line.rstrip(b"\r\n") for line in io.BytesIO(data)]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"a\nb\r\nc",
        b"12345\n",  # exactly `keep` bytes with the newline
        b"1234\r\n",  # the limit, then CRLF: whole, not cut
        b"1234\r\r\r\r\r\r\r\r\r\r\r\r\r\r\n",  # the limit, then a long line end
        b"1234\r\r\rx\nnext\n",  # a "\r" inside a long line: cut
        b"123456789\nnext",
        b"123456789" * 1000 + b"\r\nnext\r\n",
        b"123456",  # long, at the end of the file without a newline
        b"\n\n\r\n",
    ],
)
def test_lines_keep_the_first_bytes_of_a_long_line(data: bytes) -> None:
    limit, keep = 4, 6
    got = list(_lines(io.BufferedReader(io.BytesIO(data), buffer_size=8), keep))
    want = reference_lines(data)
    assert len(got) == len(want)
    for line, whole in zip(got, want, strict=True):
        assert line.size == len(whole)  # the whole length, also of a line cut short
        if len(whole) <= limit:
            assert line.raw == whole
        else:  # still too large for the gate, and its first bytes are intact
            assert len(line.raw) > limit and line.raw == whole[:keep]


def test_a_huge_line_costs_memory_bounded_by_the_limit(tmp_path: Path) -> None:
    """A line far larger than the memory allowed is refused as too large, unread in memory."""
    address_space = 512 * 1024 * 1024
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as f:  # a sparse file: a 640 MB line of NUL bytes, no disk used
        f.seek(640_000_000)
        f.write(b"\n" + encode(raw_reply()) + b"\n")
    done = subprocess.run(
        [sys.executable, "-m", "streams.cli", "check", str(path)],
        capture_output=True,
        cwd=REPO,
        timeout=120,
        check=False,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space)),
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    huge, normal = (orjson.loads(line) for line in done.stdout.splitlines())
    assert (huge["id"], huge["verdict"]) == (1, "dead_letter")
    assert [e["code"] for e in huge["errors"]] == ["record_too_large"]
    assert huge["output"]["reason"] == "record_too_large"
    assert huge["output"]["record"] == "\0" * 64 * 1024  # the DeadLetter's cut, as before
    assert (normal["id"], normal["verdict"], normal["action"]) == ("t-42", "accepted", "deliver")
    assert done.stderr == b""


def test_stdin_lines_are_answered_one_by_one() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "check", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            for turn_id in ("t-1", "t-2"):
                proc.stdin.write(encode(raw_reply(turn_id=turn_id)) + b"\n")
                proc.stdin.flush()  # the input stays open: the answer must not wait for more
                assert selector.select(timeout=60), "no answer while stdin stays open"
                assert orjson.loads(proc.stdout.readline())["id"] == turn_id
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0


def test_a_closed_output_stops_quietly_with_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_bytes(b"not json\n" * 50_000)  # far more output than a pipe holds
    with subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "check", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert orjson.loads(proc.stdout.readline())["id"] == 1
        proc.stdout.close()  # like `| head -1`
        stderr = proc.stderr.read()
        assert proc.wait(timeout=60) == 1
    assert stderr == b""


def test_an_unwritable_output_is_not_an_unreadable_input(tmp_path: Path) -> None:
    """/dev/full (Linux): every write fails with ENOSPC."""
    path = tmp_path / "in.jsonl"
    path.write_bytes(b"not json\n" * 100)
    with Path("/dev/full").open("wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "streams.cli", "check", str(path)],
            stdout=full,
            stderr=subprocess.PIPE,
            cwd=REPO,
            timeout=120,
            check=False,
        )
    assert done.returncode == 1
    assert done.stderr.decode() == (
        "replygate check: error: cannot write the output: No space left on device\n"
    )
