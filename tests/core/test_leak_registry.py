"""Every built-in rule against its own examples and near misses, in every decoded view; whole
tokens only; once known, masked everywhere; no collateral masking of look-alikes."""

from __future__ import annotations

import base64
import html
import json
import re
import subprocess
import sys
from collections.abc import Callable
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streams.core.leak_docs import PAGE, page
from streams.core.leak_registry import BUILTIN_RULES, FAMILIES
from streams.core.leak_views import decoded_text
from streams.core.leaks import Masker

MASKER = Masker()
RULES = {r.id: r for r in BUILTIN_RULES}
MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


def test_the_registry_has_200_formats_each_with_examples() -> None:
    assert len(RULES) == len(BUILTIN_RULES) >= 200
    lacking = [r.id for r in BUILTIN_RULES if len(r.examples) < 2 or len(r.near_misses) < 2]
    assert lacking == []
    assert {r.family for r in BUILTIN_RULES} == set(FAMILIES)
    assert all(r.shape for r in BUILTIN_RULES)


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_each_example_is_masked_by_its_rule(rule_id: str) -> None:
    for example in RULES[rule_id].examples:
        out, counts = MASKER.mask_text(example)
        assert counts.get(rule_id, 0) >= 1, (rule_id, example, counts)
        assert out != example


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_each_near_miss_is_left_by_its_rule(rule_id: str) -> None:
    for text in RULES[rule_id].near_misses:
        _out, counts = MASKER.mask_text(text)
        assert rule_id not in counts, (rule_id, text, counts)


def _secret_of(rule_id: str, example: str) -> str:
    """What the rule masks in its example (the text under its first marker)."""
    out, _ = MASKER.mask_text(example)
    start = out.index(f"[REDACTED:{rule_id}]")
    tail = out[start + len(f"[REDACTED:{rule_id}]") :]
    end = len(example) - len(tail)
    return example[start:end]


# How a reader's view can hide a secret (each is undone by leak_views).
ENCODERS: dict[str, Callable[[str], str]] = {
    "entities": lambda s: "".join(f"&#{ord(c)};" if i % 3 == 0 else c for i, c in enumerate(s)),
    "html": lambda s: f"<p>{html.escape(s)}</p>",
    "percent": lambda s: "https://example.com/?q=" + quote(s, safe=""),
    "json": lambda s: (
        json.dumps(s, ensure_ascii=False).replace("/", "\\/")[1:-1] if "\\" not in s else s
    ),
    "unicode-escape": lambda s: (
        "".join(f"\\u{ord(c):04x}" if c.isalpha() else c for c in s[:8]) + s[8:]
    ),
    "zero-width": lambda s: s[: len(s) // 2] + "\u200b" + s[len(s) // 2 :],
    "markup": lambda s: s[: len(s) // 2] + "<b></b>" + s[len(s) // 2 :],
}
TOKEN_RULES = sorted(
    r.id for r in BUILTIN_RULES if "\n" not in "".join(r.examples) and "\\n" not in r.examples[0]
)


@pytest.mark.parametrize("rule_id", TOKEN_RULES)
def test_every_rule_sees_through_decoded_views(rule_id: str) -> None:
    """Each rule's example spelled with references, escapes, invisible characters or markup is
    masked; nothing of its secret survives as a reader decodes the text."""
    for n, example in enumerate(RULES[rule_id].examples):
        secret = _secret_of(rule_id, example)
        for form, encode in ENCODERS.items():
            out, counts = MASKER.mask_text(f"see {encode(example)} now")
            assert counts, (rule_id, n, form)
            assert secret not in out and secret not in decoded_text(out), (rule_id, n, form)


@settings(max_examples=60, deadline=None)
@given(
    rule_id=st.sampled_from(TOKEN_RULES),
    pair=st.sampled_from(
        [
            ("entities", "json"),
            ("html", "json"),
            ("percent", "json"),
            ("zero-width", "json"),
            ("zero-width", "percent"),
            ("zero-width", "entities"),
            ("markup", "json"),
        ]
    ),
)
def test_views_compose(rule_id: str, pair: tuple[str, str]) -> None:
    """An encoding inside another, in the order a reader undoes them (references inside a
    JSON string, an invisible character inside a percent-encoded URL), still does not let a
    rule's example through."""
    inner, outer = pair
    example = RULES[rule_id].examples[0]
    secret = _secret_of(rule_id, example)
    hidden = ENCODERS[outer](ENCODERS[inner](example))
    forms = (inner, outer)
    out, _counts = MASKER.mask_text(f"see {hidden} now")
    assert secret not in out, (rule_id, forms)


# --- whole tokens ----------------------------------------------------------------------------


def test_a_match_covers_the_whole_token_or_nothing() -> None:
    key = "AIza" + "Sy9fK2mQ7xL0pR4tV8wB1nC5dE3gH6jM" + "kQz"
    assert MASKER.mask_text(f"key={key}")[0] == "key=[REDACTED:google-api-key]"
    longer = key + "Tail9"  # one token, longer than the format: not a Google key
    assert "google-api-key" not in MASKER.mask_text(f"id {longer}")[1]


def test_prefix_rules_do_not_fire_inside_url_words() -> None:
    for text in (
        "https://cdn.example.com/wp-content/uploads/2019/05/hugs-xoxo-indieweb-1.jpg",
        "https://example.com/blog/the-ghp_-prefix-explained",
        "see https://img.example.com/photo-sk_live_abcdefghijklmnop1234-1.png",
    ):
        assert MASKER.mask_text(text) == (text, {})
    # A real token as a whole path segment is still masked.
    pat = "ghp_" + "Zq9Xb2" * 6
    assert MASKER.mask_text(f"https://example.com/t/{pat}/x")[1] == {"github-pat": 1}


def test_an_assignment_never_takes_the_next_line() -> None:
    text = "GITHUB_API_KEY=\nDYNATRACE_API_KEY=\nPASSWORD:\n  - item"
    assert MASKER.mask_text(text) == (text, {})
    out, _counts = MASKER.mask_text("API_KEY=\nDB_PASSWORD=Kq7rTz92mW")
    assert out == "API_KEY=\nDB_PASSWORD=[REDACTED:password-assignment]"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("PASSWORD ?= Kq7rTz92mW", "PASSWORD ?= [REDACTED:password-assignment]"),
        ("DB_PASSWORD ::= Kq7rTz92mW", "DB_PASSWORD ::= [REDACTED:password-assignment]"),
        ('apiToken := "Kq7rTz92mW"', 'apiToken := "[REDACTED:password-assignment]"'),
        ('const ApiKey = "Kq7rTz92mW"', 'const ApiKey = "[REDACTED:password-assignment]"'),
        (
            'var dbPassword string = "Kq7rTz92mW"',
            'var dbPassword string = "[REDACTED:password-assignment]"',
        ),
    ],
)
def test_makefile_and_go_assignments(text: str, masked: str) -> None:
    assert MASKER.mask_text(text)[0] == masked


# --- once known, masked everywhere -----------------------------------------------------------


def test_a_value_found_by_context_is_masked_wherever_it_stands() -> None:
    out, counts = MASKER.mask_text("password = 'Kq7rTz92mW' | 'Kq7rTz92mW' and Kq7rTz92mW.")
    assert "Kq7rTz92mW" not in out
    assert counts == {"password-assignment": 3}
    # Whole tokens only: a longer word holding the value is another word.
    out, _ = MASKER.mask_text("password = 'Kq7rTz92mW'; Kq7rTz92mWx stays")
    assert "Kq7rTz92mWx stays" in out


def test_repeats_are_masked_across_a_record_and_its_views() -> None:
    tree = {
        "config": 'DB_PASSWORD="Kq7rTz92mW"',
        "log": ["connecting with Kq7rTz92mW", "<p>pw: Kq7r&#84;z92mW</p>"],
        "note": "nothing here",
    }
    masked, hits = MASKER.mask_tree(tree)
    assert "Kq7rTz92mW" not in json.dumps(masked)
    assert "Kq7r&#84;z92mW" not in json.dumps(masked)
    assert masked["note"] == "nothing here"
    assert {h.path for h in hits} == {"config", "log[0]", "log[1]"}


def test_a_secret_named_key_teaches_its_value_to_the_record() -> None:
    masked, _ = MASKER.mask_tree({"password": "Kq7rTz92mW", "echo": "you typed Kq7rTz92mW"})
    assert masked == {
        "password": "[REDACTED:password-assignment]",
        "echo": "you typed [REDACTED:password-assignment]",
    }


def test_short_and_placeholder_values_are_not_repeated() -> None:
    out, _counts = MASKER.mask_text("password = 'abc' then abc and abcd")
    assert out == "password = '[REDACTED:password-assignment]' then abc and abcd"
    text = "token = '<your-token>' then <your-token>"
    assert MASKER.mask_text(text) == (text, {})


# --- pairs -----------------------------------------------------------------------------------


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    ("text", "secret", "kept"),
    [
        ("curl -u deploy:Kq7rTz92mW https://ci.example.com/api", "Kq7rTz92mW", "curl -u deploy:"),
        (
            f"-H 'Authorization: Basic {_b64('deploy:Kq7rTz92mW')}'",
            _b64("deploy:Kq7rTz92mW"),
            "Basic ",
        ),
        (
            f'{{"auths": {{"ghcr.io": {{"auth": "{_b64("bot:Kq7rTz92mW")}"}}}}}}',
            _b64("bot:Kq7rTz92mW"),
            "ghcr.io",
        ),
        ("role_id=db-role secret_id=6f1c2a9e-4b7d-4e21-9c3a-8d5e7f0a1b2c", "6f1c2a9e", "role_id"),
        ("https://ab12cd34:ef56ab78@gems.contribsys.com/", "ab12cd34:ef56ab78", "https://"),
        ("BUNDLE_GEMS__EXAMPLE__COM=ci:Kq7rTz92mW", "Kq7rTz92mW", "BUNDLE_GEMS__EXAMPLE__COM="),
        (
            '<add key="ClearTextPassword" value="Kq7rTz92mW" />',
            "Kq7rTz92mW",
            'key="ClearTextPassword"',
        ),
    ],
)
def test_pairs_mask_the_secret_part(text: str, secret: str, kept: str) -> None:
    out, counts = MASKER.mask_text(text)
    assert secret not in out and kept in out, (out, counts)


def test_kubernetes_secret_values_are_masked_and_keys_kept() -> None:
    manifest = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n"
        f"  username: {_b64('app')}\n  password: {_b64('Kq7rTz92mW')}\n"
    )
    out, counts = MASKER.mask_text(manifest)
    assert _b64("Kq7rTz92mW") not in out and _b64("app") not in out
    assert "  username: [REDACTED:kubernetes-secret-data]" in out
    assert "name: db" in out and counts == {"kubernetes-secret-data": 2}


# --- no collateral damage --------------------------------------------------------------------

REAL = "ghp_" + "Zq9Xb2" * 6  # a real-shaped token beside each exemption


@pytest.mark.parametrize(
    "benign",
    [
        "implementation 'io.jsonwebtoken:jjwt-jackson-0.11.2'",
        "<dependency>io.jsonwebtoken:jjwt-api:0.12.5</dependency>",
        "secretKeyRef:\n  name: api\n  key: api-key",
        "secretKey: api-key",
        "secretName: db-password",
        '<meta name="csrf-token" content="9f8e7d6c5b4a39281706f5e4d3c2b1a0">',
        "csrf-token=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "AKIAIOSFODNN7EXAMPLE",
        "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        "ghp_000000000000000000000000000000000000",
        "API_TOKEN=PUT_YOUR_TOKEN_HERE",
        "token: ${GITHUB_TOKEN}",
        "password: <your-password>",
        "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
    ],
)
def test_look_alikes_stay_and_a_real_secret_beside_them_does_not(benign: str) -> None:
    assert MASKER.mask_text(benign) == (benign, {})
    out, counts = MASKER.mask_text(f"{benign}\nleaked: {REAL}")
    assert out == f"{benign}\nleaked: [REDACTED:github-pat]" and counts == {"github-pat": 1}


def test_markers_name_rules_never_values() -> None:
    for rule in BUILTIN_RULES:
        for example in rule.examples:
            out, _ = MASKER.mask_text(example)
            for marker in MARKER.findall(out):
                assert marker[len("[REDACTED:") : -1] in RULES or marker == "[REDACTED:literal]"


# --- docs ------------------------------------------------------------------------------------


def test_the_rule_table_in_docs_is_generated_from_the_registry() -> None:
    assert PAGE.read_text(encoding="utf-8") == page(), (
        "docs/leaks.md is out of date: run `python -m streams.core.leak_docs`"
    )
    for rule in BUILTIN_RULES:
        assert f"| `{rule.id}` |" in page()


def test_the_docs_generator_check_mode_agrees() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "streams.core.leak_docs", "--check"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_no_example_or_shape_in_the_docs_is_a_value() -> None:
    """The page shows shapes, never an example value."""
    text = page()
    for rule in BUILTIN_RULES:
        for example in rule.examples:
            secret = _secret_of(rule.id, example)
            assert len(secret) < 12 or secret not in text, rule.id
