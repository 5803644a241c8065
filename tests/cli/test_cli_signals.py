"""No traceback, anywhere: a closed or broken standard output, Ctrl-C and `kill` end every
command in one line (or, for a reader gone away, quietly) with its documented status.

Real subprocesses, real pipes, real signals (docs/cli.md, "Signals and standard output").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from tests.support.samples import encode, raw_reply

REPO = Path(__file__).resolve().parents[2]
ENV = {
    **{k: v for k, v in os.environ.items() if not k.upper().startswith("REPLYGATE_")},
    "PYTHONPATH": str(REPO),
}
CLI = [sys.executable, "-m", "streams.cli"]

# Commands that write to standard output without a broker.
WRITERS = [
    ["check", "-"],
    ["schema", "im.segments.v1"],
    ["schema", "--record", "RawReply"],
    ["acls", "worker"],
    ["completion", "bash"],
]


@pytest.mark.parametrize("command", WRITERS, ids=lambda c: " ".join(c))
def test_a_closed_stdout_is_one_line_and_exit_1(command: list[str]) -> None:
    """`replygate ... >&-`: Python starts with no sys.stdout at all."""
    done = subprocess.run(
        ["bash", "-c", 'exec "$@" >&-', "bash", *CLI, *command],
        input=encode(raw_reply()),
        capture_output=True,
        cwd=REPO,
        env=ENV,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.decode() == (
        f"replygate {command[0]}: error: standard output is closed: send it to /dev/null instead\n"
    )


@pytest.mark.parametrize("command", WRITERS, ids=lambda c: " ".join(c))
def test_a_stdout_whose_reader_is_gone_stops_quietly_with_exit_1(command: list[str]) -> None:
    """`| head -c0`: the pipe's read end is closed before the command writes a byte."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*CLI, *command],
            input=encode(raw_reply()),
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=REPO,
            env=ENV,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 1
    assert done.stderr == b""


@pytest.mark.parametrize(
    ("sig", "status", "name"),
    [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")],
)
def test_a_signal_while_check_reads_stdin_is_one_line(
    sig: signal.Signals, status: int, name: str
) -> None:
    """`... | replygate check -` and Ctrl-C (or `kill`) while it waits for the next line."""
    with subprocess.Popen(
        [*CLI, "check", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env=ENV,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        proc.stdin.write(encode(raw_reply()) + b"\n")
        proc.stdin.flush()
        assert orjson.loads(proc.stdout.readline())["verdict"] == "accepted"  # it is reading
        proc.send_signal(sig)
        assert proc.wait(timeout=60) == status
        assert proc.stderr.read().decode() == f"replygate check: stopped by {name}\n"


@pytest.mark.parametrize(
    ("sig", "status", "name"),
    [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")],
)
def test_a_signal_while_check_waits_for_a_named_pipe_is_one_line(
    sig: signal.Signals, status: int, name: str, tmp_path: Path
) -> None:
    """`replygate check FIFO` waits in open() for a writer that never comes; a signal there
    ends it as cleanly as one between lines."""
    fifo = tmp_path / "records.jsonl"
    os.mkfifo(fifo)
    with subprocess.Popen(
        [*CLI, "check", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env=ENV,
    ) as proc:
        assert proc.stderr is not None
        fd = os.open(fifo, os.O_WRONLY)  # returns once check opened it to read
        try:
            os.write(fd, encode(raw_reply()) + b"\n")
            assert proc.stdout is not None
            assert orjson.loads(proc.stdout.readline())["verdict"] == "accepted"
            proc.send_signal(sig)
            assert proc.wait(timeout=60) == status
        finally:
            os.close(fd)
        assert proc.stderr.read().decode() == f"replygate check: stopped by {name}\n"


@pytest.mark.kafka
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_endpoint_stops_gracefully_on_either_signal(
    sig: signal.Signals, tmp_path: Path
) -> None:
    """`replygate deliveries` handles both itself (docs/cli.md): a clean stop, exit 0."""
    import asyncio

    from tests.support.deliveries import Reader, delivery
    from tests.support.kafka import Deployment, produce

    deployment = Deployment(partitions=1)
    deployment.env.update(REPLYGATE_PLATFORMS='["im"]')
    deployment.create_topics()
    asyncio.run(produce(deployment.topic("delivery.im"), [("c-1", delivery("t-1"))]))
    reader = Reader(deployment, tmp_path, "reader.log", f"sig-{sig.name}")
    reader.wait_for_lines(1)  # running, past its start
    assert reader.end(sig) == 0
    log = reader.stderr()
    assert "Traceback" not in log and "stopped: handed on 1" in log, log
