"""The core distribution alone (no extras) runs `replygate check` and `schema`; every other
command says which extra it needs, in one line and exit 2 (docs/cli.md).

A fresh venv gets the wheel of this checkout and the core dependencies only, from a wheel
directory kept under .run/ (filled once from the package index, then offline and quick).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest

from tests.support.checkout import copy_checkout
from tests.support.kafka import REPO
from tests.support.samples import encode, raw_reply

WHEELS = REPO / ".run" / "core-wheels"
BUILD_NEEDS = ["setuptools>=77", "wheel"]


def core_requirements() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements: list[str] = project["dependencies"]
    return requirements


def filled_wheel_dir() -> Path:
    """Wheels of the core dependencies and the build backend; refilled when they change."""
    wanted = "\n".join([*core_requirements(), *BUILD_NEEDS])
    marker = WHEELS / "requirements.txt"
    if not marker.is_file() or marker.read_text(encoding="utf-8") != wanted:
        WHEELS.mkdir(parents=True, exist_ok=True)
        pip(["wheel", "-q", "-w", str(WHEELS), *wanted.splitlines()])
        marker.write_text(wanted, encoding="utf-8")
    return WHEELS


def pip(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def core_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding replygate's wheel and its core dependencies, nothing else."""
    wheels = filled_wheel_dir()
    tmp = tmp_path_factory.mktemp("core")
    source = tmp / "src"
    copy_checkout(source)
    offline = ["--no-index", "--find-links", str(wheels)]
    pip(["wheel", "-q", "--no-deps", *offline, "-w", str(tmp / "dist"), str(source)])
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (wheel,) = (tmp / "dist").glob("replygate-*.whl")
    pip(["--python", str(venv / "bin" / "python"), "install", "-q", *offline, str(wheel)])
    return venv


def replygate(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "replygate"), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={"PATH": "/usr/bin:/bin"},
        timeout=120,
        check=False,
    )


def test_the_core_venv_has_no_extra(core_venv: Path) -> None:
    probe = (
        "import importlib.util as u; "
        "print([m for m in ('faust', 'aiokafka', 'httpx') if u.find_spec(m)])"
    )
    done = subprocess.run(
        [str(core_venv / "bin" / "python"), "-c", probe], capture_output=True, text=True
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_check_runs_on_the_core_distribution(core_venv: Path, tmp_path: Path) -> None:
    records = tmp_path / "replies.jsonl"
    cancel = {"turn_id": "t-9", "conversation_id": "c-7", "action": "cancel"}
    records.write_bytes(encode(raw_reply()) + b"\nnot json\n" + encode(cancel) + b"\n")
    done = replygate(core_venv, "check", str(records), "--summary", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [(line["id"], line["verdict"]) for line in lines] == [
        ("t-42", "accepted"),
        (2, "dead_letter"),
        ("t-9", "no_reply"),
    ]
    assert "accepted 1" in done.stderr and "not_json 1" in done.stderr
    strict = replygate(core_venv, "check", "--strict", str(records), cwd=tmp_path)
    assert strict.returncode == 1


def test_schema_runs_on_the_core_distribution(core_venv: Path, tmp_path: Path) -> None:
    done = replygate(core_venv, "schema", "im.segments.v1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "segments" in orjson.loads(done.stdout)["properties"]


@pytest.mark.parametrize(
    ("command", "extra"),
    [(["worker"], "worker"), (["topics"], "endpoint"), (["deliveries", "im"], "endpoint")],
)
def test_a_command_that_needs_an_extra_names_it_in_one_line(
    core_venv: Path, tmp_path: Path, command: list[str], extra: str
) -> None:
    done = replygate(core_venv, *command, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"replygate {command[0]}: error: this command needs the {extra} extra: "
        f"pip install '.[{extra}]' in a replygate checkout (no package index serves it)\n"
    )
    assert list(tmp_path.iterdir()) == []  # no state file, nothing created


@pytest.mark.parametrize("command", ["check", "schema", "worker", "topics", "deliveries", "demo"])
def test_help_works_on_the_core_distribution(core_venv: Path, tmp_path: Path, command: str) -> None:
    done = replygate(core_venv, command, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "exit status:" in done.stdout
    assert list(tmp_path.iterdir()) == []
