"""A copy of the checkout as a commit of it would hold it, for tests that build from source.

A copy of the whole folder picks up what the machine runs beside the code (a kubelet socket in
`.k8s-local/`, a broker's data in `.kafka-local/`, a `.venv`): sockets cannot be copied and the
rest only slows the build. git names the files instead: tracked ones and new ones not ignored
(the change being tested), regular files and symlinks only.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from tests.support.kafka import REPO


def checkout_files(repo: Path = REPO) -> list[str]:
    """The checkout's files as git sees them (tracked, or new and not ignored), relative."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    return sorted({os.fsdecode(name) for name in listed.split(b"\0") if name})


def copy_checkout(dest: Path, repo: Path = REPO) -> Path:
    """`dest` filled with `checkout_files`: a file deleted but not yet committed, a socket or a
    folder git ignores is left out."""
    for name in checkout_files(repo):
        source, target = repo / name, dest / name
        try:
            mode = os.lstat(source).st_mode
        except FileNotFoundError:
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)
    return dest
