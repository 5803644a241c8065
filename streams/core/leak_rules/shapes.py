"""Credential formats written as data: a vendor's prefix and runs, or a keyword and a value shape.

Most credential formats are a fixed prefix followed by runs of one alphabet (`ghp_` + 36
base62) or, without a prefix, a value whose shape is only telling next to the vendor's name
(`SUMO_ACCESS_ID = "su..."`). `token` and `keyed` build a `LeakRule` from such a description:
the RE2 pattern with its boundaries (a match never starts or ends inside a longer token), a
trigger of literals only (the prefix or the keyword, for the combined pre-filter), the
placeholder filter, a shape for the docs, and synthetic examples and near misses that the
tests run for every rule. Formats are facts learned from vendors' documentation and the public
rule sets of secret scanners; the patterns and the examples are written here.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from streams.core.leak_rules.filters import is_placeholder, looks_fake
from streams.core.leak_rules.rule import LeakRule, Reject

__all__ = ["UUID", "UUID_ANY_CASE", "UUID_UPPER", "R", "Run", "keyed", "token"]

# Named alphabets: RE2 class content and the characters it stands for.
ALPHABETS: Final[dict[str, tuple[str, str]]] = {
    "hex": ("a-f0-9", "0123456789abcdef"),
    "HEX": ("A-F0-9", "0123456789ABCDEF"),
    "Hex": ("a-fA-F0-9", "0123456789abcdefABCDEF"),
    "b62": ("A-Za-z0-9", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
    "lower": ("a-z0-9", "abcdefghijklmnopqrstuvwxyz0123456789"),
    "upper": ("A-Z0-9", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
    "alpha": ("A-Za-z", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"),
    "digits": ("0-9", "0123456789"),
    "url": ("A-Za-z0-9_-", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"),
    "b64": ("A-Za-z0-9+/", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
    "ah": ("a-h0-9", "0123456789abcdefgh"),
    "b58": (
        "1-9A-HJ-NP-Za-km-z",
        "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz",
    ),
    "bech32": ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
    "bech32l": ("qpzry9x8gf2tvdw0s3jn54khce6mua7l", "qpzry9x8gf2tvdw0s3jn54khce6mua7l"),
    # Bitbucket Data Center tokens: base64 and `@`, `_`, `-`.
    "bbdc": (
        "A-Za-z0-9+/@_-",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/@_-",
    ),
    # Salesforce's opaque token part: base62, `.` and `_`.
    "sfdc": ("A-Za-z0-9._", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._"),
}
# Characters that continue a token: a match may not start right after one or end right
# before one (`photo-xoxb-...-1.jpg` is a path word, `ghp_...Z` a longer token).
_WORD: Final = r"A-Za-z0-9_\-"
# The characters `\b` (RE2: ASCII) counts as a word's.
_WORD_START: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
# Nor after a dot: `video_box.ico-7a38...png` is a file name, not an Infracost key.
_LEFT: Final = rf"(?:^|[^{_WORD}.])"
# A value may be quoted, also with escaped quotes inside JSON.
_QUOTE: Final = r"""(?:\\?["'`])?"""
# Assignment operators of code and config, on one line: = == := ::= :::= ?= => : (YAML, JSON).
_OP: Final = r"(?::::=|::=|:=|\?=|=>|={1,2}|:)"
_KEY_TAIL: Final = r"[A-Za-z0-9_.-]{0,24}"
# A documented stand-in is no credential (`EXAMPLE`, `xxxxx`); neither is a body of one
# character repeated (`ghp_000...0`). Runs alone are no sign: base64 of zero bytes is `AAAA`.


_UNROLL: Final = 128


@dataclass(frozen=True, slots=True)
class Run:
    """`lo`..`hi` characters of a named alphabet (`hi` None: exactly `lo`; -1: no bound)."""

    alphabet: str
    lo: int
    hi: int | None = None

    def regex(self) -> str:
        cls = ALPHABETS[self.alphabet][0]
        if self.hi is None:
            return f"[{cls}]{{{self.lo}}}"
        # A long upper bound costs RE2 a program as long (it unrolls counted repetition);
        # the boundary after the run ends a match just as well.
        top = "" if self.hi < 0 or self.hi > _UNROLL else str(self.hi)
        return f"[{cls}]{{{self.lo},{top}}}"

    @property
    def bounded(self) -> bool:
        """Whether the pattern has an upper bound (long bounds are left open, see `regex`)."""
        return self.hi is None or 0 <= self.hi <= _UNROLL

    def shape(self) -> str:
        if self.hi is None:
            return f"{self.lo} {self.alphabet}"
        top = f"-{self.hi}" if self.bounded else "+"
        return f"{self.lo}{top} {self.alphabet}"

    def draw(self, rng: random.Random, n: int) -> str:
        chars = ALPHABETS[self.alphabet][1]
        return "".join(rng.choice(chars) for _ in range(n))

    @property
    def top(self) -> int:
        if self.hi is None:
            return self.lo
        return self.lo + 24 if self.hi < 0 else min(self.hi, self.lo + 40)


Part = str | Run


def _regex(parts: Sequence[Part]) -> str:
    return "".join(re.escape(p) if isinstance(p, str) else p.regex() for p in parts)


def _shape(parts: Sequence[Part]) -> str:
    return " + ".join(f"`{p}`" if isinstance(p, str) else p.shape() for p in parts)


def _value(parts: Sequence[Part], rng: random.Random, size: str) -> str:
    """A value in the format: every run at its shortest or longest; or its last run one short
    of valid (`short`) or one past its longest (`long`, '' when it has no bound)."""
    runs = [i for i, p in enumerate(parts) if isinstance(p, Run)]
    out = []
    for i, p in enumerate(parts):
        if isinstance(p, str):
            out.append(p)
            continue
        n = p.lo if size in ("short", "min") else p.top
        if i == runs[-1] and size == "short":
            n = p.lo - 1
        if i == runs[-1] and size == "long":
            if not p.bounded:
                return ""
            n = (p.lo if p.hi is None else p.hi) + 1
        out.append(p.draw(rng, n))
    return "".join(out)


def _trigger(prefixes: Sequence[str], parts: Sequence[Part]) -> str:
    """The pre-filter's pattern for a token: its prefix and the start of what follows, 10
    characters in all, 14 after a prefix of fewer than 4 (`0.` + 8 hex is in many decimals,
    `0.` + 8 hex + `-` + 3 hex is not). Classes are written out, never counted, which keeps
    the combined DFA small. A prefix that starts a word is written after `\\b`: the token
    itself starts where no word character is before it, and `ion_` in `mention_target` is
    then no alarm (a newline of a joined text reads like an edge to `\\b`)."""
    first = "|".join(("\\b" if p[:1] in _WORD_START else "") + re.escape(p) for p in prefixes)
    shortest = min(len(p) for p in prefixes)
    need = (14 if shortest < 4 else 10) - shortest
    out: list[str] = []
    for part in parts:
        if need <= 0:
            break
        if isinstance(part, str):
            out.append(re.escape(part[:need]))
            need -= len(part)
            continue
        n = min(part.lo, need)
        out.append(f"[{ALPHABETS[part.alphabet][0]}]" * n)
        need -= n
        if part.lo == 0 or (part.hi is not None and part.hi != part.lo):
            break  # a variable run: what comes after it has no fixed place
    return f"(?:{first}){''.join(out)}"


def _stand_in(parts: Sequence[Part]) -> str:
    """The format's documented placeholder: every run written as x (or 0 for digits)."""
    return "".join(
        p if isinstance(p, str) else ("0" if p.alphabet == "digits" else "x") * p.lo for p in parts
    )


def _reject_stand_in(secret: str, _before: str, _after: str) -> bool:
    return looks_fake(secret) or len(set(secret)) == 1 or is_placeholder(secret)


def _stand_in_after(prefixes: Sequence[str]) -> Reject:
    """Placeholders judged on what follows the prefix (`AAAA...` may be a prefix's own)."""
    ordered = sorted(prefixes, key=len, reverse=True)

    def reject(secret: str, _before: str, _after: str) -> bool:
        body = next((secret[len(p) :] for p in ordered if secret.startswith(p)), secret)
        return _reject_stand_in(body, _before, _after) or is_placeholder(secret)

    return reject


def _right(parts: Sequence[Part]) -> str:
    """The character after a token: not one that would continue it."""
    last = parts[-1]
    chars = last[-1:] if isinstance(last, str) else ALPHABETS[last.alphabet][1]
    extra = "".join(sorted({c for c in chars if not (c.isalnum() or c in "_-")}))
    return rf"(?:[^{_WORD}{re.escape(extra)}]|$)"


def token(
    rule_id: str, family: str, prefixes: Sequence[str], *parts: Part, tail: str = ""
) -> LeakRule:
    """A prefixed token: one of `prefixes` then `parts` (then an optional RE2 `tail`, such as a
    version suffix), as a whole token."""
    first = "|".join(re.escape(p) for p in prefixes)
    pattern = rf"{_LEFT}(?P<secret>(?:{first}){_regex(parts)}{tail}){_right(parts)}"
    rng = random.Random(rule_id)
    lo = prefixes[0] + _value(parts, rng, "min")
    hi = prefixes[-1] + _value(parts, rng, "max")
    short = prefixes[0] + _value(parts, rng, "short")
    examples = (
        f"Use {lo} for the deploy.",
        f'curl -H "X-Service-Auth: {hi}" https://api.example.com/v1/items',
    )
    near: list[str] = [
        f"https://cdn.example.com/media/photo-{lo}-1.jpg",
        f"e.g. {prefixes[0]}{_stand_in(parts)} in the docs",
    ]
    long = _value(parts, rng, "long")
    if long:
        near.append(f"the build id is {prefixes[0]}{long} today")
    if short != lo:
        near.insert(0, f"Use {short} for the deploy.")
    return LeakRule(
        rule_id,
        pattern,
        _trigger(prefixes, parts),
        _stand_in_after(prefixes),
        family=family,
        examples=examples,
        near_misses=tuple(near),
        shape=" or ".join(f"`{p}`" for p in prefixes) + " + " + _shape(parts),
    )


def keyed(
    rule_id: str,
    family: str,
    keywords: Sequence[str],
    *parts: Part,
    key: str,
) -> LeakRule:
    """A value known by the vendor's name beside it: `SUMO_ACCESS_ID = "su..."`.

    The keyword must start a word (`globalKey` is not `lob`), the name runs on for at most 24
    characters, the operator and value stay on the key's line; `key` is an example name."""
    kw = "|".join(re.escape(k) for k in keywords)
    # As a name is written: `sumo`, `Sumo` or `SUMO`, not `sumOfValues`.
    cased = "|".join(sorted({re.escape(v) for k in keywords for v in _spellings(k)}))
    literals = [p for p in parts if isinstance(p, str) and len(p) >= 4]

    def reject(secret: str, before: str, after: str) -> bool:
        # A run the format itself spells (Dropbox's `AAAAAAAAAA`) is no placeholder.
        bare = secret
        for literal in literals:
            bare = bare.replace(literal, "")
        return _reject_stand_in(bare, before, after) or is_placeholder(secret)

    pattern = (
        rf"(?:^|[^a-z])(?:{cased}){_KEY_TAIL}{_QUOTE}[ \t]{{0,4}}{_OP}[ \t]{{0,4}}{_QUOTE}"
        rf"(?P<secret>{_regex(parts)}){_right(parts)}"
    )
    rng = random.Random(rule_id)
    v1 = _value(parts, rng, "min")
    v2 = _value(parts, rng, "max")
    short = _value(parts, rng, "short")
    examples = (f'{key} = "{v1}"', f"{key.lower()}: {v2}")
    near = (
        f'{key} = "{short}"',
        f"{key}=${{{key}}}",
        f"{key}=\nNEXT_SETTING={v1}",
        f'{key}: "{_stand_in(parts)}"',
    )
    return LeakRule(
        rule_id,
        pattern,
        rf"(?i:{kw})[A-Za-z0-9_.\-]*{_QUOTE}[ \t]*(?:[:=]|\?=)",
        reject,
        family=family,
        context=True,
        examples=examples,
        near_misses=near,
        shape=f"`{key}` = " + _shape(parts),
    )


def _spellings(keyword: str) -> tuple[str, str, str]:
    """A vendor name in code: lower case, capitalised, or upper case."""
    return keyword.lower(), keyword[:1].upper() + keyword[1:].lower(), keyword.upper()


R = Run
UUID: Final = (R("hex", 8), "-", R("hex", 4), "-", R("hex", 4), "-", R("hex", 4), "-", R("hex", 12))
UUID_UPPER: Final = (
    R("HEX", 8),
    "-",
    R("HEX", 4),
    "-",
    R("HEX", 4),
    "-",
    R("HEX", 4),
    "-",
    R("HEX", 12),
)
# Next to the vendor's name a UUID may be written in either case (`12345678-ABCD-...`).
UUID_ANY_CASE: Final = (
    R("Hex", 8),
    "-",
    R("Hex", 4),
    "-",
    R("Hex", 4),
    "-",
    R("Hex", 4),
    "-",
    R("Hex", 12),
)
