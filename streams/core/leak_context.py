"""Secrets known by the credential word beside them, in any syntax, without naming a vendor.

A credential word (password, passwd, pwd, pass, secret, token, key, api key, access key, pat,
auth, credential, webhook) ends a name in any case style (`ZORBLAX_API_KEY`, `zorblaxApiKey`,
`zorblax-api-key`, `Zorblax API Key`), and a value follows within a short window: an operator
of code or config (`=`, `:`, `:=`, `=>`, `->`, `<-`), an XML element or attribute, a CLI flag,
a call's arguments, or words of prose (`the password is ...`). The patterns only find where a
value stands; `judge` decides whether it is a credential: random-looking (length, character
classes, how often they alternate), or, after a password word, anything a person would type
as one. Code and placeholders stay: references (`$X`, `${X}`, `%X%`, `{{ x }}`), calls,
member and index access, paths, routes, selectors, URLs without a secret, type and class
names, variable names, booleans, numbers, versions and single words outside a password context.

The masked span is exactly the value: a quoted value ends at its closing quote, a bare one at
whitespace, a quote, `;`, `&` or a bracket of its carrier, and never spans a line.
"""

from __future__ import annotations

import base64
import math
import random
import re
from collections import Counter
from typing import Final

from streams.core.leak_rules import LeakRule, is_placeholder, looks_fake

__all__ = [
    "ASSIGNMENT",
    "ASSIGNMENT_TRIGGER",
    "CONTEXT_RULES",
    "NAME",
    "judge",
    "reject_assigned",
]

# --- names ------------------------------------------------------------------------------------

# Credential words as the last word of a name. Case-insensitive after a separator or at the
# start of the name; in camelCase a capitalised or upper-case word after a lower-case letter.
_WORDS: Final = (
    r"passwords?|passwd|passphrase|pass|pwd|pw|secret|token|credentials?|key|apikey|pat|auth"
    r"|webhook"
)
_TITLE: Final = (
    r"Passwords?|Passwd|Passphrase|Pass|Pwd|Pw|Secret|Token|Credentials?|Key|Apikey|Pat|Auth"
    r"|Webhook|PASSWORDS?|PASSWD|PASSPHRASE|PASS|PWD|PW|SECRET|TOKEN|CREDENTIALS?|KEY|APIKEY"
    r"|PAT|AUTH|WEBHOOK"
)
# `\b` then the name's earlier words (separated by `_`, `.` or `-`), then the credential word.
NAME: Final = (
    rf"\b_*(?:[A-Za-z0-9]+[_.-])*(?:[A-Za-z0-9]*[a-z0-9](?:{_TITLE})|(?i:{_WORDS})"
    # `$dbpasswd`, `MYSQLPASSWORD`: a strong word run into the name in one case.
    r"|[a-z0-9]+(?:password|passwd|pwd|secret|token|apikey)"
    r"|[A-Z0-9]+(?:PASSWORD|PASSWD|PWD|SECRET|TOKEN|APIKEY))"
)
# Words that make a value a password (a person's choice counts, not only a random one).
_PASSWORD_WORD = re.compile(r"(?i)pass|pwd|pw(?![a-z])")

# --- values -----------------------------------------------------------------------------------

# A quoted value runs to its closing quote on the same line; a bare value to whitespace, a
# quote, `,`, `;`, `&` or a bracket; a final `.` or `:` belongs to the sentence.
_BARE_CHARS: Final = r"[^\s\"'`,;&(){}\[\]<>\\|]"
_BARE_LAST: Final = r"[^\s\"'`,;&(){}\[\]<>\\|.:]"
_BARE_END: Final = r"(?:\.\.\.?|\.[A-Za-z_]|[\s,;&)}\]\"'`\\.:|]|$)"


def _quoted(first: int) -> str:
    """A quoted literal (", ' or `, maybe backslash-escaped) whose inside is secret{n}."""
    return "|".join(
        rf"\\?{q}(?P<secret{first + i}>[^{q}\r\n]+?)\\?{q}" for i, q in enumerate(('"', "'", "`"))
    )


def _bare(n: int) -> str:
    return rf"(?P<secret{n}>{_BARE_CHARS}*{_BARE_LAST}){_BARE_END}"


_VALUE_5: Final = f"(?:{_quoted(5)}|(?:(?i:bearer|token|basic)[ \\t]{{1,4}})?{_bare(8)})"

# Operators of code and config on the key's line: = == === := ::= ?= .= += => -> <- :, a type
# between key and `=` (`password: str = `, Go's `var password string = `).
_KEY_CLOSE: Final = r"(?:\\?[\"'`])?(?:\])?"
_TYPE_HINT: Final = (
    r":[ \t]{0,4}[A-Za-z_][A-Za-z0-9_.]{0,30}(?:\[[A-Za-z0-9_., |]{0,40}\])?\??[ \t]{0,4}="
)
_GO_TYPE: Final = r"[ \t]{1,4}\*?[A-Za-z_][A-Za-z0-9_.]{0,30}[ \t]{1,4}="
_OP: Final = (
    rf"{_KEY_CLOSE}[ \t]{{0,8}}(?:{_TYPE_HINT}|{_GO_TYPE}|=>|->|:::=|::=|:=|\?=|\.=|\+=|={{1,3}}"
    rf"|:|<-)[ \t]{{0,8}}"
)
_XML_NAME: Final = rf"(?:[A-Za-z0-9_.-]{{0,40}}:)?{NAME}"

# `key = value` in every syntax with an operator; XML elements and `key="..." value="..."`
# attribute pairs (.NET appSettings, Java properties, Ant/Spring `<property>`).
ASSIGNMENT: Final = (
    rf"\b(?i:key|name)[ \t]*=[ \t]*[\"']{NAME}[\"'][ \t]{{1,8}}(?i:value)[ \t]*=[ \t]*"
    rf"(?:\"(?P<secret1>[^\"\r\n]+)\"|'(?P<secret2>[^'\r\n]+)')"
    rf"|\b(?i:key|name)[ \t]*=[ \t]*[\"']{NAME}[\"'][ \t]*>(?P<secret3>[^<\r\n]+)</"
    rf"|<{_XML_NAME}(?:[ \t][^<>\r\n]*)?>(?:[ \t]*\r?\n)?[ \t]*"
    rf"(?P<secret4>[^<\s]+)[ \t]*(?:\r?\n[ \t]*)?</"
    # `://user:` starts a URL's userinfo (url-credentials'), which `reject` leaves.
    rf"|(?P<open>[\"'`]|://)?{NAME}{_OP}{_VALUE_5}"
    # A name and its value as two quoted arguments: `setProperty("API_TOKEN", "...")`,
    # PHP's `define('AUTH_KEY', '...')`.
    rf"|(?:\b(?i:define|setenv|putenv|setProperty|set|put)[ \t]{{0,4}}\([ \t]{{0,4}}\\?[\"'])?"
    rf"{NAME}\\?[\"'][ \t]{{0,4}},[ \t]{{0,16}}"
    rf"(?:\\?\"(?P<secret11>[^\"\\\r\n]{{1,256}})\\?\"|\\?'(?P<secret12>[^'\\\r\n]{{1,256}})\\?')"
)
_TRIGGER_WORDS: Final = (
    r"(?i:passwords?|passwd|passphrase|pass|pwd|pw|secret|token|credentials?|key|pat|auth|webhook)"
)
ASSIGNMENT_TRIGGER: Final = (
    rf"{_TRIGGER_WORDS}s?(?:\\?[\"'`]\]?)?[ \t]*(?:[A-Za-z_*][A-Za-z0-9_.]*[ \t]+)?\??[.+]?"
    rf"(?:[:=]|<-|->)"
    rf"|{_TRIGGER_WORDS}s?>|<[A-Za-z0-9_.:-]*{_TRIGGER_WORDS}s?[ \t]|{_TRIGGER_WORDS}s?[\"'][ \t]*>"
    rf"|{_TRIGGER_WORDS}s?[\"'][ \t]+(?i:value)|{_TRIGGER_WORDS}s?\\?[\"'][ \t]*,"
)

# --- judging a value --------------------------------------------------------------------------

_REFERENCE_START = re.compile(r"[$%@]|\{\{|\{%|#\{|<%|\$\{")
_SELECTOR = re.compile(r"[#.][A-Za-z_-][A-Za-z0-9_-]*(?:[ >+~.#:\[][^\s]*)?|[a-z]+\[[^\]]*\]")
_PATHLIKE = re.compile(r"(?:/|\./|\.\./|~/|[A-Za-z]:\\|\\\\|file:)")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,30}://")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")
_DOTTED_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:(?:\.|::|->)[A-Za-z_$][A-Za-z0-9_$]*)+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VERSION = re.compile(r"[~^<>=]{0,2}v?[0-9]+(?:\.[0-9x*]+)+(?:[-+][A-Za-z0-9.]+)?")
_NUMBER = re.compile(r"[-+]?[0-9][0-9_,]*(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_TYPE_NAME = re.compile(
    r"(?:Optional|Union|List|Dict|Secret|SecretStr|SecretBytes|String|Str|Text|Bytes|Int|Integer"
    r"|Number|Boolean|Bool|Any|Object|Annotated|Field|Literal|char|varchar|uuid|byte|Buffer"
    r"|Uint8Array|void|nullable)\b.*",
    re.IGNORECASE,
)
_CODE_WORDS: Final = frozenset(
    {"await", "async", "new", "yield", "lambda", "function", "return", "typeof", "input"}
    | {"prompt", "getpass", "self", "this", "yes", "no", "on", "off", "nullptr", "const"}
    | {"var", "let", "def", "fn", "func", "static", "final", "public", "private", "readonly"}
)
_CREDENTIAL_IN_VALUE = re.compile(
    r"(?i)passw|passwd|secret|token|api[_-]?key|apikey|credential|auth|pwd"
)
# A digest named by its algorithm (`sha256:...`), an ARN, a CloudFormation tag: names, not
# secrets.
_NAMED = re.compile(r"(?i)(?:sha[0-9]*|md5|blake[0-9a-z]*|arn|urn|sha256~?)[:-]|!|&|\*")
_FORMAT = re.compile(r"%[sdr]|%\([A-Za-z_]+\)|\{[A-Za-z0-9_]*\}")
_CLASS = re.compile(r"[a-z]+|[A-Z]+|[0-9]+|[^A-Za-z0-9]+")
# Letters as a reader splits them: `Summer`, `HTTP`, `profile`.
_TOKEN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_VOWELS: Final = frozenset("aeiouyAEIOUY")
_MIN_RANDOM: Final = 8
_LONG: Final = 1024


def _class_switches(value: str) -> float:
    """Runs of one character class (lower, upper, digit, other) against the runs a random
    string of the same class mix would have: about 1 for random text, well under for words."""
    n = len(value)
    counts = Counter(_class_letters(value))
    expected = 1 + (n - 1) * (1 - sum((k / n) ** 2 for k in counts.values()))
    return len(_CLASS.findall(value)) / expected


def _wordy(value: str) -> bool:
    """Words and numbers a person typed (`Summer2024`, `user_profile_v2`, `getAccessToken`):
    every piece between separators is letters in words (vowels among them), maybe a short
    number after them, or a short number."""
    pieces = [p for p in _SEPARATORS.split(value) if p]
    return bool(pieces) and all(_word_piece(p) for p in pieces)


_SEPARATORS = re.compile(r"[_\-.:/@+ ]+")
# Unambiguous (no nested repetition): linear on any input.
_WORD_PIECE = re.compile(r"[A-Za-z]+[0-9]{0,4}|[0-9]{1,4}")


def _word_piece(piece: str) -> bool:
    if _WORD_PIECE.fullmatch(piece) is None:
        return False
    letters = [t for t in _TOKEN.findall(piece) if t.isalpha()]
    text = "".join(letters)
    if len(text) <= 3:
        return True
    short = sum(len(t) < 3 for t in letters)
    return short <= 1 and sum(c in _VOWELS for c in text) >= 0.3 * len(text)


# Each ASCII character as its class: `l`ower, `u`pper, `d`igit or `o`ther (one C call a value).
def _class_of(c: str) -> str:
    return "l" if c.islower() else "u" if c.isupper() else "d" if c.isdigit() else "o"


_ASCII_CLASS: Final = str.maketrans({chr(i): _class_of(chr(i)) for i in range(128)})
_SPACE = re.compile(r"\s")


def _class_letters(value: str) -> str:
    """`value` with each character replaced by its class letter (`l`, `u`, `d`, `o`)."""
    if value.isascii():
        return value.translate(_ASCII_CLASS)
    return "".join(map(_class_of, value))


def _classes(value: str) -> int:
    if value.isascii():
        return len(set(value.translate(_ASCII_CLASS)))
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() for c in value)
    )


def _bits(value: str) -> float:
    counts = Counter(value)
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def random_looking(value: str, minimum: int = _MIN_RANDOM) -> bool:
    """Issued, not typed: long enough, varied characters whose classes switch about as often
    as chance has them (`7Hq2xKpL9vTz`, hex, base64, a UUID; not `user_profile_v2`)."""
    n = len(value)
    if n < minimum or _SPACE.search(value):
        return False
    if _bits(value) < min(3.0, math.log2(n) - 0.5):
        return False
    if _classes(value) < 2:
        # One class: long random letters only; digits alone are numbers and ids.
        return n >= 24 and value.isalpha() and _bits(value) >= 4.0
    return _class_switches(value) >= 0.55 and not _wordy(value)


def _typed_password(value: str, shortest: int = 6) -> bool:
    """A password a person chose: letters with digits or symbols (`Summer2024!`, `hunter2`)."""
    return (
        len(value) >= shortest
        and any(c.isalpha() for c in value)
        and any(not c.isalpha() for c in value)
        and _VERSION.fullmatch(value) is None
    )


def _code(value: str, after: str) -> bool:
    """Code or a name rather than a literal: a reference, call, member or index access, path,
    route, selector, type or class name, variable name, number, version or keyword."""
    v = value
    if _REFERENCE_START.match(v) or _NAMED.match(v):
        return True
    if after[:1] in ("(", "[") or after.startswith(("->", "::")) or re.match(r"\.[A-Za-z_]", after):
        return True
    if _PATHLIKE.match(v) and not any(random_looking(p, 16) for p in v.split("/")):
        return True  # a path or a route (`/reset-password`); base64 may start with `/` too
    if _SELECTOR.fullmatch(v) or _EMAIL.fullmatch(v):
        return True
    if _DOTTED_NAME.fullmatch(v) and not random_looking(max(re.split(r"[.:>-]+", v), key=len)):
        return True
    if _TYPE_NAME.fullmatch(v) or _VERSION.fullmatch(v) or v.lower() in _CODE_WORDS:
        return True
    # A format string (`"user:%s"`, `"{name}"`), a flag (`-AsPlainText`), a call.
    flag = v.startswith("-") and not random_looking(v.lstrip("-"))
    return v.endswith("()") or flag or _FORMAT.search(v) is not None


def _name_like(value: str) -> bool:
    """A variable or constant name (`api_key`, `GITHUB_TOKEN`, `myToken`, `AccessToken`)."""
    if _IDENTIFIER.fullmatch(value) is None:
        return False
    if _CREDENTIAL_IN_VALUE.search(value):
        # `api_key`, `DB_PASSWORD`, `Password`; `Secret123` is a (weak) password.
        return "_" in value or not any(c.isdigit() for c in value)
    return not random_looking(value) and not any(c.isdigit() for c in value)


def judge(
    value: str,
    after: str = "",
    *,
    password: bool,
    strong: bool,
    quoted: bool,
    named: bool = False,
) -> bool:
    """Is `value` a credential? `password`: after a password word, where a person's choice
    counts; `strong`: the syntax ties value to name (an operator, a tag, a flag), not prose;
    `quoted`: the value stood between quotes. `after` is the text right after it (a call's
    `(` or a member's `.` makes it code)."""
    v = value
    if not v or v != v.strip() or len(v) < 3 or "\ufffd" in v:
        return False
    if len(v) > _LONG:
        # A value this long is no name or code; its start tells whether it is random.
        return not looks_fake(v) and random_looking(v[:_LONG])
    if is_placeholder(v) or looks_fake(v) or _code(v, "" if quoted else after):
        return False
    if _URL.match(v):
        return _url_secret(v)
    if len(v) >= 32 and v.count(" ") <= 3 and random_looking(v.replace(" ", "")):
        return True  # a salt of printable characters (`define('AUTH_KEY', '...')`)
    if _SPACE.search(v):
        # A label or a sentence; after a password word in a tie a passphrase may be one.
        return (
            password and strong and quoted and len(v) >= 12 and not _CREDENTIAL_IN_VALUE.search(v)
        )
    if _CREDENTIAL_IN_VALUE.search(v) and _SEPARATORS.search(v):
        return False  # the name of a secret: `db-password`, `prod/zorblax/api-key`
    if _text_in_base64(v):
        return False
    if _basic_pair(v):
        return True
    if _NUMBER.fullmatch(v):
        return (password and strong and len(v) >= 4) or len(v) >= 24
    if random_looking(v, _MIN_RANDOM if strong else 10):
        return not _name_like(v) or any(c.isdigit() for c in v)
    if not password:
        # `client_secret: "LYeqh6048"`: a quoted literal under a secret's or token's name
        # counts when typed like a credential (letters with digits or symbols).
        typed = _typed_password(v, 4)
        return named and strong and typed and not _name_like(v)
    if _name_like(v) and (not quoted or _CREDENTIAL_IN_VALUE.search(v) or "_" in v):
        # `password = password`, `PASSWORD=DB_PASSWORD`: a variable passed on; `password:
        # hunter` (a bare word after a YAML/INI key) still counts below when quoted.
        if not (
            strong
            and v.isalpha()
            and v.islower()
            and len(v) >= 4
            and not quoted
            and after[:1] != ":"
        ):
            return False
        return _CREDENTIAL_IN_VALUE.search(v) is None
    if strong:
        # `Password123` is a password; `Password` a label.
        named = _CREDENTIAL_IN_VALUE.search(v) is not None and not any(c.isdigit() for c in v)
        return len(v) >= (3 if quoted else 4) and not named
    return _typed_password(v)


def _base64_text(value: str) -> str | None:
    """What base64 of printable ASCII decodes to, else None."""
    if len(value) < 8 or len(value) % 4 or not _BASE64.fullmatch(value):
        return None
    try:
        text = base64.b64decode(value, validate=True).decode("ascii")
    except ValueError:
        return None
    return text if text.isprintable() else None


def _text_in_base64(value: str) -> bool:
    """Base64 of words (`aGVsbG8gd29ybGQ=`): text a reader can decode, not a key."""
    text = _base64_text(value)
    return text is not None and " " in text


def _basic_pair(value: str) -> bool:
    """Base64 of `user:password` (an `.npmrc` `_auth`, a Basic header)."""
    text = _base64_text(value)
    return text is not None and re.fullmatch(r"[^:\s]{1,64}:[^\s]{3,}", text) is not None


_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")


def _url_secret(url: str) -> bool:
    """A URL is a secret when a path segment or a query value looks issued (a webhook's)."""
    rest = url.split("://", 1)[1]
    pieces = re.split(r"[/?&=#;]", rest.split("/", 1)[1]) if "/" in rest else []
    return any(random_looking(p, 16) and not _VERSION.fullmatch(p) for p in pieces)


_PAIR = re.compile(r"([A-Za-z0-9._@+-]{1,64}):([^\s:]{3,})")
_URL_PIECE = re.compile(r"[^/?&=#;:@]+")


def value_parts(value: str) -> list[tuple[int, int]]:
    """What to mask of an accepted value: a `user:secret` pair's secret, a URL's random-looking
    segments (a webhook's path, a token in its query), else the whole value."""
    if _URL.match(value):
        start = value.index("://") + 3
        return [
            m.span()
            for m in _URL_PIECE.finditer(value, start)
            if random_looking(m.group(), 16) and not _VERSION.fullmatch(m.group())
        ]
    pair = _PAIR.fullmatch(value)
    if pair is not None and not random_looking(pair.group(1)):
        return [pair.span(2)]
    return [(0, len(value))]


def reject_assigned(secret: str, before: str, after: str) -> bool:
    """The filter of `ASSIGNMENT`: drop what `judge` finds no credential."""
    quoted = before.endswith(('"', "'", "`"))
    if before.startswith("://"):
        return True
    # `"AdminPassword: " + x`: the key stands inside a string and the quote after it closes
    # that string; what follows is code, not a value.
    if quoted and before[:1] == before[-1:] and not _closed_key(before):
        return True
    if quoted and secret[:1].isspace():
        return True
    key = _key_of(before)
    if _CSRF.search(before) or _PUBLIC.search(before) or _PLAIN_KEY.search(key):
        return True
    if after.startswith(("..", "\u2026")):
        return True  # a value cut short is an example
    if _NEXT_KEY.match(secret):
        return True  # `API_KEY= DB_PASSWORD=`: the next key, not this one's value
    # `getenv("API_TOKEN", "...")`: a default, kept when issued or typed as a password.
    strong = _ARGUMENT_PAIR.search(before) is None or _DEFINE.match(before) is not None
    password = _PASSWORD_WORD.search(key) is not None
    prose = before.rstrip().endswith(":") and not quoted
    if prose and not password and secret.isalpha() and len(secret) < 16:
        return True
    if before.rstrip().endswith(":") and _COORDINATE.fullmatch(secret):
        return True  # `io.jsonwebtoken:jjwt-jackson-0.11.2`: a package coordinate
    named = _STRONG_NAME.search(key) is not None
    return not judge(secret, after, password=password, strong=strong, quoted=quoted, named=named)


_STRONG_NAME = re.compile(r"(?i)secret|token|credential|api[_-]?key|apikey")
_CSRF = re.compile(r"(?i)[cx]srf")
# Keys that are no credential: a cache's, a table's, a map's, an object store's.
_PLAIN_KEY = re.compile(
    r"(?i)(?:cache|primary|sort|partition|foreign|idempotency|idempotence|object|s3|map|row|lookup"
    r"|dedup|dedupe|routing|index|composite|unique|public|hash|shard|group|message|event|dict"
    r"|bucket|column|table|redis|storage|sharding|cluster|range|hot|natural|surrogate|compound"
    r"|registry|translation|i18n|locale|react|list|sequence|order)[ _.-]?key\b"
)
_COORDINATE = re.compile(r"[a-z][a-z0-9_.-]*[-:]v?[0-9]+(?:\.[0-9]+)+[A-Za-z0-9.+-]*")
_DEFINE = re.compile(r"(?i)define|setenv|putenv|setProperty|set\b|put\b")
_ARGUMENT_PAIR = re.compile(r"[\"'],[ \t]*\\?[\"']$")
_PUBLIC = re.compile(r"(?i)publi(?:c|shable)[ _.-]?(?:token|key)")
_NEXT_KEY = re.compile(r"(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:[._][a-z0-9]+)+)[=:]")
_KEY_WORD = re.compile(rf"(?i)(?:[A-Za-z0-9]+[_.\- ])*[A-Za-z0-9]*(?:{_WORDS})")


def _key_of(before: str) -> str:
    """The credential name in the text before a value (the last one there)."""
    found = _KEY_WORD.findall(before)
    return found[-1] if found else before


def _closed_key(before: str) -> bool:
    """`"password": "...`: the quote that opened the key closes right after its name."""
    q = before[0]
    body = before[1:]
    name_end = re.match(r"[A-Za-z0-9_.\-]*", body)
    return name_end is not None and body[name_end.end() :].lstrip("\\").startswith(q)


# --- prose, CLI flags, call arguments -----------------------------------------------------------

_STRONG_WORDS: Final = (
    r"(?i:passwords?|passwd|passphrase|pwd|secret|token|credentials?|api[ _-]?key|apikey|pat)"
)
# `the password is ...`, `Zorblax API KEY 7Hq2...`, `here's the token: ...`: a credential word
# (alone, or the last of two words: `license key`, `access key`) and up to five words of prose.
_PROSE_NAME: Final = (
    rf"\b(?:[A-Za-z][A-Za-z0-9]{{0,30}}[ _-])?(?:{_STRONG_WORDS}|(?i:key|auth))"
    r"(?:[ _-](?i:key|token|secret|pat))?"
)
_FILLER: Final = (
    r"(?:[ \t]{1,4}(?i:is|was|are|were|be|will|would|should|has|have|been|now|set|changed|reset"
    r"|updated|to|as|of|on|the|a|an|my|our|your|their|this|that|its|it's|it|here|here's|new|old"
    r"|default|current|initial|temporary|value|use|using|with|please|just|simply|then|created"
    r"|generated|issued|rotated|regenerated)"
    r"|[ \t]{0,4}[:=-]|[ \t]{1,4}for[ \t]{1,4}[A-Za-z0-9_.@-]{1,40})"
)
_PROSE_VALUE: Final = (
    r"[ \t]{0,4}(?:[\"'`(](?P<secret>[^\"'`()\r\n]+?)[\"'`)]"
    rf"|(?P<secret2>{_BARE_CHARS}*{_BARE_LAST}){_BARE_END})"
)
PROSE: Final = (
    rf"{_PROSE_NAME}s?(?:{_FILLER}){{0,5}}[ \t]{{1,4}}{_PROSE_VALUE}"
    # netrc and its prose: `machine h login u password p`, also over lines.
    r"|\b(?i:login|user(?:name)?)[ \t]{1,8}[^\s]+\s{1,20}(?i:password|passwd)[ \t]{1,8}"
    r"(?P<secret3>[^\s\"'`]+)"
    # `use Secret123 as the password`.
    r"|\b(?i:use)[ \t]{1,4}[\"'`]?(?P<secret4>[^\s\"'`]{4,}?)[\"'`]?[ \t]{1,4}(?i:as|for)"
    rf"[ \t]{{1,4}}(?:(?i:the|your|my|our|a)[ \t]{{1,4}})?(?:[A-Za-z0-9]{{1,30}}[ \t]{{1,4}})?"
    r"(?i:password|passwd|passphrase|token|secret|key|pat)\b"
)
# Every match holds a digit in its value's first characters, or is netrc's `login u password`
# or `use X as`: prose about keys and passwords without one stays on the clean path.
# `$` and `^` are escaped even in a class: `edge_free` reads a bare one as an anchor, which
# would switch off the tree walk's one-pass pre-filter for every deployment.
PROSE_TRIGGER: Final = (
    r"(?i:password|passwd|passphrase|pwd|secret|token|credentials?|key|pat|auth)s?"
    rf"{_FILLER}*[ \t]+[\"'`(]?[A-Za-z!@#\$%\^&*+/_.~-]*[0-9]"
    r"|(?i:login|user)[ \t]+[^\s]+\s+(?i:password|passwd)[ \t]"
    r"|(?i:use)[ \t]+[\"'`]?[^\s\"'`]*[0-9][^\s\"'`]*[\"'`]?[ \t]+(?i:as|for)[ \t]"
)

_FLAG_WORDS: Final = (
    r"(?i:passwords?|passwd|passphrase|pass|pwd|pw|secret|token|credentials?|key|apikey|pat|auth)"
)
_PS_WORDS: Final = (
    r"(?:Password|Passwd|Passphrase|Token|Secret|Key|ApiKey|Apikey|Pat|PAT|Credential)"
)


def _flag_value(n: int) -> str:
    return (
        rf"(?:\"(?P<secret{n}>[^\"\r\n]+)\"|'(?P<secret{n + 1}>[^'\r\n]+)'"
        rf"|(?P<secret{n + 2}>[^\s\"'`\-;&|<>][^\s\"'`;&|<>]*))"
    )


FLAGS: Final = (
    # --api-key X, --db-password=X, Go's -password=X
    rf"\B--?(?:[A-Za-z0-9]+[-_.]){{0,4}}{_FLAG_WORDS}(?:=|[ \t]{{1,4}}){_flag_value(1)}"
    # PowerShell: -Password X, -ApiKey X, -ClientSecret X
    rf"|\B-(?:[A-Z][a-z0-9]{{1,20}}){{0,3}}{_PS_WORDS}[ \t]{{1,4}}{_flag_value(4)}"
    # -u user -p X (psexec, sqlcmd, mysql, smbclient, net tools)
    r"|\B-[uU][ \t]{0,4}[^\s\-][^\s]*[ \t]{1,8}"
    r"(?:-[A-Za-z][ \t]{1,4}[^\s\-][^\s]*[ \t]{1,8}){0,3}-[pP](?:[ \t]{1,4}|=)?"
    rf"{_flag_value(7)}"
    # mysql -pX, sshpass -p X, redis-cli -a X
    r"|\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\r\n]*?[ \t]-p"
    r"(?P<secret10>[^\s\"'`\-][^\s\"'`]*)"
    rf"|\bsshpass[ \t]{{1,4}}-p[ \t]{{0,4}}{_flag_value(11)}"
    rf"|\bredis-cli\b[^\r\n]*?[ \t]-a[ \t]{{1,4}}{_flag_value(14)}"
    # Windows: /p:X, /password:X, net use ... /user:u X
    rf"|\B/(?i:p|pass|password|pwd|pw|passwd)[:=]{_flag_value(17)}"
    rf"|\B/(?i:user|u):[^\s]+[ \t]{{1,4}}{_flag_value(20)}"
    rf"|\bConvertTo-SecureString[ \t]{{1,4}}(?:-String[ \t]{{1,4}})?{_flag_value(23)}"
)
FLAGS_TRIGGER: Final = (
    rf"\B--?(?:[A-Za-z0-9]+[-_.])*{_FLAG_WORDS}(?:=|[ \t])|\B-(?:[A-Z][a-z0-9]+)*{_PS_WORDS}[ \t]"
    r"|\B-[uU]|(?:mysql|mariadb)[^\r\n]*[ \t]-p|sshpass[ \t]|redis-cli[^\r\n]*[ \t]-a[ \t]"
    r"|\B/(?i:p|pass|password|pwd|pw|passwd|user|u)[:=]|ConvertTo-SecureString"
)

# A call or constructor whose name ends in a credential word, its arguments: the quoted ones
# that are credentials are masked (`new NetworkCredential("user", "...")`, `.apiKey("...")`,
# `auth=("user", "...")`, `HTTPBasicAuth("u", "...")`, `PasswordAuthentication(...)`).
ARGUMENTS: Final = (
    rf"(?P<secret>{NAME}(?:entication|enticate|entials?)?[ \t]{{0,4}}(?:=[ \t]{{0,4}})?"
    r"\((?:[^()\r\n]|\([^()\r\n]*\))+\))"
)
ARGUMENTS_TRIGGER: Final = (
    rf"{_TRIGGER_WORDS}(?i:entication|enticate|entials?)?s?[ \t]*=?[ \t]*\([^)\r\n]*[\"']"
)
_LITERAL = re.compile(
    r"\\?\"((?:[^\"\\\n]|\\[^\"\n]){1,512}?)\\?\"|\\?'((?:[^'\\\n]|\\[^'\n]){1,512}?)\\?'"
)
_USER_THEN_SECRET = re.compile(r"(?i)credential|auth|login|signin|basic|user")


def argument_values(call: str) -> list[tuple[int, int]]:
    """The credential arguments of `name(args)`: quoted literals `judge` accepts; the first of
    two or more is the user when the name says so (`NetworkCredential("user", "pass")`)."""
    paren = call.find("(")
    if paren < 0:
        return []
    name = call[:paren]
    literals = [
        (m.start(1), m.end(1)) if m.group(1) is not None else (m.start(2), m.end(2))
        for m in _LITERAL.finditer(call, paren)
    ]
    if len(literals) >= 2 and _USER_THEN_SECRET.search(name):
        literals = literals[1:]
    password = _PASSWORD_WORD.search(name) is not None or _USER_THEN_SECRET.search(name) is not None
    return [
        (s, e)
        for s, e in literals
        if judge(call[s:e], call[e + 1 :], password=password, strong=False, quoted=True)
    ]


def _reject_arguments(secret: str, _before: str, _after: str) -> bool:
    return not argument_values(secret)


def reject_prose(secret: str, before: str, after: str) -> bool:
    """Prose ties a value to its name loosely: a random-looking value, or after a password word
    a typed password (letters with digits or symbols); after `login u password` any value."""
    netrc = re.match(r"(?i)login|user", before) is not None and re.search(r"(?i)pass", before)
    quoted = before.endswith(('"', "'", "`", "("))
    if after.startswith(("..", "\u2026")) or _NEXT_KEY.match(secret) or _PUBLIC.search(before):
        return True
    if _PLAIN_KEY.search(before) and not _PASSWORD_WORD.search(before):
        return True
    # `use X as the password`: the word comes after the value.
    password = _PASSWORD_WORD.search(before if before[:3].lower() != "use" else after) is not None
    return not judge(secret, after, password=password, strong=bool(netrc), quoted=quoted)


def reject_flag(secret: str, before: str, after: str) -> bool:
    """A flag's value: a long flag ties it to its name; `-p`, `/p:` and `/user:u X` less so
    (`-p 8080:80` is a port, `/p:Configuration=Release` an MSBuild property)."""
    long_flag = re.search(r"-[A-Za-z]{2}[A-Za-z0-9_.-]*[= \t]+[\"']?$", before) is not None
    quoted = before.endswith(('"', "'"))
    if "=" in secret.rstrip("=") and not quoted:
        return True
    password = _PASSWORD_WORD.search(before) is not None or not long_flag
    return not judge(secret, after, password=password, strong=long_flag, quoted=quoted)


def _fake(alphabet: str, n: int, seed: str) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


_B62: Final = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

# `key = value` in every syntax with an operator, an XML element or an attribute pair. Its id
# predates the other credential words: a dict value under a secret-named key is masked as it.
ASSIGNMENT_RULE: Final = LeakRule(
    "password-assignment",
    ASSIGNMENT,
    ASSIGNMENT_TRIGGER,
    reject_assigned,
    family="generic",
    context=True,
    examples=(
        f'password = "{_fake(_B62, 14, "pa1")}"',
        f"DB_PASSWORD ?= {_fake(_B62, 12, 'pa2')}",
        f'System.setProperty("API_TOKEN", "{_fake(_B62, 20, "pa3")}");',
        f"<apiToken>\n    {_fake(_B62, 24, 'pa4')}\n</apiToken>",
        f'$dbPassword .= "{_fake(_B62, 14, "pa5")}";',
        f"ZORBLAX_API_KEY={_fake(_B62, 40, 'pa6')}",
        f'AccountKey: "{_fake(_B62, 44, "pa7")}",',
        f'<add key="ZorblaxApiKey" value="{_fake(_B62, 32, "pa8")}" />',
    ),
    near_misses=(
        'password = os.getenv("DB_PASSWORD") and token = process.env.TOKEN',
        "GITHUB_API_KEY=\nDYNATRACE_API_KEY=",
        "SENTRY_AUTH_TOKEN= SENTRY_ORG=acme db.password= db.url=jdbc:h2:mem",
        "publicToken = 'pk8Hc2LxQ0vWm4Rz7Tn1Ya5Ub'; export API_TOKEN=sk3Fg...",
        'label("password", "Password"); os.getenv("API_TOKEN", "changeme")',
        'fn::secret: ops_eyJhbGciOi...[truncated] and token: "sha256~XXXX_YOUR_TOKEN_HERE"',
        "pw = getAdminPassword(); sel = \"#new-password\"; href = '/reset-password'",
        'log("AdminPassword: " + x + "!"); passwordLabel: "Password"',
    ),
    shape="`<credential-named key> = value`",
    parts=value_parts,
)

CONTEXT_RULES: Final[tuple[LeakRule, ...]] = (
    LeakRule(
        "credential-flag",
        FLAGS,
        FLAGS_TRIGGER,
        reject_flag,
        family="generic",
        context=True,
        examples=(
            f"zorblax-cli deploy --api-key {_fake(_B62, 32, 'cf1')} --region eu",
            "psexec \\\\host -u Administrator -p Wint3r!Gate cmd",
            "New-ZorblaxSession -Password Summer2024! -Force",
            "msdeploy.exe -dest:auto,computerName=web01 /u:deploy /p:Gr4nite#Hill",
        ),
        near_misses=(
            "mkdir -p /tmp/build && ssh -p 2222 host && docker run -p 8080:80 app",
            "msbuild app.sln /p:Configuration=Release --token $ZORBLAX_TOKEN",
            "docker login --password-stdin -u ci && mysql -u root -p mydb",
        ),
        shape="`--<name>-key X`, `-Password X`, `-u U -p X`, `/p:X`",
    ),
    LeakRule(
        "credential-argument",
        ARGUMENTS,
        ARGUMENTS_TRIGGER,
        _reject_arguments,
        family="generic",
        context=True,
        examples=(
            'var c = new NetworkCredential("svc-build", "Vx7!kLm2pQ");',
            f'client = Zorblax.builder().apiKey("{_fake(_B62, 30, "ca1")}").build()',
            "requests.get(url, auth=('deploy', 'Gh7tY2mQ9z'))",
        ),
        near_misses=(
            'cred = new NetworkCredential(user, getPassword()); setToken(os.getenv("T"))',
            'form.setPassword(""); field.passwordLabel("Password"); auth(request)',
        ),
        shape='`<credential name>(..."value")`',
        parts=argument_values,
    ),
    LeakRule(
        "credential-in-prose",
        PROSE,
        PROSE_TRIGGER,
        reject_prose,
        family="generic",
        context=True,
        examples=(
            f"The zorblax API KEY {_fake(_B62, 32, 'cp1')} is live now.",
            "the password is 'Qwv8Lm2024!' until Friday",
            "machine ftp.example.net login deploy password Trelw4ny",
            f"Your new Zorblax token is {_fake(_B62, 28, 'cp2')}",
        ),
        near_misses=(
            "the password is stored in the vault, and the API key rotates weekly",
            "set the token to $ZORBLAX_TOKEN and the key to ${KEY}",
            "the primary key is 42 and the password must be 12 characters",
        ),
        shape="credential word + prose (`is`, `was`, `use`, `:`) + value",
    ),
)
