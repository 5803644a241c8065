"""The vendor-free context detector (streams/core/leak_context.py): secrets of invented vendors
in every syntax, recall per syntax; benign credential-handling code, false positives per kind;
whole values only; the collateral damage `password-assignment` used to do."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from streams.core.leak_compile import JUDGED_PER_TEXT, CompiledRule, Judged
from streams.core.leak_context import judge, random_looking
from streams.core.leaks import Masker
from tests.leak_corpus.context_cases import TEMPLATES, cases, fully_masked

MASKER = Masker()
BENIGN = Path(__file__).resolve().parents[1] / "leak_corpus" / "benign_context.jsonl"
# Targets: every syntax at least this share fully masked; benign lines changed at most this.
MIN_RECALL_PER_SYNTAX = 0.95
MAX_BENIGN_CHANGED = 0.02


def _benign() -> list[dict[str, str]]:
    with BENIGN.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def recall_table(seed: int) -> dict[str, tuple[int, int]]:
    caught: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for case in cases(seed):
        out, _ = MASKER.mask_text(case.text)
        total[case.syntax] += 1
        caught[case.syntax] += fully_masked(case.secret, out)
    return {syntax: (caught[syntax], total[syntax]) for syntax in total}


@pytest.mark.parametrize("seed", [20261206, 7])
def test_recall_per_syntax_on_invented_vendors(seed: int) -> None:
    table = recall_table(seed)
    assert set(table) == {syntax for syntax, _pw, _t in TEMPLATES}
    print(f"\ncontext recall (seed {seed}), fully masked per syntax:")
    for syntax, (caught, total) in table.items():
        print(f"  {syntax:20s} {caught}/{total}")
    low = {s: c / t for s, (c, t) in table.items() if c / t < MIN_RECALL_PER_SYNTAX}
    assert low == {}
    caught = sum(c for c, _t in table.values())
    assert caught / sum(t for _c, t in table.values()) >= 0.98


def test_benign_credential_handling_is_left_alone() -> None:
    rows = _benign()
    changed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    examples = []
    for row in rows:
        out, _ = MASKER.mask_text(row["text"])
        total[row["kind"]] += 1
        if out != row["text"]:
            changed[row["kind"]] += 1
            examples.append(row["text"])
    print(f"\nbenign context lines changed: {sum(changed.values())}/{len(rows)}")
    for kind in total:
        print(f"  {kind:22s} {changed[kind]}/{total[kind]}")
    assert len(rows) >= 300
    assert sum(changed.values()) / len(rows) <= MAX_BENIGN_CHANGED, examples[:5]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The collateral damage of the old `password-assignment`: code, not values.
        ("export DEPLOY_PASSWORD=$DEPLOY_PASSWORD", None),
        ('password="$db$pass"', None),
        ("pw = getAdminPassword()", None),
        ("$password = $cfg['db']['password'];", None),
        ('password: "#new-password"', None),
        ("password = '/reset-password'", None),
        ('passwordLabel: "Password"', None),
        ('password: "Password"', None),
        ("SecretId: prod/zorblax/api-key", None),
        ('console.log("AdminPassword: " + adminPassword + "!");', None),
        ('log("AdminPassword: " + x + "; token: " + t)', None),
        ("password = vault.read('secret/db')['password']", None),
        ('key = "user:%s:profile" % user_id', None),
        ("key: dGhlIHF1aWNrIGJyb3duIGZveA==", None),
        ("db_password: %DB_PASSWORD%", None),
        # Whole values: never across a closing quote, `;`, `&` or a line break.
        (
            'token = "Qm7vT2xLp9RzW4nK8cYh"; next = "plain"',
            'token = "[REDACTED:password-assignment]"; next = "plain"',
        ),
        (
            "https://api.zorblax.io/v1?api_key=Qm7vT2xLp9RzW4nK8cYh&user=alice",
            "https://api.zorblax.io/v1?api_key=[REDACTED:url-query-credential]&user=alice",
        ),
        (
            "ZORBLAX_TOKEN=Qm7vT2xLp9RzW4nK8cYh\nNEXT=1",
            "ZORBLAX_TOKEN=[REDACTED:password-assignment]\nNEXT=1",
        ),
        (
            "Password=Hx8!qwe12;Database=app",
            "Password=[REDACTED:connection-string-password];Database=app",
        ),
        # Every syntax of the issue.
        (
            "zorblax API KEY 7Hq2xKpL9vTzQm4RbN8wYc3D",
            "zorblax API KEY [REDACTED:credential-in-prose]",
        ),
        (
            'AccountKey: "Zx9/Yw8+Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7=="',
            'AccountKey: "[REDACTED:password-assignment]"',
        ),
        (
            "<account_key>Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2</account_key>",
            "<account_key>[REDACTED:password-assignment]</account_key>",
        ),
        (
            "Set-Thing -Password Summer2024! -Force",
            "Set-Thing -Password [REDACTED:credential-flag] -Force",
        ),
        (
            "psexec \\\\web01 -u Administrator -p Wint3r!Gate cmd",
            "psexec \\\\web01 -u Administrator -p [REDACTED:credential-flag] cmd",
        ),
        ("tool.exe /u:admin /p:Gr4nite#Hill", "tool.exe /u:admin /p:[REDACTED:credential-flag]"),
        (
            "machine api.zorblax.io login bob password Trelw4ny",
            "machine api.zorblax.io login bob password [REDACTED:credential-in-prose]",
        ),
        (
            'var c = new NetworkCredential("svc", "Vx7!kLm2pQ");',
            'var c = new NetworkCredential("svc", "[REDACTED:credential-argument]");',
        ),
        ("the password is 'Secret123'", "the password is '[REDACTED:credential-in-prose]'"),
        ("use Secret123 as the password", "use [REDACTED:credential-in-prose] as the password"),
        (
            '{"method": "user.login", "params": {"user": "Admin", "password": "zabbix"}}',
            '{"method": "user.login", "params": {"user": "Admin", "password": '
            '"[REDACTED:password-assignment]"}}',
        ),
        (
            '<add key="ZorblaxApiKey" value="q8Wn3Lx5Rt2Vz7Kc"/>',
            '<add key="ZorblaxApiKey" value="[REDACTED:password-assignment]"/>',
        ),
    ],
)
def test_values_only_and_code_left(text: str, expected: str | None) -> None:
    out, counts = MASKER.mask_text(text)
    if expected is None:
        assert (out, counts) == (text, {})
    else:
        assert out == expected


def test_a_value_found_once_is_masked_everywhere_in_the_record() -> None:
    text = "ZORBLAX_TOKEN=Qm7vT2xLp9RzW4nK8cYh\nthen call it with Qm7vT2xLp9RzW4nK8cYh again"
    out, _ = MASKER.mask_text(text)
    assert "Qm7vT2xLp9RzW4nK8cYh" not in out and out.count("[REDACTED:") == 2


@pytest.mark.parametrize(
    "value",
    ["7Hq2xKpL9vTzQm4RbN8wYc3D", "0a3f9c2b7e1d4f6a8b5c3d2e1f0a9b8c", "BLWTO6MR7EWLOMSJNYZF"],
)
def test_random_values_look_random(value: str) -> None:
    assert random_looking(value)


@pytest.mark.parametrize(
    "value",
    ["user_profile_v2", "getAccessTokenForServicePrincipal", "Summer2024", "release-2024-06-01"],
)
def test_words_and_names_do_not(value: str) -> None:
    assert not random_looking(value)


def test_a_typed_password_counts_only_after_a_password_word() -> None:
    assert judge("Harbor2024!", password=True, strong=False, quoted=False)
    assert not judge("Harbor2024!", password=False, strong=False, quoted=False)
    assert judge("zabbix", password=True, strong=True, quoted=True)
    assert not judge("zabbix", password=True, strong=False, quoted=True)
    assert not judge("zabbix", password=False, strong=True, quoted=True)


@pytest.mark.parametrize(
    "value",
    [
        "A" * 5000,
        "Aa" * 3000,
        "MDoEEPgAAAAAAAAAAAAAAAAAAAEwFAYIKoZIhvcNAwcE" + "A" * 2000,
        "a_" * 3000,
    ],
)
def test_hostile_values_are_judged_in_linear_time(value: str) -> None:
    # Runs of one class once sent a nested repetition into exponential backtracking; each of
    # these completes (and the pytest timeout of the suite would catch a regression).
    for text in (f'"encryptedUsername": "{value}"', f"password {value}", f"--token {value}"):
        MASKER.mask_text(text)
    assert not random_looking("A" * 5000)


# --- cost: one judgement per distinct value, a budget per text ----------------------------------


def _assignment_rule() -> CompiledRule:
    return next(r for r in MASKER._rules.rules if r.id == "password-assignment")


def test_a_repeated_value_is_judged_once() -> None:
    """A megabyte of one assignment costs one judgement: the verdict is remembered per text."""
    judged = Judged(budget=10)
    data = b'token: "password=x1y2z3 ' * 500
    spans = list(_assignment_rule().spans(0, data, judged))
    assert len(spans) >= 500
    assert judged.left >= 10 - 3  # a few distinct contexts (the first, the rest), not 500


def test_past_the_judging_budget_values_are_masked_unjudged() -> None:
    """Fail closed: once a text's budget of distinct judgements is spent, the context rules mask
    what they find without judging it (code included: masking more is safe)."""
    data = b"token = self.token\npassword = config.password\n"
    assert list(_assignment_rule().spans(0, data, Judged())) == []
    masked = list(_assignment_rule().spans(0, data, Judged(budget=1)))
    assert [data[s:e] for s, e, _p, _id in masked] == [b"config.password"]


def test_more_distinct_values_than_the_budget_are_all_masked() -> None:
    """Recall past the budget: every value of a text with more candidates than it is masked."""
    values = [random_value(i) for i in range(JUDGED_PER_TEXT + 200)]
    out, counts = MASKER.mask_text(" ".join(f"api_key: {v}" for v in values))
    assert sum(counts.values()) == len(values)
    assert not any(v in out for v in values[:: len(values) // 50])


def random_value(seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choices("ABCDEFGHJKMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789", k=24))
