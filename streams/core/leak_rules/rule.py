"""A leak rule: one credential format as data (pattern, trigger, filter, examples)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# (secret, match text before it, match text after it) -> True when the match is not a secret.
Reject = Callable[[str, str, str], bool]


@dataclass(frozen=True, slots=True)
class LeakRule:
    """A stable kebab-case id, the RE2 pattern, its trigger, and an optional placeholder filter.

    `context`: the value is a secret by what stands around it (a key name, a header), so once
    found it is masked wherever else it stands in the record. `family` groups rules in the docs
    and the corpus; `examples` are texts the rule must mask (synthetic, never a real secret)
    and `near_misses` texts it must leave alone: tests run both for every rule.
    """

    id: str
    pattern: str
    trigger: str
    reject: Reject | None = None
    family: str = "generic"
    context: bool = False
    examples: tuple[str, ...] = ()
    near_misses: tuple[str, ...] = ()
    shape: str = ""
    # Spans to mask inside the secret group (a block of `key: value` lines: the values).
    parts: Callable[[str], list[tuple[int, int]]] | None = None

    def __repr__(self) -> str:
        return f"LeakRule({self.id!r})"
