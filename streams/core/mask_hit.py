"""What masking reports: a value type alone, so the decision and its readers (metrics, the
audit record, `replygate check`) name it without loading the leak engine."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MaskHit:
    """Which rule fired where, and how often; never what it hid."""

    rule: str
    path: str
    count: int

    def as_dict(self) -> dict[str, str | int]:
        return {"rule": self.rule, "path": self.path, "count": self.count}
