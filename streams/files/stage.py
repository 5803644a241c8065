"""The gate's file stage on the local disk (`streams.core.ports.FileStage`).

The worker and `replygate check` build it from the settings and hand it to `Gate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schemas.issue import Notice
from schemas.records import ToolCall
from streams.files.media import MediaPolicy, inspect_media
from streams.files.rich_output_tool import RichOutputDecision, run_rich_output

if TYPE_CHECKING:
    from streams.settings.model import FileSettings


@dataclass(frozen=True, slots=True)
class DiskFiles:
    """Media under the media root, CSV charts under the (resolved) workspaces root."""

    media: MediaPolicy
    workspaces_root: Path
    max_csv_bytes: int

    @classmethod
    def from_settings(cls, settings: FileSettings) -> DiskFiles:
        return cls(
            MediaPolicy.from_settings(settings),
            settings.workspaces_root.resolve(),
            settings.max_csv_bytes,
        )

    def inspect_media(self, message: dict[str, Any]) -> tuple[dict[str, Any], list[Notice]]:
        return inspect_media(message, self.media)

    def run_tool(self, call: ToolCall) -> RichOutputDecision:
        return run_rich_output(call, self.workspaces_root, self.max_csv_bytes)
