"""Pattern pieces and example makers shared by several families.

Bounded repetition keeps each search short (a thread dies after at most that many
characters), which is what makes repeated searches over one string linear overall."""

from __future__ import annotations

import base64
import random
import string
from typing import Final

from streams.core.leak_rules.filters import is_placeholder, looks_fake

# A token that must not continue into more token characters (for fixed-length formats).
_END = r"(?:[^A-Za-z0-9_-]|$)"

# Key/value separators of code and config: =, ==, :=, =>, :, <-, with optional quote around key,
# and a type annotation before `=` (`password: str = "..."`).
_KEY_CLOSE = r"(?:\\?[\"'`]\]?)?"

_TYPE_HINT = r":[ \t]{0,4}[A-Za-z_][A-Za-z0-9_.]{0,30}(?:\[[A-Za-z0-9_., |]{0,40}\])?\??[ \t]{0,4}="

# Go's `var password string = "..."`: a type name between the key and `=`.
_GO_TYPE = r"[ \t]{1,4}\*?[A-Za-z_][A-Za-z0-9_.]{0,30}[ \t]{1,4}="

# On the key's line only (an empty value never takes the next line's text); Makefile `?=`,
# `::=` and `:::=`, Go `:=`, PHP `.=`, Ruby/PHP `=>`, R `<-`.
ASSIGN = (
    rf"{_KEY_CLOSE}[ \t]{{0,8}}(?:{_TYPE_HINT}|{_GO_TYPE}|=>|:::=|::=|:=|\?=|\.=|={{1,3}}|:|<-)"
    rf"[ \t]{{0,8}}"
)

# A dict key that names a secret: {"password": ...}, {"OPENAI_API_KEY": ...}, {"clientSecret": ...}.
SECRET_KEY_BODY: Final = (
    r"[A-Za-z0-9_.-]{0,60}(?:passwd|password|passphrase|[_.-]pass|pwd|secret|token"
    r"|credentials?|(?:api|secret|access|private|auth|client|encryption|signing|master|app"
    r"|session)[_-]?(?:key|token|secret)|apikey)"
)


def fake(alphabet: str, n: int, seed: str) -> str:
    """A synthetic value for an example (never a real secret): `n` characters of `alphabet`."""
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


B62 = string.ascii_letters + string.digits

B64 = B62 + "+/"

URL = B62 + "_-"

HEX = "0123456789abcdef"

UPPER = string.ascii_uppercase + string.digits


def b64(text: str, *, urlsafe: bool = False) -> bytes | None:
    """Base64 (or base64url) as a secret is written, padding optional; None when it is not."""
    if urlsafe:
        text = text.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except ValueError:
        return None


def reject_pair_secret(secret: str, _before: str, _after: str) -> bool:
    return (
        len(secret) < 4
        or is_placeholder(secret)
        or looks_fake(secret)
        or secret.startswith("$")
        or secret.lower() in _WORD_PASSWORDS
    )


# The passwords of examples (`curl -u user:pass`, `username:password`): words, not secrets.
_WORD_PASSWORDS: Final = frozenset(
    {"pass", "password", "passwd", "pwd", "secret", "token", "changeme", "changeit", "test"}
    | {"apikey", "api-key", "api_key", "mypassword"}
)


LOWER = string.ascii_lowercase + string.digits


def reject_not_random_id(secret: str, _before: str, _after: str) -> bool:
    """An issued id in a URL path mixes letters and digits; a word or a stand-in does not
    (`/hooks/incomingwebhooksetup`, `/api/v1/<token>/`, `xxxx...`)."""
    return (
        is_placeholder(secret)
        or looks_fake(secret)
        or not any(c.isdigit() for c in secret)
        or not any(c.isalpha() for c in secret)
    )


def fake_uuid(seed: str) -> str:
    """A synthetic random UUID (lower-case hex) for an example."""
    h = fake(HEX, 32, seed)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def reject_not_mixed_case(secret: str, _before: str, _after: str) -> bool:
    """Issued base62 mixes both cases and digits; hex digests and words do not."""
    body = secret.rsplit("-", 1)[-1]
    return (
        is_placeholder(secret)
        or looks_fake(body)
        or not any(c.isupper() for c in body)
        or not any(c.islower() for c in body)
        or not any(c.isdigit() for c in body)
    )


def reject_pair_half(secret: str, _before: str, _after: str) -> bool:
    """The secret half of a key pair: random, not a stand-in, not a hex digest (a commit
    SHA after a key id is no secret)."""
    lowered = secret.lower()
    return (
        is_placeholder(secret)
        or looks_fake(secret)
        or (all(c in "0123456789abcdef" for c in lowered) and secret == lowered)
        or sum(1 for test in (str.isupper, str.islower, str.isdigit) if any(map(test, secret))) < 2
    )
