"""The gate as the worker and `replygate check` build it: with the file stage on the disk."""

from __future__ import annotations

from streams.core.pipeline import Gate
from streams.files.stage import DiskFiles
from streams.settings import Settings


def disk_gate(settings: Settings) -> Gate:
    return Gate(settings, DiskFiles.from_settings(settings))
