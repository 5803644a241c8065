"""The gate as the worker and `replygate check` build it: with the file stage on the disk."""

from __future__ import annotations

from streams.core.pipeline import Gate
from streams.files.stage import DiskFiles
from streams.settings import FileSettings, GateSettings, Settings


def disk_gate(settings: Settings) -> Gate:
    """Each part gets only its own group, as in the worker."""
    return Gate(settings.group(GateSettings), DiskFiles.from_settings(settings.group(FileSettings)))
