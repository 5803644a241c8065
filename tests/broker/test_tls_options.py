"""TLS and secret-file settings, and the one-line words for a refused connection (no broker).

The same settings against a real broker: tests/worker/test_kafka_tls.py.
"""

from __future__ import annotations

import logging
import secrets
import ssl
import subprocess
from pathlib import Path

import pytest
from pydantic import SecretStr

from streams.broker.options import aiokafka_options, faust_broker_options, ssl_context
from streams.broker.refusals import cause_of, client_errors, denied, is_denied
from streams.settings import KafkaSecurity, Settings

PASSWORD = "file-pw." + secrets.token_hex(8)


def settings(**security: object) -> Settings:
    return Settings(
        kafka_bootstrap_servers="k:9093",
        kafka_security=KafkaSecurity(**security),  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A self-signed certificate with an encrypted key (passphrase `PASSWORD`)."""
    tmp = tmp_path_factory.mktemp("pki")
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-keyout", str(tmp / "key.pem"), "-out", str(tmp / "cert.pem"), "-days", "2",
         "-subj", "/CN=client", "-passout", f"pass:{PASSWORD}"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return tmp


def test_the_sasl_password_is_read_from_its_file(tmp_path: Path) -> None:
    path = tmp_path / "password"
    path.write_text(PASSWORD + "\n")
    built = settings(
        protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="gate",
        sasl_password_file=path,
    )
    options = aiokafka_options(built)
    assert options["sasl_plain_password"] == PASSWORD  # the line end dropped
    assert PASSWORD not in repr(options) and PASSWORD not in repr(built)
    credentials = faust_broker_options(built)["broker_credentials"]
    assert PASSWORD not in repr(credentials)


@pytest.mark.parametrize(
    ("security", "message"),
    [
        (
            {"protocol": "SASL_SSL", "sasl_username": "u", "sasl_password": SecretStr("x")},
            "sasl_password and kafka_security.sasl_password_file are both set",
        ),
        ({"protocol": "SSL"}, "sasl_password_file is set but kafka_security.protocol is SSL"),
        (
            {"protocol": "SASL_SSL", "sasl_username": "u", "sasl_password_file": Path("/nope")},
            "sasl_password_file: cannot read /nope",
        ),
    ],
)
def test_a_password_file_that_cannot_work_is_refused(
    tmp_path: Path, security: dict[str, object], message: str
) -> None:
    path = tmp_path / "password"
    path.write_text(PASSWORD)
    security = {"sasl_password_file": path, **security}
    with pytest.raises(ValueError, match=message) as caught:
        aiokafka_options(settings(**security))
    assert PASSWORD not in str(caught.value)


def test_a_large_or_binary_password_file_is_refused_without_its_content(tmp_path: Path) -> None:
    big, binary = tmp_path / "big", tmp_path / "binary"
    big.write_text("x" * 5000)
    binary.write_bytes(b"\xff\xfe" + PASSWORD.encode())
    for path, why in ((big, "larger than 4096 bytes"), (binary, "is not UTF-8 text")):
        with pytest.raises(ValueError, match=why) as caught:
            aiokafka_options(
                settings(protocol="SASL_SSL", sasl_username="u", sasl_password_file=path)
            )
        assert PASSWORD not in str(caught.value)


def test_an_encrypted_client_key_is_opened_with_its_passphrase_file(pki: Path) -> None:
    files = {"ssl_certfile": pki / "cert.pem", "ssl_keyfile": pki / "key.pem"}
    passphrase = pki / "passphrase"
    passphrase.write_text(PASSWORD + "\n")
    context = ssl_context(
        KafkaSecurity(protocol="SSL", ssl_key_password_file=passphrase, **files)  # type: ignore[arg-type]
    )
    assert isinstance(context, ssl.SSLContext)
    with pytest.raises(ValueError, match="cannot load the client certificate") as caught:
        ssl_context(
            KafkaSecurity(protocol="SSL", ssl_key_password=SecretStr("wrong"), **files)  # type: ignore[arg-type]
        )
    assert "wrong" not in str(caught.value) and PASSWORD not in str(caught.value)


def test_an_unreadable_ca_file_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate")
    with pytest.raises(ValueError, match=r"kafka_security.ssl_cafile: cannot load .*ca.pem"):
        ssl_context(KafkaSecurity(protocol="SSL", ssl_cafile=bad))


def test_the_host_name_check_is_on_unless_turned_off() -> None:
    on = ssl_context(KafkaSecurity(protocol="SSL"))
    off = ssl_context(KafkaSecurity(protocol="SSL", ssl_check_hostname=False))
    assert on is not None and on.check_hostname and on.verify_mode == ssl.CERT_REQUIRED
    assert off is not None and not off.check_hostname and off.verify_mode == ssl.CERT_REQUIRED


@pytest.mark.parametrize(
    ("logged", "line"),
    [
        (
            'Unable connect to "k:9093": [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify '
            "failed: unable to get local issuer certificate (_ssl.c:1006)",
            "TLS handshake with k:9093 failed: certificate verify failed: unable to get local "
            "issuer certificate",
        ),
        (
            'Unable connect to "10.0.0.7:9093": [SSL: CERTIFICATE_VERIFY_FAILED] certificate '
            "verify failed: IP address mismatch, certificate is not valid for '10.0.0.7'. "
            "(_ssl.c:1006)",
            "TLS handshake with 10.0.0.7:9093 failed: certificate verify failed: IP address "
            "mismatch, certificate is not valid for '10.0.0.7'",
        ),
        (
            'Unable connect to "k:9093": [Error 58] SaslAuthenticationFailed: Authentication '
            "failed during authentication due to invalid credentials with SASL mechanism "
            "SCRAM-SHA-512",
            "k:9093: SaslAuthenticationFailed: Authentication failed during authentication due "
            "to invalid credentials with SASL mechanism SCRAM-SHA-512",
        ),
        (
            'Unable connect to "k:9093": [Error 7] KafkaConnectionError: Connection at k:9093 '
            "closed",
            "k:9093: KafkaConnectionError: Connection at k:9093 closed (the broker hung up: a "
            "listener that requires a client certificate it trusts, or a listener of another "
            "protocol)",
        ),
    ],
)
def test_aiokafkas_connection_error_becomes_one_plain_line(logged: str, line: str) -> None:
    assert cause_of(logged) == line


def test_client_errors_keeps_aiokafkas_error_masked_and_out_of_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from streams.broker.options import mask_in_client_logs

    mask_in_client_logs(PASSWORD)
    with caplog.at_level(logging.DEBUG), client_errors() as seen:
        logging.getLogger("aiokafka.client").error('Unable connect to "k:1": bad %s', PASSWORD)
    assert caplog.text == ""
    assert seen.last == 'Unable connect to "k:1": bad **********'
    logging.getLogger("aiokafka.client").error("after")
    assert "after" in caplog.text  # the log is the process's again


def test_authorization_errors_are_denials_and_say_what_and_where() -> None:
    from aiokafka.errors import (
        GroupAuthorizationFailedError,
        KafkaConnectionError,
        TopicAuthorizationFailedError,
    )

    assert is_denied(TopicAuthorizationFailedError("t")) and is_denied(
        GroupAuthorizationFailedError("g")
    )
    assert not is_denied(KafkaConnectionError("down"))
    assert denied("write to", "topic", "p.replies.dlq", "worker") == (
        "not authorized to write to topic 'p.replies.dlq': the broker's ACLs do not allow it "
        "for this principal (`replygate acls worker` prints what it needs)"
    )
