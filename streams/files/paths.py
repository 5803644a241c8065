"""What the file-reading stages (media, CSV snapshots) agree on about paths."""

from __future__ import annotations

import os


def within(root: str, path: str) -> bool:
    """Whether the real path `path` stays in the real directory `root` (the root included: it
    is not outside, and the regular-file check refuses it)."""
    return os.path.commonpath([root, path]) == root
