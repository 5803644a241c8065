"""Outbound leak masking: every built-in rule, literals, patterns, trees, corpus, adversaries."""

from __future__ import annotations

import dataclasses
import html
import json
import random
import re
import string
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr, ValidationError

from schemas.re2_spans import spans_finder
from streams.cli.check_session import CheckSession
from streams.cli.main import main as cli_main
from streams.core import leak_compile
from streams.core.leak_compile import BUILTIN_RULE_IDS, LeakRuleError
from streams.core.leak_registry import BUILTIN_RULES, FAMILIES
from streams.core.leak_rules import is_placeholder
from streams.core.leak_views import decoded_views, may_hide
from streams.core.leaks import Masker
from streams.core.mask_hit import MaskHit
from streams.settings import MIN_LEAK_LITERAL_CHARS, ContractSettings, Settings
from tests.support.gates import disk_gate
from tests.support.samples import html_reply, im_text, raw_reply

CORPUS = Path(__file__).resolve().parents[1] / "leak_corpus"
MASKER = Masker()

# --------------------------------------------------------------------------------------------
# Secret formats, one per rule: how to generate a fake value in the vendor's real format. A
# variant is (text before the secret, the secret, text after it); each part is a literal, a
# choice of literals, or a run of characters. The corpus was generated from these same tables.

B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64URL = B62 + "-_"
B64 = B62 + "+/"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
# Values of key = value secrets: no x/X/* so no run of them reads as a `xxxx` placeholder.
PW_LETTERS = "".join(c for c in string.ascii_letters if c not in "xX")
PW_CHARS = PW_LETTERS + string.digits


@dataclass(frozen=True)
class Run:
    """`lo`..`hi` characters drawn from `alphabet`."""

    alphabet: str
    lo: int
    hi: int | None = None

    @property
    def top(self) -> int:
        return self.lo if self.hi is None else self.hi


Part = str | tuple[str, ...] | Run
Variant = tuple[Sequence[Part], Sequence[Part], Sequence[Part]]

# A value that is a secret by context alone: letters, then digits, then more characters.
VALUE: list[Part] = [Run(PW_LETTERS, 3, 12), Run(string.digits, 1, 4), Run(PW_CHARS, 0, 8)]
BEARER: list[Part] = [Run(PW_LETTERS, 4, 12), Run(string.digits, 1, 4), Run(PW_CHARS, 4, 24)]


def token(*parts: Part) -> list[Variant]:
    return [((), parts, ())]


def pem(label: str, newline: str = "\n") -> list[Part]:
    return [
        f"-----BEGIN {label}-----{newline}",
        Run(B64, 64),
        newline,
        Run(B64, 64),
        newline,
        Run(B64, 8, 60),
        f"={newline}-----END {label}-----",
    ]


FORMATS: dict[str, list[Variant]] = {
    "aws-access-key-id": token(("AKIA", "ASIA"), Run(UPPER_DIGITS, 16)),
    "aws-secret-access-key": [
        (["aws_secret_access_key = "], [Run(B64, 40)], ["\n"]),
        (['"SecretAccessKey": "'], [Run(B64, 40)], ['"']),
        (["export AWS_SECRET_ACCESS_KEY="], [Run(B64, 40)], [""]),
    ],
    "google-api-key": token("AIza", Run(B64URL, 35)),
    "google-oauth-client-secret": token("GOCSPX-", Run(B64URL, 28)),
    "google-oauth-access-token": token("ya29.", Run(B64URL, 60, 160)),
    "gcp-service-account-key": [
        (
            ['{"type": "service_account", "private_key": "'],
            [*pem("PRIVATE KEY", "\\n"), "\\n"],
            ['"}'],
        ),
    ],
    "azure-storage-key": [
        (
            ["DefaultEndpointsProtocol=https;AccountName=replygatedata;AccountKey="],
            [Run(B64, 86), "=="],
            [";EndpointSuffix=core.windows.net"],
        ),
        (
            [
                "Endpoint=sb://rg-bus.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey="
            ],
            [Run(B64, 43), "="],
            [""],
        ),
    ],
    "azure-ad-client-secret": token(
        Run(B62, 3), Run(string.digits, 1), "Q~", Run(B62 + "_~.-", 33), Run(B62, 1)
    ),
    "signed-url-signature": [
        (
            [
                "https://examplebucket.s3.amazonaws.com/report.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                "&X-Amz-Date=20240101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
                "&X-Amz-Signature="
            ],
            [Run(HEX, 64)],
            [""],
        ),
        (
            [
                "https://rgdata.blob.core.windows.net/exports/q3.pdf?sv=2022-11-02&ss=b&srt=o&sp=r"
                "&se=2030-01-01T00:00:00Z&sig="
            ],
            [Run(B62, 43), "%3D"],
            [""],
        ),
    ],
    "digitalocean-token": token(("dop_v1_", "doo_v1_", "dor_v1_"), Run(HEX, 64)),
    "databricks-token": token("dapi", Run(HEX, 32)),
    "vault-token": token(("hvs.", "hvb."), Run(B64URL, 24, 120)),
    "terraform-cloud-token": token(Run(B62, 14), ".atlasv1.", Run(B64URL, 67)),
    "pulumi-access-token": token("pul-", Run(HEX, 40)),
    "doppler-token": token(("dp.pt.", "dp.st.", "dp.sa."), Run(B62, 43)),
    "github-pat": token("ghp_", Run(B62, 36)),
    "github-fine-grained-pat": token("github_pat_", Run(B62, 22), "_", Run(B62, 59)),
    "github-oauth": token("gho_", Run(B62, 36)),
    "github-app-token": token(("ghu_", "ghs_"), Run(B62, 36)),
    "github-refresh-token": token("ghr_", Run(B62, 36, 76)),
    "gitlab-pat": token("glpat-", Run(B64URL, 20)),
    "gitlab-token": token(("glrt-", "gldt-", "glptt-", "glcbt-"), Run(B64URL, 20, 40)),
    "npm-token": token("npm_", Run(B62, 36)),
    "pypi-token": token("pypi-AgEIcHlwaS5vcmc", Run(B64URL, 60, 160)),
    "dockerhub-pat": token("dckr_pat_", Run(B64URL, 27)),
    "huggingface-token": token("hf_", Run(B62, 34)),
    "atlassian-api-token": [
        ((), ["ATATT3", Run(B64URL, 186)], ()),
        ((), ["ATBB", Run(B62, 32)], ()),
    ],
    "slack-token": token(
        ("xoxb-", "xoxp-", "xoxe.xoxp-"),
        Run(string.digits, 10, 13),
        "-",
        Run(string.digits, 10, 13),
        "-",
        Run(B62, 24, 32),
    ),
    "slack-webhook": token(
        "https://hooks.slack.com/services/T",
        Run(UPPER_DIGITS, 8, 10),
        "/B",
        Run(UPPER_DIGITS, 8, 10),
        "/",
        Run(B62, 24),
    ),
    "discord-bot-token": token(
        ("M", "N", "O"), Run(B64URL, 23, 25), ".", Run(B64URL, 6), ".", Run(B64URL, 27, 38)
    ),
    "discord-webhook": token(
        "https://discord.com/api/webhooks/", Run(string.digits, 18), "/", Run(B64URL, 68)
    ),
    "telegram-bot-token": token(Run(string.digits, 8, 10), ":AA", Run(B64URL, 33)),
    "stripe-secret-key": token(("sk_live_", "sk_test_", "rk_live_"), Run(B62, 24, 99)),
    "stripe-webhook-secret": token("whsec_", Run(B62, 32)),
    "square-token": [
        ((), ["EAAA", Run(B64URL, 60)], ()),
        ((), ["sq0atp-", Run(B64URL, 22)], ()),
        ((), ["sq0csp-", Run(B64URL, 43)], ()),
    ],
    "shopify-token": token(("shpat_", "shpca_", "shppa_", "shpss_"), Run(HEX, 32)),
    "sendgrid-api-key": token("SG.", Run(B64URL, 22), ".", Run(B64URL, 43)),
    "twilio-api-key": token("SK", Run(HEX, 32)),
    "mailgun-api-key": [
        ((), ["key-", Run(HEX, 32)], ()),
        ((), [Run(HEX, 32), "-", Run(HEX, 8), "-", Run(HEX, 8)], ()),
    ],
    "mailchimp-api-key": token(Run(HEX, 32), "-us", Run(string.digits, 1, 2)),
    "anthropic-api-key": token(("sk-ant-api03-", "sk-ant-admin01-"), Run(B64URL, 93), "AA"),
    "openai-api-key": [
        ((), [("sk-proj-", "sk-svcacct-"), Run(B64URL, 40, 156)], ()),
        ((), ["sk-", Run(B62, 20), "T3BlbkFJ", Run(B62, 20)], ()),
    ],
    "groq-api-key": token("gsk_", Run(B62, 52)),
    "replicate-api-token": token("r8_", Run(B62, 37)),
    "xai-api-key": token("xai-", Run(B62, 80)),
    "perplexity-api-key": token("pplx-", Run(B62, 48)),
    "linear-api-key": token("lin_api_", Run(B62, 40)),
    "notion-token": token("ntn_", Run(B62, 46)),
    "new-relic-api-key": token("NRAK-", Run(UPPER_DIGITS, 27)),
    "grafana-token": [
        ((), ["glsa_", Run(B62, 32), "_", Run(HEX, 8)], ()),
        ((), ["glc_", Run(B64, 60, 120), "=="], ()),
    ],
    "sentry-auth-token": [
        ((), ["sntrys_", Run(B62 + "+/", 80, 200)], ()),
        ((), ["sntryu_", Run(HEX, 64)], ()),
    ],
    "postman-api-key": token("PMAK-", Run(HEX, 24), "-", Run(HEX, 34)),
    "supabase-token": token("sbp_", Run(HEX, 40)),
    "supabase-secret-key": token("sb_secret_", Run(B64URL, 31)),
    "age-secret-key": token("AGE-SECRET-KEY-1", Run(BECH32, 58)),
    "jwt": token(
        "eyJ", Run(B64URL, 10, 40), ".eyJ", Run(B64URL, 10, 160), ".", Run(B64URL, 43, 86)
    ),
    "pem-private-key": [
        ((), pem("RSA PRIVATE KEY"), ()),
        ((), pem("PRIVATE KEY"), ()),
        ((), pem("OPENSSH PRIVATE KEY"), ()),
        ((), pem("EC PRIVATE KEY", "\\n"), ()),
        ((), pem("ENCRYPTED PRIVATE KEY", "\r\n"), ()),
    ],
    "authorization-header": [
        (["Authorization: Bearer "], BEARER, [""]),
        (['"Authorization": "Basic '], [Run(B64, 20, 40), "="], ['"']),
        (["curl -H 'authorization: token "], BEARER, ["' https://api.example.com"]),
    ],
    "url-credentials": [
        (
            [
                ("postgres://", "mysql://", "redis://", "amqps://", "https://"),
                Run("abcdefgh", 3, 8),
                ":",
            ],
            VALUE,
            [("@db.internal:5432/app", "@cache:6379/0", "@git.example.com/team/repo.git")],
        ),
    ],
    "connection-string-password": [
        (["Server=tcp:db.internal,1433;Database=app;User Id=sa;Password="], VALUE, [";"]),
        (["jdbc:sqlserver://db:1433;databaseName=app;user=sa;password="], VALUE, [";"]),
        (["Host=db;Port=5432;Username=app;Pwd="], VALUE, [";Pooling=true"]),
    ],
    "password-assignment": [
        (['password = "'], VALUE, ['"']),
        (["DB_PASSWORD="], VALUE, [""]),
        (['"client_secret": "'], VALUE, ['"']),
        (["api_key: "], VALUE, [""]),
        (["SECRET_KEY = '"], VALUE, ["'"]),
        (["<password>"], VALUE, ["</password>"]),
        (["mysql -u root --password="], VALUE, [" app"]),
        (['const apiToken: string = "'], VALUE, ['";']),
    ],
}


def draw_part(rng: random.Random, part: Part) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, tuple):
        return rng.choice(part)
    n = rng.randint(part.lo, part.top)
    return "".join(rng.choice(part.alphabet) for _ in range(n))


def sample(rule: str, rng: random.Random, variant: int | None = None) -> tuple[str, str]:
    """(text fragment, secret) in `rule`'s format."""
    variants = FORMATS[rule]
    pre, sec, post = variants[rng.randrange(len(variants)) if variant is None else variant]
    secret = "".join(draw_part(rng, p) for p in sec)
    before = "".join(draw_part(rng, p) for p in pre)
    after = "".join(draw_part(rng, p) for p in post)
    return before + secret + after, secret


def part_strategy(part: Part) -> st.SearchStrategy[str]:
    """A run is drawn from a seeded RNG: real values look random, and a run of one repeated
    character (what a shrinker reaches first) is a placeholder the masker leaves alone."""
    if isinstance(part, str):
        return st.just(part)
    if isinstance(part, tuple):
        return st.sampled_from(part)
    return st.integers(0, 2**32).map(lambda seed: draw_part(random.Random(seed), part))


def parts_strategy(parts: Sequence[Part]) -> st.SearchStrategy[str]:
    return st.tuples(*(part_strategy(p) for p in parts)).map("".join)


@st.composite
def secrets(draw: st.DrawFn) -> tuple[str, str, str]:
    """(rule id, fragment, secret) for any built-in rule, any of its variants."""
    rule = draw(st.sampled_from(sorted(FORMATS)))
    pre, sec, post = draw(st.sampled_from(FORMATS[rule]))
    secret = draw(parts_strategy(sec))
    fragment = draw(parts_strategy(pre)) + secret + draw(parts_strategy(post))
    return rule, fragment, secret


# Look-alikes per rule: near misses of its format that must come through untouched.
NEGATIVES: dict[str, str] = {
    "aws-access-key-id": "The ARN arn:aws:iam::123456789012:role/AKIAROLE stays, as does AKIA1234.",
    "aws-secret-access-key": 'aws_secret_access_key = os.environ["AWS_SECRET_ACCESS_KEY"]',
    "google-api-key": "The key prefix is AIza followed by 35 characters, e.g. AIza-short.",
    "google-oauth-client-secret": "Client secrets start with GOCSPX- in the console.",
    "google-oauth-access-token": "Access tokens look like ya29.<opaque> and expire in an hour.",
    "gcp-service-account-key": '{"private_key_id": "1a2b3c4d", "private_key": ""}',
    "azure-storage-key": "DefaultEndpointsProtocol=https;AccountName=rg;AccountKey=${STORAGE_KEY}",
    "azure-ad-client-secret": "Use the Q~ marker: secrets like abc1Q~ are 40 characters long.",
    "signed-url-signature": "https://example.com/download?file=report.pdf&signature_version=4&sig=abc",
    "digitalocean-token": "DigitalOcean tokens begin with dop_v1_ and are 71 characters.",
    "databricks-token": "Generate a token (dapi...) under User Settings > Developer.",
    "vault-token": "Vault prints hvs.<token> after login; export VAULT_TOKEN=$(vault print token).",
    "terraform-cloud-token": "Terraform Cloud tokens contain .atlasv1. in the middle.",
    "pulumi-access-token": "pul-1234 is a ticket number, not a token.",
    "doppler-token": "Service tokens start with dp.st. and are scoped to a config.",
    "github-pat": "Classic PATs look like ghp_xxxxxxxxxxxx (placeholder) and ghp_ABC is too short.",
    "github-fine-grained-pat": "Fine-grained tokens start with github_pat_ and expire.",
    "github-oauth": "gho_ tokens come from OAuth; commit 9fceb02d0ae598e95dc970b74767f19372d61af8.",
    "github-app-token": "Installation tokens (ghs_...) last one hour.",
    "github-refresh-token": "Refresh tokens use the ghr_ prefix.",
    "gitlab-pat": "Create one under Preferences > Access Tokens (prefix glpat-).",
    "gitlab-token": "Runner tokens now start with glrt- instead of the old registration token.",
    "npm-token": "Set npm_config_cache=/tmp/npm and run npm_lifecycle_event scripts.",
    "pypi-token": "Use __token__ as the user name and a pypi-... token as the password.",
    "dockerhub-pat": "docker login -u alice --password-stdin < token.txt",
    "huggingface-token": "Log in with huggingface-cli login; tokens look like hf_...",
    "atlassian-api-token": "Atlassian tokens begin ATATT3 and Bitbucket app passwords ATBB.",
    "slack-token": "Bot tokens (xoxb-...) and user tokens (xoxp-...) differ in scope.",
    "slack-webhook": "Post to https://hooks.slack.com/ with your webhook path.",
    "discord-bot-token": "Use Node.js or Microsoft.Extensions.Logging for the bot.",
    "discord-webhook": "Webhook URLs look like https://discord.com/api/webhooks/<id>/<token>.",
    "telegram-bot-token": "The meeting is at 10:AM, bot 123456:ABC is just an example id.",
    "stripe-secret-key": "The publishable key pk_live_51HxxYyZz0123456789abcdefGHIJ is public.",
    "stripe-webhook-secret": "Copy the signing secret (whsec_...) from the dashboard.",
    "square-token": "Square sandbox tokens start with EAAA as well; sq0atp- is the legacy prefix.",
    "shopify-token": "Admin API tokens start shpat_ and are shown only once.",
    "sendgrid-api-key": "SendGrid keys start with SG. followed by two parts.",
    "twilio-api-key": "Twilio SIDs: SKU-42 is a product code, ACabc an account prefix.",
    "mailgun-api-key": "Request 123e4567-e89b-12d3-a456-426614174000 used key-rotation policy.",
    "mailchimp-api-key": "Mailchimp keys end with a datacenter suffix like -us21.",
    "anthropic-api-key": "Anthropic keys begin with sk-ant- and are sent as x-api-key.",
    "openai-api-key": "Set OPENAI_API_KEY=sk-... in a shell; scikit-learn has risk-based splits.",
    "groq-api-key": "Groq keys start with gsk_.",
    "replicate-api-token": "Replicate tokens start with r8_.",
    "xai-api-key": "xai-grok is the model family name.",
    "perplexity-api-key": "pplx-api is the API name.",
    "linear-api-key": "Personal keys are prefixed lin_api_.",
    "notion-token": "Internal integration tokens now start with ntn_.",
    "new-relic-api-key": "User keys are labelled NRAK- in the UI.",
    "grafana-token": "Service account tokens start glsa_ and cloud tokens glc_.",
    "sentry-auth-token": "Org tokens (sntrys_) replaced the old auth tokens.",
    "postman-api-key": "Postman keys: PMAK-<id>-<secret>.",
    "supabase-token": "The anon key is public; sbp_ tokens are personal.",
    "supabase-secret-key": "Secret API keys start with sb_secret_ and stay on the server.",
    "age-secret-key": "age keys begin AGE-SECRET-KEY-1 and public keys age1.",
    "jwt": "A JWT has three parts; eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0 has only two.",
    "pem-private-key": "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0\n-----END PUBLIC KEY-----",
    "authorization-header": 'curl -H "Authorization: Bearer $GITHUB_TOKEN" https://api.github.com',
    "url-credentials": "git clone ssh://git@github.com/org/repo.git or https://alice@example.com/a?b=c",
    "connection-string-password": "Server=db;Integrated Security=true;Password=${DB_PASSWORD};",
    "password-assignment": 'password = os.getenv("DB_PASSWORD") and token = process.env.TOKEN',
}


def test_rule_table_is_complete() -> None:
    ids = [r.id for r in BUILTIN_RULES]
    assert len(ids) >= 30
    assert len(set(ids)) == len(ids)
    assert all(r.trigger and r.pattern.isascii() for r in BUILTIN_RULES)
    assert set(FORMATS) <= set(ids) and set(NEGATIVES) == set(FORMATS)
    assert tuple(ids) == BUILTIN_RULE_IDS
    assert MASKER.rule_ids == tuple(ids)


@pytest.mark.parametrize("rule", sorted(FORMATS))
def test_each_rule_masks_its_format(rule: str) -> None:
    rng = random.Random(rule)
    for variant in range(len(FORMATS[rule])):
        fragment, secret = sample(rule, rng, variant)
        text = f"Here you go: {fragment} (keep it safe)."
        out, counts = MASKER.mask_text(text)
        assert secret not in out, (rule, variant)
        assert counts.get(rule) == 1, (rule, variant, counts)
        assert f"[REDACTED:{rule}]" in out
        assert out.startswith("Here you go: ") and out.endswith(" (keep it safe).")


@pytest.mark.parametrize("rule", sorted(NEGATIVES))
def test_each_rule_leaves_its_look_alike(rule: str) -> None:
    text = NEGATIVES[rule]
    assert MASKER.mask_text(text) == (text, {})


# Look-alikes in every decoded view (references, escapes, markup, invisible characters): they
# decode to nothing secret, or to a placeholder, and stay as written.
BENIGN_IN_VIEWS = [
    "Request 0ee45b31-1b03-b48c-35c1-164ce544c0de took 5 ms &amp; returned 200.",
    "<p>sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08</p>",
    '"integrity": "sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+nFTGzDpfpQdOaRPA=="',
    '<img class="img-source" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB">',
    "data:image/svg+xml,%3Csvg%20xmlns%3D%22http%3A%2F%2Fwww.w3.org%2F2000%2Fsvg%22%2F%3E",
    "Set OPENAI_API_KEY=sk-... and api_key = &quot;&lt;YOUR_API_KEY&gt;&quot; in the file.",
    'password = "&#42;&#42;&#42;" and token = "\\u003cYOUR_TOKEN\\u003e"',
    "https://example.com/search?q=hello%20world&redirect=https%3A%2F%2Fexample.org%2Fcb",
    "https://example.com/a?b=1&c=2&copy=3&amp;d=4 and 50% of 100%",
    "Family: \U0001f468\u200d\U0001f469\u200d\U0001f467, Donau\u00addampf\u00adschiff",
    "<p>Use <code>List&lt;String&gt;</code> and <b>a</b> &lt;b&gt; tag.</p>",
    '{"name": "Jos\\u00e9", "path": "C:\\\\Users\\\\me", "url": "https:\\/\\/x.example\\/a"}',
    "\u200f\u05e9\u05dc\u05d5\u05dd \u202bRTL text\u202c with marks",
    "&amp;amp;amp;#x67;hp_ is double-escaped, never decoded twice",
    '"private_key": "[REDACTED:gcp-service-account-key]<b></b>"',
    'password = "<b>***</b>" and token: "<i>&lt;your-token&gt;</i>"',
]


def test_context_rules_mask_only_the_value() -> None:
    cases = {
        'password = "hunter2"': 'password = "[REDACTED:password-assignment]"',
        "DB_PASSWORD=hunter2.": "DB_PASSWORD=[REDACTED:password-assignment].",
        "postgres://admin:s3cr3t@db:5432/app": "postgres://admin:[REDACTED:url-credentials]@db:5432/app",
        "redis://:p@ss:w0rd@cache:6379/0": "redis://:[REDACTED:url-credentials]@cache:6379/0",
        "Id=sa;Password=Pa55w0rd!;": "Id=sa;Password=[REDACTED:connection-string-password];",
        "PWD={p@ss;word};": "PWD={[REDACTED:connection-string-password]};",
        "Authorization: Basic dXNlcjpwYXNz": "Authorization: Basic [REDACTED:authorization-header]",
        '{\\"password\\": \\"hunter2\\"}': '{\\"password\\": \\"[REDACTED:password-assignment]\\"}',
        'password: str = "hunter2"': 'password: str = "[REDACTED:password-assignment]"',
    }
    for text, expected in cases.items():
        assert MASKER.mask_text(text)[0] == expected


@pytest.mark.parametrize(
    "text",
    [
        'api_key = os.environ["OPENAI_API_KEY"]',
        'password = os.getenv("DB_PASSWORD")',
        "const key = process.env.STRIPE_KEY;",
        "token = process.env.STRIPE_KEY",
        "password: ${DB_PASSWORD}",
        'password: "${DB_PASSWORD}"',
        'password = "<your-password>"',
        'api_key = "<your-api-key>"',
        'password = "***"',
        'api_key = "sk-..."',
        'token = "ghp_xxxxxxxxxxxx"',
        'password = "%(password)s"',
        'secret = "{{ .Values.secret }}"',
        "api_key = settings.openai_api_key",
        "client = Client(api_key=api_key, token=token)",
        "api_key: SecretStr",
        "password: Optional[str] = None",
        "token = await client.get_token()",
        "PWD=/home/alice/project",
        "max_tokens = 1024",
        '"max_tokens": 1024, "temperature": 0.2',
        "The tokenizer splits text into tokens; the password must have 12 characters.",
        "export GITHUB_TOKEN=$(gh auth token)",
        "postgres://app:${DB_PASSWORD}@db:5432/app",
        "https://user@example.com/a?b=c",
        "Authorization: Bearer <token>",
        '"password": "[REDACTED:password-assignment]"',
        *BENIGN_IN_VIEWS,
    ],
)
def test_placeholders_and_indirection_stay(text: str) -> None:
    assert MASKER.mask_text(text) == (text, {})


def test_specific_rule_wins_over_context_rule() -> None:
    pat = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
    for text in (
        f"export GITHUB_TOKEN={pat}",
        f'"token": "{pat}"',
        f"Authorization: Bearer {pat}",
        f"https://x-access-token:{pat}@github.com/org/repo.git",
    ):
        out, counts = MASKER.mask_text(text)
        assert counts == {"github-pat": 1}, text
        assert pat not in out
    out, _ = MASKER.mask_text(f"https://x-access-token:{pat}@github.com/org/repo.git")
    assert out == "https://x-access-token:[REDACTED:github-pat]@github.com/org/repo.git"


def test_overlaps_fold_into_the_earliest_longest_match() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9Pl"
    out, counts = MASKER.mask_text(f"Authorization: Bearer {jwt}")
    assert out == "Authorization: Bearer [REDACTED:jwt]" and counts == {"jwt": 1}
    # A service-account key holds a PEM block: the longer JSON value wins, counted once.
    fragment, _ = sample("gcp-service-account-key", random.Random(3))
    out, counts = MASKER.mask_text(fragment)
    assert counts == {"gcp-service-account-key": 1}
    # Two matches that touch but do not overlap are two redactions.
    two = "ghp_" + "aB3" * 12 + " ghp_" + "bC4" * 12
    assert MASKER.mask_text(two) == (
        "[REDACTED:github-pat] [REDACTED:github-pat]",
        {"github-pat": 2},
    )


def test_counts_and_surrounding_text() -> None:
    text = "a AKIAABCDEFGHIJKLMNOP b AKIAABCDEFGHIJKLMNOQ c hf_" + "x1" * 17 + " d"
    out, counts = MASKER.mask_text(text)
    assert out == (
        "a [REDACTED:aws-access-key-id] b [REDACTED:aws-access-key-id] c "
        "[REDACTED:huggingface-token] d"
    )
    assert counts == {"aws-access-key-id": 2, "huggingface-token": 1}
    assert list(counts) == sorted(counts)


def test_unicode_around_secrets() -> None:
    text = "Schlüssel: ghp_" + "Ab3" * 12 + " — ✓ 日本語 " + 'password = "pä55wörd"'
    out, counts = MASKER.mask_text(text)
    assert out == (
        'Schlüssel: [REDACTED:github-pat] — ✓ 日本語 password = "[REDACTED:password-assignment]"'
    )
    assert counts == {"github-pat": 1, "password-assignment": 1}
    lone = "surrogate \ud800 then sk_live_" + "Zy8" * 8
    assert MASKER.mask_text(lone)[0] == "surrogate \ud800 then [REDACTED:stripe-secret-key]"


def test_empty_and_clean_strings_are_returned_as_is() -> None:
    text = "Nothing to see here, just prose and https://example.com/a?b=c."
    out, counts = MASKER.mask_text(text)
    assert out is text and counts == {}
    assert MASKER.mask_text("") == ("", {})


# --- literals and deployment patterns ---------------------------------------------------------


def test_literal_canaries() -> None:
    masker = Masker(literals=["CANARY-7f3a", "CANARY-7f3a-long", "zürich-canary"])
    out, counts = masker.mask_text("x CANARY-7f3a-long y CANARY-7f3a z canary-7f3a zürich-canary!")
    assert out == "x [REDACTED:literal] y [REDACTED:literal] z canary-7f3a [REDACTED:literal]!"
    assert counts == {"literal": 3}
    # A literal inside a longer token: the token (earliest start) wins and covers it.
    pat = "ghp_" + "CANARY7f3a" * 4
    out, counts = Masker(literals=["CANARY7f3a"]).mask_text(f"t {pat}")
    assert out == "t [REDACTED:github-pat]" and counts == {"github-pat": 1}
    # Exactly the literal's span: the deployment's rule is named.
    assert Masker(literals=["hunter2secret"]).mask_text('password = "hunter2secret"') == (
        'password = "[REDACTED:literal]"',
        {"literal": 1},
    )


def test_literals_with_regex_metacharacters_match_exactly() -> None:
    masker = Masker(literals=["a.b*c(d)"])
    assert masker.mask_text("a.b*c(d) aXbbc(d)") == ("[REDACTED:literal] aXbbc(d)", {"literal": 1})


def test_bad_literals_are_rejected_without_showing_them() -> None:
    with pytest.raises(LeakRuleError) as err:
        Masker(literals=["fine-canary", ""])
    assert err.value.rule_id == "literal" and "fine-canary" not in str(err.value)


def test_extra_patterns() -> None:
    masker = Masker(
        patterns={"acme-key": r"ACME-[0-9A-F]{16}", "acme-pin": r"pin=(?P<secret>\d{6})"}
    )
    out, counts = masker.mask_text("k ACME-0123456789ABCDEF and pin=123456 and ACME-XYZ")
    assert out == "k [REDACTED:acme-key] and pin=[REDACTED:acme-pin] and ACME-XYZ"
    assert counts == {"acme-key": 1, "acme-pin": 1}
    assert masker.rule_ids[:2] == ("acme-key", "acme-pin")
    # Non-ASCII in a deployment pattern matches characters, not bytes.
    out, _ = Masker(patterns={"geheim": r"geheim-[äöü]{3}"}).mask_text("x geheim-äöü y")
    assert out == "x [REDACTED:geheim] y"


def test_prefilter_rewrites_only_real_groups() -> None:
    pattern = r"(a)(?P<n>b)(?<m>c)(?:d)(?i:e)[(]\([]()][^]()]\Q(f)\E"
    assert leak_compile.uncapture(pattern) == r"(?:a)(?:b)(?:c)(?:d)(?i:e)[(]\([]()][^]()]\Q(f)\E"
    masker = Masker(patterns={"parens": r"(k)(?P<secret>[(]\(\Q(z)\E)"})
    assert masker.mask_text("k(((z) k(z)") == ("k[REDACTED:parens] k(z)", {"parens": 1})


@pytest.mark.parametrize(
    ("patterns", "rule_id", "reason"),
    [
        ({"acme-key": "ACME-(SECRETFRAGMENT"}, "acme-key", "does not compile under RE2"),
        ({"acme-key": r"(?<=ACME)SECRETFRAGMENT"}, "acme-key", "does not compile under RE2"),
        ({"acme-key": r"SECRETFRAGMENT\1"}, "acme-key", "does not compile under RE2"),
        ({"acme-key": "(?:SECRETFRAGMENT)?"}, "acme-key", "matches the empty string"),
        ({"acme-key": ""}, "acme-key", "empty"),
        ({"github-pat": "SECRETFRAGMENT"}, "github-pat", "already used"),
        ({"literal": "SECRETFRAGMENT"}, "literal", "already used"),
        ({"Acme_Key": "SECRETFRAGMENT"}, "Acme_Key", "kebab-case"),
    ],
)
def test_bad_extra_patterns_name_the_rule_not_the_pattern(
    patterns: dict[str, str], rule_id: str, reason: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(LeakRuleError) as err:
        Masker(patterns=patterns)
    assert err.value.rule_id == rule_id
    assert repr(rule_id) in str(err.value) and reason in str(err.value)
    assert "SECRETFRAGMENT" not in str(err.value)
    captured = capfd.readouterr()
    assert "SECRETFRAGMENT" not in captured.out + captured.err  # RE2 logs nothing


def test_a_pattern_never_masks_its_own_marker() -> None:
    """Found by an audit: `acme-[a-z]{3,}` matched `acme-key` inside the marker it had just
    written, once a pass: four nested markers and a count of 4 for one secret."""
    masker = Masker(patterns={"acme-key": "acme-[a-z]{3,}"})
    out, counts = masker.mask_text("token acme-secretvalue end")
    assert (out, counts) == ("token [REDACTED:acme-key] end", {"acme-key": 1})
    # Masked text masked again (the preview does) comes back as it is.
    assert masker.mask_text(out) == (out, {})
    # The views too: each marker stands where its secret was written, masked once.
    out, counts = masker.mask_text("&lt;acme-secretvalue&gt; \\u0061cme-othervalue")
    assert out == "&lt;[REDACTED:acme-key]&gt; [REDACTED:acme-key]"
    assert counts == {"acme-key": 2}
    # A secret right after a marker is a secret of its own.
    out, counts = masker.mask_text("[REDACTED:acme-key]acme-xyz")
    assert (out, counts) == ("[REDACTED:acme-key][REDACTED:acme-key]", {"acme-key": 1})


def test_a_literal_never_masks_inside_a_marker() -> None:
    """Found by an audit: a literal `DACT` ate into every marker, its own and the built-ins'."""
    text = f"x REDACTED {PAT}"
    out, counts = Masker(literals=["DACT"]).mask_text(text)
    assert out == "x RE[REDACTED:literal]ED [REDACTED:github-pat]"
    assert counts == {"github-pat": 1, "literal": 1}
    masker = Masker(literals=["EDACTED:literal"])
    assert masker.mask_text("a EDACTED:literal b") == ("a [REDACTED:literal] b", {"literal": 1})


def test_the_rest_beside_a_marker_is_masked_into_it_and_counted_once() -> None:
    """The later passes remove what is left of a secret beside its marker (an escaped last
    character of a PEM key, see the fixed-point test below) without masking the marker again:
    one secret, one marker, a count of 1."""
    zeros = "0" * 64
    body = f"{zeros}\\n{zeros}\\n{'0' * 21}="
    pem = f"-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\"
    text = f'{{"type": "service_account", "private_key": "{pem}u006e"}}'
    out, counts = MASKER.mask_text(text)
    assert out == '{"type": "service_account", "private_key": "[REDACTED:pem-private-key]"}'
    assert counts == {"pem-private-key": 1}
    # A marker already in the text stays; the secret beside it is one of its own.
    out, counts = MASKER.mask_text('password = "[REDACTED:literal]hunter2hunter2"')
    assert (out, counts) == ('password = "[REDACTED:literal]"', {"password-assignment": 1})


def test_the_delivered_marker_and_the_preview_hold_one_mask() -> None:
    gate = disk_gate(Settings(leak_patterns={"acme-key": "acme-[a-z]{3,}"}))
    segments = [{"type": "text", "data": {"text": "token acme-secretvalue end"}}]
    raw = orjson.dumps(raw_reply(output={"text": im_text(segments)}))
    decision = CheckSession(gate).line(raw, 1, datetime(2026, 12, 1, tzinfo=UTC))
    assert decision.action == "deliver" and decision.output is not None
    text = "token [REDACTED:acme-key] end"
    assert decision.output.message["segments"][0]["data"]["text"] == text
    assert decision.output.preview == text
    assert decision.masked == (MaskHit("acme-key", "segments[0].data.text", 1),)


@pytest.mark.parametrize("literals", [["Z"], ["id"], ["CANARY-12345", "abc"]])
def test_settings_refuse_a_short_literal_without_showing_it(literals: list[str]) -> None:
    with pytest.raises(ValidationError) as err:
        Settings(leak_literals=[SecretStr(v) for v in literals])
    (error,) = err.value.errors(include_url=False)
    assert error["loc"] == ("leak_literals",)
    message = str(error["msg"])
    assert f"each leak literal must be at least {MIN_LEAK_LITERAL_CHARS} characters" in message
    assert f"(shorter at index {len(literals) - 1})" in message
    assert not any(v in message for v in literals)
    assert Settings(leak_literals=[SecretStr("x" * MIN_LEAK_LITERAL_CHARS)]).leak_literals


def test_check_refuses_a_short_literal_with_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "leak.toml"
    config.write_text('leak_literals = ["CANARY-12345", "a"]\n')
    records = tmp_path / "in.jsonl"
    records.write_bytes(orjson.dumps(raw_reply()) + b"\n")
    assert cli_main(["check", str(records), "--config", str(config)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "replygate check: error: settings: leak_literals: Value error, each leak literal must "
        f"be at least {MIN_LEAK_LITERAL_CHARS} characters (shorter at index 1): a shorter one "
        "masks ordinary words and the message's own keys wherever they appear\n"
    )


def test_from_settings() -> None:
    settings = ContractSettings(
        leak_literals=[SecretStr("CANARY-from-settings")],
        leak_patterns={"acme-key": r"ACME-[0-9A-F]{16}"},
    )
    masker = Masker.from_settings(settings)
    out, counts = masker.mask_text("CANARY-from-settings ACME-0123456789ABCDEF")
    assert out == "[REDACTED:literal] [REDACTED:acme-key]"
    assert counts == {"acme-key": 1, "literal": 1}
    assert "CANARY" not in repr(masker) and "ACME" not in repr(masker)


# --- trees -----------------------------------------------------------------------------------

PAT = "ghp_" + "Zq9" * 12


def test_mask_tree_paths_counts_and_sharing() -> None:
    untouched = {"type": "text", "data": {"text": "hello"}}
    message: dict[str, Any] = {
        "segments": [
            untouched,
            {"type": "text", "data": {"text": f"a {PAT} b {PAT}"}},
            {"type": "markdown", "data": {"content": "x AKIAABCDEFGHIJKLMNOP"}},
            {"type": "face", "data": {"id": 12}},
        ],
        "meta": ("keep", f"tuple {PAT}"),
    }
    new, hits = MASKER.mask_tree(message)
    assert [h.as_dict() for h in hits] == [
        {"rule": "github-pat", "path": "meta[1]", "count": 1},
        {"rule": "github-pat", "path": "segments[1].data.text", "count": 2},
        {"rule": "aws-access-key-id", "path": "segments[2].data.content", "count": 1},
    ]
    assert new["segments"][1]["data"]["text"] == "a [REDACTED:github-pat] b [REDACTED:github-pat]"
    assert new["meta"] == ("keep", "tuple [REDACTED:github-pat]")
    assert new["segments"][0] is untouched and new["segments"][3] is message["segments"][3]
    assert message["segments"][1]["data"]["text"].startswith("a ghp_")  # input not mutated
    assert list(new) == list(message) and list(new["segments"][1]) == ["type", "data"]


def test_mask_tree_unchanged_returns_the_same_object() -> None:
    value = {"a": [1, 2.5, None, True, {"b": "plain"}], "c": "text"}
    new, hits = MASKER.mask_tree(value)
    assert new is value and hits == []
    assert MASKER.mask_tree("plain", "segments[0].data.text") == ("plain", [])
    assert MASKER.mask_tree(42) == (42, [])


def test_mask_tree_root_string_and_base_path() -> None:
    new, hits = MASKER.mask_tree(f"x {PAT}")
    assert new == "x [REDACTED:github-pat]" and hits == [MaskHit("github-pat", "$", 1)]
    _, hits = MASKER.mask_tree({"text": PAT}, "segments[3].data")
    assert hits == [MaskHit("github-pat", "segments[3].data.text", 1)]


def test_mask_tree_orders_by_path_then_rule() -> None:
    items = ["clean"] * 12
    items[10] = PAT
    items[2] = f"AKIAABCDEFGHIJKLMNOP {PAT}"
    _, hits = MASKER.mask_tree({"z": PAT, "list": items, "a b": PAT})
    assert [(h.path, h.rule) for h in hits] == [
        ('["a b"]', "github-pat"),
        ("list[2]", "aws-access-key-id"),
        ("list[2]", "github-pat"),
        ("list[10]", "github-pat"),
        ("z", "github-pat"),
    ]


def test_mask_tree_keys() -> None:
    # Keys are kept; a key that is itself a secret is masked, and the path uses the masked key.
    value = {"password": "hunter2x", "note": {PAT: "v", "other": 1}, "apiKey": "<your-key>"}
    new, hits = MASKER.mask_tree(value)
    assert new == {
        "password": "[REDACTED:password-assignment]",
        "note": {"[REDACTED:github-pat]": "v", "other": 1},
        "apiKey": "<your-key>",
    }
    assert [h.as_dict() for h in hits] == [
        {"rule": "github-pat", "path": 'note["[REDACTED:github-pat]"]', "count": 1},
        {"rule": "password-assignment", "path": "password", "count": 1},
    ]
    assert all(PAT not in h.path for h in hits)
    # Two keys that mask to the same text are both kept.
    twins = {PAT: 1, "ghp_" + "Yy8" * 12: 2}
    new, hits = MASKER.mask_tree(twins)
    assert new == {"[REDACTED:github-pat]": 1, "[REDACTED:github-pat]#2": 2}
    assert len(hits) == 2


def _digits(n: int, seed: int) -> str:
    """`n` characters of base62, varied."""
    rng = random.Random(seed)
    return "".join(rng.choice(B62[: 10 + k % 52]) for k in range(n))


def test_mask_tree_many_secret_keys_and_odd_keys() -> None:
    # (Varied bodies: one of a single repeated character is a placeholder, `ghp_000...0`.)
    tokens = {f"ghp_{i:05d}" + _digits(31, i): i for i in range(20_000)}
    new, hits = MASKER.mask_tree(tokens)
    assert len(new) == 20_000 and "[REDACTED:github-pat]#20000" in new
    assert sum(h.count for h in hits) == 20_000
    odd = {None: {1: PAT}, 2.5: [PAT]}
    new, hits = MASKER.mask_tree(odd)
    assert new == {None: {1: "[REDACTED:github-pat]"}, 2.5: ["[REDACTED:github-pat]"]}
    assert [h.path for h in hits] == ['["2.5"][0]', "None[1]"]


def test_mask_tree_keyed_values() -> None:
    value = {
        "db_password": "s3cr3t-Value",
        "clientSecret": "abc123def456",
        "token": "ghp_" + "Q1w" * 12,
        "password": "${DB_PASSWORD}",
        "api_key": "see the docs",
        "token_count": "12345",
        "text": "plain",
    }
    new, _ = MASKER.mask_tree(value)
    assert new == {
        "db_password": "[REDACTED:password-assignment]",
        "clientSecret": "[REDACTED:password-assignment]",
        "token": "[REDACTED:github-pat]",
        "password": "${DB_PASSWORD}",
        "api_key": "see the docs",
        "token_count": "12345",
        "text": "plain",
    }


def test_mask_tree_deep_nesting_is_iterative() -> None:
    deep: Any = PAT
    for i in range(100_000):
        deep = [deep] if i % 2 else {"k": deep}
    new, hits = MASKER.mask_tree(deep)
    assert len(hits) == 1 and hits[0].count == 1 and hits[0].path.endswith("k[0].k")
    inner = new
    for _ in range(100_000):
        inner = inner[0] if isinstance(inner, list) else inner["k"]
    assert inner == "[REDACTED:github-pat]"


def test_mask_tree_rejects_cycles() -> None:
    loop: dict[str, Any] = {"a": []}
    loop["a"].append(loop)
    with pytest.raises(ValueError, match=r"cyclic structure at a\[0\]"):
        MASKER.mask_tree(loop)


def test_fallback_paths_mask_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the combined pre-filter, the rule selector, or RE2's raw match, results agree."""
    text = f"x {PAT} y AKIAABCDEFGHIJKLMNOP z password = 'hunter2x' w"
    expected = MASKER.mask_text(text)
    assert expected[1] == {"aws-access-key-id": 1, "github-pat": 1, "password-assignment": 1}

    with monkeypatch.context() as patch:
        patch.setattr(leak_compile, "_build_prefilter", lambda rules: (None, None))
        assert Masker().mask_text(text) == expected

    class FailingSet:
        def Match(self, data: bytes) -> None:
            return None

    masker = Masker()
    ruleset = masker._rules
    monkeypatch.setattr(ruleset, "selector", FailingSet())
    assert masker.mask_text(text) == expected

    class Opaque:
        """An RE2 regex seen only through its public API."""

        def __init__(self, regex: Any) -> None:
            self.search = regex.search
            self.groups = regex.groups

    slow = Masker()
    slow_rules = slow._rules
    rules = tuple(
        dataclasses.replace(r, search=spans_finder(Opaque(r.regex))) for r in slow_rules.rules
    )
    monkeypatch.setattr(slow_rules, "rules", rules)
    assert slow.mask_text(text) == expected


def test_nothing_secret_in_reprs() -> None:
    masker = Masker(literals=["CANARY-repr-1"], patterns={"acme": "ACME-[0-9]{4}"})
    assert "CANARY" not in repr(masker) and "ACME" not in repr(masker)
    hit = MaskHit("literal", "segments[0].data.text", 1)
    assert hit.as_dict() == {"rule": "literal", "path": "segments[0].data.text", "count": 1}
    assert all("pattern" not in repr(r) for r in BUILTIN_RULES[:3])


# --- properties ------------------------------------------------------------------------------

FILLER = st.text(alphabet=string.ascii_letters + string.digits + " .,!?\n", max_size=60)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secrets(), FILLER, FILLER)
def test_generated_secrets_never_survive(
    drawn: tuple[str, str, str], left: str, right: str
) -> None:
    rule, fragment, secret = drawn
    text = f"{left} {fragment} {right}"
    out, counts = MASKER.mask_text(text)
    assert out.count(secret) <= (left + right).count(secret), rule
    assert counts, rule


NOISE_WORDS = [
    "password",
    "token",
    "secret",
    "://",
    "eyJ",
    "ghp_",
    "-----BEGIN PRIVATE KEY-----",
    "Bearer ",
    "AKIA",
    "Password=",
    "sk-",
    "api_key",
    "[REDACTED:jwt]",
]
NOISE_CHARS = string.ascii_letters + string.digits + " =:\"'-_./@;,{}$<>[]\n"
NOISE = st.lists(st.sampled_from([*NOISE_CHARS, *NOISE_WORDS]), max_size=60).map("".join)


@settings(max_examples=400, deadline=None)
@given(NOISE)
def test_random_text_changes_only_where_a_rule_fires(text: str) -> None:
    out, counts = MASKER.mask_text(text)
    if not counts:
        assert out == text
        return
    # One marker per masked span; markers already in the text stay unless a span covers them.
    masked = sum(counts.values())
    assert masked <= out.count("[REDACTED:") <= masked + text.count("[REDACTED:")
    assert set(counts) <= set(MASKER.rule_ids)
    # Masking is idempotent: a masked text has nothing left to mask.
    assert MASKER.mask_text(out) == (out, {})


@settings(max_examples=100, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | NOISE,
        lambda kids: st.lists(kids, max_size=4) | st.dictionaries(NOISE, kids, max_size=4),
        max_leaves=12,
    )
)
def test_mask_tree_agrees_with_mask_text(value: Any) -> None:
    new, hits = MASKER.mask_tree(value)
    if not hits:
        assert new is value
    assert all(h.count > 0 and h.rule in MASKER.rule_ids for h in hits)
    assert MASKER.mask_tree(new)[1] == []


# --- adversarial inputs ----------------------------------------------------------------------

MB = 10**6


@pytest.mark.parametrize(
    "text",
    [
        "a" * MB,
        "password=" * (MB // 9),
        "-----BEGIN PRIVATE KEY-----" * (MB // 27),
        "-----BEGIN PRIVATE KEY-----\n" + "A" * MB,
        "eyJ" + "a" * MB,
        "eyJa.eyJa." * (MB // 10),
        "postgres://" + "u" * MB + "@",
        "x://a:" * (MB // 6),
        '"' * MB,
        'token: "' + ('token: "' + "password=x1y2z3 ") * (MB // 24),
        "ghp_" * (MB // 4),
        "AKIA" + "A" * MB,
        "Authorization: Bearer " * (MB // 22),
        ";Password=" * (MB // 10),
        "sk-" + "-" * MB,
        "\u00e9" * (MB // 2),
    ],
    ids=lambda t: repr(t[:16]),
)
def test_adversarial_megabyte_lines_complete(text: str) -> None:
    out, counts = MASKER.mask_text(text)
    assert isinstance(out, str) and all(n > 0 for n in counts.values())


# --- labelled corpus ---------------------------------------------------------------------------


def _load(name: str) -> list[dict[str, str]]:
    with (CORPUS / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_corpus_recall_and_false_positive_rate() -> None:
    secrets_ = _load("secrets.jsonl")
    benign = _load("benign.jsonl")
    per_rule: dict[str, int] = {}
    for row in secrets_:
        per_rule[row["rule"]] = per_rule.get(row["rule"], 0) + 1
    assert set(per_rule) == set(BUILTIN_RULE_IDS) and min(per_rule.values()) >= 2
    found = 0
    forms: dict[str, int] = {}
    for row in secrets_:
        out, counts = MASKER.mask_text(row["text"])
        # A row with a form hides its secret: it must be gone from what a reader decodes too.
        if row["rule"] in counts and row["secret"] not in out and row["secret"] not in reader(out):
            found += 1
        if "form" in row:
            forms[row["form"]] = forms.get(row["form"], 0) + 1
    false_positives = [row["text"] for row in benign if MASKER.mask_text(row["text"])[1]]
    recall = found / len(secrets_)
    fpr = len(false_positives) / len(benign)
    print(
        f"\nleak corpus: recall {recall:.4f} on {len(secrets_)} secrets "
        f"({sum(forms.values())} in evasion forms), "
        f"false-positive rate {fpr:.4f} on {len(benign)} benign samples"
    )
    for family, (caught, total, fp, clean) in sorted(corpus_by_family(secrets_, benign).items()):
        print(f"  {family:18s} recall {caught}/{total}  false positives {fp}/{clean}")
    assert set(forms) == {*EVASIONS, "pem-separators", "long-value"}
    assert min(forms.values()) >= 6
    assert len(benign) >= 360
    assert recall == 1.0
    assert fpr == 0.0, false_positives[:3]


def corpus_by_family(
    secrets_: list[dict[str, str]], benign: list[dict[str, str]]
) -> dict[str, tuple[int, int, int, int]]:
    """Per rule family: (secrets caught, secrets, benign rows changed, benign rows). Benign
    rows name the family whose look-alikes they hold; older rows are plain prose."""
    family_of = {r.id: r.family for r in BUILTIN_RULES}
    table: dict[str, list[int]] = {}
    for row in secrets_:
        cell = table.setdefault(family_of[row["rule"]], [0, 0, 0, 0])
        out, counts = MASKER.mask_text(row["text"])
        cell[0] += row["rule"] in counts and row["secret"] not in reader(out)
        cell[1] += 1
    for row in benign:
        cell = table.setdefault(row.get("family", "prose"), [0, 0, 0, 0])
        cell[2] += bool(MASKER.mask_text(row["text"])[1])
        cell[3] += 1
    return {family: (a, b, c, d) for family, (a, b, c, d) in table.items()}


def test_every_family_has_secrets_and_look_alikes_in_the_corpus() -> None:
    table = corpus_by_family(_load("secrets.jsonl"), _load("benign.jsonl"))
    assert set(FAMILIES) <= set(table)
    for family in FAMILIES:
        caught, total, fp, clean = table[family]
        assert total >= 4 and caught == total, family
        assert clean >= 3 and fp == 0, family


def test_corpus_values_are_not_placeholders() -> None:
    # The corpus' secrets are fakes in the real format, never placeholder-looking values.
    assert not any(is_placeholder(row["secret"]) for row in _load("secrets.jsonl"))


# --- decoded views: what the reader sees ---------------------------------------------------------

INVISIBLES = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e\u2062"


def reader(text: str) -> str:
    """What a consumer ends up reading, decoded independently of the masker: JSON `\\u` escapes
    (twice), tags dropped, character references, percent-escapes (twice), no Cf characters."""
    for _ in range(2):
        text = re.sub(
            r"\\\\|\\u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)) if m[1] else "\\", text
        )
    text = html.unescape(re.sub(r"</?[A-Za-z][^<>]*>", "", text))
    text = unquote(unquote(text))
    return "".join(c for c in text if unicodedata.category(c) != "Cf")


def _entity_inner(secret: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(secret) - 1)
    named = {"_": "&lowbar;", ".": "&period;", "-": "&#45;", ":": "&colon;", "/": "&sol;"}
    ref = named.get(secret[i], f"&#{ord(secret[i])};")
    return f"&#x{ord(secret[0]):x};" + secret[1:i] + ref + secret[i + 1 :]


def _insert(chars: str) -> Callable[[str, random.Random], str]:
    def encode(secret: str, rng: random.Random) -> str:
        i = rng.randrange(1, len(secret))
        return secret[:i] + rng.choice(chars) + secret[i:]

    return encode


# Evasion forms: how a secret is written so that its characters no longer spell it, though every
# reader decodes it at once. tests/leak_corpus rows with a "form" were made with these.
EVASIONS: dict[str, Callable[[str, random.Random], str]] = {
    "html-entities": _entity_inner,
    "percent": lambda s, _rng: quote(s, safe=""),
    "percent-all": lambda s, _rng: "".join(f"%{b:02X}" for b in s.encode()),
    "zero-width": _insert(INVISIBLES[:5]),
    "soft-hyphen": _insert("\u00ad"),
    "json-escape": lambda s, rng: "".join(
        f"\\u{ord(c):04x}" if i == 0 or rng.random() < 0.2 else c for i, c in enumerate(s)
    ),
    "markup-split": lambda s, rng: (lambda i: f"{s[:i]}<b>{s[i:]}</b>")(rng.randrange(1, len(s))),
}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(secrets(), st.sampled_from(sorted(EVASIONS)), st.randoms(use_true_random=False))
def test_evasions_never_survive(drawn: tuple[str, str, str], form: str, rng: random.Random) -> None:
    rule, fragment, secret = drawn
    if len(secret) < 3 or (form == "markup-split" and "<password>" in fragment):
        return
    encoded = EVASIONS[form](secret, rng)
    text = f"Here it is: {fragment.replace(secret, encoded, 1)} (keep it safe)."
    out, counts = MASKER.mask_text(text)
    assert counts, (rule, form)
    assert secret not in reader(out), (rule, form)
    assert out.startswith("Here it is: ") and out.endswith(" (keep it safe).")
    assert MASKER.mask_text(out) == (out, {}), (rule, form)  # nothing decodable is left


PAT_BODY = PAT[4:]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # character references in text and in attribute values: only the reference's span goes
        (f"<p>Token: &#x67;hp_{PAT_BODY}</p>", "<p>Token: [REDACTED:github-pat]</p>"),
        (f"<p>Token: gh&#112;&lowbar;{PAT_BODY}.</p>", "<p>Token: [REDACTED:github-pat].</p>"),
        (
            f'<a class="http-source" target="_blank" href="https://x.example/?t=ghp&#95;{PAT_BODY}">'
            "x</a>",
            '<a class="http-source" target="_blank" href="https://x.example/?t=[REDACTED:github-pat]">'
            "x</a>",
        ),
        # a token split by inline markup: the text goes, the tags stay
        (f"<p>gh<b>p_{PAT_BODY}</b> ok</p>", "<p>[REDACTED:github-pat]<b></b> ok</p>"),
        # invisible characters inside the token
        (f"a gh\u200bp_{PAT_BODY} b", "a [REDACTED:github-pat] b"),
        (f"a ghp_{PAT_BODY[:9]}\u00ad{PAT_BODY[9:]} b", "a [REDACTED:github-pat] b"),
        # JSON escapes, once and twice (JSON text inside a JSON string)
        (f'{{"text": "\\u0067hp_{PAT_BODY}"}}', '{"text": "[REDACTED:github-pat]"}'),
        (f'{{"text": "\\\\u0067hp_{PAT_BODY}"}}', '{"text": "[REDACTED:github-pat]"}'),
        # a webhook URL percent-encoded in another URL's query: the value, not the outer URL
        (
            "https://app.example/login?next=https%3A%2F%2Fhooks.slack.com%2Fservices%2FT0123ABCD"
            "%2FB0123ABCD%2Fq8w7e6r5t4y3u2i1o0p9a8s7&lang=en",
            "https://app.example/login?next=[REDACTED:slack-webhook]&lang=en",
        ),
    ],
)
def test_views_mask_the_written_span(text: str, expected: str) -> None:
    out, counts = MASKER.mask_text(text)
    assert out == expected
    assert sum(counts.values()) == 1


def test_pem_split_by_markup_keeps_the_tags() -> None:
    lines = [draw_part(random.Random(n), Run(B64, 64)) for n in range(3)]
    block = "<br>".join(
        ["-----BEGIN RSA PRIVATE KEY-----", *lines, "abc=", "-----END RSA PRIVATE KEY-----"]
    )
    out, counts = MASKER.mask_text(f"<p>key:<br/>{block}</p><p>bye</p>")
    assert counts == {"pem-private-key": 1}
    assert out == "<p>key:<br/>[REDACTED:pem-private-key]" + "<br>" * 5 + "</p><p>bye</p>"
    for sep in ("</p><p>", "<br />\n", "</div><div>"):
        masked, _ = MASKER.mask_text(block.replace("<br>", sep))
        assert not any(line in reader(masked) for line in lines), sep


def test_pem_split_by_other_separators() -> None:
    lines = [draw_part(random.Random(n), Run(B64, 64)) for n in range(3)]
    begin, end = "-----BEGIN PRIVATE KEY-----", "-----END PRIVATE KEY-----"
    for sep in ('",\n  "', "';'", " ; ", "\\r\\n", "\t|\t"):
        text = "key = [" + sep.join([begin, *lines, end]) + "]"
        out, counts = MASKER.mask_text(text)
        assert counts == {"pem-private-key": 1}, sep
        assert not any(line in out for line in lines), sep


@pytest.mark.parametrize("length", [255, 256, 257, 300, 5_000, 200_000])
def test_secret_named_values_have_no_length_cliff(length: int) -> None:
    value = "".join(draw_part(random.Random(length), Run(PW_CHARS, length)))
    for text in (
        f'refresh_token = "{value}"',
        f'{{"SessionToken": "{value}"}}',
        f"export DB_PASSWORD={value}",
        f"<password>{value}</password>",
        f"Server=db;Password={value};",
    ):
        out, counts = MASKER.mask_text(text)
        assert value not in out and counts, (length, text[:20])
    new, hits = MASKER.mask_tree({"refresh_token": value})
    assert new == {"refresh_token": "[REDACTED:password-assignment]"} and hits


def test_view_offsets_compose_back_to_the_original() -> None:
    text = "a\\u0026#x67;b%2541c\u200bd<b>e</b>f"
    views = decoded_views(text)
    stages = [v.stage for v in views]
    assert stages[:4] == ["json", "entities", "percent", "percent"]
    final = views[3]
    assert final.text == "agbAc\u200bd<b>e</b>f"
    # each decoded character maps back to exactly what spelled it
    assert [text[s:e] for s, e in final.to_original(1, 2)] == ["\\u0026#x67;"]
    assert [text[s:e] for s, e in final.to_original(3, 4)] == ["%2541"]
    assert [text[s:e] for s, e in final.to_original(0, 4)] == ["a\\u0026#x67;b%2541"]


def test_markup_is_never_part_of_a_masked_span() -> None:
    (rendered,) = [v for v in decoded_views("<p>x<b>y</b><br>z</p>") if v.stage == "markup"]
    assert rendered.text == "\nxy\nz\n"
    assert rendered.to_original(1, 5) == [(3, 4), (7, 8), (16, 17)]


def test_no_view_for_plain_text() -> None:
    assert not may_hide("plain ascii text, no escapes: 100 percent")
    assert decoded_views("plain text with & and 50% and a < b") == []


def test_views_are_bounded_on_hostile_strings() -> None:
    # Deep entity nesting is decoded once; a huge numeric reference is out of range, not a crash.
    nested = "&amp;" * 50_000 + "#x67;"
    (view,) = decoded_views(nested)
    assert view.text == "&" * 50_000 + "#x67;"
    assert decoded_views("&#" + "9" * 5_000 + ";")[0].text == "\ufffd"
    assert decoded_views("%41" * 100_000)[0].text == "A" * 100_000


def test_masked_lists_what_changed_in_the_delivered_html() -> None:
    gate = disk_gate(Settings())
    href = f"https://x.example/cb?token=&#103;hp_{PAT_BODY}"
    answer = f'```html\n<p>See <a class="http-source" target="_blank" href="{href}">it</a></p>\n```'
    raw = orjson.dumps(html_reply(output={"text": answer}))
    decision = CheckSession(gate).line(raw, 1, datetime(2026, 12, 1, tzinfo=UTC))
    assert decision.action == "deliver" and decision.output is not None
    message = decision.output.message
    assert PAT not in reader(message["html"]) and PAT not in str(message["citations"])
    assert {h.path for h in decision.masked} == {"html", "citations[0]"}
    assert "&#103;" not in message["html"] and "[REDACTED:github-pat]" in message["html"]


def test_correction_requests_and_dead_letters_hold_no_escaped_secret() -> None:
    gate = disk_gate(Settings())
    escaped = f"\\u0067hp_{PAT_BODY}"
    text = f'{{"segments": [{{"type": "text", "data": {{"text": "{escaped}"}}}}]'
    reply = raw_reply(output={"text": text})
    now = datetime(2026, 12, 1, tzinfo=UTC)
    correction = CheckSession(gate).line(orjson.dumps(reply), 1, now)
    assert correction.action == "request_correction" and correction.output is not None
    assert PAT not in reader(correction.output.invalid_output)
    assert [h.path for h in correction.masked] == ["invalid_output"]
    dead = CheckSession(gate).line(orjson.dumps({**reply, "attempt": 7}), 2, now)
    assert dead.action == "dead_letter" and dead.output is not None
    assert PAT not in reader(reader(dead.output.record))
    assert [h.path for h in dead.masked] == ["record"]


VIEW_ALPHABET = st.sampled_from(
    [
        *"ab-_ %;#&\\/u",
        *("%41", "%e2%80%8b", "%C3%A9", "%2541", "&amp;", "&#x67;", "&#103;", "&lt;", "&copy"),
        *("&bogus;", "\\u0067", "\\ud83d\\ude00", "\\\\", "\\/", "\u200b", "\u00ad"),
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(VIEW_ALPHABET, max_size=40).map("".join))
def test_quick_views_equal_exact_views(text: str) -> None:
    """The fast text of each view (no offsets) is the text its token pass builds, and every
    character of it maps back inside the original."""
    for view in decoded_views(text):
        quick = view.text
        assert view.exact() == quick, view.stage
        for i in range(len(quick)):
            spans = view.to_original(i, i + 1)
            assert all(0 <= s < e <= len(text) for s, e in spans)


def test_secret_named_keys_are_read_decoded() -> None:
    for key in ("pass&#119;ord", "api\\u005fkey", "client%5Fsecret", "to\u200bken"):
        new, hits = MASKER.mask_tree({key: "Zx81kq-Lm02"})
        assert new == {key: "[REDACTED:password-assignment]"}, key
        assert [h.rule for h in hits] == ["password-assignment"]
    # decoded, these keys name no secret: their values stay
    assert MASKER.mask_tree({"max&#95;tokens": "Zx81kq-Lm02", "to%6Bens": "Zx81kq-Lm02"})[1] == []


def _tree_cases() -> list[Any]:
    """Corpus rows (secret and benign) as values, keys, list items and secret-named values."""
    rows = _load("secrets.jsonl") + _load("benign.jsonl")
    trees: list[Any] = []
    for n, row in enumerate(rows):
        text = row["text"]
        trees.append({"segments": [{"type": "text", "data": {"text": text}}], "n": n})
        trees.append({text[:60]: ["plain", text, ("x", {"k": text})]})
        trees.append({"password": text[:40], "note": "ok"})
    return trees


def test_clean_tree_shortcut_agrees_with_the_walk() -> None:
    """The one-pass pre-filter over a tree's joined strings never skips what the walk masks."""
    fast, walk = Masker(), Masker()
    walk._rules.joinable = False
    for tree in _tree_cases():
        assert fast.mask_tree(tree) == walk.mask_tree(tree)


def test_anchored_deployment_pattern_disables_the_shortcut() -> None:
    masker = Masker(patterns={"acme": "^ACME-[0-9]{4}$"})
    assert not masker._rules.joinable
    masked, hits = masker.mask_tree({"a": "x", "b": "ACME-1234"})
    assert masked == {"a": "x", "b": "[REDACTED:acme]"}
    assert [h.path for h in hits] == ["b"]
    assert Masker(patterns={"acme": "ACME-[^0-9]{4}"})._rules.joinable


def test_masking_reaches_a_fixed_point_when_a_mask_leaves_an_escaped_rest() -> None:
    """Found by hypothesis: a PEM key as a JSON value whose last character is written as a
    JSON escape; the PEM rule masked the key and left `\\u006e`, and that rest beside the marker
    was still the `private_key` value, masked only by a second pass. One call now gives the
    stable text."""
    zeros = "0" * 64
    body = f"{zeros}\\n{zeros}\\n{'0' * 21}="
    pem = f"-----BEGIN PRIVATE KEY-----\\n{body}\\n-----END PRIVATE KEY-----\\"
    text = f'Here it is: {{"type": "service_account", "private_key": "{pem}u006e"}} (keep it safe).'
    out, counts = MASKER.mask_text(text)
    assert counts
    assert "BEGIN PRIVATE KEY" not in out and "u006e" not in out
    assert MASKER.mask_text(out) == (out, {})
