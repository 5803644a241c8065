"""`replygate check`: the worker's own pipeline on JSON Lines records, without Kafka.

Needs only the core distribution: no Kafka client, no Faust.
"""

from __future__ import annotations

import argparse
import codecs
import os
import stat
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import orjson

from streams.cli.command import Command, add_config, help_text, output_gone
from streams.errors import (
    EXIT_FAILED,
    EXIT_USAGE,
    ConfigError,
    ReplygateError,
    RuntimeFailure,
    error_line,
)

if TYPE_CHECKING:
    from streams.cli.check_session import CheckSession
    from streams.core.decision import Decision
    from streams.core.pipeline import Gate
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
    parser.add_argument(
        "files",
        nargs="*",
        default=["-"],
        metavar="FILE",
        help="JSON Lines files, checked in order; - (or none) for standard input",
    )
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
    parser.add_argument(
        "--now",
        type=instant,
        metavar="TIME",
        help="the clock reading to judge by (ISO 8601, e.g. 2026-12-01T12:00:00Z) instead of "
        "the wall clock: delivered_at and deadlines repeat, so saved results can be diffed",
    )
    add_config(parser)


def instant(text: str) -> datetime:
    """`--now`: an ISO 8601 time with its offset (a naive one is refused, not guessed)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO 8601 time: {text[:40]!r} (e.g. 2026-12-01T12:00:00Z)"
        ) from None
    if when.tzinfo is None:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} has no offset: add Z or +HH:MM")
    return when.astimezone(UTC)


class OutputClosed(RuntimeFailure):
    """Standard output's reader went away: the run stops quietly (exit 1, no message)."""


def _readline(stream: IO[bytes], size: int) -> bytes:
    try:
        return stream.readline(size)
    except OSError as exc:
        raise Unreadable(f"cannot read the input: {exc.strerror or exc}") from exc


@dataclass(frozen=True, slots=True)
class Line:
    """An input line without its line end: at most its first `keep` bytes, and its length."""

    raw: bytes
    size: int

    @property
    def blank(self) -> bool:
        """Nothing but spaces and tabs: skipped (and counted), as people leave them."""
        return self.size == len(self.raw) and not self.raw.strip(b" \t\r")


def lines(stream: IO[bytes], keep: int) -> Iterator[Line]:
    """Each line without its line end; of a longer line only its first `keep` bytes (and its
    whole length). A UTF-8 byte order mark at the start of the input is dropped.

    The rest of a long line is skipped piece by piece, never held: memory stays bounded by
    `keep` whatever the line length. `readline` answers as soon as a line is complete, so
    interactive stdin gets each answer without waiting for a full block.
    """
    first = True
    while line := _readline(stream, keep):
        if first and line.startswith(codecs.BOM_UTF8):
            line = line[len(codecs.BOM_UTF8) :]
            if not line.endswith(b"\n") and len(line) == keep - len(codecs.BOM_UTF8):
                line += _readline(stream, len(codecs.BOM_UTF8))
        first = False
        if len(line) >= keep and not line.endswith(b"\n"):
            total, end = len(line), _line_end(line, 0)
            while rest := _readline(stream, _SKIP_BYTES):
                total, end = total + len(rest), _line_end(rest, end)
                if rest.endswith(b"\n"):
                    break
            if total - end > len(line.rstrip(b"\r")):
                yield Line(line, total - end)  # cut: longer than the limit after `rstrip`
                continue
        kept = line.rstrip(b"\r\n")
        yield Line(kept, len(kept))


def _line_end(piece: bytes, before: int) -> int:
    """How many bytes of line end (`\\r`, `\\n`) close the line so far, with `piece` read."""
    content = len(piece.rstrip(b"\r\n"))
    return before + len(piece) if content == 0 else len(piece) - content


def not_utf8_at(line: bytes) -> tuple[int, int] | None:
    """Where a line stops being UTF-8: the byte offset and the byte (None when it is UTF-8;
    a sequence cut at the end of a kept part still counts)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(line, final=False)
    except UnicodeDecodeError as exc:
        return exc.start, line[exc.start]
    return None


def is_text(line: bytes) -> bool:
    """Valid UTF-8; a sequence cut at the end of a kept part still counts."""
    return not_utf8_at(line) is None


def encoding_problem(line: bytes, line_no: int) -> str | None:
    """What a person must know of a line that is not UTF-8: where, which byte, what to do."""
    found = not_utf8_at(line)
    if found is None:
        return None
    offset, byte = found
    return (
        f"line {line_no}, byte {offset} (0x{byte:02X}) is not UTF-8 "
        "(a file saved as Latin-1 or Windows-1252?): save it as UTF-8"
    )


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


def check_one(
    session: CheckSession,
    line: Line | bytes,
    line_no: int,
    now: datetime | None = None,
    fallback_id: str | int | None = None,
) -> Decision:
    """One line's decision; a TurnControl is checked as one (a cancel delivers nothing).

    A line too large is said with its whole length, one not UTF-8 with the byte where it
    stops being so: both are dead letters, as in the worker, before any JSON is read. A
    record without an id is shown as `fallback_id` (its line number by default)."""
    from schemas import codes
    from streams.broker.topology import Topology
    from streams.core.decision import Decision, Source

    if isinstance(line, bytes):
        line = Line(line, len(line))
    raw, settings, gate = line.raw, session.gate.settings, session.gate
    shown = line_no if fallback_id is None else fallback_id
    source = Source(Topology.of(settings).replies.name, 0, line_no - 1)
    if line.size > settings.max_record_bytes:
        issue = codes.RECORD_TOO_LARGE.issue("$", size=line.size, limit=settings.max_record_bytes)
        return gate.dead_letter(raw, source, "record_too_large", [issue], shown)
    problem = encoding_problem(raw, line_no)
    if problem is not None:
        issue = codes.NOT_JSON.issue("$", error=problem)
        return gate.dead_letter(raw, source, "not_json", [issue], shown)
    if _control_line(raw, settings.max_record_bytes) is None:
        return session.line(raw, line_no, now or datetime.now(UTC), shown)
    source = Source(Topology.of(settings).control.name, 0, line_no - 1)
    control = session.gate.read_control(raw, source, shown)
    if isinstance(control, Decision):
        return control
    return Decision(id=session.gate.shown_id(control.turn_id), verdict="no_reply", action="none")


@dataclass
class Tally:
    """What `--summary` and `--strict` report: verdicts, error codes, chunks, blank lines."""

    verdicts: Counter[str] = field(default_factory=Counter)
    codes: Counter[str] = field(default_factory=Counter)
    chunks: int = 0  # chunk lines of streamed replies: held, not yet judged as replies
    blank: int = 0
    notices: Counter[str] = field(default_factory=Counter)

    def add(self, decision: Decision) -> None:
        if decision.chunk is not None and decision.verdict == "accepted":
            self.chunks += 1
        else:
            self.verdicts[decision.verdict] += 1
        self.codes.update(issue.code for issue in decision.errors)
        self.notices.update(notice.reason for notice in decision.notices)

    @property
    def records(self) -> int:
        return sum(self.verdicts.values()) + self.chunks

    def failing(self) -> str | None:
        """Why `--strict` fails the run, in one line (None when it passes)."""
        failed = {v: n for v, n in self.verdicts.items() if v not in PASSING and n}
        if failed:
            counts = ", ".join(f"{verdict} {n}" for verdict, n in sorted(failed.items()))
            total = sum(failed.values())
            return (
                f"--strict: {plural(total, 'record')} of {self.records} not accepted "
                f"({counts}); see each line's errors"
            )
        if self.records == 0:
            return "--strict: the input holds no records: nothing was checked"
        return None


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def summary_lines(
    decisions: Counter[str], codes: Counter[str], chunks: int = 0, blank: int = 0
) -> list[str]:
    """`--summary`: every verdict with its count (zeros too), chunk and blank lines when there
    are any, then the error codes, most first."""
    total = sum(decisions.values()) + chunks + blank
    verdicts = ", ".join(f"{v} {decisions[v]}" for v in VERDICTS)
    extra = (f", chunks {chunks}" if chunks else "") + (f", blank {blank}" if blank else "")
    ranked = sorted(codes.items(), key=lambda item: (-item[1], item[0]))
    listed = ", ".join(f"{code} {count}" for code, count in ranked) or "none"
    return [f"{plural(total, 'line')}: {verdicts}{extra}", f"codes: {listed}"]


def folder_notes(tally: Tally, settings: Settings) -> list[str]:
    """Where the files looked for were looked for, as absolute folders: said on standard
    error (for the person running `check`), never in a record (a host path stays out of what
    is sent to agents)."""
    notes = []
    if tally.codes["workspace_unavailable"] or tally.codes["csv_not_found"]:
        notes.append(
            f"workspaces were looked for in {settings.workspaces_root.resolve()} "
            "(workspaces_root, --workspaces; relative in a config file: beside it)"
        )
    if tally.notices["attachment_unreadable"]:
        notes.append(
            f"media paths were looked for in {settings.media_root.resolve()} "
            "(media_root, --media-root; relative in a config file: beside it)"
        )
    return notes


def _gate(args: argparse.Namespace) -> tuple[Gate, Settings]:
    from streams.core.pipeline import Gate
    from streams.files.stage import DiskFiles
    from streams.settings import FileSettings, GateSettings, load_settings
    from streams.settings.contracts import build_registry

    overrides: dict[str, Any] = {}
    if args.workspaces is not None:
        overrides["workspaces_root"] = args.workspaces
    if args.media_root is not None:
        overrides["media_root"] = args.media_root
    settings = load_settings(args.config, **overrides)
    try:
        files = DiskFiles.from_settings(settings.group(FileSettings))
        return Gate(settings.group(GateSettings), files, build_registry(settings)), settings
    except ReplygateError:
        raise
    except (OSError, ValueError) as exc:  # a root that cannot be resolved, a bad pattern
        raise ConfigError(f"settings: {exc}") from None


def _open(name: str) -> IO[bytes]:
    if name == "-":
        if sys.stdin is None:  # `<&-`
            raise Unreadable("standard input is closed: give a file, or pipe the records in")
        return sys.stdin.buffer
    try:
        return open(name, "rb")  # closed by the caller
    except OSError as exc:
        raise Unreadable(f"cannot read {name}: {exc.strerror or exc}") from None


def _readable(names: list[str]) -> None:
    """Every file is there before the first line is judged: a typo in the third name must not
    leave two files' results on the output and an error after them."""
    if names.count("-") > 1:
        raise Unreadable("standard input (-) can be read once")
    for name in names:
        if name != "-" and not stat.S_ISFIFO(_mode(name)):  # a pipe is opened once, later
            _open(name).close()


def _mode(name: str) -> int:
    try:
        return os.stat(name).st_mode
    except OSError as exc:
        raise Unreadable(f"cannot read {name}: {exc.strerror or exc}") from None


def run(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    """One JSON line out for every record in; 0 whatever the verdicts (1 with `--strict` when
    one did not pass), 1 when the output closes or cannot be written, 2 for unusable input."""
    from streams.cli.check_session import CheckSession

    names: list[str] = args.files or ["-"]
    _readable(names)
    gate, settings = _gate(args)
    # Enough of an over-long line to refuse it as too large and for its DeadLetter's cut.
    from streams.core.pipeline import MASK_SLACK_BYTES

    keep = max(settings.max_record_bytes + 1, settings.dead_letter_record_bytes + MASK_SLACK_BYTES)
    session, tally = CheckSession(gate), Tally()
    try:
        for name in names:
            stream = _open(name)
            try:
                # several files: a record without an id names its file too (`b.jsonl:3`)
                shown_name = name if len(names) > 1 else None
                _check_all(session, lines(stream, keep), stdout, name, tally, args.now, shown_name)
            finally:
                if name != "-":
                    stream.close()
    except OutputClosed:
        return output_gone()
    if args.summary:
        for line in summary_lines(tally.verdicts, tally.codes, tally.chunks, tally.blank):
            print(f"replygate check: {line}", file=sys.stderr)
    for note in folder_notes(tally, settings):
        print(f"replygate check: note: {note}", file=sys.stderr)
    if tally.records == 0 and not args.strict:
        said = "standard input" if names == ["-"] else ", ".join(names)
        blank = f" ({plural(tally.blank, 'blank line')})" if tally.blank else ""
        print(f"replygate check: {said} holds no records{blank}", file=sys.stderr)
    if args.strict and (reason := tally.failing()) is not None:
        print(error_line("check", reason), file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def _check_all(
    session: CheckSession,
    inputs: Iterable[Line],
    stdout: IO[bytes],
    name: str,
    tally: Tally,
    now: datetime | None,
    shown_name: str | None = None,
) -> None:
    interactive, first = name == "-", True
    try:
        for line_no, line in enumerate(inputs, start=1):
            if line.blank:
                tally.blank += 1
                continue
            if first and looks_binary(line.raw):
                shown = "standard input" if interactive else name
                raise Unreadable(f"{shown} is not UTF-8 text (a binary file?): nothing was checked")
            first = False
            fallback = line_no if shown_name is None else f"{shown_name}:{line_no}"
            decision = check_one(session, line, line_no, now, fallback)
            tally.add(decision)
            stdout.write(decision.line_json() + b"\n")
            if interactive:
                stdout.flush()
        stdout.flush()
    except BrokenPipeError:
        raise OutputClosed from None
    except OSError as exc:
        raise RuntimeFailure(f"cannot write the output: {exc.strerror or exc}") from None


def looks_binary(line: bytes) -> bool:
    """A first line that is no text at all (an image, an archive, UTF-16): refused as a whole.
    A text line with a Latin-1 byte is not: it is that line's dead letter, naming the byte."""
    found = not_utf8_at(line)
    if found is None:
        return False
    head = line[:4096]
    if found[0] == 0 or b"\x00" in head:  # a JSON line starts with `{`, never a stray byte
        return True
    controls = sum(1 for byte in head if byte < 0x20 and byte not in (0x09, 0x0A, 0x0D))
    return controls * 10 > len(head)


COMMAND = Command(
    name="check",
    summary="run the worker's pipeline on JSON Lines records, without Kafka",
    description=(
        "Run the worker's own pipeline on records without Kafka, one line at a time, and write\n"
        "one JSON line per record: {id, verdict, action, errors, output} (blank lines are\n"
        "skipped and counted, a UTF-8 byte order mark is dropped). A line with\n"
        "turn_id is a RawReply (or, with an action and no output, a TurnControl); one with\n"
        "call_id is a ToolCall. A malformed line is a dead_letter result, not a crash."
    ),
    help=help_text(
        "  workspaces_root, media_root (or --workspaces, --media-root); platforms,\n"
        "  closed_platforms; schema_contracts, extra_contracts; leak_literals, leak_patterns;\n"
        "  max_record_bytes. From REPLYGATE_* variables and --config (docs/settings.md).",
        "  0  every line was handled, whatever the verdicts\n"
        "  1  --strict and a line was not accepted or no_reply (or no records at all); or\n"
        "     the output could not be written\n"
        "  2  a usage error, a bad setting, or an unreadable or binary input\n"
        "  130, 143  stopped by SIGINT, SIGTERM",
        "replygate check --strict --summary --now 2026-12-01T12:00:00Z a.jsonl b.jsonl",
    ),
    arguments=arguments,
    run=run,
)
