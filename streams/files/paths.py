"""The one safe way the file stages (media, CSV snapshots) reach a file below a root.

A path is resolved (symlinks followed) and must stay inside the real root; the file must be a
regular file by `stat` before it is opened (a FIFO or device is never opened), is opened
non-blocking without following a newly planted symlink, must be the same file once open, and
is read only up to a bound, whatever size it claims (/proc files claim 0).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Literal

# Why a file was not read; each stage turns these into its own codes.
Refusal = Literal[
    "not_found", "loop", "outside", "unreadable", "not_regular", "oversized", "changed"
]

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 64 * 1024


class FileRefused(Exception):
    """A file the stages may not read, and why: the step that refused it and the OS's cause
    (never the file's contents), worded by the stage's code (`csv_unreadable`'s forms)."""

    def __init__(self, kind: Refusal, step: str = "", cause: str = "") -> None:
        super().__init__(kind)
        self.kind: Refusal = kind
        self.step = step
        self.cause = cause


def reason(exc: BaseException) -> str:
    """Why an OS call failed, without the path it names: outputs go to the agent, and the
    worker's absolute paths are not the agent's business (it names files as it wrote them)."""
    if isinstance(exc, OSError):
        return exc.strerror or errno.errorcode.get(exc.errno or 0, "") or type(exc).__name__
    if isinstance(exc, RuntimeError):  # `realpath(strict=True)` on a loop names the path too
        return "a symlink loop"
    if isinstance(exc, ValueError):  # an embedded NUL byte: the message names no path
        return str(exc)[:200]
    return type(exc).__name__


def within(root: str, path: str) -> bool:
    """Whether the real path `path` stays in the real directory `root` (the root included: it
    is not outside, and the regular-file check refuses it)."""
    return os.path.commonpath([root, path]) == root


def resolve_inside(root: str, relative: str, *, strict: bool) -> str:
    """The real path of `relative` below the real directory `root`; `strict` also requires it
    to exist (CSV snapshots say "not found" apart from "unreadable"; media do not)."""
    try:
        real = os.path.realpath(os.path.join(root, relative), strict=strict)
    except FileNotFoundError:
        raise FileRefused("not_found") from None
    except RuntimeError:
        raise FileRefused("loop") from None
    except (OSError, ValueError) as exc:
        kind: Refusal = "loop" if getattr(exc, "errno", None) == errno.ELOOP else "unreadable"
        raise FileRefused(kind, "resolve", reason(exc)) from None
    if not within(root, real):
        raise FileRefused("outside")
    return real


def read_regular(real: str, read_limit: int, size_limit: int | None = None) -> bytes:
    """At most `read_limit` bytes of the regular file `real`; `size_limit` refuses a file whose
    size says it is larger, before and after opening."""
    try:
        before = os.stat(real)
    except (OSError, ValueError) as exc:
        raise FileRefused("unreadable", "examine", reason(exc)) from None
    _check(before, size_limit)
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileRefused("changed", "symlink") from None
        raise FileRefused("unreadable", "open", str(exc.strerror)) from None
    except ValueError:
        raise FileRefused("unreadable") from None
    try:
        opened = os.fstat(fd)
        _check(opened, size_limit)
        if (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
            raise FileRefused("changed", "replaced")
        return _read_bounded(fd, read_limit)
    except OSError as exc:
        raise FileRefused("unreadable", "read", str(exc.strerror)) from None
    finally:
        os.close(fd)


def _check(info: os.stat_result, size_limit: int | None) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise FileRefused("not_regular")
    if size_limit is not None and info.st_size > size_limit:
        raise FileRefused("oversized")


def _read_bounded(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while total < limit:
        chunk = os.read(fd, min(_CHUNK, limit - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)
