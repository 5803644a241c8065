"""A contract's name is spelled in its own module and the registry only: everything else asks
the contract object (docs/architecture.md, Adding a contract)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from schemas.registry import CONTRACTS, TOOL_CONTRACT_NAME

REPO = Path(__file__).resolve().parents[2]
# A built-in contract's own module (or package) and the registry may spell its name.
OWNERS: dict[str, tuple[str, ...]] = {
    "im.segments.v1": ("schemas/im_segments.py",),
    "assistant.html.v1": ("schemas/html_answer/",),
    "text.plain.v1": ("schemas/text_plain.py",),
    TOOL_CONTRACT_NAME: ("schemas/rich_output.py",),
}
ALLOWED_EVERYWHERE = ("schemas/registry.py",)
SHIPPED = ("schemas", "streams")


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of docstring nodes: prose may name a contract, code may not."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def literals(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of every string literal in a module that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def spelled(names: dict[str, tuple[str, ...]]) -> list[str]:
    """`path:line name` for each literal that spells a name outside its owners."""
    found = []
    for package in SHIPPED:
        for path in sorted((REPO / package).rglob("*.py")):
            relative = path.relative_to(REPO).as_posix()
            if relative in ALLOWED_EVERYWHERE:
                continue
            for line, text in literals(path):
                for name, owners in names.items():
                    if re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", text) and not any(
                        relative.startswith(owner) for owner in owners
                    ):
                        found.append(f"{relative}:{line} {name}")
    return found


def test_the_owners_cover_every_built_in_contract() -> None:
    assert set(OWNERS) == {*CONTRACTS, TOOL_CONTRACT_NAME}


def test_no_module_but_its_own_and_the_registry_spells_a_contract_name() -> None:
    assert spelled(OWNERS) == []


def test_the_scan_finds_a_spelled_name() -> None:
    """Guards the scan: the registry-only rule would catch the contract module's own literal."""
    moved: dict[str, tuple[str, ...]] = {"im.segments.v1": ("schemas/nowhere.py",)}
    assert any(hit.startswith("schemas/im_segments.py") for hit in spelled(moved))
