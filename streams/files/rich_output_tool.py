"""The complete decision for one `show_rich_output_kandev` call: accepted (with snapshot) or not.

docs/contracts.md section 3 and docs/records.md (ToolCall, ToolResult). The pipeline turns the
decision into a ToolResult and masks it afterwards; nothing here masks, publishes or raises.

Decisions the spec leaves open:
- `workspace` must be one folder name that passes the path rule (no `/` or `\\`), and when a CSV
  is read, the real workspace folder (symlinks resolved) must lie inside the real workspaces
  root (`workspace_outside_root`), so a symlinked workspace cannot widen what may be read.
  A call without CSV charts touches no file, so its workspace need not exist.
- The error text lists at most 50 issues, one per line: `path: code: message`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from schemas.issue import Issue
from schemas.paths import check_folder_name
from schemas.records import ToolCall
from schemas.rich_output import TOOL_NAME, CsvChartBlock, check_rich_output, error_text
from schemas.rich_output_codes import UNKNOWN_TOOL, WORKSPACE_OUTSIDE_ROOT, WORKSPACE_UNAVAILABLE
from streams.files.csv_snapshot import DEFAULT_MAX_CSV_BYTES, snapshot_charts, snapshot_of
from streams.files.paths import reason

ACCEPTED_TEXT = "Rich output accepted."


@dataclass(frozen=True, slots=True)
class RichOutputDecision:
    """What to answer: `input` is the validated arguments unchanged, `output` the CSV snapshot."""

    status: Literal["ok", "error"]
    text: str
    input: dict[str, Any] | None
    output: dict[str, Any] | None
    issues: list[Issue] = field(default_factory=list)


def _error(issues: list[Issue]) -> RichOutputDecision:
    return RichOutputDecision("error", error_text(issues), None, None, list(issues))


def _workspace_dir(root: Path, name: str) -> tuple[Path | None, list[Issue]]:
    """`root/name` when its real path lies inside the real root."""
    try:
        real_root = os.path.realpath(root, strict=True)
        real = os.path.realpath(root / name, strict=True)
    except (OSError, ValueError, RuntimeError) as exc:
        return None, [WORKSPACE_UNAVAILABLE.issue("workspace", reason=reason(exc))]
    if real == real_root or os.path.commonpath([real_root, real]) != real_root:
        return None, [WORKSPACE_OUTSIDE_ROOT.issue("workspace")]
    return Path(real), []


def _csv_issues(
    call: ToolCall,
    charts: list[tuple[int, CsvChartBlock]],
    workspaces_root: Path,
    max_csv_bytes: int,
) -> list[Issue]:
    """The errors of the CSV charts that are valid on their own, in arguments invalid elsewhere
    (none when the workspace itself is wrong: that error is already told)."""
    if not charts or check_folder_name(call.workspace, "workspace"):
        return []
    workspace, issues = _workspace_dir(workspaces_root, call.workspace)
    if workspace is None:
        return issues
    return snapshot_of(charts, workspace, max_csv_bytes)[1]


def run_rich_output(
    call: ToolCall, workspaces_root: Path, max_csv_bytes: int = DEFAULT_MAX_CSV_BYTES
) -> RichOutputDecision:
    """Check the tool name, the workspace and the arguments, then snapshot the CSV charts."""
    if call.tool != TOOL_NAME:
        return _error([UNKNOWN_TOOL.issue("tool", tool=TOOL_NAME)])
    issues = check_folder_name(call.workspace, "workspace")
    args, arg_issues, charts = check_rich_output(call.arguments)
    issues += arg_issues
    if issues or args is None:
        return _error([*issues, *_csv_issues(call, charts, workspaces_root, max_csv_bytes)])
    if not args.csv_charts():
        return RichOutputDecision("ok", ACCEPTED_TEXT, call.arguments, None, [])
    workspace, issues = _workspace_dir(workspaces_root, call.workspace)
    if workspace is None:
        return _error(issues)
    snapshot, issues = snapshot_charts(args, workspace, max_csv_bytes)
    if issues or snapshot is None:
        return _error(issues)
    return RichOutputDecision("ok", orjson.dumps(snapshot).decode(), call.arguments, snapshot, [])
