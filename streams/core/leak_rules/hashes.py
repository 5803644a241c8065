"""Password hashes: crackable offline, so they leak the password they hash.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses. The
crypt(3) family (bcrypt, argon2, sha-crypt, md5-crypt, yescrypt, scrypt and the PBKDF2
strings of Django and Werkzeug) names itself by its `$id$` head, so it is masked wherever it
stands; a bare NTLM hash is 32 hex like any MD5, so it is masked only in a credential dump
(`user:rid:lm:nt:::`), after a hash word (`NTLM:`, `nthash=`) or in `-hashes lm:nt`.
"""

from __future__ import annotations

import base64
import random
from typing import Final

from streams.core.leak_rules.filters import is_placeholder, looks_fake
from streams.core.leak_rules.pieces import B62, HEX, fake
from streams.core.leak_rules.rule import LeakRule

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

# The crypt(3) alphabet (`./0-9A-Za-z`) and a salt of it.
_CRYPT = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_C = r"[./A-Za-z0-9]"
_B64_RE = r"[A-Za-z0-9+/]"
# Not glued to more hash text on the right.
_AFTER = r"(?:[^./A-Za-z0-9$+=]|$)"


def _reject_hash(secret: str, _before: str, _after: str) -> bool:
    """A documented stand-in (`$2b$12$xxxx...`, `EXAMPLE`) or one character over and over."""
    body = secret.rsplit("$", 1)[-1]
    return is_placeholder(secret) or looks_fake(body) or len(set(body)) < 4


def _b64raw(n: int, seed: str) -> str:
    """`n` random bytes in base64 without padding (argon2's and Django's encoding)."""
    return base64.b64encode(random.Random(seed).randbytes(n)).decode().rstrip("=")


SPECIFIC: Final[tuple[LeakRule, ...]] = (
    # bcrypt (OpenBSD, `$2a$`/`$2b$`/`$2y$`; `$2x$` from the 2011 crypt_blowfish bug): cost,
    # then 22 characters of salt and 31 of hash. https://www.openwall.com/crypt/
    LeakRule(
        "bcrypt-hash",
        rf"(?P<secret>\$2[abxy]?\$[0-9]{{2}}\${_C}{{53}}){_AFTER}",
        r"\$2[abxy]?\$[0-9][0-9]\$",
        _reject_hash,
        family="password-hash",
        examples=(
            f"admin:$2b$12${fake(_CRYPT, 53, 'bc1')}",
            f"INSERT INTO users VALUES (1, 'ana', '$2y$10${fake(_CRYPT, 53, 'bc2')}');",
        ),
        near_misses=(
            "bcrypt hashes look like $2b$12$ followed by 53 characters.",
            "password_hash: $2b$12$xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            f"$2b$12${fake(_CRYPT, 40, 'bc3')}",
        ),
        shape="`$2b$` + cost + `$` + 53 crypt characters",
    ),
    # Argon2 PHC strings (RFC 9106, the reference encoding):
    # $argon2id$v=19$m=..,t=..,p=..$salt$hash.
    # https://github.com/P-H-C/phc-string-format/blob/master/phc-sf-spec.md
    LeakRule(
        "argon2-hash",
        r"(?P<secret>\$argon2(?:id|i|d)\$(?:v=[0-9]{1,3}\$)?m=[0-9]{1,10},t=[0-9]{1,10},"
        rf"p=[0-9]{{1,3}}(?:,[a-z]{{1,8}}=[A-Za-z0-9+/]{{1,64}}){{0,2}}\${_B64_RE}{{8,128}}"
        rf"\${_B64_RE}{{16,512}}){_AFTER}",
        r"\$argon2",
        _reject_hash,
        family="password-hash",
        examples=(
            f"$argon2id$v=19$m=65536,t=3,p=4${_b64raw(16, 'ar1')}${_b64raw(32, 'ar2')}",
            f'{{"user": "bo", "hash": "$argon2i$v=19$m=4096,t=3,p=1${_b64raw(16, "ar3")}'
            f'${_b64raw(32, "ar4")}"}}',
        ),
        near_misses=(
            "Argon2 hashes start $argon2id$v=19$m=65536,t=3,p=4$ then the salt and the hash.",
            "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ),
        shape="`$argon2id$v=19$m=..,t=..,p=..$` + salt + `$` + hash",
    ),
    # crypt(3) strings of glibc and its kin: md5-crypt `$1$`, Apache `$apr1$`, sha256-crypt
    # `$5$`, sha512-crypt `$6$` (optional `rounds=N$`), Cisco type 8/9 `$8$`/`$9$`, yescrypt
    # `$y$`, gost-yescrypt `$gy$`, scrypt `$7$`, phpass `$P$`/`$H$`; /etc/shadow and htpasswd.
    # https://man.archlinux.org/man/crypt.5
    LeakRule(
        "crypt-hash",
        rf"(?P<secret>\$(?:1|apr1|5|6|8|9)\$(?:rounds=[0-9]{{1,9}}\$)?{_C}{{1,16}}\${_C}{{22,86}}"
        rf"|\$g?y\${_C}{{1,32}}\${_C}{{1,64}}\${_C}{{43}}"
        rf"|\$7\${_C}{{11,14}}\${_C}{{1,64}}\${_C}{{43}}"
        rf"|\$[PH]\$[5-9A-Z]{_C}{{30}}){_AFTER}",
        r"\$(?:1|apr1|5|6|8|9)\$|\$g?y\$|\$7\$|\$[PH]\$",
        _reject_hash,
        family="password-hash",
        examples=(
            f"root:$6${fake(_CRYPT, 16, 'cr1')}${fake(_CRYPT, 86, 'cr2')}:19700:0:99999:7:::",
            f"deploy:$apr1${fake(_CRYPT, 8, 'cr3')}${fake(_CRYPT, 22, 'cr4')}",
            f"user ana with hash $y$j9T${fake(_CRYPT, 24, 'cr5')}${fake(_CRYPT, 43, 'cr6')}",
            f"$5$rounds=5000${fake(_CRYPT, 16, 'cr7')}${fake(_CRYPT, 43, 'cr8')}",
        ),
        near_misses=(
            "In /etc/shadow, $6$ means SHA-512 and $y$ yescrypt; `!` or `*` locks the account.",
            "price: $5$ per seat, $6$ with support",
            "root:$6$salt$xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ),
        shape="`$1$`/`$5$`/`$6$`/`$y$`/`$apr1$`/... + salt + `$` + hash",
    ),
    # PBKDF2 and scrypt strings of Django (`pbkdf2_sha256$<iterations>$<salt>$<base64>`) and
    # Werkzeug/Flask (`pbkdf2:sha256:<iterations>$<salt>$<hex>`, `scrypt:32768:8:1$...`).
    # https://docs.djangoproject.com/en/stable/topics/auth/passwords/
    LeakRule(
        "pbkdf2-hash",
        r"(?:^|[^A-Za-z0-9_])(?P<secret>pbkdf2_sha(?:1|256|512)\$[0-9]{3,8}\$[A-Za-z0-9./+]{4,64}"
        r"\$[A-Za-z0-9+/]{27,88}={0,2}"
        r"|(?:pbkdf2:sha(?:1|256|512)(?::[0-9]{1,8})?|scrypt:[0-9]{1,8}:[0-9]{1,3}:[0-9]{1,3})"
        r"\$[A-Za-z0-9./+]{4,64}\$[a-f0-9]{40,256})(?:[^A-Za-z0-9+/=]|$)",
        r"pbkdf2_sha|pbkdf2:sha|scrypt:[0-9]",
        _reject_hash,
        family="password-hash",
        examples=(
            f"pbkdf2_sha256$870000${fake(B62, 22, 'pb1')}${_b64raw(32, 'pb2')}=",
            f"password_hash = 'scrypt:32768:8:1${fake(B62, 16, 'pb3')}${fake(HEX, 128, 'pb4')}'",
            f"pbkdf2:sha256:600000${fake(B62, 16, 'pb5')}${fake(HEX, 64, 'pb6')}",
        ),
        near_misses=(
            "Django stores pbkdf2_sha256$<iterations>$<salt>$<hash>.",
            "PASSWORD_HASHERS = ['django.contrib.auth.hashers.PBKDF2PasswordHasher']",
        ),
        shape="`pbkdf2_sha256$` / `pbkdf2:sha256:` / `scrypt:` + salt + `$` + hash",
    ),
    # Kerberos hashes for offline cracking (AS-REP roasting, Kerberoasting), as hashcat and
    # impacket print them: $krb5asrep$23$..., $krb5tgs$23$*user$realm$spn*$...
    LeakRule(
        "kerberos-hash",
        r"(?P<secret>\$krb5(?:asrep|tgs|pa)\$(?:17|18|23)\$"
        r"(?:\*[^*\s]{1,256}\*\$|[^\s$:]{1,256}:|[^\s$]{1,256}\$)?"
        r"[0-9a-fA-F]{24,}\$[0-9a-fA-F]{64,})",
        r"\$krb5(?:asrep|tgs|pa)\$",
        _reject_hash,
        family="password-hash",
        examples=(
            f"$krb5asrep$23$svc-backup@CORP.LOCAL:{fake(HEX, 32, 'kr1')}${fake(HEX, 240, 'kr2')}",
            f"$krb5tgs$23$*sqlsvc$CORP.LOCAL$MSSQLSvc/db01*${fake(HEX, 32, 'kr3')}"
            f"${fake(HEX, 400, 'kr4')}",
        ),
        near_misses=(
            "hashcat mode 18200 takes $krb5asrep$23$ hashes.",
            "GetUserSPNs.py prints $krb5tgs$23$*user$realm$spn*$<checksum>$<data>.",
        ),
        shape="`$krb5asrep$23$` / `$krb5tgs$23$` + checksum + `$` + data",
    ),
    # NTLM hashes where they are one: a pwdump/secretsdump line `user:rid:LM:NT:::` (both
    # halves), impacket's `-hashes LM:NT`, or 32 hex after an NTLM word (`NTLM : ...`,
    # mimikatz; `nthash=`).
    LeakRule(
        "ntlm-hash",
        r"[^\s:\"']{1,64}:[0-9]{1,10}:(?P<secret>[a-fA-F0-9]{32}:[a-fA-F0-9]{32}):::"
        r"|-hashes[ \t=]{1,4}(?P<secret2>(?:[a-fA-F0-9]{32})?:[a-fA-F0-9]{32})"
        r"|(?i:ntlm|nt[_ -]?hash|nthash|ntlm[_ -]?hash)[\"']?[ \t]{0,8}[:=][ \t]{0,4}[\"']?"
        r"(?P<secret3>[a-fA-F0-9]{32})(?:[^A-Za-z0-9]|$)",
        r":::|-hashes|(?i:ntlm|nt[_ -]?hash|nthash)",
        _reject_hash,
        family="password-hash",
        examples=(
            f"Administrator:500:aad3b435b51404eeaad3b435b51404ee:{fake(HEX, 32, 'nt1')}:::",
            f"psexec.py -hashes :{fake(HEX, 32, 'nt2')} corp/admin@10.0.0.5",
            f"        NTLM     : {fake(HEX, 32, 'nt3')}",
        ),
        near_misses=(
            "NTLM hashes are 32 hex characters; dump them with secretsdump.py.",
            f"md5sum: {fake(HEX, 32, 'nt4')}  archive.tar.gz",
            "Guest:501:aad3b435b51404eeaad3b435b51404ee:00000000000000000000000000000000:::",
        ),
        shape="`user:rid:LM:NT:::`, `-hashes LM:NT`, `NTLM: ` + 32 hex",
    ),
)

TOKENS: Final[tuple[LeakRule, ...]] = ()

KEYED: Final[tuple[LeakRule, ...]] = ()

CONTEXT: Final[tuple[LeakRule, ...]] = ()
