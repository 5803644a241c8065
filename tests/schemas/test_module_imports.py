"""Every import in `schemas/` stands at module level: none hides in a function to dodge an
import cycle (the URI parser's errors are data; the contract that cites URIs words them)."""

from __future__ import annotations

import ast
from pathlib import Path

import schemas

ROOT = Path(schemas.__file__).parent


def _local_imports(tree: ast.AST) -> list[int]:
    lines: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines += [
                sub.lineno for sub in ast.walk(node) if isinstance(sub, ast.Import | ast.ImportFrom)
            ]
    return lines


def test_no_function_level_import_in_schemas() -> None:
    found = {
        str(path.relative_to(ROOT)): lines
        for path in sorted(ROOT.rglob("*.py"))
        if (lines := _local_imports(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {}


def test_the_check_sees_a_local_import() -> None:
    assert _local_imports(ast.parse("def f():\n    import os\n")) == [2]
