"""The layers import downwards only: the tree is the architecture (docs/, issue 9).

Every import statement of every module is read with `ast` (those inside functions and under
TYPE_CHECKING too), so a lazy import cannot hide an upward dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.kafka import REPO

# Each layer, low to high, and what of the project it may import besides itself. The settings
# are two: the models (`streams.settings.model`, what the core is handed) and the package that
# reads them and the contracts they name (`streams.settings`: environment, config file, schema
# files, modules), which the core never imports.
_CORE_PURE = {"schemas", "streams.settings.model", "streams.errors", "streams.extras"}
_PURE = _CORE_PURE | {"streams.settings"}
ALLOWED: dict[str, set[str]] = {
    "schemas": set(),
    "streams.errors": set(),
    "streams.extras": {"streams.errors"},  # the install command for a missing extra
    "streams.settings.model": {"streams.errors"},
    "streams.settings": {"schemas", "streams.errors", "streams.settings.model"},
    "streams.core": _CORE_PURE,
    "streams.files": _CORE_PURE | {"streams.core"},
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
        "streams.app",  # `replygate worker` builds the app Faust's command line then runs
    },
    # `faust -A streams.app`: the worker's entry point.
    "streams.app": {"schemas", "streams.settings", "streams.errors", "streams.worker"},
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
    "streams.settings.model",
    "streams.settings",
    "streams.core",
    "streams.files",
}


def layer_of(module: str) -> str:
    """`streams.core.pipeline` -> `streams.core`; `schemas.records` -> `schemas`; the settings'
    models `streams.settings.model`, apart from the rest of `streams.settings`."""
    if module == "streams.settings.model" or module.startswith("streams.settings.model."):
        return "streams.settings.model"
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
    project = {n for n in imported(path) if n.split(".")[0] in ("schemas", "streams", "replygate")}
    upward = sorted(n for n in project if layer_of(n) not in ALLOWED[own] | {own})
    assert not upward, f"{name} ({own}) imports {upward}"
    if own in NO_SHELL:
        shell = sorted(n for n in imported(path) if n.split(".")[0] in SHELL_PACKAGES)
        assert not shell, f"{name} ({own}) imports {shell}"


# The core and the settings' models are handed everything they read: no module of theirs
# imports what reads the environment, a file or a module by name, or calls such a function.
NO_IO_LAYERS = {"streams.core", "streams.settings.model"}
IO_MODULES = {
    "os",
    "io",
    "sys",
    "shutil",
    "tempfile",
    "glob",
    "subprocess",
    "socket",
    "importlib",
    "contextvars",
    "tomllib",
    "yaml",
    "pydantic_settings",
    "dotenv",
}
IO_CALLS = {
    "open",
    "__import__",
    "import_module",
    "getenv",
    "read_text",
    "read_bytes",
    "write_text",
    "write_bytes",
    "is_file",
    "is_dir",
    "exists",
    "stat",
    "lstat",
    "iterdir",
    "glob",
    "rglob",
    "mkdir",
    "touch",
    "unlink",
    "expanduser",
    "home",
    "cwd",
}


def io_uses(path: Path) -> list[str]:
    """What of `path` reads the environment, a file or a module by name: imports of the I/O
    modules, any `environ`, and calls of the functions that do it (as names or attributes)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in IO_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module.split(".")[0] in IO_MODULES:
                found.append(node.module)
        elif isinstance(node, ast.Attribute) and node.attr == "environ":
            found.append(f"line {node.lineno}: environ")
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name in IO_CALLS:
                found.append(f"line {node.lineno}: {name}()")
    return found


NO_IO_MODULES = [(name, path) for name, path in MODULES if layer_of(name) in NO_IO_LAYERS]


def test_the_no_io_layers_are_found() -> None:
    names = {name for name, _ in NO_IO_MODULES}
    assert {"streams.core.pipeline", "streams.settings.model", "streams.core.chunks"} <= names
    assert "streams.settings.load" not in names


@pytest.mark.parametrize(("name", "path"), NO_IO_MODULES, ids=[n for n, _ in NO_IO_MODULES])
def test_the_core_reads_no_file_and_no_environment(name: str, path: Path) -> None:
    uses = io_uses(path)
    assert not uses, f"{name} does I/O the shell should do and hand in: {uses}"


def test_the_io_check_sees_each_kind_of_read(tmp_path: Path) -> None:
    """The check above can fail: each way a module could read is caught."""
    for source in (
        "import os\n",
        "from importlib import import_module\n",
        "x = settings.environ\n",
        "data = open('f').read()\n",
        "text = path.read_text()\n",
        "import pydantic_settings\n",
    ):
        module = tmp_path / "m.py"
        module.write_text(source)
        assert io_uses(module), source
    (tmp_path / "m.py").write_text("from pathlib import Path\nroot = Path('a') / 'b'\n")
    assert io_uses(tmp_path / "m.py") == []
