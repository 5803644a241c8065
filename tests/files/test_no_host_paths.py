"""No output record names a host path: ToolResults and DeadLetters say `workspace` or the
CSV path as the record wrote them, never the worker's absolute path (integration rule 5)."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from streams.cli.check_session import CheckSession
from streams.files.paths import reason
from streams.settings import Settings
from tests.support.gates import disk_gate
from tests.support.samples import SALES_CSV, csv_chart_arguments, encode, tool_call


def _roots(tmp_path: Path) -> Path:
    """A workspaces root with each way a workspace or a CSV can fail to open."""
    root = tmp_path / "hostroot-7f3a" / "workspaces"
    (root / "ws-ok" / "reports").mkdir(parents=True)
    (root / "ws-ok" / "reports" / "sales.csv").write_text(SALES_CSV)
    os.symlink("loop-a", root / "ws-ok" / "reports" / "loop-b.csv")
    os.symlink("loop-b.csv", root / "ws-ok" / "reports" / "loop-a")
    os.symlink("ws-loop", root / "ws-loop")  # a workspace that is a symlink to itself
    (root / "ws-file").write_text("not a folder")
    (root / "ws-locked").mkdir()
    os.symlink(root / "ws-locked", root / "ws-inner", target_is_directory=True)
    return root


CASES = [
    ("ws-missing", "reports/sales.csv", "workspace_unavailable"),
    ("ws-loop", "reports/sales.csv", "workspace_unavailable"),
    ("ws-file", "reports/sales.csv", "workspace_unavailable"),
    ("ws-ok", "reports/loop-b.csv", "csv_symlink_loop"),
    ("ws-ok", "reports/missing.csv", "csv_not_found"),
]


@pytest.mark.parametrize(
    ("workspace", "csv", "code"), CASES, ids=[c[2] + "-" + c[0] for c in CASES]
)
def test_a_tool_result_never_names_the_workers_paths(
    tmp_path: Path, workspace: str, csv: str, code: str
) -> None:
    root = _roots(tmp_path)
    gate = disk_gate(Settings(workspaces_root=root, media_root=tmp_path, data_dir=tmp_path))
    raw = encode(tool_call(csv_chart_arguments(csv), workspace=workspace))
    decision = CheckSession(gate).line(raw, 1, datetime.now(UTC))
    line = decision.line_json().decode()
    assert code in [e.code for e in decision.errors], line
    assert "hostroot-7f3a" not in line and str(tmp_path) not in line, line


def test_a_missing_workspaces_root_is_not_named_either(tmp_path: Path) -> None:
    root = tmp_path / "hostroot-7f3a" / "nowhere"
    gate = disk_gate(Settings(workspaces_root=root, media_root=tmp_path, data_dir=tmp_path))
    decision = CheckSession(gate).line(
        encode(tool_call(csv_chart_arguments())), 1, datetime.now(UTC)
    )
    line = decision.line_json().decode()
    assert decision.verdict == "rejected" and "workspace_unavailable" in line
    assert "hostroot-7f3a" not in line, line


@pytest.mark.parametrize(
    "exc",
    [
        FileNotFoundError(2, "No such file or directory", "/srv/secret/ws"),
        OSError(40, "Too many levels of symbolic links", "/srv/secret/ws"),
        RuntimeError("Symlink loop from '/srv/secret/ws'"),
        PermissionError(13, "Permission denied", "/srv/secret/ws", None, "/srv/secret/b"),
    ],
)
def test_the_reason_of_an_os_error_holds_no_path(exc: BaseException) -> None:
    said = reason(exc)
    assert said and "/srv" not in said
