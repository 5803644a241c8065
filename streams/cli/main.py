"""`replygate`: check records offline, run the worker, create topics, the demo, schemas.

Every command is a `Command` in its own module (listed in COMMAND_MODULES); this module builds
the parser from them, runs the chosen one and reports any ReplygateError once, as one line
starting `replygate COMMAND: error:`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any

from streams.cli.command import Command, output_gone
from streams.errors import EXIT_USAGE, MissingExtra, ReplygateError, error_line
from streams.extras import install_command

# The subcommands, in the order `replygate -h` lists them; each module has a `COMMAND`.
COMMAND_MODULES = (
    "streams.cli.check",
    "streams.cli.schema",
    "streams.cli.worker",
    "streams.cli.topics",
    "streams.cli.deliveries",
    "streams.cli.acls",
    "streams.cli.policy",
    "streams.cli.audit",
    "streams.cli.demo",
    "streams.cli.completion",
)

# The shell's statuses for a run ended by a signal (128 + its number): Ctrl-C, `kill`.
EXIT_SIGINT = 128 + signal.SIGINT
EXIT_SIGTERM = 128 + signal.SIGTERM


class Terminated(BaseException):
    """SIGTERM, raised where the run is (as Python raises KeyboardInterrupt for SIGINT), so
    the run ends through its own `finally` blocks and says so in one line."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def commands() -> dict[str, Command]:
    """Every subcommand by name; importing their modules imports no extra."""
    found: dict[str, Command] = {}
    for module in COMMAND_MODULES:
        command: Command = importlib.import_module(module).COMMAND
        found[command.name] = command
    return found


def replygate_version() -> str:
    try:
        return version("replygate")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def _build_parser(
    table: dict[str, Command] | None = None,
) -> argparse.ArgumentParser:
    table = commands() if table is None else table
    parser = argparse.ArgumentParser(
        prog="replygate",
        description="A gate between LLM agents and the people they talk to: validates, masks "
        "and delivers model replies on Kafka.",
        epilog="exit status: 0 done; 1 failed while running; 2 a usage error, a bad setting or a "
        "missing extra; 130 and 143 stopped by SIGINT and SIGTERM. `replygate COMMAND -h` says "
        "what a command needs and what its exit status means; docs/cli.md has it all.",
    )
    parser.add_argument("--version", action="version", version=f"replygate {replygate_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.set_defaults(_subparsers={})
    for command in table.values():
        sub = parser.get_default("_subparsers")[command.name] = subparsers.add_parser(
            command.name,
            help=command.summary,
            description=command.description,
            epilog=command.help,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=not command.passes_options_on,
        )
        command.arguments(sub)
    return parser


def report(command: str, exc: ReplygateError) -> int:
    """The one error line of a run, and the status its kind of error means."""
    message = str(exc) if str(exc).strip() else type(exc).__name__
    print(error_line(command, message), file=sys.stderr)
    return exc.exit_status


def run(command: Command, args: argparse.Namespace, stdout: IO[bytes] | None) -> int:
    """The command, with every error of replygate's own said in one line; a signal or an
    output whose reader went away ends it in one line too, never in a traceback."""
    try:
        command.check_extra()
        if stdout is None:  # `>&-`: Python has no sys.stdout at all
            raise OutputMissing("standard output is closed: send it to /dev/null instead")
        return command.run(args, stdout)
    except ReplygateError as exc:
        return report(command.name, exc)
    except ModuleNotFoundError as exc:
        if command.extra is None or exc.name is None or exc.name.split(".")[0] in ("streams",):
            raise
        return report(command.name, MissingExtra(command.extra, install_command(command.extra)))
    except BrokenPipeError:
        return output_gone()
    except KeyboardInterrupt:
        return stopped(command.name, "SIGINT", EXIT_SIGINT)
    except Terminated:
        return stopped(command.name, "SIGTERM", EXIT_SIGTERM)


class OutputMissing(ReplygateError):
    """Started with standard output closed: nothing it prints could go anywhere (exit 1)."""


def stopped(command: str, signal_name: str, status: int) -> int:
    """One line for a run a signal ended, and the shell's status for it (130, 143)."""
    who = f"replygate {command}" if command else "replygate"
    with contextlib.suppress(OSError, ValueError, AttributeError):
        print(f"{who}: stopped by {signal_name}", file=sys.stderr, flush=True)
    return status


def parse(parser: argparse.ArgumentParser, table: dict[str, Command], argv: list[str]) -> Any:
    """The arguments; for a command that passes options on (the worker), the ones it does not
    know go to `passed_on` instead of being refused (`-h` stays replygate's help). An option
    a command does not know is refused by that command, with its own prefix and usage."""
    args, rest = parser.parse_known_args(argv)
    command = table.get(args.command) if args.command else None
    if command is not None and command.passes_options_on:
        args.passed_on = rest
    elif rest:
        own = parser.get_default("_subparsers").get(args.command, parser)
        own.error(f"unrecognized arguments: {' '.join(rest)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    with contextlib.suppress(ValueError):  # not the main thread (embedded): default stays
        signal.signal(signal.SIGTERM, _terminate)
    try:
        return _main(argv)
    except KeyboardInterrupt:  # before a command runs (a slow import, the parser)
        return stopped("", "SIGINT", EXIT_SIGINT)
    except Terminated:
        return stopped("", "SIGTERM", EXIT_SIGTERM)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    table = commands()
    parser = _build_parser(table)
    args = parse(parser, table, argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    stdout = None if sys.stdout is None else sys.stdout.buffer
    return run(table[args.command], args, stdout)
