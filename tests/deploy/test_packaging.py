"""The wheel carries every layer package of `schemas` and `streams`, and no development tool."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.support.checkout import copy_checkout
from tests.support.kafka import REPO


def test_the_wheel_holds_every_layer_and_nothing_of_dev_tests_or_bench(tmp_path: Path) -> None:
    source = tmp_path / "src"
    copy_checkout(source)
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(tmp_path / "wheel"),
            str(source),
        ],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "wheel").glob("replygate-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {
        str(init.relative_to(REPO))
        for top in ("schemas", "streams", "replygate")
        for init in (REPO / top).rglob("__init__.py")
    }
    assert packages <= names, sorted(packages - names)
    assert {"streams/cli/__main__.py", "replygate/__main__.py"} <= names
    shipped = {name.split("/")[0] for name in names if not name.startswith("replygate-")}
    assert shipped == {"schemas", "streams", "replygate"}, shipped
