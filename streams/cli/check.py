"""`replygate check`: the worker's own pipeline on JSON Lines records, without Kafka.

Needs only the core distribution: no Kafka client, no Faust.
"""

from __future__ import annotations

import argparse
import codecs
import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from streams.cli.command import Command, add_config, help_text
from streams.errors import EXIT_FAILED, EXIT_USAGE, ConfigError, ReplygateError, RuntimeFailure

if TYPE_CHECKING:
    from streams.cli.check_session import CheckSession
    from streams.core.pipeline import Decision, Gate
    from streams.settings import Settings

EXIT_OK = 0
# What `_lines` reads at once of the part of a line it skips.
_SKIP_BYTES = 64 * 1024
# `--strict` passes these verdicts; any other fails the run.
PASSING = frozenset({"accepted", "no_reply"})
VERDICTS = ("accepted", "rejected", "no_reply", "dead_letter")


class Unreadable(RuntimeFailure):
    """The input could not be read (not to be confused with a write error on the output)."""

    exit_status = EXIT_USAGE


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", nargs="?", default="-", help="JSON Lines file, or - for stdin")
    parser.add_argument("--workspaces", type=Path, help="the workspaces root (ToolCall.workspace)")
    parser.add_argument("--media-root", type=Path, help="the root for media paths")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when any line is not accepted or no_reply (for CI)",
    )
    parser.add_argument(
        "--summary",
        action="store_true",
        help="write counts per verdict and per error code to standard error",
    )
    add_config(parser)


class OutputClosed(RuntimeFailure):
    """Standard output's reader went away: the run stops quietly (exit 1, no message)."""


def _readline(stream: IO[bytes], size: int) -> bytes:
    try:
        return stream.readline(size)
    except OSError as exc:
        raise Unreadable(f"cannot read the input: {exc.strerror or exc}") from exc


def lines(stream: IO[bytes], keep: int) -> Iterator[bytes]:
    """Each line without its line end; of a longer line only its first `keep` bytes.

    The rest of a long line is skipped piece by piece, never held: memory stays bounded by
    `keep` whatever the line length. `readline` answers as soon as a line is complete, so
    interactive stdin gets each answer without waiting for a full block.
    """
    while line := _readline(stream, keep):
        if len(line) == keep and not line.endswith(b"\n"):
            only_line_end = True  # the rest may be nothing but the line end ("\r\n")
            while rest := _readline(stream, _SKIP_BYTES):
                only_line_end = only_line_end and not rest.strip(b"\r\n")
                if rest.endswith(b"\n"):
                    break
            if not only_line_end:
                yield line  # cut: longer than the limit even after `rstrip`
                continue
        yield line.rstrip(b"\r\n")


def is_text(line: bytes) -> bool:
    """Valid UTF-8; a sequence cut at the end of a kept part still counts."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(line, final=False)
    except UnicodeDecodeError:
        return False
    return True


def _output_closed() -> int:
    """Standard output's reader went away (`| head`): stop quietly.

    Python flushes sys.stdout again at exit and would print "Exception ignored ...
    BrokenPipeError": point it at devnull first (the Python docs' note on SIGPIPE).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real stdout (embedded, captured): nothing to redirect
        pass
    return EXIT_FAILED


def _control_line(raw: bytes, limit: int) -> dict[str, Any] | None:
    """The decoded line when it is meant as a TurnControl: a `turn_id` and an `action`, and
    neither the `output` of a reply nor the `chunk` of a streamed one."""
    if len(raw) > limit or b'"action"' not in raw:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("turn_id"), str):
        return None
    if "action" not in value or "output" in value or "chunk" in value:
        return None
    return value


def check_one(session: CheckSession, raw: bytes, line_no: int) -> Decision:
    """One line's decision; a TurnControl is checked as one (a cancel delivers nothing)."""
    from streams.broker.topology import Topology
    from streams.core.pipeline import Decision, Source

    settings = session.gate.settings
    if _control_line(raw, settings.max_record_bytes) is None:
        return session.line(raw, line_no, datetime.now(UTC))
    source = Source(Topology.of(settings).control.name, 0, line_no - 1)
    control = session.gate.read_control(raw, source)
    if isinstance(control, Decision):
        return control
    return Decision(id=control.turn_id, verdict="no_reply", action="none")


def summary_lines(decisions: Counter[str], codes: Counter[str]) -> list[str]:
    """`--summary`: every verdict with its count (zeros too), then the error codes, most first."""
    total = sum(decisions.values())
    verdicts = ", ".join(f"{v} {decisions[v]}" for v in VERDICTS)
    ranked = sorted(codes.items(), key=lambda item: (-item[1], item[0]))
    listed = ", ".join(f"{code} {count}" for code, count in ranked) or "none"
    return [f"{total} lines: {verdicts}", f"codes: {listed}"]


def _gate(args: argparse.Namespace) -> tuple[Gate, Settings]:
    from streams.core.pipeline import Gate
    from streams.files.stage import DiskFiles
    from streams.settings import FileSettings, GateSettings, load_settings

    overrides: dict[str, Any] = {}
    if args.workspaces is not None:
        overrides["workspaces_root"] = args.workspaces
    if args.media_root is not None:
        overrides["media_root"] = args.media_root
    settings = load_settings(args.config, **overrides)
    try:
        files = DiskFiles.from_settings(settings.group(FileSettings))
        return Gate(settings.group(GateSettings), files), settings
    except ReplygateError:
        raise
    except (OSError, ValueError) as exc:  # a root that cannot be resolved, a bad pattern
        raise ConfigError(f"settings: {exc}") from None


def _open(name: str) -> IO[bytes]:
    if name == "-":
        return sys.stdin.buffer
    try:
        return open(name, "rb")  # closed by the caller
    except OSError as exc:
        raise Unreadable(f"cannot read {name}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    """One JSON line out for every line in; 0 whatever the verdicts (1 with `--strict` when
    one did not pass), 1 when the output closes or cannot be written, 2 for unusable input."""
    from streams.cli.check_session import CheckSession

    gate, settings = _gate(args)
    interactive = args.file == "-"
    stream = _open(args.file)
    # Enough of an over-long line to refuse it as too large and for its DeadLetter's cut.
    from streams.core.pipeline import MASK_SLACK_BYTES

    keep = max(settings.max_record_bytes + 1, settings.dead_letter_record_bytes + MASK_SLACK_BYTES)
    try:
        verdicts, codes = _check_all(
            CheckSession(gate), lines(stream, keep), stdout, interactive, args.file
        )
    except OutputClosed:
        return _output_closed()
    finally:
        if not interactive:
            stream.close()
    if args.summary:
        for line in summary_lines(verdicts, codes):
            print(f"replygate check: {line}", file=sys.stderr)
    if args.strict and any(v not in PASSING for v in verdicts):
        return EXIT_FAILED
    return EXIT_OK


def _check_all(
    session: CheckSession,
    inputs: Iterable[bytes],
    stdout: IO[bytes],
    interactive: bool,
    name: str,
) -> tuple[Counter[str], Counter[str]]:
    verdicts: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    try:
        for line_no, raw in enumerate(inputs, start=1):
            if line_no == 1 and not is_text(raw):
                raise Unreadable(f"{name} is not UTF-8 text (a binary file?): nothing was checked")
            decision = check_one(session, raw, line_no)
            verdicts[decision.verdict] += 1
            codes.update(issue.code for issue in decision.errors)
            stdout.write(decision.line_json() + b"\n")
            if interactive:
                stdout.flush()
        stdout.flush()
    except BrokenPipeError:
        raise OutputClosed from None
    except OSError as exc:
        raise RuntimeFailure(f"cannot write the output: {exc.strerror or exc}") from None
    return verdicts, codes


COMMAND = Command(
    name="check",
    summary="run the worker's pipeline on JSON Lines records, without Kafka",
    description=(
        "Run the worker's own pipeline on records without Kafka, one line at a time, and write\n"
        "one JSON line per input line: {id, verdict, action, errors, output}. A line with\n"
        "turn_id is a RawReply (or, with an action and no output, a TurnControl); one with\n"
        "call_id is a ToolCall. A malformed line is a dead_letter result, not a crash."
    ),
    help=help_text(
        "  workspaces_root, media_root (or --workspaces, --media-root); platforms,\n"
        "  closed_platforms; schema_contracts, extra_contracts; leak_literals, leak_patterns;\n"
        "  max_record_bytes. From REPLYGATE_* variables and --config (docs/settings.md).",
        "  0  every line was handled, whatever the verdicts\n"
        "  1  --strict and a line was not accepted or no_reply; or the output could not be "
        "written\n"
        "  2  a usage error, a bad setting, or an unreadable or non-UTF-8 input",
        "replygate check --strict --summary replies.jsonl",
    ),
    arguments=arguments,
    run=run,
)
