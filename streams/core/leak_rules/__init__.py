"""The built-in leak rules, a module per family: a rule is data carrying its own examples.

Each family module (`cloud`, `vcs`, `ci_cd`, `registry`, `chat`, `email`, `payment`, `ai`,
`observability`, `productivity`, `database`, `identity`, `private_key`, `kubernetes_docker`,
`generic`, `url`, and `keywords` for the rules that know a secret by a credential word beside
it) lists its rules in four tiers: `SPECIFIC` (formats that are more than a prefix and runs),
`TOKENS` (a vendor's prefix and runs, built by `shapes.token`), `KEYED` (a value beside the
vendor's name, `shapes.keyed`) and `CONTEXT` (secrets known by their context alone).
`streams.core.leak_registry` puts the tiers in that priority order.

Patterns are RE2 syntax (no look-around, no backreferences) and every variable part is bounded
or stops at a delimiter, so a search never scans far past where a match could end. A rule
masks its named `secret*` group if one took part in the match, else the whole match. `reject`
drops a match whose value is a placeholder (`${VAR}`, `<your-key>`, `os.getenv(...)`) rather
than a secret; it sees only the match, never other text. `trigger` is a cheap pattern that
every match of the rule contains (its prefix, its keyword): the masker scans a string once with
all triggers, and runs a rule only when its trigger hit. Triggers use no counted repetition,
which keeps that one combined DFA small and fast.
"""

from __future__ import annotations

from streams.core.leak_rules.filters import STAND_IN, is_placeholder, looks_fake
from streams.core.leak_rules.pieces import SECRET_KEY_BODY
from streams.core.leak_rules.rule import LeakRule, Reject

__all__ = ["SECRET_KEY_BODY", "STAND_IN", "LeakRule", "Reject", "is_placeholder", "looks_fake"]
