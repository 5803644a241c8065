"""Private keys: PEM and DER keys, PuTTY files, age and wallet keys, a GCP service account's key.

Each rule is data: its pattern, trigger, shape, and its own examples and near misses."""

from __future__ import annotations

import base64
import random
import re
from typing import Final

from streams.core.leak_rules.filters import STAND_IN, reject_fake
from streams.core.leak_rules.pieces import B64, HEX, b64, fake
from streams.core.leak_rules.rule import LeakRule
from streams.core.leak_rules.shapes import R, token

__all__ = ["CONTEXT", "KEYED", "SPECIFIC", "TOKENS"]

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


def _pem_example(label: str, newline: str, seed: str) -> str:
    lines = [fake(B64, 64, seed + str(i)) for i in range(3)]
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
    raw = b64(data[:_DER_HEAD_CHARS])  # all the checks below read: 12 bytes
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
    raw = b64(secret[:_PEM_BASE64_HEAD])  # the regex's 74 characters at least: whole
    if raw is None:
        return True
    first = raw.split(b"\n", 1)[0]
    return not (first.startswith(b"-----BEGIN ") and first.endswith(b"PRIVATE KEY-----"))


# base64 characters enough to hold the longest armour line (`-----BEGIN ENCRYPTED PRIVATE KEY-----`)
_PEM_BASE64_HEAD: Final = 72


def _pem_base64_example(label: str, seed: str) -> str:
    return base64.b64encode((_pem_example(label, "\n", seed) + "\n").encode()).decode()


# Formats that are more than a prefix and runs: listed first, they name a span they share.
SPECIFIC: Final[tuple[LeakRule, ...]] = (
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
            f"{fake(B64, 44, 'pp1')}\nPrivate-MAC: {fake(HEX, 64, 'pp2')}",
            "PuTTY-User-Key-File-2: ssh-rsa\\nPrivate-Lines: 2\\n"
            f"{fake(B64, 64, 'pp3')}\\n{fake(B64, 40, 'pp4')}\\n",
        ),
        near_misses=("PuTTY keys have a Private-Lines header.", "Private-Lines: none"),
        shape="`Private-Lines: N` + N base64 lines",
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
    # WireGuard interface private keys and peer preshared keys (32 bytes in base64) in a
    # wg-quick config; the `PublicKey` lines stay. https://www.wireguard.com/quickstart/
    LeakRule(
        "wireguard-key",
        r"(?i:privatekey|presharedkey)[ \t]{0,4}=[ \t]{0,4}"
        r"(?P<secret>[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=)(?:[^A-Za-z0-9+/=]|$)",
        r"(?i:privatekey|presharedkey)[ \t]*=",
        reject_fake,
        family="private-key",
        examples=(
            f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {fake(B64, 42, 'wg1')}A=",
            f"[Peer]\nPublicKey = {fake(B64, 42, 'wg2')}E=\n"
            f"PresharedKey = {fake(B64, 42, 'wg3')}Q=",
        ),
        near_misses=(
            "PrivateKey = <contents of privatekey>",
            f"PublicKey = {fake(B64, 42, 'wg4')}E=",
        ),
        shape="`PrivateKey = ` + 44 base64",
    ),
)

# Prefixed tokens: the vendor's documented prefix, then runs of one alphabet.
# fmt: off
TOKENS: Final[tuple[LeakRule, ...]] = (
    token("age-secret-key", "private-key", ["AGE-SECRET-KEY-1"], R("bech32", 58)),
    token("age-plugin-identity", "private-key", ["AGE-PLUGIN-"], R("upper", 8, 20), "-1",
          R("upper", 50, 70)),
    token("bitcoin-wif-key", "private-key", ["5H", "5J", "5K"], R("b58", 49)),
    token("bitcoin-extended-private-key", "private-key", ["xprv9", "tprv8"], R("b58", 100, 107)),
    token("nostr-secret-key", "private-key", ["nsec1"], R("bech32l", 58)),
)
# fmt: on

KEYED: Final[tuple[LeakRule, ...]] = ()

CONTEXT: Final[tuple[LeakRule, ...]] = ()
