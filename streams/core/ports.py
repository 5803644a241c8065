"""What the decision core asks of the file layer, so the core itself does no I/O.

`Gate` is given a `FileStage`; `streams.files.stage.DiskFiles` is the one that reads the disk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

from schemas.errors import Issue, Notice
from schemas.records import ToolCall


class ToolOutcome(Protocol):
    """A rich-output tool call judged: `input` the arguments, `output` the CSV snapshot."""

    @property
    def status(self) -> Literal["ok", "error"]: ...
    @property
    def text(self) -> str: ...
    @property
    def input(self) -> dict[str, Any] | None: ...
    @property
    def output(self) -> dict[str, Any] | None: ...
    @property
    def issues(self) -> Sequence[Issue]: ...


class FileStage(Protocol):
    """The gate's two file operations: media attachments of a reply, CSVs of a tool call."""

    def inspect_media(self, message: dict[str, Any]) -> tuple[dict[str, Any], list[Notice]]:
        """The `im.segments.v1` message with unreadable attachments replaced, and why."""
        ...

    def run_tool(self, call: ToolCall) -> ToolOutcome:
        """The tool call checked and its CSV charts read from the workspace."""
        ...
