"""The workspace-relative path rule of `kandev.rich_output.v1` (docs/contracts.md section 3), pure.

A path the gate may later resolve under a workspace must not be able to name anything outside it
by its spelling alone; symlinks are the reading stage's job (`streams.files.csv_snapshot`).

Codes (one per rule; a path can break several, each is reported once, in this order):

| code | rule |
|---|---|
| `blank_path` | empty or whitespace only (nothing else is checked then) |
| `nul_in_path` | contains a NUL character |
| `absolute_path` | starts with `/` once every `\\` is read as `/` (also `\\\\server\\share`) |
| `url_path` | contains `://` |
| `data_uri_path` | starts with `data:` (any case) |
| `drive_letter_path` | starts with an ASCII letter and a colon (`C:`, `c:foo`) |
| `parent_segment` | has a `..` segment once `\\` is read as `/` |
| `empty_path_after_cleaning` | `posixpath.normpath` makes it `.` (e.g. `./`, `a/..`) |

`check_folder_name` adds `not_single_folder` for a workspace name holding `/` or `\\`.
"""

from __future__ import annotations

import posixpath

from schemas import rich_output_codes as tool_codes
from schemas.issue import Issue

_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _slashed(value: str) -> str:
    """Windows separators count as separators: `..\\x` must not slip through as one name."""
    return value.replace("\\", "/")


def check_relative_path(value: str, path: str) -> list[Issue]:
    """Every way `value` breaks the workspace-relative path rule, as Issues at `path`."""
    if value.strip() == "":
        return [tool_codes.BLANK_PATH.issue(path)]
    issues: list[Issue] = []
    slashed = _slashed(value)
    if "\0" in value:
        issues.append(tool_codes.NUL_IN_PATH.issue(path))
    if slashed.startswith("/"):
        issues.append(tool_codes.ABSOLUTE_PATH.issue(path))
    if "://" in value:
        issues.append(tool_codes.URL_PATH.issue(path))
    if value[:5].lower() == "data:":
        issues.append(tool_codes.DATA_URI_PATH.issue(path))
    if len(value) >= 2 and value[0] in _ASCII_LETTERS and value[1] == ":":
        issues.append(tool_codes.DRIVE_LETTER_PATH.issue(path))
    if ".." in slashed.split("/"):
        issues.append(tool_codes.PARENT_SEGMENT.issue(path))
    if posixpath.normpath(slashed) == ".":
        issues.append(tool_codes.EMPTY_PATH_AFTER_CLEANING.issue(path))
    return issues


def check_folder_name(value: str, path: str) -> list[Issue]:
    """A workspace name: the path rule, and exactly one folder level (no `/` or `\\`)."""
    issues = check_relative_path(value, path)
    if issues and issues[0].code == "blank_path":
        return issues
    if "/" in _slashed(value):
        issues.append(tool_codes.NOT_SINGLE_FOLDER.issue(path))
    return issues
