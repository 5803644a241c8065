"""Vendor-free token shapes: JWTs (signed, unsecured, written in base64 again).

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

import base64
import json
import re
from typing import Final

from streams.core.leak_rules.pieces import B62, B64, HEX, URL, b64, fake
from streams.core.leak_rules.rule import LeakRule

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]


def _jwt_base64(seed: str) -> str:
    """A synthetic JWT (random header, claims and signature) written in base64 again."""
    token = f"eyJ{fake(URL, 30, seed + 'h')}.eyJ{fake(URL, 60, seed + 'c')}."
    return base64.b64encode((token + fake(URL, 43, seed + "s")).encode()).decode()


def _reject_not_jwt_base64(secret: str, _before: str, _after: str) -> bool:
    """Keep only what decodes to a three-part JWT (header, claims, signature)."""
    raw = b64(secret, urlsafe=True)
    return raw is None or _JWT_TEXT.match(raw.decode("latin-1")) is None


_JWT_TEXT = re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}")


def _jwt_part(obj: dict[str, object]) -> str:
    """A JSON object as a JWT segment (base64url, no padding)."""
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _json_segment(segment: str) -> object:
    """A JWT segment decoded to JSON, or None when it is not base64url of a JSON text."""
    raw = b64(segment, urlsafe=True)
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


# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # JWTs (RFC 7519) in JWS compact form (RFC 7515 §7.1): base64url header "." payload "."
    # signature; a JSON header and claims set both start `{"`, i.e. "eyJ"/"ey".
    LeakRule(
        "jwt",
        r"(?:^|[^A-Za-z0-9_-])(?P<secret>eyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}"
        r"\.[A-Za-z0-9_-]{16,})",
        r"eyJ[A-Za-z0-9_-]*\.ey",
        family="generic",
        examples=(
            f"Bearer eyJ{fake(URL, 30, 'j1')}.eyJ{fake(URL, 60, 'j2')}.{fake(URL, 43, 'j3')}",
            f"id_token=eyJ{fake(URL, 20, 'j4')}.eyJ{fake(URL, 90, 'j5')}.{fake(URL, 86, 'j6')}",
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
            "ZXlK" + fake(B64, 60, "jb3"),
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
            f"{_jwt_part({'sub': fake(B62, 12, 'ju1'), 'role': 'admin'})}.';",
            f"Cookie: auth={_jwt_part({'alg': 'none', 'kid': fake(HEX, 8, 'ju6')})}."
            f"{_jwt_part({'uid': fake(HEX, 16, 'ju2'), 'scope': 'write'})}.; Path=/",
        ),
        near_misses=(
            f"{_jwt_part({'alg': 'HS256', 'typ': 'JWT'})}."
            f"{_jwt_part({'sub': fake(B62, 12, 'ju3')})}. (the signature was cut off)",
            f"{_jwt_part({'alg': 'none'})}.eyJ{fake(URL, 24, 'ju4')}.",
            f"{_jwt_part({'alg': 'none'})}.{_jwt_part({'sub': fake(B62, 12, 'ju5')})}",
        ),
        shape='`eyJ` header with `"alg":"none"` `.` claims `.` (no signature)',
    ),
)

TOKENS: Final[tuple[LeakRule, ...]] = ()

KEYED: Final[tuple[LeakRule, ...]] = ()

CONTEXT: Final[tuple[LeakRule, ...]] = ()
