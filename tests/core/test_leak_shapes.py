"""The shapes a secret takes in real text that single-line prefix rules miss or over-reach on:
commands continued over lines, YAML block scalars, cased vendor names, values cut short,
stand-ins and hand-typed look-alikes, tokens inside file names. Every value here is drawn at
random in the format's alphabet (never a real or published credential)."""

from __future__ import annotations

import base64
import random
import string

import pytest

from schemas.preview import preview
from streams.core.leak_rules import looks_fake
from streams.core.leaks import Masker

MASKER = Masker()
B62 = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def fake(alphabet: str, n: int, seed: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(n))


def masked(text: str) -> dict[str, int]:
    return MASKER.mask_text(text)[1]


@pytest.mark.parametrize(
    "value",
    [
        "x" * 40,
        "AIza" + "a" * 35,
        "1" * 42 + "=",
        "123" * 7,
        "3" * 8 + "bBBBB" + "9" * 6 + "eEeeF" + "c" * 12,
        "sha256~XXXX_PUT_YOUR_TOKEN_HERE",
        "EXAMPLEKEY0123456789",
        "sk_" + string.ascii_lowercase + "42",
        "tok_" + string.ascii_uppercase[2:24] + "9x",
    ],
)
def test_hand_typed_values_look_fake(value: str) -> None:
    assert looks_fake(value)


@pytest.mark.parametrize("seed", range(200))
def test_random_values_do_not_look_fake(seed: int) -> None:
    for alphabet, n in ((HEX, 32), (HEX, 40), (B62, 20), (B62, 36), (B62 + "+/", 64)):
        assert not looks_fake(fake(alphabet, n, seed * 7 + n)), (alphabet, n, seed)
    # A run of the alphabet shorter than 20 letters is no stand-in; neither are digits in order.
    assert not looks_fake("x" + string.ascii_lowercase[:19] + "_" + fake(B62, 20, seed))
    assert not looks_fake(fake(B62, 10, seed) + "1234567890" + fake(B62, 10, seed + 1))
    # Patterned but varied test values (`ghp_` + "aB3" * 12) are not stand-ins.
    assert not looks_fake("aB3" * 12) and not looks_fake("Zq9Xb2" * 6)


def test_curl_user_password_in_every_form() -> None:
    password = fake(B62, 12, 1) + "@" + fake(B62, 5, 2) + "#"
    for text in (
        f"curl --user 'ops@example.com:{password}' https://api.example.com",
        f'curl -u ":{password}" https://api.example.com',
        f"curl -X POST https://api.example.com/run \\\n  -H 'Accept: */*' \\\n  -u ci:{password}",
        f'curl --user "{{{fake(HEX, 8, 3)}}}":"{{{fake(B62, 16, 4)}}}" https://api.example.com',
    ):
        out, counts = MASKER.mask_text(text)
        assert counts.get("curl-user-password") == 1, text
        assert fake(B62, 12, 1) not in out and "{" + fake(B62, 16, 4) not in out
    token = fake(B62, 24, 5) + "9"
    out, counts = MASKER.mask_text(f'curl -u "{token}:" https://api.example.com/v1/charges')
    assert token not in out and counts == {"curl-user-password": 1}


@pytest.mark.parametrize(
    "text",
    [
        "curl -u username:password https://api.example.com",
        "curl --user 'deploy:token' https://api.example.com",
        "curl -u '<user>:<password>' https://api.example.com",
        'curl -u "${{ secrets.USER }}:${{ secrets.PASS }}" https://api.example.com',
        "curl -u alice: https://api.example.com  # prompts for the password",
        "curl -X POST https://api.example.com -d @body.json\necho -u ci:unrelated-next-command",
    ],
)
def test_curl_examples_are_left(text: str) -> None:
    assert masked(text) == {}


def test_authorization_value_without_a_scheme() -> None:
    value = f"{fake(HEX, 8, 6)}-{fake(HEX, 4, 7)}-{fake(HEX, 4, 8)}-{fake(HEX, 12, 9)}"
    out, counts = MASKER.mask_text(f"curl --header 'Authorization:  {value}' https://x")
    assert value not in out and counts == {"authorization-header": 1}
    assert masked(f"Authorization: Api-Token {fake(HEX, 40, 10)}") == {"authorization-header": 1}
    assert masked("Authorization: required-for-every-single-request") == {}


def test_kubernetes_block_scalars_comments_and_documents() -> None:
    blob = base64.b64encode(fake(B62, 48, 11).encode()).decode()
    manifest = (
        "apiVersion: v1\ndata:\n  # written by the installer\n  .dockerconfigjson: |\n"
        f"    {blob}\nkind: Secret\nmetadata:\n  name: pull\n"
    )
    out, counts = MASKER.mask_text(manifest)
    assert blob not in out and counts == {"kubernetes-secret-data": 1}
    assert "# written by the installer" in out and ".dockerconfigjson: |" in out
    tabbed = f"apiVersion: v1\nkind: secret\ndata:\n\tapi: {blob}\nmetadata:\n\tname: x\n"
    assert blob not in MASKER.mask_text(tabbed)[0]
    # `kind: Secret` and a ConfigMap's `data:` are two documents; templates are no values.
    two = f"kind: Secret\nmetadata:\n  name: a\n---\nkind: ConfigMap\ndata:\n  k: {blob}\n"
    assert masked(two) == {}
    assert masked("kind: Secret\ndata:\n  password: {{ .Values.password }}\n") == {}
    assert masked(f"kind: SecretStore\ndata:\n  k: {blob}\n") == {}


def test_vendor_names_as_written_and_makefile_operators() -> None:
    access_id = "su" + fake(B62, 12, 12)
    assert masked(f'SUMO_ACCESS_ID = "{access_id}"') == {"sumologic-access-id": 1}
    assert masked(f'Sumo.accessId: "{access_id}"') == {"sumologic-access-id": 1}
    assert masked(f"sumOfItems = {access_id}") == {}
    uuid = f"{fake(HEX, 8, 13)}-ABCD-{fake(HEX, 4, 14)}-{fake(HEX, 4, 15)}-{fake(HEX, 12, 16)}"
    assert masked(f'SNYK_KEY :::= "{uuid.upper()}"') == {"snyk-api-token": 1}
    token = f"sqp_{fake(HEX, 40, 17)}"
    out, counts = MASKER.mask_text(f'SONAR_LOGIN := "{token}"')
    assert token[4:] not in out and sum(counts.values()) == 1


def test_a_token_in_a_file_name_or_cut_short_is_left() -> None:
    assert masked(f"static/thumb.ico-{fake(B62, 32, 18)}.png") == {}
    assert masked(f"Bearer ico-{fake(B62, 32, 18)}") == {"infracost-api-token": 1}
    assert masked(f"export OP_SERVICE_ACCOUNT_TOKEN=ops_eyJ{fake(B62, 12, 19)}...") == {}
    assert masked(f"token: ops_eyJ{fake(B62, 12, 19)}..[Redacted]") == {}


def test_stand_ins_beside_real_secrets() -> None:
    real = fake(B62, 22, 20)
    text = (
        f"aws_access_key: AKIAIOSFODNN7EXAMPLE\nxoxp-{fake('0123456789', 12, 21)}-"
        f"{fake('0123456789', 12, 22)}-{fake('0123456789', 12, 23)}-{'#' * 32}\n"
        f'api_key = "{"a" * 36}"\npassword = "{real}"'
    )
    out, counts = MASKER.mask_text(text)
    assert counts == {"password-assignment": 1} and real not in out
    assert "AKIAIOSFODNN7EXAMPLE" in out and "#" * 32 in out


def test_an_alphabet_typed_out_is_a_stand_in() -> None:
    real = fake(B62, 29, 31)
    typed = "sk_" + string.ascii_lowercase[:24] + "12"
    text = f'$config = array(\n  "secret_key" => "{typed}",\n  "api_key" => "sk_{real}",\n);'
    out, counts = MASKER.mask_text(text)
    assert typed in out and real not in out and counts == {"password-assignment": 1}


def test_pem_armour_without_a_key_is_left() -> None:
    for body in ("(paste your key here)", "...", ""):
        text = f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----"
        assert masked(text) == {}
    key = "\n".join(fake(B62 + "+/", 64, 24 + i) for i in range(2))
    pem = f"-----BEGIN EC PRIVATE KEY-----\n{key}\n-----END EC PRIVATE KEY-----"
    assert masked(pem) == {"pem-private-key": 1}


def test_assignments_in_more_languages() -> None:
    value = fake(B62, 18, 30) + "7"
    for text in (
        f'System.setProperty("SERVICE_TOKEN", "{value}");',
        f'cfg.get("db_password", "{value}")',
        f"<serviceToken>\n    {value}\n</serviceToken>",
        f'$apiToken .= "{value}";',
    ):
        out, counts = MASKER.mask_text(text)
        assert value not in out and counts == {"password-assignment": 1}, text
    for text in (
        'label("password", "Password")',
        'os.getenv("API_TOKEN", "changeme")',
        'getConfig("db_password", "defaultPassword")',
        "<password>\n\n</password>",
    ):
        assert masked(text) == {}, text


def test_the_preview_joins_lines_without_making_a_key_a_value() -> None:
    """The one-line preview turns `KEY=\\nNEXT=` into `KEY= NEXT=`: still two keys."""

    def mask(text: str) -> str:
        return MASKER.mask_text(text)[0]

    empty = "GITHUB_API_KEY=\nDYNATRACE_API_KEY=\nmail.password=\nmail.host=smtp.example.com"
    assert preview(empty, mask) == " ".join(empty.split())
    secret = fake(B62, 20, 31)
    line = preview(f"API_KEY=\nDB_PASSWORD={secret}\nLOG_LEVEL=debug", mask)
    assert line == "API_KEY= DB_PASSWORD=[REDACTED:password-assignment] LOG_LEVEL=debug"


# Keys made by openssl at test time (none is stored): every private key format it writes, and
# the public halves and a certificate that must be left alone.
_OPENSSL_KEYS = {
    "rsa-pkcs1": ["genrsa", "-traditional", "1024"],
    "rsa-pkcs8": ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"],
    "ec-sec1-p256": ["ecparam", "-name", "prime256v1", "-genkey", "-noout"],
    "ec-sec1-p384": ["ecparam", "-name", "secp384r1", "-genkey", "-noout"],
    "ec-pkcs8": ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
    "ed25519": ["genpkey", "-algorithm", "ed25519"],
}


def _openssl(*args: str, stdin: bytes = b"") -> bytes:
    import subprocess

    return subprocess.run(["openssl", *args], input=stdin, capture_output=True, check=True).stdout


def _der_base64(pem: bytes) -> str:
    """The base64 body of the first PEM block, its lines joined (the key without its armour)."""
    lines = pem.decode().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("-----BEGIN"))
    end = next(i for i, line in enumerate(lines) if i > start and line.startswith("-----END"))
    return "".join(lines[start + 1 : end])


@pytest.mark.parametrize("kind", sorted(_OPENSSL_KEYS))
def test_a_private_key_without_its_pem_armour_is_masked_and_its_public_half_is_not(
    kind: str,
) -> None:
    pem = _openssl(*_OPENSSL_KEYS[kind])
    key = _der_base64(pem)
    for text in (f"PRIVATE_KEY={key}", f'{{"signing_key": "{key}"}}', f"key:\n{key}\n"):
        out, counts = MASKER.mask_text(text)
        assert key not in out and counts == {"der-private-key": 1}, (kind, text[:40])
    public = _der_base64(_openssl("pkey", "-pubout", stdin=pem))
    assert MASKER.mask_text(f"PUBLIC_KEY={public}") == (f"PUBLIC_KEY={public}", {})


def test_a_certificate_in_base64_is_not_a_private_key() -> None:
    pem = _openssl(*_OPENSSL_KEYS["ec-pkcs8"])
    cert = _openssl(
        "req", "-new", "-x509", "-key", "/dev/stdin", "-subj", "/CN=replygate", "-days", "1",
        stdin=pem,
    )  # fmt: skip
    body = _der_base64(cert)
    assert MASKER.mask_text(f"ca_cert: {body}") == (f"ca_cert: {body}", {})


@pytest.mark.parametrize("kind", sorted(_OPENSSL_KEYS))
def test_a_kubeconfig_client_key_is_masked_and_its_certificate_is_not(kind: str) -> None:
    pem = _openssl(*_OPENSSL_KEYS[kind])
    key = base64.b64encode(pem).decode()
    cert = base64.b64encode(
        _openssl("req", "-new", "-x509", "-key", "/dev/stdin", "-subj", "/CN=u", "-days", "1",
                 stdin=pem)
    ).decode()  # fmt: skip
    kubeconfig = (
        "users:\n- name: admin\n  user:\n"
        f"    client-certificate-data: {cert}\n    client-key-data: {key}\n"
    )
    out, counts = MASKER.mask_text(kubeconfig)
    assert key not in out and cert in out, kind
    assert counts == {"pem-private-key-base64": 1}, counts
