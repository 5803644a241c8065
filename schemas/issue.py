"""What a check reports, alone: an `Issue` (a broken rule at a JSON path), a `Notice` (a change
made on purpose) and the path spelling. It imports nothing of the project, so the codes
registry, the pydantic bridge (`schemas.errors`) and every contract import it and no cycle."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Issue:
    """A broken rule: where (JSON path or HTML location), which rule (stable code), and why."""

    path: str
    code: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "code": self.code, "message": self.message}


@dataclass(frozen=True, slots=True)
class Notice:
    """Something the gate changed on purpose and tells the endpoint about (e.g. media replaced)."""

    path: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


# A key written bare after a dot; any other is quoted: `["a key"]`.
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def json_path(*parts: str | int) -> str:
    """Join keys and indexes as `segments[1].data.target`; the root is `$`."""
    out: list[str] = []
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part == "":
            continue
        elif _IDENT.match(part):
            out.append(f".{part}" if out else part)
        else:
            escaped = part.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'["{escaped}"]')
    return "".join(out) or "$"


def child_path(base: str, *parts: str | int) -> str:
    """Extend an existing path (`$` counts as empty)."""
    tail = json_path(*parts)
    if base in ("", "$"):
        return tail
    if tail == "$":
        return base
    return base + (tail if tail.startswith("[") else "." + tail)
