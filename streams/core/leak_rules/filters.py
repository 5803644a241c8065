"""Placeholder filters shared by every family: what stands for a secret rather than being one.

Python `re` is fine here: the inputs are single matched values and none of these patterns
nests quantifiers, so each check is linear in the value."""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from typing import Final

from streams.core.leak_views import decoded_text

_PLACEHOLDER = re.compile(
    r"""(?ix)
    \$\{[^}]*\}                     # ${VAR}, ${VAR:-default}
    | \$\([^)]*\)                   # $(command)
    | \$[A-Za-z_][A-Za-z0-9_]*      # $VAR
    | %[A-Za-z_][A-Za-z0-9_]*%      # %VAR% (Windows)
    | \{\{.*\}\} | \{%.*%\}         # {{ template }}, {% tag %}
    | \{[A-Za-z0-9_.\s-]*\}         # {password} format fields
    | %(?:\([A-Za-z0-9_]+\))?s      # %s, %(password)s
    | <[^<>]*> | \[[^\[\]]*\]       # <your-api-key>, [REDACTED:...], [token]
    | [*xX•·._\#?-]+ | …            # ***, xxxx, ...
    | (?:[A-Za-z0-9]{1,12}[_-]){0,3}[A-Za-z0-9]{0,4}(?:\.\.\.|…|[*xX•]{3,})  # sk-..., ghp_xxx
    | (?:your|insert|enter|replace|put)[\s_.-].* | your[A-Z].*
    | my[_-]?(?:password|passwd|secret|token|api[_-]?key|key)
    | (?:example|sample|dummy|placeholder|fake|test|changeme|change[_-]?me|replace[_-]?me
       |todo|tbd|fixme|redacted|hidden|masked|omitted|none|null|nil|undefined|true|false
       |required|optional|empty|unset|default|string|str|bytes|int|bool|any|object|text)
    """
)

# Code that reads a secret from somewhere instead of spelling it out.
_INDIRECT = re.compile(
    r"""(?x)
    (?:os\.environ|os\.getenv|getenv|process\.env|import\.meta\.env|Deno\.env|System\.getenv
      |std::env|env::var|ENV\[|Environment\.|config\.|settings\.|secrets\.|vault\.|self\.|this\.
      |args\.|opts\.|options\.|params\.|request\.|req\.|ctx\.|context\.)
    """
)


def _stands_for_a_secret(v: str) -> bool:
    return not v or _PLACEHOLDER.fullmatch(v) is not None or _INDIRECT.match(v) is not None


def is_placeholder(value: str) -> bool:
    """True for values that stand for a secret rather than being one (`${X}`, `<key>`, `***`),
    also when written with escapes or references (`&lt;key&gt;`, `&#42;&#42;&#42;`)."""
    v = value.strip()
    if _stands_for_a_secret(v):
        return True
    decoded = decoded_text(v)
    return decoded != v and _stands_for_a_secret(decoded.strip())


# A documented stand-in is no credential (`EXAMPLE`, `xxxxx`, `PUT_YOUR_TOKEN_HERE`).
STAND_IN: Final = re.compile(r"EXAMPLE|example|[xX*#]{5,}|PLACEHOLDER|YOUR_|_HERE", re.ASCII)


def looks_fake(value: str) -> bool:
    """A value too regular to be random: a stand-in word, or (12+ characters) most of the
    alphabet typed out, one character in most places or three digits over and over, or (32+)
    runs of one character and little entropy per character.
    Issued credentials are random; `glc_1111...`, `12312312...`, `sgp_5555555dAAAAA...` are not."""
    if STAND_IN.search(value) is not None:
        return True
    n = len(value)
    if n < 12:
        return False
    if _alphabet_run(value):
        return True
    counts = Counter(value)
    if max(counts.values()) * 5 >= n * 3 or (len(counts) <= 3 and value.isdigit()):
        return True
    return (
        n >= 32
        and _RUN_OF_FIVE.search(value) is not None
        and _entropy(counts, n) < _MIN_BITS_PER_CHAR
    )


# Random hex of 32+ characters carries about 3 bits per character or more (2.99 at the least
# in 2,000 draws); a value under 2.7 bits with a character typed five times in a row
# (`5555555dAAAAA7777777...`) is written by hand.
_MIN_BITS_PER_CHAR: Final = 2.7

_RUN_OF_FIVE = re.compile(r"(.)\1{4}")

# The alphabet typed out (`key_ABCDEFGHIJKLMNOPQRSTUVW9`): 20 letters or more in a row in
# alphabet order. Random base62 never holds such a run (odds about 62^-19 a position); shorter
# runs stay secrets (`AKIAABCDEFGHIJKLMNOP` in tests), and so do digits in order (`1234567890`
# stands inside values that are otherwise random).
_ALPHABET_RUN: Final = 20

# Every such run holds one of these 14 (7 a case): substring searches, not a loop in Python.
_ALPHABET_PIECES: Final = tuple(
    letters[i : i + _ALPHABET_RUN]
    for letters in (string.ascii_lowercase, string.ascii_uppercase)
    for i in range(len(letters) - _ALPHABET_RUN + 1)
)


def _alphabet_run(value: str) -> bool:
    return any(piece in value for piece in _ALPHABET_PIECES)


def _entropy(counts: Counter[str], n: int) -> float:
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def reject_fake(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret) or looks_fake(secret)
