"""The one safe file reader both file stages use (streams/files/paths.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streams.files.paths import FileRefused, read_regular, resolve_inside


def refusal(call: object) -> str:
    with pytest.raises(FileRefused) as err:
        call()  # type: ignore[operator]
    return err.value.kind


@pytest.fixture
def root(tmp_path: Path) -> str:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "a.txt").write_bytes(b"0123456789")
    (tmp_path / "outside.txt").write_bytes(b"secret")
    return os.path.realpath(tmp_path / "root")


def test_a_file_inside_is_read_up_to_the_bound(root: str) -> None:
    real = resolve_inside(root, "a.txt", strict=True)
    assert read_regular(real, 4) == b"0123"
    assert read_regular(real, 100) == b"0123456789"


def test_a_path_that_leaves_the_root_is_refused_by_text_or_by_symlink(root: str) -> None:
    assert refusal(lambda: resolve_inside(root, "../outside.txt", strict=True)) == "outside"
    os.symlink("../outside.txt", os.path.join(root, "link.txt"))
    assert refusal(lambda: resolve_inside(root, "link.txt", strict=False)) == "outside"


def test_missing_and_looping_paths_are_told_apart_only_when_strict(root: str) -> None:
    assert refusal(lambda: resolve_inside(root, "nope.txt", strict=True)) == "not_found"
    assert resolve_inside(root, "nope.txt", strict=False).endswith("nope.txt")
    os.symlink("loop", os.path.join(root, "loop"))
    assert refusal(lambda: resolve_inside(root, "loop", strict=True)) == "loop"


def test_a_fifo_is_refused_without_being_opened(root: str) -> None:
    fifo = os.path.join(root, "pipe")
    os.mkfifo(fifo)
    # opening a FIFO with no writer would block a blocking open; it is never opened at all
    assert refusal(lambda: read_regular(fifo, 10)) == "not_regular"


def test_a_size_limit_refuses_before_reading(root: str) -> None:
    real = resolve_inside(root, "a.txt", strict=True)
    assert refusal(lambda: read_regular(real, 4, size_limit=9)) == "oversized"
    assert read_regular(real, 4, size_limit=10) == b"0123"


def test_a_symlink_given_as_the_resolved_path_is_not_followed(root: str) -> None:
    link = os.path.join(root, "alias.txt")
    os.symlink("a.txt", link)
    assert refusal(lambda: read_regular(link, 10)) == "changed"


def test_a_file_swapped_between_stat_and_open_is_refused(
    root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = resolve_inside(root, "a.txt", strict=True)
    other = os.stat(__file__)  # a regular file, but another one
    monkeypatch.setattr(os, "fstat", lambda fd: other)
    assert refusal(lambda: read_regular(real, 10)) == "changed"
