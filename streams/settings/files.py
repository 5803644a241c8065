"""The one bounded read of a file a setting names (a contract's JSON Schema, a mounted secret).

Such a file is configuration, never data: it must be a regular file (a FIFO or a device would
block the start) and is read only up to its caller's bound, whatever size it claims. What went
wrong is said in words; the file's contents never are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

# Why a named file was not read: gone, not a regular file, unreadable, or over the bound.
Problem = Literal["missing", "not_regular", "unreadable", "oversized"]


class NamedFileError(Exception):
    """A named file that could not be read, and why (`cause`: the OS's words, for `unreadable`)."""

    def __init__(self, problem: Problem, cause: str = "") -> None:
        super().__init__(problem)
        self.problem: Problem = problem
        self.cause = cause


def read_named_file(path: Path, limit: int) -> bytes:
    """All of `path`, at most `limit` bytes; NamedFileError otherwise."""
    try:
        regular = path.is_file()  # follows symlinks: a Kubernetes Secret is one
        if not regular:
            raise NamedFileError("not_regular" if path.exists() else "missing")
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise NamedFileError("unreadable", exc.strerror or type(exc).__name__) from None
    if len(data) > limit:
        raise NamedFileError("oversized")
    return data
