"""`replygate`: check records offline, run the worker, create topics, the demo, schemas."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

EXIT_OK = 0
EXIT_OUTPUT = 1
EXIT_USAGE = 2
# What `_lines` reads at once of the part of a line it skips.
_SKIP_BYTES = 64 * 1024


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="replygate", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser(
        "check", help="run the worker's pipeline on JSON Lines records, without Kafka"
    )
    check.add_argument("file", nargs="?", default="-", help="JSON Lines file, or - for stdin")
    check.add_argument("--workspaces", type=Path, help="the workspaces root (ToolCall.workspace)")
    check.add_argument("--media-root", type=Path, help="the root for media paths")
    check.add_argument("--config", type=Path, help="a TOML or YAML settings file")

    worker = commands.add_parser(
        "worker",
        help="run the stream processor (a Faust worker); Faust's worker options pass through",
        add_help=False,
    )
    worker.add_argument("--config", type=Path, help="a TOML or YAML settings file")

    topics = commands.add_parser("topics", help="create the topics (idempotent)")
    topics.add_argument("--config", type=Path, help="a TOML or YAML settings file")

    demo = commands.add_parser("demo", help="the whole story on a local broker and a real worker")
    demo.add_argument("--config", type=Path, help="a TOML or YAML settings file")

    schema = commands.add_parser("schema", help="print a contract's JSON Schema")
    schema.add_argument(
        "name",
        help="im.segments.v1, assistant.html.v1, text.plain.v1, kandev.rich_output.v1, "
        "or a registered one",
    )
    schema.add_argument("--config", type=Path, help="a TOML or YAML settings file")

    from streams.cli.deliveries import add_parser

    add_parser(commands)
    from streams.cli.acls import add_parser as add_acls_parser

    add_acls_parser(commands)
    return parser


def _usage_error(message: str) -> int:
    print(f"replygate: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _load(config: Path | None, **overrides: Any) -> Any:
    from streams.settings import load_settings

    return load_settings(config, **overrides)


def settings_problem(exc: Exception) -> str:
    """One line for a settings error: each bad setting and why, never pydantic's whole report."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(part) for part in err['loc']) or 'settings'}: {err['msg']}"
            for err in exc.errors(include_url=False)
        )
    return str(exc)


def _load_or_report(config: Path | None, **overrides: Any) -> Any:
    """The settings, or None after saying on stderr what is wrong with them (a usage error)."""
    from pydantic import ValidationError

    try:
        return _load(config, **overrides)
    except (OSError, ValueError, ValidationError) as exc:
        _usage_error(f"settings: {settings_problem(exc)}")
        return None


class _Unreadable(Exception):
    """The input could not be read (not to be confused with a write error on the output)."""


def _readline(stream: IO[bytes], size: int) -> bytes:
    try:
        return stream.readline(size)
    except OSError as exc:
        raise _Unreadable(exc.strerror or str(exc)) from exc


def _lines(stream: IO[bytes], keep: int) -> Iterator[bytes]:
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
    return EXIT_OUTPUT


def run_check(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    """One JSON line out for every line in; 0 whatever the verdicts, 1 when the output closes
    or cannot be written, 2 for unusable input."""
    from pydantic import ValidationError

    from streams.core.pipeline import MASK_SLACK_BYTES, Gate
    from streams.files.stage import DiskFiles

    overrides: dict[str, Any] = {}
    if args.workspaces is not None:
        overrides["workspaces_root"] = args.workspaces
    if args.media_root is not None:
        overrides["media_root"] = args.media_root
    settings = _load_or_report(args.config, **overrides)
    if settings is None:
        return EXIT_USAGE
    try:
        gate = Gate(settings, DiskFiles.from_settings(settings))
    except (OSError, ValueError, ValidationError) as exc:
        return _usage_error(f"settings: {settings_problem(exc)}")
    interactive = args.file == "-"
    try:
        stream: IO[bytes] = sys.stdin.buffer if interactive else open(args.file, "rb")  # noqa: SIM115
    except OSError as exc:
        return _usage_error(f"cannot read {args.file}: {exc.strerror or exc}")
    # Enough of an over-long line to refuse it as too large and for its DeadLetter's cut.
    keep = max(settings.max_record_bytes + 1, settings.dead_letter_record_bytes + MASK_SLACK_BYTES)
    try:
        for line_no, raw in enumerate(_lines(stream, keep), start=1):
            decision = gate.check_line(raw, line_no, datetime.now(UTC))
            stdout.write(decision.line_json() + b"\n")
            if interactive:
                stdout.flush()
        stdout.flush()
    except _Unreadable as exc:
        return _usage_error(f"cannot read {args.file}: {exc}")
    except BrokenPipeError:
        return _output_closed()
    except OSError as exc:
        print(f"replygate: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_OUTPUT
    finally:
        if not interactive:
            stream.close()
    return EXIT_OK


def run_schema(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    from schemas.rich_output import CONTRACT_NAME, rich_output_json_schema
    from streams.core.contracts import build_registry

    settings = _load_or_report(args.config)
    if settings is None:
        return EXIT_USAGE
    if args.name == CONTRACT_NAME:
        schema = rich_output_json_schema()
    else:
        try:
            contract = build_registry(settings).get(args.name)
        except ValueError as exc:
            return _usage_error(f"settings: {exc}")
        if contract is None:
            return _usage_error(f"unknown contract {args.name!r}")
        schema = contract.json_schema()
    stdout.write(orjson.dumps(schema, option=orjson.OPT_INDENT_2) + b"\n")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "worker":
        from streams.cli.worker import run_worker

        return run_worker(argv[1:])
    parser = _build_parser()
    args = parser.parse_args(argv)
    stdout = sys.stdout.buffer
    if args.command == "check":
        return run_check(args, stdout)
    if args.command == "schema":
        return run_schema(args, stdout)
    if args.command == "acls":
        from streams.cli.acls import run_acls

        return run_acls(args, sys.stdout)
    if args.command == "deliveries":
        from streams.cli.deliveries import run_deliveries

        return run_deliveries(args, stdout)
    if args.command in ("topics", "demo"):
        settings = _load_or_report(args.config)
        if settings is None:
            return EXIT_USAGE
        if args.command == "topics":
            from streams.broker.topology import run_topics

            return run_topics(settings)
        try:
            from replygate_dev.demo import run_demo
        except ImportError:
            return _usage_error(
                "the demo is a development tool, not shipped with replygate: run `make demo` "
                "in a checkout of the repository"
            )
        return run_demo(settings)
    return _usage_error(f"unknown command {args.command}")
