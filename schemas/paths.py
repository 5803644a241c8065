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

from schemas.errors import Issue

_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _slashed(value: str) -> str:
    """Windows separators count as separators: `..\\x` must not slip through as one name."""
    return value.replace("\\", "/")


def check_relative_path(value: str, path: str) -> list[Issue]:
    """Every way `value` breaks the workspace-relative path rule, as Issues at `path`."""
    if value.strip() == "":
        return [Issue(path, "blank_path", "must name a file: it is empty or only whitespace")]
    issues: list[Issue] = []
    slashed = _slashed(value)
    if "\0" in value:
        issues.append(Issue(path, "nul_in_path", "must not contain a NUL character"))
    if slashed.startswith("/"):
        issues.append(
            Issue(
                path,
                "absolute_path",
                "must be relative to the workspace; it starts with '/' or '\\'",
            )
        )
    if "://" in value:
        issues.append(Issue(path, "url_path", "must be a workspace path, not a URL ('://')"))
    if value[:5].lower() == "data:":
        issues.append(Issue(path, "data_uri_path", "must be a workspace path, not a data: URI"))
    if len(value) >= 2 and value[0] in _ASCII_LETTERS and value[1] == ":":
        issues.append(
            Issue(path, "drive_letter_path", "must be relative; it starts with a drive letter")
        )
    if ".." in slashed.split("/"):
        issues.append(
            Issue(path, "parent_segment", "must not contain a '..' segment (it leaves the folder)")
        )
    if posixpath.normpath(slashed) == ".":
        issues.append(
            Issue(
                path,
                "empty_path_after_cleaning",
                "must name a file; it cleans to '.' (the folder itself)",
            )
        )
    return issues


def check_folder_name(value: str, path: str) -> list[Issue]:
    """A workspace name: the path rule, and exactly one folder level (no `/` or `\\`)."""
    issues = check_relative_path(value, path)
    if issues and issues[0].code == "blank_path":
        return issues
    if "/" in _slashed(value):
        issues.append(
            Issue(path, "not_single_folder", "must be one folder name, without '/' or '\\'")
        )
    return issues
