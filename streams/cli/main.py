"""`replygate`: check records offline, run the worker, create topics, the demo, schemas.

Every command is a `Command` in its own module (listed in COMMAND_MODULES); this module builds
the parser from them, runs the chosen one and reports any ReplygateError once, as one line
starting `replygate COMMAND: error:`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any

from streams.cli.command import Command
from streams.errors import EXIT_USAGE, MissingExtra, ReplygateError, error_line

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
)


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
        "missing extra. `replygate COMMAND -h` says what a command needs and what its exit "
        "status means; docs/cli.md has it all.",
    )
    parser.add_argument("--version", action="version", version=f"replygate {replygate_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in table.values():
        sub = subparsers.add_parser(
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


def run(command: Command, args: argparse.Namespace, stdout: IO[bytes]) -> int:
    """The command, with every error of replygate's own said in one line."""
    try:
        command.check_extra()
        return command.run(args, stdout)
    except ReplygateError as exc:
        return report(command.name, exc)
    except ModuleNotFoundError as exc:
        if command.extra is None or exc.name is None or exc.name.split(".")[0] in ("streams",):
            raise
        return report(command.name, MissingExtra(command.extra))


def parse(parser: argparse.ArgumentParser, table: dict[str, Command], argv: list[str]) -> Any:
    """The arguments; for a command that passes options on (the worker), the ones it does not
    know go to `passed_on` instead of being refused (`-h` stays replygate's help)."""
    name = argv[0] if argv and argv[0] in table else None
    if name is None or not table[name].passes_options_on:
        return parser.parse_args(argv)
    args, rest = parser.parse_known_args(argv)
    args.passed_on = rest
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    table = commands()
    parser = _build_parser(table)
    args = parse(parser, table, argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    return run(table[args.command], args, sys.stdout.buffer)
