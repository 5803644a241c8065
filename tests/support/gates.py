"""The gate as the worker and `replygate check` build it: with the file stage on the disk."""

from __future__ import annotations

from streams.core.pipeline import Gate
from streams.files.stage import DiskFiles
from streams.settings import FileSettings, GateSettings, Settings
from streams.settings.contracts import build_registry


def disk_gate(settings: Settings) -> Gate:
    """Each part gets only its own group, and the registry built from the settings, as in the
    worker."""
    files = DiskFiles.from_settings(settings.group(FileSettings))
    return Gate(settings.group(GateSettings), files, build_registry(settings))
