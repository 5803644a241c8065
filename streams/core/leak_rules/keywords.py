"""Secrets known by a credential word beside them: assignments, Authorization headers,
connection strings, Basic-auth fields, `curl -u`. Their families are generic and database.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

import base64
import re
from typing import Final

from streams.core.leak_context import ASSIGNMENT_RULE, CONTEXT_RULES
from streams.core.leak_rules.filters import is_placeholder, looks_fake
from streams.core.leak_rules.pieces import B62, B64, HEX, b64, fake, reject_pair_secret
from streams.core.leak_rules.rule import LeakRule

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]


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


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


# What ends the key of a `basic-auth-field`: the whole value after it is the base64 of a pair.
_BASIC_KEY_END = re.compile(
    r"(?i)(?:auth|authentication|credentials?)\\?[\"'`]?[ \t]*[:=][ \t]*\\?[\"'`]?$"
)

_BASIC_USER = re.compile(r"[A-Za-z0-9._@+-]{1,64}")


def _reject_basic_auth_field(secret: str, before: str, after: str) -> bool:
    """The whole value right after the key must be base64 of `user:password`; a password after
    `user:` or in a tuple is judged like a `curl -u` password (no placeholders, no words)."""
    if _BASIC_KEY_END.search(before) is not None:
        raw = b64(secret)
        if raw is None:
            return True
        user, sep, password = raw.decode("latin-1").partition(":")
        if not sep or _BASIC_USER.fullmatch(user) is None:
            return True
        secret = password
    return reject_pair_secret(secret, before, after)


def _reject_curl_password(secret: str, before: str, after: str) -> bool:
    """`reject_pair_secret` for `curl -u`: a password in braces (`"{Zq5kVr...}"`) is judged
    by what the braces hold, and a token standing as the user (`-u TOKEN:`) needs a digit."""
    inner = secret[1:-1] if secret.startswith("{") and secret.endswith("}") else secret
    if inner is not secret and not _random_value(inner):
        inner = secret
    if after.startswith(":") and not (
        any(c.isdigit() for c in inner) and any(c.isalpha() for c in inner)
    ):
        return True
    return reject_pair_secret(inner, before, after)


def _random_value(value: str) -> bool:
    return len(value) >= 8 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
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
            f'"basic_auth": "deploy:{fake(B62, 18, "ba1")}"',
            f'"http_auth": "{_basic("svc-backup", fake(B62, 20, "ba2"))}"',
            f'es = Elasticsearch(hosts, basic_auth=("elastic", "{fake(B62, 20, "ba4")}"))',
            f"spring.boot.admin.client.basicAuth: monitor:{fake(B62, 14, 'ba5')}",
        ),
        near_misses=(
            'basic_auth: "${BASIC_USER}:${BASIC_PASSWORD}"',
            '"basicAuth": "user:password"',
            "http_auth: https://proxy.example.com:3128",
            '"user_auth": "' + fake(B64, 24, "ba6") + '"',
        ),
        shape="`basic_auth` / `basicAuth` / `http_auth` field + `user:` password or its base64",
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
            f"curl -u admin:{fake(B62, 14, 'cu1')} https://api.example.com/v1",
            f"curl -s --user 'ci:{fake(B62, 20, 'cu2')}' https://jenkins.example.com/job",
            f"curl -X POST https://api.example.com/v1/hooks \\\n  -u deploy@example.com:"
            f"{fake(B62, 10, 'cu3')}@{fake(B62, 6, 'cu4')}",
            f'curl -u "{fake(B62, 24, "cu5")}7:" https://api.example.com/v1/charges',
        ),
        near_misses=(
            "curl -u admin https://api.example.com (prompts)",
            "curl -u $USER:$PASS https://x",
            "curl -u username:password https://api.example.com",
            'curl -u "<user>:<password>" https://x && curl -u "${{ secrets.U }}:${{ secrets.P }}"',
        ),
        shape="`curl -u user:` + password",
    ),
)

TOKENS: Final[tuple[LeakRule, ...]] = ()

KEYED: Final[tuple[LeakRule, ...]] = ()

# Secrets known by their context alone: listed last, so a specific rule names a span both match.
CONTEXT: Final[tuple[LeakRule, ...]] = (
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
            f"Authorization: Bearer {fake(B62, 40, 'ah1')}",
            f"curl -H 'Authorization: Basic {_basic('ci', fake(B62, 16, 'ah2'))}' https://x",
            f"curl --header 'Authorization:  {fake(HEX, 8, 'ah3')}-{fake(HEX, 4, 'ah4')}-"
            f"{fake(HEX, 4, 'ah5')}-{fake(HEX, 12, 'ah6')}'",
            f'-H "Authorization: Api-Token {fake(HEX, 40, "ah7")}"',
        ),
        near_misses=(
            'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com',
            "Authorization: Bearer <token>",
            "Authorization: required-for-every-request (see the docs)",
            "Authorization: Bearer XXXXXXXXXXXXXXXX",
        ),
        shape="`Authorization: Bearer|Basic|Token` + value",
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
            f"Server=tcp:db,1433;Database=app;User Id=sa;Password={fake(B62, 14, 'cs1')};",
            f"Host=db;Port=5432;Username=app;Pwd={fake(B62, 12, 'cs2')};Pooling=true",
        ),
        near_misses=(
            "Server=db;Integrated Security=true;Password=${DB_PASSWORD};",
            "Server=db;Password=;Database=app",
        ),
        shape="`;Password=` + value + `;`",
    ),
    # Secrets spelled out beside a credential word in any syntax (`leak_context`):
    # `password = "..."`, `ZORBLAX_API_KEY=...`, `<apiToken>...`, prose, CLI flags, arguments.
    ASSIGNMENT_RULE,
    *CONTEXT_RULES,
)
