"""The one error shape, alone: the codes registry builds Issues and the pydantic bridge in
`schemas.errors` reads the registry, so both import this module and neither the other's back."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Issue:
    """A broken rule: where (JSON path or HTML location), which rule (stable code), and why."""

    path: str
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "code": self.code, "message": self.message}
