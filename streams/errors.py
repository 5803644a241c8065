"""replygate's one exception root, so the command line catches every error of its own once.

Imports nothing: the pure layers, the worker and the core-only command line all use it.
Each error's message is one line a person can act on; it never carries an input value.
"""

from __future__ import annotations

from typing import ClassVar

# The command line's exit statuses (docs/cli.md).
EXIT_FAILED = 1
EXIT_USAGE = 2


def error_line(command: str, message: str) -> str:
    """The one shape of every command's error: `replygate COMMAND: error: MESSAGE`, one line."""
    return f"replygate {command}: error: {' '.join(message.split())}"


class ReplygateError(Exception):
    """The root: something replygate itself refuses or cannot do, said in one line."""

    exit_status: ClassVar[int] = EXIT_FAILED


class ConfigError(ReplygateError, ValueError):
    """A setting, argument, config file or contract that replygate cannot start with (exit 2).

    A ValueError too, so code written against pydantic validators keeps working.
    """

    exit_status: ClassVar[int] = EXIT_USAGE


class MissingExtra(ConfigError):
    """A command whose optional dependencies are not installed: the line names the extra."""

    def __init__(self, extra: str, install: str | None = None, what: str = "this command") -> None:
        how = install or f"pip install '.[{extra}]' in a replygate checkout"
        super().__init__(f"{what} needs the {extra} extra: {how}")
        self.extra = extra


class RuntimeFailure(ReplygateError):
    """Started well, then could not go on: a broker out of reach, a file that vanished (exit 1)."""

    exit_status: ClassVar[int] = EXIT_FAILED
