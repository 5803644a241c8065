"""Credentials that a URL carries: the password in a URL's userinfo.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

from typing import Final

from streams.core.leak_rules.filters import is_placeholder
from streams.core.leak_rules.pieces import B62, fake
from streams.core.leak_rules.rule import LeakRule

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]


def _reject_url_password(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret)


SPECIFIC: Final[tuple[LeakRule, ...]] = ()

TOKENS: Final[tuple[LeakRule, ...]] = ()

KEYED: Final[tuple[LeakRule, ...]] = ()

# Secrets known by their context alone: listed last, so a specific rule names a span both match.
CONTEXT: Final[tuple[LeakRule, ...]] = (
    # URLs with a password in the userinfo (RFC 3986 §3.2.1): only the password is masked, the
    # scheme, user and host stay readable. The password may contain raw "@" or ":".
    LeakRule(
        "url-credentials",
        r"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:@/?#\[\]\"'<>]{0,128}:"
        r"(?P<secret>[^\s/?#\"'<>]{1,128})@[A-Za-z0-9\[]",
        r"://[^\s/?#]*@",
        _reject_url_password,
        family="generic",
        context=True,
        examples=(
            f"postgres://admin:{fake(B62, 16, 'uc1')}@db.internal:5432/app",
            f"https://ci-bot:{fake(B62, 24, 'uc2')}@git.example.com/team/repo.git",
        ),
        near_misses=(
            "git clone ssh://git@github.com/org/repo.git or https://alice@example.com/a?b=c",
            "postgres://app:${DB_PASSWORD}@db:5432/app",
        ),
        shape="`scheme://user:` + password + `@host`",
    ),
)
