"""What a subcommand is: its arguments, its own help, the extra it needs and how it runs.

Each subcommand module defines one `COMMAND`; `streams.cli.main` lists the modules. A module
imports nothing beyond the core distribution at import time, so `replygate -h` and every
`replygate COMMAND -h` work on a core install and start nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from streams.errors import EXIT_FAILED, MissingExtra
from streams.extras import install_command

Run = Callable[[argparse.Namespace, IO[bytes]], int]


@dataclass(frozen=True, slots=True)
class Command:
    """One `replygate NAME`: `help` is the text after the options (settings that matter,
    exit statuses, one example); `needs` are modules of `extra`, looked for before running."""

    name: str
    summary: str
    description: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Run
    extra: str | None = None
    needs: tuple[str, ...] = ()
    # Options it does not know go through to another program (the worker's to Faust).
    passes_options_on: bool = False

    def check_extra(self) -> None:
        """MissingExtra when a module of the extra is not installed: one line, no traceback."""
        if self.extra is not None and not all(map(installed, self.needs)):
            raise MissingExtra(self.extra, install_command(self.extra))


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (one already imported counts:
    `find_spec` refuses a module whose `__spec__` its package replaced, as Faust's does)."""
    if module in sys.modules:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def add_config(parser: argparse.ArgumentParser) -> None:
    """`--config FILE`, which every command that reads settings takes."""
    parser.add_argument("--config", type=Path, help="a TOML or YAML settings file")


def help_text(settings: str, exits: str, example: str) -> str:
    """The part of a command's help after its options, in one layout for every command."""
    return f"settings that matter:\n{settings}\n\nexit status:\n{exits}\n\nexample:\n  {example}\n"


def output_gone() -> int:
    """Standard output's reader went away (`| head`): stop quietly, exit 1.

    Python flushes sys.stdout again at exit and would print "Exception ignored ...
    BrokenPipeError": point it at devnull first (the Python docs' note on SIGPIPE).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (closed, captured)
        pass
    return EXIT_FAILED
