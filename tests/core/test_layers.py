"""The layers import downwards only: the tree is the architecture (docs/, issue 9).

Every import statement of every module is read with `ast` (those inside functions and under
TYPE_CHECKING too), so a lazy import cannot hide an upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.kafka import REPO

# Each layer, low to high, and what of the project it may import besides itself.
_PURE = {"schemas", "streams.settings", "streams.errors", "streams.extras"}
ALLOWED: dict[str, set[str]] = {
    "schemas": set(),
    "streams.errors": set(),
    "streams.extras": {"streams.errors"},  # the install command for a missing extra
    "streams.settings": {"schemas", "streams.errors"},
    "streams.core": _PURE,
    "streams.files": _PURE | {"streams.core"},
    "streams.broker": _PURE | {"streams.core"},
    "streams.ops": _PURE | {"streams.core", "streams.broker"},
    "streams.endpoint": _PURE | {"streams.core", "streams.files", "streams.broker", "streams.ops"},
    # Policy bundles: loaded with the core's own code, followed on the topology's topic.
    "streams.policy": _PURE | {"streams.core", "streams.broker", "streams.ops"},
    "streams.worker": _PURE
    | {"streams.core", "streams.files", "streams.broker", "streams.ops", "streams.policy"},
    # The agent-side client: records built from the models, sent on the topology's topics.
    "streams.client": _PURE | {"streams.core", "streams.broker"},
    "streams.cli": _PURE
    | {
        "streams.core",
        "streams.files",
        "streams.broker",
        "streams.ops",
        "streams.endpoint",
        "streams.worker",
        "streams.policy",
    },
    # `faust -A streams.app`: the worker's entry point.
    "streams.app": {"streams.settings", "streams.errors", "streams.worker"},
    "streams.__init__": set(),
    # `python -m replygate`: the command line under the distribution's name.
    "replygate": {"streams.cli"},
}
# The Kafka, HTTP and metrics clients belong to the shells, never to a pure layer.
SHELL_PACKAGES = {"faust", "mode", "aiokafka", "httpx", "prometheus_client"}
NO_SHELL = {
    "schemas",
    "streams.errors",
    "streams.extras",
    "streams.settings",
    "streams.core",
    "streams.files",
}


def layer_of(module: str) -> str:
    """`streams.core.pipeline` -> `streams.core`; `schemas.records` -> `schemas`."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "streams" and len(parts) > 1 else parts[0]


def modules() -> list[tuple[str, Path]]:
    found = []
    for package in ("schemas", "streams", "replygate"):
        for path in sorted((REPO / package).rglob("*.py")):
            found.append((".".join(path.relative_to(REPO).with_suffix("").parts), path))
    return found


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import hides its layer"
            assert node.module is not None
            names.add(node.module)
    return names


MODULES = modules()


def test_every_module_belongs_to_a_known_layer() -> None:
    assert len(MODULES) > 40
    assert {layer_of(name) for name, _ in MODULES} <= set(ALLOWED)


@pytest.mark.parametrize(("name", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_imports_point_down_the_layers(name: str, path: Path) -> None:
    own = layer_of(name)
    project = {
        n for n in imported(path) if n.split(".")[0] in ("schemas", "streams", "replygate")
    }
    upward = sorted(n for n in project if layer_of(n) not in ALLOWED[own] | {own})
    assert not upward, f"{name} ({own}) imports {upward}"
    if own in NO_SHELL:
        shell = sorted(n for n in imported(path) if n.split(".")[0] in SHELL_PACKAGES)
        assert not shell, f"{name} ({own}) imports {shell}"
