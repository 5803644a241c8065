"""The built-in leak rules: one RE2 pattern per credential format, each citing where it comes from.

Patterns are RE2 syntax (no look-around, no backreferences) and every variable part is bounded
or stops at a delimiter, so a search never scans far past where a match could end. Values after
a secret-named key have no length bound: they run to their closing quote or delimiter, which
also ends every attempt that does not match. A rule masks
its named `secret*` group if one took part in the match (the value of `password = "..."`), else
the whole match. `reject` drops a match whose value is a placeholder (`${VAR}`, `<your-key>`,
`os.getenv(...)`) rather than a secret; it sees only the match, never other text.

`trigger` is a cheap pattern that every match of the rule contains (its prefix, its keyword):
the masker scans a string once with all triggers, and runs a rule only when its trigger hit.
Triggers use no counted repetition, which keeps that one combined DFA small and fast.
"""

from __future__ import annotations

import base64
import json
import math
import random
import re
import string
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from streams.core.leak_views import decoded_text

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


# ---------------------------------------------------------------------------------------------
# Placeholder filters. Python `re` is fine here: the inputs are single matched values and none
# of these patterns nests quantifiers, so each check is linear in the value.

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
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_DOTTED_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|::|->)[A-Za-z_$][A-Za-z0-9_$]*)+")
_TYPE_NAME = re.compile(
    r"(?:Optional|Union|List|Dict|Secret|SecretStr|SecretBytes|String|Str|Text|Bytes|Int|Integer"
    r"|Number|Boolean|Bool|Any|Object|Annotated|Field|Literal|char|varchar|uuid)\b.*",
    re.IGNORECASE,
)
_CODE_WORDS = frozenset(
    {"await", "async", "new", "yield", "lambda", "function", "return", "typeof", "input"}
    | {"prompt", "getpass", "self", "this"}
)
_KEYWORD_IN_VALUE = re.compile(r"(?i)passw|passwd|secret|token|api[_-]?key|apikey|credential")
_PASS_FAMILY = re.compile(r"(?i)pass|pwd")
_PATHLIKE = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\|\\\\)")
_QUOTES = ('"', "'", "`")
# A secret's name and value as two quoted arguments: `("API_TOKEN", "`.
_ARGUMENT_PAIR = re.compile(r"[\"'],[ \t]*\\?[\"']$")
# An environment or property name followed by its own operator: `API_KEY=`, `jdbc.url=`.
_NEXT_KEY = re.compile(r"(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:[._][a-z0-9]+)+)[=:]")
# A key that names a published value: `publicToken`, `publishable_token`.
_PUBLIC_NAME = re.compile(r"(?i)publi(?:c|shable)[_.-]?token")
# Anti-forgery tokens are per-session form values, not credentials (`csrf-token=`, `_xsrf`).
_CSRF = re.compile(r"(?i)[cx]srf")
# A Maven/Gradle/npm coordinate after `group:` (artifact-version, or artifact:version).
_COORDINATE = re.compile(r"[a-z][a-z0-9_.-]*[-:]v?[0-9]+(?:\.[0-9]+)+[A-Za-z0-9.+-]*")
_VERSION = re.compile(r"[~^<>=]{0,2}v?[0-9]+(?:\.[0-9x*]+)+(?:[-+][A-Za-z0-9.]+)?")
# A lower-case kebab or snake name (`api-key`, `db_password`): how manifests name a secret.
_REFERENCE = re.compile(r"[a-z][a-z0-9]*(?:[-_.][a-z0-9]+)+")


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


def _reject_fake(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret) or looks_fake(secret)


def _looks_like_word(value: str) -> bool:
    """Letters only and short: after `key:` in prose this is a word, not a secret."""
    return len(value) < 16 and value.isalpha()


def _reject_url_password(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret)


def _reject_assigned_value(secret: str, before: str, after: str) -> bool:
    """Keep literals in assignments; drop placeholders, code that reads the secret, type hints."""
    if is_placeholder(secret) or looks_fake(secret) or before.startswith("://"):
        return True
    # `ops_eyJzaWdu...`: a value cut short in the text is shown as an example, not a secret.
    if after.startswith(("..", "…")):
        return True
    # `GITHUB_API_KEY= DYNATRACE_API_KEY=` (lines joined into one, as the preview does): the
    # next key with an empty value of its own, not this key's value.
    if _NEXT_KEY.match(secret) is not None:
        return True
    # `publicToken = "..."`, `publishable_token`: made to be published, not a secret.
    if _PUBLIC_NAME.search(before) is not None:
        return True
    # `getenv("API_TOKEN", "...")`: a default or a property value, kept when it looks issued.
    if _ARGUMENT_PAIR.search(before) is not None:
        mixed = any(c.isupper() for c in secret) and any(c.islower() for c in secret)
        issued = _random_value(secret) or (len(secret) >= 8 and mixed)
        return not issued or _KEYWORD_IN_VALUE.search(secret) is not None
    if before.endswith(_QUOTES) and after.startswith(_QUOTES):
        if len(secret) < 3:
            return True
        # `"@octokit/auth-token": "^4.0.0"`: a package and its version range.
        if _VERSION.fullmatch(secret) is not None and _PASS_FAMILY.search(before) is None:
            return True
        # Prose in a quoted `secret: "used to sign cookies"` is no secret; a passphrase may be.
        return any(c.isspace() for c in secret) and _PASS_FAMILY.search(before) is None
    if before.endswith(">"):  # <password>...</password>
        return len(secret) < 3
    op = before.rstrip()
    prose_like = op.endswith(":") or before.startswith("--")
    ident = _IDENTIFIER.fullmatch(secret) is not None
    return (
        len(secret) < 4
        or _CSRF.search(before) is not None
        # `"@octokit/auth-token": "^4.0.0"`: a package and its version range.
        or _VERSION.fullmatch(secret) is not None
        # `io.jsonwebtoken:jjwt-jackson-0.11.2`: a package coordinate, not a value.
        or (before.endswith(":") and _COORDINATE.fullmatch(secret) is not None)
        # `key: api-key`, `secretName: db-password`: the name of a secret, not its value.
        or (
            _REFERENCE.fullmatch(secret) is not None
            and _KEYWORD_IN_VALUE.search(secret) is not None
        )
        or secret.lower() in _CODE_WORDS
        or secret.startswith(("-", "!", "&", "*"))
        or (prose_like and _looks_like_word(secret))
        # `token: config.api_token` reads a value; `token: s.Q7vLm2Xp9RtK4wNb8ZcYh3Df` is one.
        or (_DOTTED_NAME.fullmatch(secret) is not None and not _random_segment(secret))
        or _TYPE_NAME.fullmatch(secret) is not None
        or _PATHLIKE.match(secret) is not None
        # `api_key=api_key`, `token=GITHUB_TOKEN`: a variable passed on, not a literal.
        or (
            ident
            and _KEYWORD_IN_VALUE.search(secret) is not None
            and ("_" in secret or not any(c.isdigit() for c in secret))
        )
    )


def _random_segment(value: str) -> bool:
    """A dotted name with a part no one would type: 16+ characters mixing digits and cases."""
    return any(
        len(part) >= 16
        and any(c.isdigit() for c in part)
        and any(c.isupper() for c in part)
        and any(c.islower() for c in part)
        for part in re.split(r"[.:>-]+", value)
    )


def _reject_connection_password(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret) or looks_fake(secret)


def _reject_header(secret: str, _before: str, _after: str) -> bool:
    return is_placeholder(secret) or len(secret) < 8 or looks_fake(secret)


def _reject_auth_header(secret: str, before: str, after: str) -> bool:
    if _SCHEME_BEFORE.search(before) is not None:
        return _reject_header(secret, before, after)
    return _reject_bare_header(secret, before, after)


_SCHEME_BEFORE = re.compile(r"(?i)(?:bearer|basic|token|digest|apikey|ssws)[ \t]+$")


def _reject_bare_header(secret: str, before: str, after: str) -> bool:
    """`Authorization: <value>` without a scheme word: only a value with a digit in it (a word
    or a sentence after the colon is prose, `Bearer` alone a scheme with its token elsewhere)."""
    return _reject_header(secret, before, after) or not any(c.isdigit() for c in secret)


# ---------------------------------------------------------------------------------------------
# Pattern pieces. Bounded repetition keeps each search short (a thread dies after at most that
# many characters), which is what makes repeated searches over one string linear overall.

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
_ASSIGN = (
    rf"{_KEY_CLOSE}[ \t]{{0,8}}(?:{_TYPE_HINT}|{_GO_TYPE}|=>|:::=|::=|:=|\?=|\.=|={{1,3}}|:|<-)"
    rf"[ \t]{{0,8}}"
)


def _quoted(first: int) -> str:
    """A quoted literal (", ' or `; quotes may be backslash-escaped) whose inside is secret{n}.

    Any length: the value runs to its closing quote on the same line."""
    return "|".join(
        rf"\\?{q}(?P<secret{first + i}>[^{q}\r\n]+?)\\?{q}" for i, q in enumerate(('"', "'", "`"))
    )


# PEM armour (RFC 7468 §2): base64 lines, optional `Proc-Type:`/`DEK-Info:` headers, and in JSON
# or source code the newlines may be written as `\n`. A lone hyphen is allowed (`DEK-Info`,
# `AES-128-CBC`) but never two in a row, so the body stops at the next `-----` marker.
_PEM_BODY = r"(?:[A-Za-z0-9+/=\s\\:,.>|*#]|-[A-Za-z0-9])*"
# Between BEGIN and END lines anything but markup may separate the base64 (quotes and commas of
# a list of lines, `;`, `|`, indentation); markup is left to the rendered view, which keeps tags.
_PEM_ANY_BODY = r"(?:[^<-]|-[A-Za-z0-9])*"
_PEM_LABEL = r"(?: [A-Z0-9]{1,20}){0,3} PRIVATE KEY(?: BLOCK)?"
_PEM = (
    rf"-----BEGIN{_PEM_LABEL}-----"
    rf"(?:{_PEM_ANY_BODY}-----END{_PEM_LABEL}-----"
    # A key cut off before its END line still leaks: mask from BEGIN through its base64.
    rf"|(?:\s|\\[rn]){{0,4}}[A-Za-z0-9+/]{{32}}{_PEM_BODY})"
)

# A dict key that names a secret: {"password": ...}, {"OPENAI_API_KEY": ...}, {"clientSecret": ...}.
SECRET_KEY_BODY: Final = (
    r"[A-Za-z0-9_.-]{0,60}(?:passwd|password|passphrase|[_.-]pass|pwd|secret|token"
    r"|credentials?|(?:api|secret|access|private|auth|client|encryption|signing|master|app"
    r"|session)[_-]?(?:key|token|secret)|apikey)"
)

# Words that end a key naming a secret: DB_PASSWORD, apiKey, client_secret, GITHUB_TOKEN.
_SECRET_KEYWORD = (
    r"(?i:passwd|password|passphrase|[_.-]pass|pwd|secret|token|credentials?|apikey"
    r"|(?:api|secret|access|private|auth|client|encryption|signing|master|app|session)[_-]?key)"
)
_ASSIGN_TRIGGER = (
    r"(?i:pass|pwd|secret|token|credential|credentials|key|passphrase|passwd|password)"
    r"(?:\\?[\"'`]\]?)?[ \t]*(?:[A-Za-z_*][A-Za-z0-9_.]*[ \t]+)?\??\.?(?:[:=]|<-)"
)
# An unquoted value runs to whitespace or punctuation that ends it; a final "." or ":" is the
# sentence's, not the value's.
_BARE_VALUE = (
    r"(?P<secret4>[^\s\"'`,;(){}\[\]<>\\]*[^\s\"'`,;(){}\[\]<>\\.:])"
    # `..` or `...` after it: the value is cut short (an example), which `reject` sees.
    r"(?:\.\.\.?|[\s,;)}\]\"'`\\.:]|$)"
)
_FLAGS = r"(?i:password|passwd|token|api-key|secret|client-secret|access-token)"


def _fake(alphabet: str, n: int, seed: str) -> str:
    """A synthetic value for an example (never a real secret): `n` characters of `alphabet`."""
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


_B62 = string.ascii_letters + string.digits
_B64 = _B62 + "+/"
_URL = _B62 + "_-"
_HEX = "0123456789abcdef"
_UPPER = string.ascii_uppercase + string.digits


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def _pem_example(label: str, newline: str, seed: str) -> str:
    lines = [_fake(_B64, 64, seed + str(i)) for i in range(3)]
    body = newline.join(lines)
    return f"-----BEGIN {label}-----{newline}{body}{newline}-----END {label}-----"


def _reject_pem(secret: str, _before: str, _after: str) -> bool:
    """A block whose body is too short to be a key (`anything`, nothing, `...`) or holds a
    stand-in (`XXXX...`) is an example of the armour, not a key: a key has hundreds of base64."""
    body = _PEM_MARKER.sub("", secret)
    chars = "".join(_BASE64_RUN.findall(body))
    return len(chars) < _PEM_MIN_BODY or STAND_IN.search(body) is not None


_PEM_MARKER = re.compile(r"-----(?:BEGIN|END)[A-Z0-9 ]*-----")
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]+")
# The shortest private key there is (Ed25519 in PKCS#8) has 64 base64 characters.
_PEM_MIN_BODY: Final = 40


def _jwt_base64(seed: str) -> str:
    """A synthetic JWT (random header, claims and signature) written in base64 again."""
    token = f"eyJ{_fake(_URL, 30, seed + 'h')}.eyJ{_fake(_URL, 60, seed + 'c')}."
    return base64.b64encode((token + _fake(_URL, 43, seed + "s")).encode()).decode()


def _b64(text: str, *, urlsafe: bool = False) -> bytes | None:
    """Base64 (or base64url) as a secret is written, padding optional; None when it is not."""
    if urlsafe:
        text = text.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except ValueError:
        return None


def _reject_not_jwt_base64(secret: str, _before: str, _after: str) -> bool:
    """Keep only what decodes to a three-part JWT (header, claims, signature)."""
    raw = _b64(secret, urlsafe=True)
    return raw is None or _JWT_TEXT.match(raw.decode("latin-1")) is None


_JWT_TEXT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}")


def _jwt_part(obj: dict[str, object]) -> str:
    """A JSON object as a JWT segment (base64url, no padding)."""
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _json_segment(segment: str) -> object:
    """A JWT segment decoded to JSON, or None when it is not base64url of a JSON text."""
    raw = _b64(segment, urlsafe=True)
    try:
        return None if raw is None else json.loads(raw.decode("utf-8"))
    except ValueError:  # UTF-8 and JSON errors are ValueErrors
        return None


def _reject_signed_or_not_jwt(secret: str, _before: str, _after: str) -> bool:
    """Keep only an unsecured JWT (RFC 7519 §6): a JSON header that says `"alg": "none"` and a
    JSON claims set. Anything else ending in `.` is a signed token cut short, or no JWT."""
    header_part, claims_part = secret.split(".")[:2]
    header, claims = _json_segment(header_part), _json_segment(claims_part)
    return not (
        isinstance(header, dict)
        and str(header.get("alg", "")).lower() == "none"
        and isinstance(claims, dict)
    )


def _der_key(seed: str, head: bytes, size: int) -> str:
    """A synthetic DER private key in base64: SEQUENCE, its length, `head` (the version and
    what follows it), then random bytes: `size` bytes inside the SEQUENCE (never a real key)."""
    body = head + random.Random(seed).randbytes(size - len(head))
    if size < 0x80:
        length = bytes([size])
    elif size < 0x100:
        length = bytes([0x81, size])
    else:
        length = bytes([0x82]) + size.to_bytes(2, "big")
    return base64.b64encode(bytes([0x30]) + length + body).decode()


def _reject_not_der_private_key(secret: str, _before: str, _after: str) -> bool:
    """Keep only base64 of a DER private key: a SEQUENCE whose first element is the version
    (`INTEGER 0` then an INTEGER: PKCS#1 RSA, RFC 8017 A.1.2; `INTEGER 0` then a SEQUENCE:
    PKCS#8, RFC 5208 §5; `INTEGER 1` then an OCTET STRING: SEC1 EC, RFC 5915 §3).
    Certificates and public keys start with a SEQUENCE instead, and are left. Only whole
    quanta are decoded: a key whose tail is cut or garbled is still a key."""
    data = secret.rstrip("=")
    if len(data) // 4 * 3 < _DER_MIN_KEY:  # the bytes its whole quanta hold
        return True
    raw = _b64(data[:_DER_HEAD_CHARS])  # all the checks below read: 12 bytes
    if raw is None or raw[0] != 0x30:
        return True
    size = raw[1]
    start = 2 + (size & 0x7F if size & 0x80 else 0)
    if size & 0x80 and not 1 <= size & 0x7F <= 2:
        return True
    head = raw[start : start + 4]
    return head not in _DER_KEY_HEADS


# The shortest private key in DER (Ed25519 in PKCS#8) has 48 bytes.
_DER_MIN_KEY: Final = 40
# SEQUENCE, a length of up to 3 bytes, then the 4 bytes of the version and what follows it.
_DER_HEAD_CHARS: Final = 16
_DER_KEY_HEADS: Final = frozenset({b"\x02\x01\x00\x02", b"\x02\x01\x00\x30", b"\x02\x01\x01\x04"})


def _reject_not_pem_key_base64(secret: str, _before: str, _after: str) -> bool:
    """Keep only base64 of a PEM block whose armour names a private key (a kubeconfig's
    `client-key-data`); its `client-certificate-data` and public keys decode to other armour."""
    raw = _b64(secret[:_PEM_BASE64_HEAD])  # the regex's 74 characters at least: whole
    if raw is None:
        return True
    first = raw.split(b"\n", 1)[0]
    return not (first.startswith(b"-----BEGIN ") and first.endswith(b"PRIVATE KEY-----"))


# base64 characters enough to hold the longest armour line (`-----BEGIN ENCRYPTED PRIVATE KEY-----`)
_PEM_BASE64_HEAD: Final = 72


def _pem_base64_example(label: str, seed: str) -> str:
    return base64.b64encode((_pem_example(label, "\n", seed) + "\n").encode()).decode()


def _reject_docker_auth(secret: str, _before: str, _after: str) -> bool:
    """A docker config `auth` is base64 of `user:password`; anything else is not one."""
    raw = _b64(secret)
    return raw is None or b":" not in raw or is_placeholder(secret)


def _reject_pair_secret(secret: str, _before: str, _after: str) -> bool:
    return (
        len(secret) < 4
        or is_placeholder(secret)
        or looks_fake(secret)
        or secret.startswith("$")
        or secret.lower() in _WORD_PASSWORDS
    )


# What ends the key of a `basic-auth-field`: the whole value after it is the base64 of a pair.
_BASIC_KEY_END = re.compile(
    r"(?i)(?:auth|authentication|credentials?)\\?[\"'`]?[ \t]*[:=][ \t]*\\?[\"'`]?$"
)
_BASIC_USER = re.compile(r"[A-Za-z0-9._@+-]{1,64}")


def _reject_basic_auth_field(secret: str, before: str, after: str) -> bool:
    """The whole value right after the key must be base64 of `user:password`; a password after
    `user:` or in a tuple is judged like a `curl -u` password (no placeholders, no words)."""
    if _BASIC_KEY_END.search(before) is not None:
        raw = _b64(secret)
        if raw is None:
            return True
        user, sep, password = raw.decode("latin-1").partition(":")
        if not sep or _BASIC_USER.fullmatch(user) is None:
            return True
        secret = password
    return _reject_pair_secret(secret, before, after)


# The passwords of examples (`curl -u user:pass`, `username:password`): words, not secrets.
_WORD_PASSWORDS: Final = frozenset(
    {"pass", "password", "passwd", "pwd", "secret", "token", "changeme", "changeit", "test"}
    | {"apikey", "api-key", "api_key", "mypassword"}
)


def _reject_curl_password(secret: str, before: str, after: str) -> bool:
    """`_reject_pair_secret` for `curl -u`: a password in braces (`"{Zq5kVr...}"`) is judged
    by what the braces hold, and a token standing as the user (`-u TOKEN:`) needs a digit."""
    inner = secret[1:-1] if secret.startswith("{") and secret.endswith("}") else secret
    if inner is not secret and not _random_value(inner):
        inner = secret
    if after.startswith(":") and not (
        any(c.isdigit() for c in inner) and any(c.isalpha() for c in inner)
    ):
        return True
    return _reject_pair_secret(inner, before, after)


def _random_value(value: str) -> bool:
    return len(value) >= 8 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _kubernetes_values(secret: str) -> list[tuple[int, int]]:
    """The values of a Secret's `data:`/`stringData:` block: `key: value` per line at the first
    key's indentation, and the deeper lines of a block scalar (`key: |`). Comment lines are
    skipped; a line indented less than the keys ends the block; placeholders stay."""
    spans: list[tuple[int, int]] = []
    key_indent = -1
    in_scalar = False
    pos = 0
    for line in secret.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        body = line.lstrip(" \t")
        content = body.rstrip("\r\n").rstrip(" \t")
        if not content or content.startswith("#"):
            continue
        indent = len(line) - len(body)
        key_indent = indent if key_indent < 0 else key_indent
        if indent < key_indent:
            break
        if indent > key_indent:
            if in_scalar:
                spans.append((start + indent, start + indent + len(content)))
            continue
        m = _K8S_ENTRY.fullmatch(content)
        if m is None:
            break
        value = m.group(1)
        in_scalar = value == "" or _BLOCK_SCALAR.fullmatch(value) is not None
        bare = value.strip("\"'")
        if not in_scalar and bare and not is_placeholder(bare):
            first = start + indent + m.start(1) + value.index(bare)
            spans.append((first, first + len(bare)))
    return spans


_K8S_ENTRY = re.compile(r"[A-Za-z0-9_.-]{1,253}:[ \t]*(.{0,4096})")
_BLOCK_SCALAR = re.compile(r"[|>][-+]?[0-9]?")


def _reject_kubernetes(secret: str, before: str, after: str) -> bool:
    """`kind: Secret` and `data:` in two YAML documents (split by `---`) belong to neither."""
    return "\n---" in before or "\n---" in after or "\n---" in secret


# Specific formats that are more than a prefix and runs (see leak_formats for those).
SPECIFIC_RULES: tuple[LeakRule, ...] = (
    # AWS secret access keys: 40 chars of base64 alphabet, only recognisable next to their name
    # (aws_secret_access_key in ~/.aws/credentials, AWS_SECRET_ACCESS_KEY, "SecretAccessKey").
    # https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html
    LeakRule(
        "aws-secret-access-key",
        r"(?i:secret_?access_?key|aws_?secret_?key)"
        rf"{_ASSIGN}\\?[\"'`]?(?P<secret>[A-Za-z0-9/+]{{40}})(?:[^A-Za-z0-9/+=]|$)",
        r"(?i:secret_?access_?key|aws_?secret_?key)",
        family="cloud",
        context=True,
        examples=(
            f"aws_secret_access_key = {_fake(_B64, 40, 'aws1')}",
            f'"SecretAccessKey": "{_fake(_B64, 40, "aws2")}"',
        ),
        near_misses=(
            'aws_secret_access_key = os.environ["AWS_SECRET_ACCESS_KEY"]',
            f"aws_secret_access_key = {_fake(_B64, 39, 'aws3')}",
        ),
        shape="`aws_secret_access_key =` + 40 base64",
    ),
    # GCP service-account key files: JSON with "private_key": "-----BEGIN PRIVATE KEY-----\n...".
    # https://cloud.google.com/iam/docs/keys-create-delete
    LeakRule(
        "gcp-service-account-key",
        rf"\\?\"private_key\\?\"\s{{0,8}}:\s{{0,8}}\\?\"(?P<secret>{_PEM}(?:\\\\?n)*)\\?\"",
        r"private_key",
        family="private-key",
        examples=(
            '{"type": "service_account", "private_key": "'
            + _pem_example("PRIVATE KEY", "\\n", "gcp1")
            + '\\n"}',
            '{"private_key": "' + _pem_example("PRIVATE KEY", "\\n", "gcp2") + '"}',
        ),
        near_misses=(
            '{"private_key_id": "1a2b3c4d", "private_key": ""}',
            '{"private_key": "see the vault"}',
        ),
        shape='`"private_key": "-----BEGIN PRIVATE KEY-----\\n...`',
    ),
    # Azure Storage / Service Bus / Event Hubs connection strings: AccountKey= (88-char base64 of
    # 64 bytes) and SharedAccessKey= (44-char base64 of 32 bytes).
    # https://learn.microsoft.com/azure/storage/common/storage-configure-connection-string
    LeakRule(
        "azure-storage-key",
        r"(?i:AccountKey|SharedAccessKey)\s{0,4}=\s{0,4}(?P<secret>[A-Za-z0-9+/]{40,100}={0,2})",
        r"(?i:AccountKey|SharedAccessKey)\s*=",
        family="cloud",
        context=True,
        examples=(
            f"DefaultEndpointsProtocol=https;AccountName=rg;AccountKey={_fake(_B64, 86, 'az1')}==",
            f"Endpoint=sb://rg.servicebus.windows.net/;SharedAccessKey={_fake(_B64, 43, 'az2')}=",
        ),
        near_misses=(
            "DefaultEndpointsProtocol=https;AccountName=rg;AccountKey=${STORAGE_KEY}",
            "SharedAccessKeyName=RootManageSharedAccessKey;",
        ),
        shape="`AccountKey=` + 88 base64",
    ),
    # Microsoft Entra ID (Azure AD) client secrets: 40 chars with "Q~" at offset 3 (the format
    # of secrets created since 2021; GitHub secret scanning's azure_active_directory type).
    # https://learn.microsoft.com/entra/identity-platform/howto-create-service-principal-portal
    LeakRule(
        "azure-ad-client-secret",
        r"(?:^|[^A-Za-z0-9_~.-])(?P<secret>[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})"
        r"(?:[^A-Za-z0-9_~.-]|$)",
        r"[0-9]Q~",
        _reject_fake,
        family="cloud",
        examples=(
            f"client secret: {_fake(_B62, 3, 'ad1')}8Q~{_fake(_B62, 34, 'ad2')}",
            f"AZURE_CLIENT_SECRET={_fake(_B62, 3, 'ad3')}7Q~{_fake(_B62, 31, 'ad4')}",
        ),
        near_misses=("Use the Q~ marker: secrets like abc1Q~ are 40 chars.", "7Q~ is short"),
        shape="3 chars + digit + `Q~` + 31-34 chars",
    ),
    # Pre-signed URLs: the signature is a bearer credential until it expires. AWS SigV4
    # X-Amz-Signature (64 hex), GCS V4 X-Goog-Signature (hex RSA), Azure SAS sig= (base64 HMAC).
    # https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html
    # https://learn.microsoft.com/rest/api/storageservices/create-service-sas
    LeakRule(
        "signed-url-signature",
        r"[?&](?i:x-amz-signature|x-goog-signature)=(?P<secret>[0-9a-fA-F]{64,})"
        r"|[?&]sig=(?P<secret2>[A-Za-z0-9%+/]{20,200}(?:%3[Dd]|=){0,2})",
        r"[?&](?i:x-amz-signature|x-goog-signature)=|[?&]sig=",
        family="cloud",
        examples=(
            "https://b.s3.amazonaws.com/r.csv?X-Amz-Date=20240101T000000Z&X-Amz-Signature="
            + _fake(_HEX, 64, "sig1"),
            "https://rg.blob.core.windows.net/a.pdf?sv=2022-11-02"
            f"&sig={_fake(_B62, 43, 'sig2')}%3D",
        ),
        near_misses=(
            "https://example.com/download?file=report.pdf&signature_version=4&sig=abc",
            "https://b.s3.amazonaws.com/r.csv?X-Amz-Signature=abc123",
        ),
        shape="`X-Amz-Signature=` + 64 hex, `sig=` + base64",
    ),
    # Terraform Cloud / HCP Terraform API tokens: 14 chars + ".atlasv1." + 60+ chars.
    # https://developer.hashicorp.com/terraform/cloud-docs/users-teams-organizations/api-tokens
    LeakRule(
        "terraform-cloud-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,100})"
        r"(?:[^A-Za-z0-9_=-]|$)",
        r"\.atlasv1\.",
        _reject_fake,
        family="cloud",
        examples=(
            f"token = {_fake(_B62, 14, 'tf1')}.atlasv1.{_fake(_URL, 67, 'tf2')}",
            f"TFE_TOKEN {_fake(_B62, 14, 'tf3')}.atlasv1.{_fake(_URL, 90, 'tf4')}",
        ),
        near_misses=(
            "Terraform Cloud tokens contain .atlasv1. in the middle.",
            f"{_fake(_B62, 14, 'tf5')}.atlasv1.short",
        ),
        shape="14 base62 + `.atlasv1.` + 60-100 chars",
    ),
    # Atlassian API tokens (Jira, Confluence): "ATATT3" + 186 chars; Bitbucket app passwords
    # "ATBB" + 32. https://support.atlassian.com/atlassian-account/docs/manage-api-tokens-for-your-atlassian-account/
    LeakRule(
        "atlassian-api-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>ATATT3[A-Za-z0-9_=-]{180,250}|ATBB[A-Za-z0-9]{32})"
        r"(?:[^A-Za-z0-9_=-]|$)",
        r"ATATT3|ATBB",
        family="vcs",
        examples=(
            f"JIRA: ATATT3{_fake(_URL, 186, 'at1')}",
            f"app password ATBB{_fake(_B62, 32, 'at2')}",
        ),
        near_misses=("Atlassian tokens begin ATATT3 and app passwords ATBB.", "ATBBshort"),
        shape="`ATATT3` + 186 chars, `ATBB` + 32 base62",
    ),
    # Slack incoming webhooks: https://hooks.slack.com/services/T.../B.../<24 chars>.
    # https://api.slack.com/messaging/webhooks
    LeakRule(
        "slack-webhook",
        r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,200}",
        r"hooks\.slack\.com/",
        family="chat",
        examples=(
            f"https://hooks.slack.com/services/T{_fake(_UPPER, 8, 'sw1')}"
            f"/B{_fake(_UPPER, 9, 'sw2')}"
            f"/{_fake(_B62, 24, 'sw3')}",
            f"post to hooks.slack.com/workflows/T{_fake(_UPPER, 10, 'sw4')}"
            f"/A{_fake(_B62, 30, 'sw5')}",
        ),
        near_misses=(
            "Post to https://hooks.slack.com/ with your webhook path.",
            "hooks.slack.com/services/T1",
        ),
        shape="`https://hooks.slack.com/services/` + path",
    ),
    # Microsoft Teams incoming webhooks (Office 365 connector URLs).
    # https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/add-incoming-webhook
    LeakRule(
        "teams-webhook",
        r"https://[A-Za-z0-9-]{1,63}\.webhook\.office\.com/webhookb2/(?P<secret>[A-Za-z0-9@/_-]{60,400})",
        r"\.webhook\.office\.com/webhookb2/",
        family="chat",
        examples=(
            f"https://acme.webhook.office.com/webhookb2/{_fake(_HEX, 36, 'tw1')}"
            f"@{_fake(_HEX, 36, 'tw2')}"
            f"/IncomingWebhook/{_fake(_HEX, 32, 'tw3')}/{_fake(_HEX, 36, 'tw4')}",
            f"url: https://org.webhook.office.com/webhookb2/{_fake(_URL, 120, 'tw5')}",
        ),
        near_misses=(
            "See https://acme.webhook.office.com/webhookb2/ docs.",
            "webhook.office.com/webhookb2/x",
        ),
        shape="`https://<org>.webhook.office.com/webhookb2/` + path",
    ),
    # Discord bot tokens: base64(user id) "." base64(timestamp) "." HMAC; ids start M/N/O.
    # https://discord.com/developers/docs/reference#authentication
    LeakRule(
        "discord-bot-token",
        r"(?:^|[^A-Za-z0-9_.-])(?P<secret>[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}"
        r"\.[A-Za-z0-9_-]{27,40})(?:[^A-Za-z0-9_.-]|$)",
        r"[MNO][A-Za-z0-9_-]+\.[A-Za-z0-9_-]{6}\.",
        family="chat",
        examples=(
            f"bot token M{_fake(_URL, 23, 'd1')}.{_fake(_URL, 6, 'd2')}.{_fake(_URL, 27, 'd3')}",
            f"DISCORD=N{_fake(_URL, 25, 'd4')}.{_fake(_URL, 6, 'd5')}.{_fake(_URL, 38, 'd6')}",
        ),
        near_misses=(
            "Use Node.js or Microsoft.Extensions.Logging for the bot.",
            "MTIz.abcdef.short",
        ),
        shape="`M`/`N`/`O` + 23-27 + `.` + 6 + `.` + 27-40 base64url",
    ),
    # Discord webhooks: https://discord.com/api/webhooks/<snowflake>/<68-char token>.
    # https://discord.com/developers/docs/resources/webhook
    LeakRule(
        "discord-webhook",
        r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/"
        r"[A-Za-z0-9_-]{60,80}",
        r"discord(?:app)?\.com/api/webhooks/",
        family="chat",
        examples=(
            f"https://discord.com/api/webhooks/{_fake(string.digits, 18, 'dw1')}"
            f"/{_fake(_URL, 68, 'dw2')}",
            f"https://discordapp.com/api/webhooks/{_fake(string.digits, 19, 'dw3')}"
            f"/{_fake(_URL, 68, 'dw4')}",
        ),
        near_misses=(
            "Webhook URLs look like https://discord.com/api/webhooks/<id>/<token>.",
            "https://discord.com/api/webhooks/123/abc",
        ),
        shape="`https://discord.com/api/webhooks/` + id + `/` + 68 chars",
    ),
    # Telegram bot tokens: "<bot id>:<35 chars>"; the secret half starts "AA" in practice and
    # "ABC" in the docs' example. https://core.telegram.org/bots/api#authorizing-your-bot
    LeakRule(
        "telegram-bot-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[0-9]{5,16}:A[A-Za-z0-9_-]{32,34})(?:[^A-Za-z0-9_-]|$)",
        r"[0-9]:A",
        family="chat",
        examples=(
            f"bot {_fake(string.digits, 10, 'tg1')}:AA{_fake(_URL, 33, 'tg2')}",
            f"TELEGRAM_TOKEN={_fake(string.digits, 9, 'tg3')}:AA{_fake(_URL, 32, 'tg4')}",
        ),
        near_misses=("The meeting is at 10:AM, bot 123456:ABC is an example.", "12345:AAshort"),
        shape="5-16 digits + `:A` + 32-34 base64url",
    ),
    # Square: production access tokens "EAAA" + 60, legacy "sq0atp-" + 22, OAuth application
    # secrets "sq0csp-" + 43. https://developer.squareup.com/docs/build-basics/access-tokens
    LeakRule(
        "square-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>EAAA[A-Za-z0-9_-]{60}|sq0(?:atp|csp)-[0-9A-Za-z_-]{22,43})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"EAAA|sq0(?:atp|csp)-",
        family="payment",
        examples=(f"square EAAA{_fake(_URL, 60, 'sq1')}", f"sq0csp-{_fake(_URL, 43, 'sq2')}"),
        near_misses=(
            "Square tokens start with EAAA; sq0atp- is the legacy prefix.",
            "sq0atp-short",
        ),
        shape="`EAAA` + 60, `sq0atp-`/`sq0csp-` + 22-43",
    ),
    # Mailgun private API keys: legacy "key-" + 32 hex; current 32 hex + "-" + 8 + "-" + 8 hex.
    # https://documentation.mailgun.com/docs/mailgun/user-manual/get-started/
    LeakRule(
        "mailgun-api-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>key-[0-9a-f]{32}|[0-9a-f]{32}-[0-9a-f]{8}-[0-9a-f]{8})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"key-|-[0-9a-f]{8}-",
        family="email",
        examples=(
            f"MAILGUN key-{_fake(_HEX, 32, 'mg1')}",
            f"api: {_fake(_HEX, 32, 'mg2')}-{_fake(_HEX, 8, 'mg3')}-{_fake(_HEX, 8, 'mg4')}",
        ),
        near_misses=(
            "Request 123e4567-e89b-12d3-a456-426614174000 used key-rotation policy.",
            f"key-{_fake(_HEX, 31, 'mg5')}",
        ),
        shape="`key-` + 32 hex, 32 hex + `-` + 8 hex + `-` + 8 hex",
    ),
    # Mailchimp API keys: 32 hex + "-us" + datacenter number.
    # https://mailchimp.com/developer/marketing/guides/quick-start/
    LeakRule(
        "mailchimp-api-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[0-9a-f]{32}-us[0-9]{1,2})(?:[^A-Za-z0-9_-]|$)",
        r"-us[0-9]",
        family="email",
        examples=(
            f"mc {_fake(_HEX, 32, 'mc1')}-us21",
            f"MAILCHIMP_KEY={_fake(_HEX, 32, 'mc2')}-us6",
        ),
        near_misses=("Mailchimp keys end with a datacenter suffix like -us21.", "abc-us21"),
        shape="32 hex + `-us` + 1-2 digits",
    ),
    # OpenAI API keys: project (sk-proj-), service account (sk-svcacct-), admin (sk-admin-), and
    # legacy user keys "sk-" + 48 base62 (containing "T3BlbkFJ").
    # https://platform.openai.com/docs/api-reference/authentication
    LeakRule(
        "openai-api-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,250}"
        r"|[A-Za-z0-9]{20,100}))(?:[^A-Za-z0-9_-]|$)",
        r"sk-",
        _reject_pair_secret,
        family="ai",
        examples=(
            f"OPENAI_API_KEY=sk-proj-{_fake(_URL, 80, 'oa1')}",
            f"key sk-{_fake(_B62, 20, 'oa2')}T3BlbkFJ{_fake(_B62, 20, 'oa3')}",
        ),
        near_misses=(
            "Set OPENAI_API_KEY=sk-... in a shell; scikit-learn has risk-based splits.",
            "sk-short",
        ),
        shape="`sk-proj-` + 20-250, `sk-` + 20-100 base62",
    ),
    # Grafana service account tokens "glsa_" + 32 + "_" + 8 hex; Grafana Cloud tokens "glc_".
    # https://grafana.com/docs/grafana/latest/administration/service-accounts/
    LeakRule(
        "grafana-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"
        r"|glc_[A-Za-z0-9+/]{32,400}={0,2})(?:[^A-Za-z0-9_+/=-]|$)",
        r"glsa_|glc_",
        _reject_fake,
        family="observability",
        examples=(
            f"glsa_{_fake(_B62, 32, 'gr1')}_{_fake(_HEX, 8, 'gr2')}",
            f"GRAFANA=glc_{_fake(_B64, 60, 'gr3')}==",
        ),
        near_misses=("Service account tokens start glsa_ and cloud tokens glc_.", "glc_short"),
        shape="`glsa_` + 32 + `_` + 8 hex, `glc_` + base64",
    ),
    # Sentry auth tokens: org tokens "sntrys_" + base64 JSON, user tokens "sntryu_" + 64 hex.
    # https://docs.sentry.io/account/auth-tokens/
    LeakRule(
        "sentry-auth-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>sntrys_[A-Za-z0-9+/=_]{60,400}|sntryu_[a-f0-9]{64})"
        r"(?:[^A-Za-z0-9_+/=-]|$)",
        r"sntry[su]_",
        family="observability",
        examples=(f"sntrys_{_fake(_B64, 90, 'se1')}", f"SENTRY=sntryu_{_fake(_HEX, 64, 'se2')}"),
        near_misses=("Org tokens (sntrys_) replaced the old auth tokens.", "sntryu_abc"),
        shape="`sntrys_` + base64, `sntryu_` + 64 hex",
    ),
    # 1Password account secret keys: "A3-" + six groups of upper base32.
    # https://support.1password.com/secret-key-security/
    LeakRule(
        "onepassword-secret-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})"
        r"-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})(?:[^A-Za-z0-9_-]|$)",
        r"A3-",
        _reject_fake,
        family="identity",
        examples=(
            f"secret key A3-{_fake(_UPPER, 6, 'op1')}-{_fake(_UPPER, 11, 'op2')}-"
            f"{_fake(_UPPER, 5, 'op3')}-{_fake(_UPPER, 5, 'op4')}-{_fake(_UPPER, 5, 'op5')}",
            f"A3-{_fake(_UPPER, 6, 'op6')}-{_fake(_UPPER, 6, 'op7')}-{_fake(_UPPER, 5, 'op8')}-"
            f"{_fake(_UPPER, 5, 'op9')}-{_fake(_UPPER, 5, 'opa')}-{_fake(_UPPER, 5, 'opb')}",
        ),
        near_misses=("Paper size A3-ABCDEF is not a key.", "A3-ABC123-DEF"),
        shape="`A3-` + 6 + `-` + 11 + three groups of 5 (upper base32)",
    ),
    # Fly.io tokens as `flyctl` prints them: "FlyV1 " then comma-separated macaroons (fm1r_,
    # fm1a_, fm2_ + base64). The whole list is the credential, the scheme word is not.
    # https://fly.io/docs/security/tokens/
    LeakRule(
        "fly-io-macaroon",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>fm(?:1[ar]|2)_[A-Za-z0-9+/]{40,}={0,3}"
        r"(?:,(?:fm(?:1[ar]|2)|fo1)_[A-Za-z0-9+/_-]{8,}={0,3}){0,8})(?:[^A-Za-z0-9_+/=-]|$)",
        r"fm1[ar]_|fm2_",
        family="cloud",
        examples=(
            f"Authorization: FlyV1 fm2_{_fake(_B64, 120, 'fly1')}==,fm2_{_fake(_B64, 60, 'fly2')}",
            f"FLY_API_TOKEN=fm1r_{_fake(_B64, 100, 'fly3')}",
        ),
        near_misses=("FlyV1 tokens start fm2_ and are long.", "fm2_short"),
        shape="`FlyV1 ` + `fm2_` + base64 (comma-separated)",
    ),
    # PuTTY private key files (.ppk v2/v3): the lines after `Private-Lines: N` are the key.
    # https://the.earth.li/~sgtatham/putty/0.78/htmldoc/AppendixC.html
    LeakRule(
        "putty-private-key",
        r"Private-Lines:[ \t]{0,4}[0-9]{1,3}[ \t]*(?:\r?\n|(?:\\r)?\\n)"
        r"(?P<secret>(?:[A-Za-z0-9+/=]{1,80}(?:\r?\n|(?:\\r)?\\n)){1,12})",
        r"Private-Lines:",
        family="private-key",
        examples=(
            "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n"
            f"{_fake(_B64, 44, 'pp1')}\nPrivate-MAC: {_fake(_HEX, 64, 'pp2')}",
            "PuTTY-User-Key-File-2: ssh-rsa\\nPrivate-Lines: 2\\n"
            f"{_fake(_B64, 64, 'pp3')}\\n{_fake(_B64, 40, 'pp4')}\\n",
        ),
        near_misses=("PuTTY keys have a Private-Lines header.", "Private-Lines: none"),
        shape="`Private-Lines: N` + N base64 lines",
    ),
    # Kubernetes Secret manifests: the values under `data:` (base64) and `stringData:` (plain)
    # of a `kind: Secret`; the keys and the rest of the manifest stay readable.
    # https://kubernetes.io/docs/concepts/configuration/secret/
    LeakRule(
        "kubernetes-secret-data",
        r"(?i:kind:[ \t]*[\"']?Secret[\"']?)[ \t]*\r?\n(?:[^\x00]{0,400}?\n)?"
        r"[ \t]*(?:data|stringData):[ \t]*\r?\n"
        r"(?P<secret>(?:[ \t]+[^\r\n]*(?:\r?\n|$)|[ \t]*#[^\r\n]*(?:\r?\n|$))+)"
        # The same with `kind: Secret` after the data (keys in another order).
        r"|(?:\n|^)[ \t]*(?:data|stringData):[ \t]*\r?\n"
        r"(?P<secret2>(?:[ \t]+[^\r\n]*\r?\n|[ \t]*#[^\r\n]*\r?\n)+)"
        r"[^\x00]{0,400}?(?i:kind:[ \t]*[\"']?Secret[\"']?)[ \t]*(?:\r?\n|$)",
        r"(?i:kind:[ \t]*[\"']?Secret)",
        _reject_kubernetes,
        family="kubernetes-docker",
        examples=(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n"
            f"  password: {base64.b64encode(_fake(_B62, 18, 'k1').encode()).decode()}\n",
            "kind: Secret\nmetadata:\n  name: api\nstringData:\n"
            f"  token: {_fake(_B62, 30, 'k2')}\n",
            "apiVersion: v1\ndata:\n  # the registry login\n  .dockerconfigjson: |\n    "
            + base64.b64encode(_fake(_B62, 40, "k3").encode()).decode()
            + "\nkind: Secret\ntype: kubernetes.io/dockerconfigjson\n",
        ),
        near_misses=(
            "kind: Deployment\nspec:\n  env:\n    - name: API_KEY\n      valueFrom:\n"
            "        secretKeyRef:\n          name: api\n          key: api-key\n",
            "kind: ConfigMap\ndata:\n  LOG_LEVEL: debug\n",
            "kind: Secret\nmetadata:\n  name: app\n---\nkind: ConfigMap\ndata:\n  mode: fast\n",
            "kind: Secret\ntype: Opaque\ndata:\n  password: {{ .Values.dbPassword }}\n",
            "spec:\n  secretStoreRef:\n    kind: SecretStore\n  data:\n    - secretKey: api-key\n",
        ),
        shape="`kind: Secret` ... `data:` / `stringData:` values",
        parts=_kubernetes_values,
    ),
    # Docker client config (~/.docker/config.json): "auths": {"<registry>": {"auth": base64 of
    # user:password}}. https://docs.docker.com/reference/cli/docker/login/
    LeakRule(
        "docker-config-auth",
        r"\\?\"auth\\?\"[ \t]{0,4}:[ \t]{0,4}\\?\"(?P<secret>[A-Za-z0-9+/]{8,}={0,2})\\?\"",
        r"\"auth\\?\"",
        _reject_docker_auth,
        family="kubernetes-docker",
        context=True,
        examples=(
            '{"auths": {"registry.example.com": {"auth": "'
            + base64.b64encode(f"ci:{_fake(_B62, 20, 'dk1')}".encode()).decode()
            + '"}}}',
            '"auth": "' + base64.b64encode(f"bot:{_fake(_B62, 32, 'dk2')}".encode()).decode() + '"',
        ),
        near_misses=('"auth": "required"', '{"auth": "bearer"}'),
        shape='`"auth": "` + base64(user:password)',
    ),
    # A registry password on a container tool's command line (`docker login -p`, podman, nerdctl,
    # buildah, skopeo, oras, `helm registry login`, `crane auth login`), quoted or not; the
    # documented `--password-stdin` takes none. https://docs.docker.com/reference/cli/docker/login/
    LeakRule(
        "docker-login-password",
        r"\b(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]+registry|crane[ \t]+auth)"
        r"[ \t]+login\b[^\r\n|;&]{0,300}?[ \t](?:-p|--password)(?:[ \t]{1,4}|=)(?:"
        r"\"(?P<secret>[^\"\\\r\n]{1,256})\"|'(?P<secret2>[^'\\\r\n]{1,256})'"
        r"|(?P<secret3>[^\s\"'\\<>|;&]{1,256}))",
        r"(?:docker|podman|nerdctl|buildah|skopeo|oras|registry|auth)[ \t]+login",
        _reject_pair_secret,
        family="kubernetes-docker",
        context=True,
        examples=(
            f"docker login -u deploy -p {_fake(_B62, 20, 'dl1')} registry.example.com",
            f"podman login --username ci --password '{_fake(_B62, 24, 'dl2')}' quay.io",
            f"helm registry login ghcr.io -u bot --password={_fake(_B62, 18, 'dl3')}",
        ),
        near_misses=(
            "echo $CR_PAT | docker login ghcr.io -u USERNAME --password-stdin",
            "docker login -u deploy -p $REGISTRY_PASSWORD registry.example.com",
            "docker login -u user -p password registry.example.com",
            "docker run -p 8080:80 nginx && docker login ghcr.io",
        ),
        shape="`docker login ... -p` / `--password` + password",
    ),
    # A `user:password` pair in a field named for HTTP Basic auth (RFC 7617): `basic_auth`,
    # `basicAuth`, `http_auth`, `user_auth`, as the pair, its base64, or a `("user", "pw")`
    # tuple (Elasticsearch and requests clients). Only the password (or the base64) is masked.
    LeakRule(
        "basic-auth-field",
        r"(?:^|[^A-Za-z0-9])(?i:basic[_.-]?auth(?:entication)?|http[_.-]?(?:basic[_.-]?)?auth"
        r"|user[_.-]?auth|auth[_.-]?basic|basic[_.-]?credentials?)"
        r"\\?[\"'`]?[ \t]{0,4}[:=][ \t]{0,4}"
        r"(?:\([ \t]{0,4}\\?[\"'][^\"'\\\r\n]{1,128}\\?[\"'][ \t]{0,4},[ \t]{0,4}\\?[\"']"
        r"(?P<secret>[^\"'\\\r\n]{1,256})\\?[\"']"
        r"|\\?[\"'`]?(?:(?P<secret2>[A-Za-z0-9+/]{8,}={0,2})(?:[^A-Za-z0-9+/=:@_.-]|$)"
        r"|[^\s:\"'`\\<>/(){}\[\]]{1,128}:"
        r"(?P<secret3>[^\s:\"'`\\<>/(){}\[\]][^\s\"'`\\<>]{2,255})))",
        r"(?i:basic[_.-]?auth|http[_.-]?(?:basic[_.-]?)?auth|user[_.-]?auth|auth[_.-]?basic"
        r"|basic[_.-]?credential)",
        _reject_basic_auth_field,
        family="generic",
        context=True,
        examples=(
            f'"basic_auth": "deploy:{_fake(_B62, 18, "ba1")}"',
            f'"http_auth": "{_basic("svc-backup", _fake(_B62, 20, "ba2"))}"',
            f'es = Elasticsearch(hosts, basic_auth=("elastic", "{_fake(_B62, 20, "ba4")}"))',
            f"spring.boot.admin.client.basicAuth: monitor:{_fake(_B62, 14, 'ba5')}",
        ),
        near_misses=(
            'basic_auth: "${BASIC_USER}:${BASIC_PASSWORD}"',
            '"basicAuth": "user:password"',
            "http_auth: https://proxy.example.com:3128",
            '"user_auth": "' + _fake(_B64, 24, "ba6") + '"',
        ),
        shape="`basic_auth` / `basicAuth` / `http_auth` field + `user:` password or its base64",
    ),
    # NuGet.config package source credentials: <add key="ClearTextPassword" value="..."/>.
    # https://learn.microsoft.com/nuget/reference/nuget-config-file#packagesourcecredentials
    LeakRule(
        "nuget-config-password",
        r"(?i:<add[ \t]+key=\\?\"(?:ClearText)?Password\\?\"[ \t]+value=)"
        r"\\?\"(?P<secret>[^\"\\\r\n]{1,512})\\?\"",
        r"(?i:key=\\?\"(?:ClearText)?Password)",
        _reject_pair_secret,
        family="registry",
        context=True,
        examples=(
            f'<add key="ClearTextPassword" value="{_fake(_B62, 16, "ng1")}" />',
            f'<add key="Password" value="{_fake(_B64, 40, "ng2")}"/>',
        ),
        near_misses=(
            '<add key="ClearTextPassword" value="%NUGET_PASSWORD%" />',
            '<add key="Username" value="ci-bot" />',
        ),
        shape='`<add key="ClearTextPassword" value="..."/>`',
    ),
    # `curl -u user:password` / `--user user:password`: the password part, quoted or not, also
    # when the command goes on over `\\`-continued lines; `curl -u TOKEN:` (an API token as the
    # user, no password) masks the token. https://curl.se/docs/manpage.html#-u
    LeakRule(
        "curl-user-password",
        r"\bcurl\b(?:[^\r\n]|\\\r?\n){0,600}?[ \t](?:-u|--user)(?:[ \t]{1,4}|=)(?:"
        r"\"[^\"\\\r\n:]{0,128}:(?P<secret>[^\"\\\r\n]{1,256})\""
        r"|'[^'\\\r\n:]{0,128}:(?P<secret2>[^'\\\r\n]{1,256})'"
        r"|\"(?P<secret3>[^\"\\\r\n:]{8,256}):\""
        r"|(?:\"[^\"\\\r\n]{1,128}\"|'[^'\\\r\n]{1,128}'|[^\s:\"'\\<>]{1,128}):"
        r"(?:\"(?P<secret4>[^\"\\\r\n]{1,256})\"|'(?P<secret5>[^'\\\r\n]{1,256})'"
        r"|(?P<secret6>[^\s\"'\\<>]{1,256}))"
        r"|(?P<secret7>[^\s:\"'\\<>]{8,256}):(?:[ \t\r\n]|$))",
        r"\bcurl\b",
        _reject_curl_password,
        family="generic",
        context=True,
        examples=(
            f"curl -u admin:{_fake(_B62, 14, 'cu1')} https://api.example.com/v1",
            f"curl -s --user 'ci:{_fake(_B62, 20, 'cu2')}' https://jenkins.example.com/job",
            f"curl -X POST https://api.example.com/v1/hooks \\\n  -u deploy@example.com:"
            f"{_fake(_B62, 10, 'cu3')}@{_fake(_B62, 6, 'cu4')}",
            f'curl -u "{_fake(_B62, 24, "cu5")}7:" https://api.example.com/v1/charges',
        ),
        near_misses=(
            "curl -u admin https://api.example.com (prompts)",
            "curl -u $USER:$PASS https://x",
            "curl -u username:password https://api.example.com",
            'curl -u "<user>:<password>" https://x && curl -u "${{ secrets.U }}:${{ secrets.P }}"',
        ),
        shape="`curl -u user:` + password",
    ),
    # Bundler credentials for private gem sources: BUNDLE_<HOST>=user:password (Sidekiq Pro and
    # Enterprise use BUNDLE_GEMS__CONTRIBSYS__COM=<8 hex>:<8 hex>). https://bundler.io/v2.5/man/bundle-config.1.html
    LeakRule(
        "bundler-credentials",
        r"\bBUNDLE_[A-Z0-9]{1,63}(?:__[A-Z0-9]{1,63}){1,8}[ \t]*(?:=|:)[ \t]*\\?[\"']?"
        r"(?P<secret>[^\s:\"'@\\]{1,128}:[^\s\"'@\\]{1,256})",
        r"BUNDLE_",
        _reject_pair_secret,
        family="registry",
        context=True,
        examples=(
            f"export BUNDLE_GEMS__CONTRIBSYS__COM={_fake(_HEX, 8, 'bu1')}:{_fake(_HEX, 8, 'bu2')}",
            f'BUNDLE_RUBYGEMS__PKG__GITHUB__COM: "ci:{_fake(_B62, 24, "bu3")}"',
        ),
        near_misses=("BUNDLE_PATH=vendor/bundle", "BUNDLE_GEMS__CONTRIBSYS__COM=${SIDEKIQ_CREDS}"),
        shape="`BUNDLE_<HOST>=` + user:password",
    ),
    # Sidekiq Pro/Enterprise gem server URLs: https://<8 hex>:<8 hex>@gems.contribsys.com/.
    # https://github.com/sidekiq/sidekiq/wiki/Sidekiq-Pro-Installation
    LeakRule(
        "sidekiq-gem-url",
        r"https?://(?P<secret>[a-f0-9]{8}:[a-f0-9]{8})@(?:gems|enterprise)\.contribsys\.com",
        r"contribsys\.com",
        family="registry",
        context=True,
        examples=(
            f"source 'https://{_fake(_HEX, 8, 'sk1')}:{_fake(_HEX, 8, 'sk2')}"
            "@gems.contribsys.com/'",
            f"https://{_fake(_HEX, 8, 'sk3')}:{_fake(_HEX, 8, 'sk4')}@enterprise.contribsys.com/",
        ),
        near_misses=("source 'https://gems.contribsys.com/'", "https://user@gems.contribsys.com/"),
        shape="`https://` + 8 hex + `:` + 8 hex + `@gems.contribsys.com`",
    ),
    # HashiCorp Vault AppRole: the secret_id beside a role_id (the role_id is not secret).
    # https://developer.hashicorp.com/vault/docs/auth/approle
    LeakRule(
        "vault-approle-secret-id",
        r"(?i:secret[_-]?id)\\?[\"']?[ \t]{0,4}(?:=|:|=>)[ \t]{0,4}\\?[\"']?"
        r"(?P<secret>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
        r"(?i:secret[_-]?id)",
        family="identity",
        context=True,
        examples=(
            f"role_id=0d2f-... secret_id={_fake(_HEX, 8, 'va1')}-{_fake(_HEX, 4, 'va2')}-"
            f"{_fake(_HEX, 4, 'va3')}-{_fake(_HEX, 4, 'va4')}-{_fake(_HEX, 12, 'va5')}",
            f'"secret_id": "{_fake(_HEX, 8, "va6")}-{_fake(_HEX, 4, "va7")}-'
            f'{_fake(_HEX, 4, "va8")}-{_fake(_HEX, 4, "va9")}-{_fake(_HEX, 12, "vaa")}"',
        ),
        near_misses=("secret_id=${SECRET_ID}", "secret_id_accessor: none"),
        shape="`secret_id=` + UUID",
    ),
    # Facebook app access tokens: "<app id>|<app secret>" (15-16 digits, a pipe, 27-40 chars);
    # the pipe may be percent-encoded in a URL.
    # https://developers.facebook.com/docs/facebook-login/guides/access-tokens/#apptokens
    LeakRule(
        "facebook-app-access-token",
        r"(?:^|[^A-Za-z0-9_|-])(?P<secret>[0-9]{15,16}(?:\||%7[Cc])[A-Za-z0-9_-]{27,40})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"[0-9][0-9][0-9][0-9](?:\||%7[Cc])[A-Za-z0-9_-]",
        _reject_fake,
        family="identity",
        examples=(
            f"app token {_fake(string.digits, 15, 'fb1')}|{_fake(_URL, 27, 'fb2')}",
            f"https://graph.facebook.com/me?access_token={_fake(string.digits, 16, 'fb3')}%7C"
            f"{_fake(_URL, 40, 'fb4')}",
        ),
        near_misses=(
            f"| {_fake(string.digits, 15, 'fb5')}|total requests per day |",
            f"{_fake(string.digits, 15, 'fb6')}|{_fake(_URL, 26, 'fb7')}",
        ),
        shape="15-16 digits + `|` + 27-40 base64url",
    ),
    # Claude Code remote session links: whoever holds the link can drive the session.
    # https://docs.anthropic.com/en/docs/claude-code
    LeakRule(
        "claude-code-session-url",
        r"(?i:https?://claude\.ai/code/)(?P<secret>session_[A-Za-z0-9]{16,128})"
        r"(?:[^A-Za-z0-9_-]|$)",
        r"(?i:claude\.ai/code/session_)",
        _reject_fake,
        family="ai",
        examples=(
            f"Resume at https://claude.ai/code/session_{_fake(_B62, 24, 'cl1')} when you're back.",
            f'session = "https://CLAUDE.AI/code/session_{_fake(_B62, 18, "cl2")}/?ref=mail"',
        ),
        near_misses=(
            "Open https://claude.ai/code/session_short to see it.",
            f"https://claude.ai/chat/session_{_fake(_B62, 24, 'cl3')}",
        ),
        shape="`https://claude.ai/code/session_` + 16+ base62",
    ),
    # Azure Data Factory self-hosted integration runtime keys:
    # IR@<GUID>@<factory name>@<region>@<44 base64>.
    # https://learn.microsoft.com/azure/data-factory/create-self-hosted-integration-runtime
    LeakRule(
        "azure-datafactory-shir-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>IR@[0-9A-Za-z-]{36}@[^@\s\"'<>]{1,128}@[0-9A-Za-z=-]{0,64}"
        r"@[A-Za-z0-9+/]{43}=?)(?:[^A-Za-z0-9+/=]|$)",
        r"IR@",
        _reject_fake,
        family="cloud",
        examples=(
            f"AUTH_KEY=IR@{_fake(_HEX, 8, 'df1')}-{_fake(_HEX, 4, 'df2')}-{_fake(_HEX, 4, 'df3')}-"
            f"{_fake(_HEX, 4, 'df4')}-{_fake(_HEX, 12, 'df5')}@adf-prod-01@westeurope@"
            f"{_fake(_B64, 43, 'df6')}=",
            f"key: IR@{_fake(_HEX, 8, 'df7')}-{_fake(_HEX, 4, 'df8')}-{_fake(_HEX, 4, 'df9')}-"
            f"{_fake(_HEX, 4, 'dfa')}-{_fake(_HEX, 12, 'dfb')}@factory@eu@"
            f"{_fake(_B64, 43, 'dfc')}=",
        ),
        near_misses=(
            "Register the runtime with a key that starts IR@ (see the portal).",
            f"IR@{_fake(_HEX, 36, 'dfd')}@adf@we@short=",
        ),
        shape="`IR@` + GUID + `@name@region@` + 44 base64",
    ),
    # MaxMind license keys: 6 + `_` + 29 base62 + `_mmk`.
    # https://support.maxmind.com/hc/en-us/articles/4407111582235-Generate-a-License-Key
    LeakRule(
        "maxmind-license-key",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>[A-Za-z0-9]{6}_[A-Za-z0-9]{29}_mmk)(?:[^A-Za-z0-9_-]|$)",
        r"_mmk",
        _reject_fake,
        family="productivity",
        examples=(
            f"MAXMIND_LICENSE_KEY={_fake(_B62, 6, 'mm1')}_{_fake(_B62, 29, 'mm2')}_mmk",
            f"geoipupdate with {_fake(_B62, 6, 'mm3')}_{_fake(_B62, 29, 'mm4')}_mmk as the key",
        ),
        near_misses=(
            "License keys end in _mmk.",
            f"{_fake(_B62, 6, 'mm5')}_{_fake(_B62, 28, 'mm6')}_mmk",
        ),
        shape="6 base62 + `_` + 29 base62 + `_mmk`",
    ),
    # JWTs (RFC 7519) in JWS compact form (RFC 7515 §7.1): base64url header "." payload "."
    # signature; a JSON header and claims set both start `{"`, i.e. "eyJ"/"ey".
    LeakRule(
        "jwt",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}"
        r"\.[A-Za-z0-9_-]{16,})",
        r"eyJ[A-Za-z0-9_-]*\.ey",
        family="generic",
        examples=(
            f"Bearer eyJ{_fake(_URL, 30, 'j1')}.eyJ{_fake(_URL, 60, 'j2')}.{_fake(_URL, 43, 'j3')}",
            f"id_token=eyJ{_fake(_URL, 20, 'j4')}.eyJ{_fake(_URL, 90, 'j5')}"
            f".{_fake(_URL, 86, 'j6')}",
        ),
        near_misses=(
            "A JWT has three parts; eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0 has only two.",
            "eyJ.ey.sig",
        ),
        shape="`eyJ` + base64url `.` `ey` + base64url `.` signature",
    ),
    # A JWT written in base64 once more (Kubernetes data, env files): `eyJ` encodes as `ZXlK`.
    LeakRule(
        "jwt-base64",
        r"(?:^|[^A-Za-z0-9+/_-])(?P<secret>ZXlK[A-Za-z0-9+/_-]{40,}={0,2})(?:[^A-Za-z0-9+/=_-]|$)",
        r"ZXlK",
        _reject_not_jwt_base64,
        family="generic",
        examples=(
            "token: " + _jwt_base64("jb1"),
            "SESSION=" + _jwt_base64("jb2").rstrip("="),
        ),
        near_misses=(
            "ZXlKaGJHY2lPaUpJVXpJMU5pSjkuZXlKemRXSWlPaUl4TWpNME5UWTNPRGt3SW4w: no signature",
            "ZXlK" + _fake(_B64, 60, "jb3"),
        ),
        shape="base64 of `eyJ...` `.` `ey...` `.` signature",
    ),
    # An unsecured JWT (RFC 7519 §6, RFC 7515 §A.5): header `{"alg":"none"}`, claims, and an
    # empty signature after the second `.`. Servers that accept it take the claims on trust.
    LeakRule(
        "jwt-unsecured",
        r"(?:^|[^A-Za-z0-9_.-])(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}\.)"
        r"(?:[^A-Za-z0-9_.-]|$)",
        r"eyJ[A-Za-z0-9_-]*\.eyJ",
        _reject_signed_or_not_jwt,
        family="generic",
        examples=(
            f"const session = '{_jwt_part({'typ': 'JWT', 'alg': 'none'})}."
            f"{_jwt_part({'sub': _fake(_B62, 12, 'ju1'), 'role': 'admin'})}.';",
            f"Cookie: auth={_jwt_part({'alg': 'none', 'kid': _fake(_HEX, 8, 'ju6')})}."
            f"{_jwt_part({'uid': _fake(_HEX, 16, 'ju2'), 'scope': 'write'})}.; Path=/",
        ),
        near_misses=(
            f"{_jwt_part({'alg': 'HS256', 'typ': 'JWT'})}."
            f"{_jwt_part({'sub': _fake(_B62, 12, 'ju3')})}. (the signature was cut off)",
            f"{_jwt_part({'alg': 'none'})}.eyJ{_fake(_URL, 24, 'ju4')}.",
            f"{_jwt_part({'alg': 'none'})}.{_jwt_part({'sub': _fake(_B62, 12, 'ju5')})}",
        ),
        shape='`eyJ` header with `"alg":"none"` `.` claims `.` (no signature)',
    ),
    # A PEM private key in base64 once more: a kubeconfig's `client-key-data`, a Helm value, a
    # CI variable. Kept only when the armour it decodes to names a private key.
    # https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/
    LeakRule(
        "pem-private-key-base64",
        r"(?:^|[^A-Za-z0-9+/_-])(?P<secret>LS0tLS1CRUdJTi[A-Za-z0-9+/]{60,}={0,2})"
        r"(?:[^A-Za-z0-9+/=_-]|$)",
        r"LS0tLS1CRUdJTi",
        _reject_not_pem_key_base64,
        family="private-key",
        examples=(
            f"    client-key-data: {_pem_base64_example('RSA PRIVATE KEY', 'pb1')}",
            f'TLS_KEY_B64="{_pem_base64_example("EC PRIVATE KEY", "pb2")}"',
            f"signing: {_pem_base64_example('OPENSSH PRIVATE KEY', 'pb3')}",
        ),
        near_misses=(
            f"    client-certificate-data: {_pem_base64_example('CERTIFICATE', 'pb4')}",
            f"jwks_public: {_pem_base64_example('PUBLIC KEY', 'pb5')}",
            "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo= (the armour alone, no key)",
        ),
        shape="base64 of `-----BEGIN ... PRIVATE KEY-----` ...",
    ),
    # PEM private keys (RFC 7468 §10-11, OpenSSH, PGP armour): the whole block.
    LeakRule(
        "pem-private-key",
        _PEM,
        r"PRIVATE KEY",
        _reject_pem,
        family="private-key",
        examples=(
            _pem_example("RSA PRIVATE KEY", "\n", "pem1"),
            _pem_example("OPENSSH PRIVATE KEY", "\\n", "pem2"),
        ),
        near_misses=(
            "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
            "-----BEGIN PRIVATE KEY-----\n(your key here)\n-----END PRIVATE KEY-----",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX\n"
            "XXXXXXXXXXXX\n-----END OPENSSH PRIVATE KEY-----",
        ),
        shape="`-----BEGIN ... PRIVATE KEY-----` block",
    ),
    # A DER private key in base64 without its PEM armour (env vars, JSON, Java keystores'
    # exports): PKCS#1 RSA (RFC 8017 A.1.2), PKCS#8 (RFC 5208 §5), SEC1 EC (RFC 5915 §3). The
    # base64 of `SEQUENCE, length` starts `MII` / `MIG` / `MIH` / `MHc` / `MC4`; `reject`
    # decodes it and keeps only a key's version field first (certificates and public keys are
    # a SEQUENCE there).
    LeakRule(
        "der-private-key",
        r"(?:^|[^A-Za-z0-9+/_-])(?P<secret>M(?:I[GHI]|Hc|C4)[A-Za-z0-9+/]{60,}={0,2})"
        r"(?:[^A-Za-z0-9+/=_-]|$)",
        # the SEQUENCE's length, then the version INTEGER (`AgEA`, `AgEB`, or `IBA` after a
        # two-byte length): written out, so base64 images and certificates rarely trigger it
        r"MII[A-Za-z0-9+/][A-Za-z0-9+/][AQgw]IBA|MI[GH][A-Za-z0-9+/]AgE[AB]|MHcCAQEE|MC4CAQAw",
        _reject_not_der_private_key,
        family="private-key",
        examples=(
            "PRIVATE_KEY=" + _der_key("dk1", b"\x02\x01\x00\x02\x81\x81\x00", 604),
            '"private_key": "'
            + _der_key("dk2", b"\x02\x01\x00\x30\x13\x06\x07\x2a\x86\x48\xce\x3d\x02\x01", 135)
            + '"',
            "ed25519 key: "
            + _der_key("dk3", b"\x02\x01\x00\x30\x05\x06\x03\x2b\x65\x70\x04\x22\x04\x20", 46),
        ),
        near_misses=(
            # A certificate (a SEQUENCE first) and a public key (its algorithm first).
            "CERT=" + _der_key("dk4", b"\x30\x82\x02\x0a\xa0\x03\x02\x01\x02", 600),
            "PUBLIC_KEY="
            + _der_key("dk5", b"\x30\x0d\x06\x09\x2a\x86\x48\x86\xf7\x0d\x01\x01\x01\x05\x00", 290),
            "the key begins " + _der_key("dk6", b"\x02\x01\x00\x02\x81\x81\x00", 604)[:40] + "...",
        ),
        shape="base64 of a DER `SEQUENCE { version, ... }` private key",
    ),
)


# Secrets known by their context alone, and generic shapes: listed last, so a specific rule
# names a span both match.
GENERIC_RULES: tuple[LeakRule, ...] = (
    # Slack bot and user tokens in any of their forms (two or three digit groups), after the
    # specific Slack rules of leak_formats: xoxb-<team>-<bot>-<secret>.
    # https://api.slack.com/authentication/token-types
    LeakRule(
        "slack-token",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>(?:xox[bp]|xoxe\.xox[bp])-[0-9]{8,14}"
        # Ends on a letter or digit, not before a `#`/`*` run (`xoxp-...-####`: a stand-in).
        r"-[0-9A-Za-z-]{9,249}[0-9A-Za-z])(?:[^A-Za-z0-9_#*-]|$)",
        r"xox[bp]-|xoxe\.xox",
        family="chat",
        examples=(
            f"SLACK_BOT={'xoxb'}-{_fake(string.digits, 12, 's1')}-{_fake(string.digits, 13, 's2')}"
            f"-{_fake(_B62, 24, 's3')}",
            f"token xoxb-{_fake(string.digits, 11, 's4')}-{_fake(_B62, 24, 's5')}",
        ),
        near_misses=(
            "https://cdn.example.com/2019/05/hugs-xoxo-indieweb-1.jpg",
            "Bot tokens (xoxb-...) and user tokens (xoxp-...) differ in scope.",
        ),
        shape="`xoxb-` + digits + `-` + digits + `-` + base62",
    ),
    # HTTP Authorization headers: Bearer (RFC 6750), Basic (RFC 7617), Token, Digest.
    LeakRule(
        "authorization-header",
        r"(?i:authorization)\\?[\"']?[ \t]{0,4}[:=][ \t]{0,4}\\?[\"']?"
        r"(?:(?i:bearer|basic|(?:api-)?token|digest|apikey|ssws)[ \t]{1,4}"
        r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})"
        # No scheme word: the value itself (`Authorization: 5eb4223e-5008-...`).
        r"|(?P<secret2>[A-Za-z0-9._~+/=@-]{16,})(?:[^A-Za-z0-9._~+/=@-]|$))",
        r"(?i:authorization)",
        _reject_auth_header,
        family="generic",
        context=True,
        examples=(
            f"Authorization: Bearer {_fake(_B62, 40, 'ah1')}",
            f"curl -H 'Authorization: Basic {_basic('ci', _fake(_B62, 16, 'ah2'))}' https://x",
            f"curl --header 'Authorization:  {_fake(_HEX, 8, 'ah3')}-{_fake(_HEX, 4, 'ah4')}-"
            f"{_fake(_HEX, 4, 'ah5')}-{_fake(_HEX, 12, 'ah6')}'",
            f'-H "Authorization: Api-Token {_fake(_HEX, 40, "ah7")}"',
        ),
        near_misses=(
            'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com',
            "Authorization: Bearer <token>",
            "Authorization: required-for-every-request (see the docs)",
            "Authorization: Bearer XXXXXXXXXXXXXXXX",
        ),
        shape="`Authorization: Bearer|Basic|Token` + value",
    ),
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
            f"postgres://admin:{_fake(_B62, 16, 'uc1')}@db.internal:5432/app",
            f"https://ci-bot:{_fake(_B62, 24, 'uc2')}@git.example.com/team/repo.git",
        ),
        near_misses=(
            "git clone ssh://git@github.com/org/repo.git or https://alice@example.com/a?b=c",
            "postgres://app:${DB_PASSWORD}@db:5432/app",
        ),
        shape="`scheme://user:` + password + `@host`",
    ),
    # Connection strings (ADO.NET, ODBC, JDBC): "Password=...;" / "Pwd={...}" / "&password=".
    # https://learn.microsoft.com/dotnet/framework/data/adonet/connection-string-syntax
    LeakRule(
        "connection-string-password",
        r"(?i:[;?&][ \t]{0,4}(?:password|pwd|passwd)[ \t]{0,4}=[ \t]{0,4})"
        r"(?:\{(?P<secret>[^}\r\n]+)\}|\"(?P<secret2>[^\"\r\n]+)\""
        r"|'(?P<secret3>[^'\r\n]+)'|(?P<secret4>[^;&\s\"'\[\]<>]+))"
        # Without a `;` before the key, the `;` after the value marks a connection string.
        r"|(?i:\b(?:password|pwd)[ \t]{0,4}=[ \t]{0,4})"
        r"(?:\{(?P<secret5>[^}\r\n]+)\}|(?P<secret6>[^;&\s\"'\[\]<>{]+));",
        r"(?i:password|pwd|passwd)[ \t]*=",
        _reject_connection_password,
        family="database",
        context=True,
        examples=(
            f"Server=tcp:db,1433;Database=app;User Id=sa;Password={_fake(_B62, 14, 'cs1')};",
            f"Host=db;Port=5432;Username=app;Pwd={_fake(_B62, 12, 'cs2')};Pooling=true",
        ),
        near_misses=(
            "Server=db;Integrated Security=true;Password=${DB_PASSWORD};",
            "Server=db;Password=;Database=app",
        ),
        shape="`;Password=` + value + `;`",
    ),
    # Secrets spelled out in code and config: `password = "..."`, `API_KEY=...`, `token: ...`,
    # `"client_secret": "..."`, `<password>...</password>`, `--password ...`, Makefile `?=`,
    # Go `:=`. Only the value is masked; values read from the environment or templated in, and
    # reference names (`key: api-key`), are left alone.
    LeakRule(
        "password-assignment",
        # The optional `://user` start lets `reject` see a URL's userinfo (url-credentials'), and
        # the optional `csrf`/`public` start a name that is no secret's (`publicToken`).
        rf"(?:://[A-Za-z0-9._~%+-]{{0,64}}?)?(?:(?i:[cx]srf|publi(?:c|shable))[-_.]?)?{_SECRET_KEYWORD}{_ASSIGN}(?:{_quoted(1)}|{_BARE_VALUE})"
        # <password>value</password>, also with the value on a line of its own.
        rf"|{_SECRET_KEYWORD}>(?:[ \t]*\r?\n)?[ \t]*(?P<secret5>[^<\s]+)[ \t]*(?:\r?\n[ \t]*)?</"
        rf"|--{_FLAGS}(?:=|[ \t]{{1,4}})(?P<secret6>[^\s\"'`]+)"
        # A name and its value as two quoted arguments: `setProperty("API_TOKEN", "...")`.
        rf"|{_SECRET_KEYWORD}\\?[\"'][ \t]{{0,4}},[ \t]{{0,4}}\\?[\"']"
        rf"(?P<secret7>[^\"'\s\\]{{8,256}})\\?[\"']",
        rf"{_ASSIGN_TRIGGER}|{_SECRET_KEYWORD}>|--{_FLAGS}|{_SECRET_KEYWORD}\\?[\"'][ \t]*,",
        _reject_assigned_value,
        family="generic",
        context=True,
        examples=(
            f'password = "{_fake(_B62, 14, "pa1")}"',
            f"DB_PASSWORD ?= {_fake(_B62, 12, 'pa2')}",
            f'System.setProperty("API_TOKEN", "{_fake(_B62, 20, "pa3")}");',
            f"<apiToken>\n    {_fake(_B62, 24, 'pa4')}\n</apiToken>",
            f'$dbPassword .= "{_fake(_B62, 14, "pa5")}";',
        ),
        near_misses=(
            'password = os.getenv("DB_PASSWORD") and token = process.env.TOKEN',
            "GITHUB_API_KEY=\nDYNATRACE_API_KEY=",
            "SENTRY_AUTH_TOKEN= SENTRY_ORG=acme db.password= db.url=jdbc:h2:mem",
            "publicToken = 'pk8Hc2LxQ0vWm4Rz7Tn1Ya5Ub'; export API_TOKEN=sk3Fg...",
            'label("password", "Password"); os.getenv("API_TOKEN", "changeme")',
            'fn::secret: ops_eyJhbGciOi...[truncated] and token: "sha256~XXXX_YOUR_TOKEN_HERE"',
        ),
        shape="`<secret-named key> = value`",
    ),
)
