"""The one registry of built-in leak rules, in priority order.

When two rules mask exactly the same span, the one listed first names it: the specific formats
(`leak_rules.SPECIFIC_RULES`, then the prefixed tokens and vendor-keyed values of
`leak_formats`), then the rules that know a secret only by its context
(`leak_rules.GENERIC_RULES`). docs/leaks.md is generated from this table
(`python -m streams.core.leak_docs`).
"""

from __future__ import annotations

from typing import Final

from streams.core.leak_formats import KEYED_RULES, TOKEN_RULES
from streams.core.leak_rules import GENERIC_RULES, SPECIFIC_RULES, LeakRule

__all__ = ["BUILTIN_RULES", "FAMILIES"]

BUILTIN_RULES: Final[tuple[LeakRule, ...]] = (
    *SPECIFIC_RULES,
    *TOKEN_RULES,
    *KEYED_RULES,
    *GENERIC_RULES,
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
    "generic",
)
