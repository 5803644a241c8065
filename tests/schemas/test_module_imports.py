"""Who owns what, read from the imports.

- Every import in `schemas/` and `streams/core/` stands at module level: none hides in a
  function to dodge an import cycle (the URI parser's errors are data; the contract that cites
  URIs words them).
- A name is imported from the module that defines it; only a package's `__init__` (its curated
  surface) may hand on names of its own submodules.
- The value types (records, issues, verdicts, the decision, a mask hit) load no engine: no leak
  rule, no Faust, no Kafka client, nothing beyond the standard library, pydantic and orjson.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from tests.support.kafka import REPO

# The packages whose modules may not import inside a function.
NO_LOCAL_IMPORTS = ("schemas", "streams/core")
# Project packages, and the trees whose imports of them are checked.
PROJECT = ("schemas", "streams", "replygate")
IMPORTERS = ("schemas", "streams", "replygate", "tests", "bench", "dev/replygate_dev")
# What importing the value types may load, besides the standard library and the project.
LIGHT = {
    "pydantic",
    "pydantic_core",
    "typing_extensions",
    "typing_inspection",
    "annotated_types",
    "orjson",
}
VALUE_MODULES = (
    "schemas",
    "schemas.records",
    "schemas.issue",
    "schemas.verdicts",
    "streams.core.decision",
    "streams.core.mask_hit",
)
ENGINES = ("streams.core.leak", "faust", "mode", "aiokafka", "kafka", "re2")


def _local_imports(tree: ast.AST) -> list[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            lines |= {
                sub.lineno for sub in ast.walk(node) if isinstance(sub, ast.Import | ast.ImportFrom)
            }
    return sorted(lines)


@pytest.mark.parametrize("package", NO_LOCAL_IMPORTS)
def test_no_function_level_import(package: str) -> None:
    root = REPO / package
    found = {
        str(path.relative_to(REPO)): lines
        for path in sorted(root.rglob("*.py"))
        if (lines := _local_imports(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {}


def test_the_check_sees_a_local_import() -> None:
    assert _local_imports(ast.parse("def f():\n    import os\n")) == [2]
    assert _local_imports(ast.parse("async def f():\n    def g():\n        import os\n")) == [3]


def _source(module: str) -> tuple[Path, bool] | None:
    """The file of a project module and whether it is a package's `__init__`."""
    base = REPO.joinpath(*module.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py", True
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py"), False
    return None


def _defined_in(body: list[ast.stmt], names: set[str]) -> None:
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For):
            for part in ("body", "orelse", "finalbody"):
                _defined_in(getattr(node, part, []), names)
            for handler in getattr(node, "handlers", []):
                _defined_in(handler.body, names)
        elif not isinstance(node, ast.Import | ast.ImportFrom):
            names.update(
                sub.id if isinstance(sub, ast.Name) else sub.target.id  # type: ignore[union-attr]
                for sub in ast.walk(node)
                if (isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store))
                or (isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name))
            )


@cache
def defined(module: str) -> frozenset[str]:
    """The names a module binds itself at its top level (not the ones it imports)."""
    found = _source(module)
    assert found is not None, module
    names: set[str] = set()
    _defined_in(ast.parse(found[0].read_text(encoding="utf-8")).body, names)
    return frozenset(names)


def borrowed(tree: ast.AST) -> list[tuple[int, str, str]]:
    """`from M import N` where M is a project module (not a package) that does not define N."""
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
            continue
        if node.module.split(".")[0] not in PROJECT:
            continue
        found = _source(node.module)
        if found is None or found[1]:
            continue
        for alias in node.names:
            is_module = _source(f"{node.module}.{alias.name}") is not None
            if alias.name not in defined(node.module) and not is_module:
                out.append((node.lineno, node.module, alias.name))
    return out


def test_every_name_is_imported_from_its_owner() -> None:
    found = {
        f"{path.relative_to(REPO)}:{line}": f"{module}.{name}"
        for tree in IMPORTERS
        for path in sorted((REPO / tree).rglob("*.py"))
        for line, module, name in borrowed(ast.parse(path.read_text(encoding="utf-8")))
    }
    assert found == {}


def test_the_owner_check_sees_a_borrowed_name() -> None:
    # streams.core.decision imports MaskHit from its own module: naming it there is a borrow.
    assert borrowed(ast.parse("from streams.core.decision import MaskHit\n")) == [
        (1, "streams.core.decision", "MaskHit")
    ]
    assert borrowed(ast.parse("from streams.core.decision import Decision, iso\n")) == []
    assert borrowed(ast.parse("from schemas.codes import TOO_MANY_ERRORS\n")) == []


def _loaded_by(modules: tuple[str, ...]) -> list[str]:
    """sys.modules after importing `modules` in a fresh interpreter (nothing loaded before)."""
    code = (
        "import json, sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    loaded: list[str] = json.loads(out)
    return loaded


def test_value_types_load_no_engine() -> None:
    loaded = _loaded_by(VALUE_MODULES)
    assert [m for m in loaded if m.startswith(ENGINES)] == []
    third_party = {m.split(".")[0] for m in loaded} - set(sys.stdlib_module_names)
    third_party -= {*PROJECT, *(m for m in third_party if m.startswith("_"))}
    assert third_party <= LIGHT, sorted(third_party - LIGHT)


def test_the_engine_check_sees_the_masker() -> None:
    assert "streams.core.leak_compile" in _loaded_by(("streams.core.leaks",))


@pytest.mark.parametrize(
    "module", ["schemas/issue.py", "schemas/verdicts.py", "streams/core/mask_hit.py"]
)
def test_the_plainest_value_types_import_nothing_of_the_project(module: str) -> None:
    """`Issue`, `json_path`, the verdicts and `MaskHit`: every other module may import them,
    so they import none of it (no cycle can pass through them)."""
    tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
    imported = {
        name
        for node in ast.walk(tree)
        for name in (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else []
        )
    }
    assert {name for name in imported if name.split(".")[0] in PROJECT} == set()
