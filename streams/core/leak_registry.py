"""The one registry of built-in leak rules, in priority order.

When two rules mask exactly the same span, the one listed first names it: every family's
specific formats (`SPECIFIC`), then the prefixed tokens (`TOKENS`) and vendor-keyed values
(`KEYED`), then the rules that know a secret only by its context (`CONTEXT`); see
`streams.core.leak_rules`. docs/leaks.md is generated from this table
(`python -m streams.core.leak_docs`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Final

from streams.core.leak_rules import (
    ai,
    chat,
    ci_cd,
    cloud,
    database,
    email,
    generic,
    hashes,
    identity,
    iot,
    keywords,
    kubernetes_docker,
    observability,
    payment,
    private_key,
    productivity,
    registry,
    url,
    vcs,
)
from streams.core.leak_rules.rule import LeakRule

__all__ = ["BUILTIN_RULES", "FAMILIES"]

# The rule modules, in the order their rules are listed within a tier.
_MODULES: Final[tuple[ModuleType, ...]] = (
    cloud,
    vcs,
    ci_cd,
    registry,
    chat,
    email,
    payment,
    ai,
    observability,
    productivity,
    database,
    identity,
    private_key,
    kubernetes_docker,
    iot,
    hashes,
    generic,
    url,
    keywords,
)


def _tier(name: str) -> tuple[LeakRule, ...]:
    rules: list[LeakRule] = []
    for module in _MODULES:
        rules.extend(getattr(module, name))
    return tuple(rules)


BUILTIN_RULES: Final[tuple[LeakRule, ...]] = (
    *_tier("SPECIFIC"),
    *_tier("TOKENS"),
    *_tier("KEYED"),
    *_tier("CONTEXT"),
)

# The families rules are grouped in (docs, corpus, the per-family figures).
FAMILIES: Final = (
    "cloud",
    "vcs",
    "ci-cd",
    "registry",
    "chat",
    "email",
    "payment",
    "ai",
    "observability",
    "productivity",
    "database",
    "identity",
    "private-key",
    "kubernetes-docker",
    "iot",
    "password-hash",
    "url",
    "generic",
)
