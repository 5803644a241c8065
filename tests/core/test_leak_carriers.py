"""Structural carriers of secrets: URLs (userinfo, credential-named query parameters, webhook
and device-token paths), password hashes, and a key id written beside its secret. Values are
drawn at random in each format (never a real secret); each is masked whole, and what carries
it (scheme, host, the other parameters) stays readable."""

from __future__ import annotations

import random
import string

import pytest

from streams.core.leaks import Masker

MASKER = Masker()
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
UPPER = string.ascii_uppercase + string.digits
CRYPT = "./" + B62
# The rules that know a value by a credential word: left out where a test judges a carrier's
# own rule (its span, not whichever rule names the value).
KEYWORD_RULES = (
    "password-assignment",
    "connection-string-password",
    "authorization-header",
    "basic-auth-field",
    "curl-user-password",
)
CARRIERS_ONLY = Masker(disabled=KEYWORD_RULES)


def draw(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def password(rng: random.Random) -> str:
    """A human-made password with characters a URL must percent-encode (`@`, `:`, `#`, `/`)."""
    special = rng.choice(["%40", "%3A", "%23", "%2F", "%21", "%24"])
    return draw(rng, B62, 6) + special + draw(rng, B62, 6)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    "template",
    [
        "mongodb://app:{pw}@host",
        'MONGO_URI="mongodb+srv://app:{pw}@cluster0.ab1cd.mongodb.net/?retryWrites=true"',
        "export DATABASE_URL=postgres://app:{pw}@db.internal:5432/shop",
        "redis://:{pw}@cache:6379/0",
        "<a href='amqp://guest:{pw}@rabbit:5672/'>queue</a>",
    ],
)
def test_a_percent_encoded_userinfo_password_is_masked_whole(template: str, seed: int) -> None:
    pw = password(random.Random(seed))
    text = template.format(pw=pw)
    out, counts = MASKER.mask_text(text)
    head, tail = pw.split("%", 1)
    assert head not in out and tail[2:] not in out, out
    assert "[REDACTED:" in out and "@" in out  # the host part stays readable
    assert counts


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "template",
    [
        "aws = ('{kid}''{secret}')",
        "client = boto3.client('s3', '{kid}', '{secret}')",
        "{kid},{secret},prod-deployer",
        "creds: {kid}:{secret}",
    ],
)
def test_both_halves_of_a_key_pair_written_together_are_masked(template: str, seed: int) -> None:
    rng = random.Random(seed)
    kid = "AKIA" + draw(rng, UPPER, 16)
    secret = draw(rng, B62 + "+/", 40)
    out, counts = MASKER.mask_text(template.format(kid=kid, secret=secret))
    assert kid not in out and secret not in out, out
    assert counts.get("aws-access-key-id") == 1


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "name", ["access_token", "api_key", "apikey", "token", "client_secret", "sig", "auth_token"]
)
def test_a_credential_query_parameter_is_masked_up_to_its_separator(seed: int, name: str) -> None:
    rng = random.Random(seed)
    value = draw(rng, B62, 12) + rng.choice(["-", "_", "%2B", "."]) + draw(rng, B62, 20)
    text = f"curl 'https://api.example.com/v1/items?limit=5&{name}={value}&page=2#top'"
    out, counts = CARRIERS_ONLY.mask_text(text)
    assert value not in out and value[:12] not in out and value[-20:] not in out, out
    # The carrier stays: the other parameters and the fragment are not part of the value.
    assert out.endswith("&page=2#top'") and "?limit=5&" in out, out
    assert set(counts) <= {"url-query-credential", "signed-url-signature"}


@pytest.mark.parametrize(
    "text",
    [
        "GET /v1/items?access_token={token}&limit=5",
        "https://example.com/callback?token=:token&state=:state",
        "https://api.example.com/search?key=$API_KEY&q=shoes",
        "https://example.com/reset?token=<TOKEN>&email=ana%40example.com",
        "https://example.com/docs?section=api_key&lang=en",
        "https://shop.example.com/cart?key=blue-shirt&size=m",
    ],
)
def test_query_parameters_holding_placeholders_or_words_stay(text: str) -> None:
    assert CARRIERS_ONLY.mask_text(text) == (text, {})


@pytest.mark.parametrize("seed", range(4))
def test_webhook_and_device_token_paths_are_masked(seed: int) -> None:
    rng = random.Random(seed)
    lower = string.ascii_lowercase + string.digits
    slack, teams = draw(rng, B62, 24), draw(rng, HEX, 32)
    mattermost, device, zap = (
        draw(rng, lower, 25) + "7",
        draw(rng, B62, 19) + "9",
        "z" + draw(rng, lower, 6),
    )
    cases = {
        "slack-webhook": (
            f"https://hooks.slack.com/services/T{draw(rng, UPPER, 8)}/B{draw(rng, UPPER, 9)}"
            f"/{slack}",
            slack,
        ),
        "teams-webhook": (
            "https://outlook.office.com/webhook/"
            + "@".join(draw(rng, HEX, 36) for _ in range(2))
            + f"/IncomingWebhook/{teams}/{draw(rng, HEX, 36)}",
            teams,
        ),
        "mattermost-webhook": (f"https://chat.example.org/hooks/{mattermost}", mattermost),
        "thingsboard-device-token": (
            f"https://thingsboard.cloud/api/v1/{device}/telemetry",
            device,
        ),
        "zapier-webhook": (f"https://hooks.zapier.com/hooks/catch/123456/{zap}/", zap),
    }
    for rule, (url, secret) in cases.items():
        out, counts = MASKER.mask_text(f"POST to {url} with the JSON body")
        assert rule in counts and secret not in out, (rule, out)
        if rule != "slack-webhook":  # Slack's rule masks the whole URL, the others their secret
            assert url.split("/")[2] in out, (rule, out)


@pytest.mark.parametrize("seed", range(4))
def test_password_hashes_are_masked_as_crackable(seed: int) -> None:
    rng = random.Random(seed)
    hashes = {
        "bcrypt-hash": "$2b$12$" + draw(rng, CRYPT, 53),
        "crypt-hash": "$6$" + draw(rng, CRYPT, 16) + "$" + draw(rng, CRYPT, 86),
        "argon2-hash": "$argon2id$v=19$m=65536,t=3,p=4$"
        + draw(rng, B62 + "+/", 22)
        + "$"
        + draw(rng, B62 + "+/", 43),
    }
    for rule, value in hashes.items():
        out, counts = MASKER.mask_text(f"ana:{value}:19700:0:99999:7:::")
        assert value not in out and counts.get(rule) == 1, (rule, out)
    nt = draw(rng, HEX, 32)
    out, counts = MASKER.mask_text(f"svc:1104:aad3b435b51404eeaad3b435b51404ee:{nt}:::")
    assert nt not in out and counts.get("ntlm-hash") == 1
    # 32 hex alone is any digest (a file's MD5): no hash context, no mask.
    digest = f"md5 {nt}  backup.tar"
    assert MASKER.mask_text(digest) == (digest, {})
