"""TLS on the real broker: SCRAM-SHA-512 over TLS and mutual TLS, and the refusals.

A private broker of our own (kafka-local.sh with KAFKA_SSL_PORT and KAFKA_SASL_SSL_PORT) makes
its CA, its certificate (for `localhost` only) and a client certificate. Over each listener the
worker (with the corrector), `replygate topics` and `replygate deliveries` deliver, correct and
dead-letter; the SCRAM password comes from a file and appears in no log line or metric, nor does
the client key. A client that trusts another CA, one that reaches the broker by an address its
certificate does not name, a wrong SCRAM password and a client without a certificate on the
mutual-TLS listener are each refused with one line and exit status 1, no traceback.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.deliveries import Reader
from tests.support.kafka import REPO, Deployment
from tests.support.tls import TlsBroker, flow_records, run_flow

PASSWORD = "rg-tls." + secrets.token_hex(8)  # unique per run: finding it anywhere is a leak
WRONG = "rg-wrong." + secrets.token_hex(8)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    b = TlsBroker(tmp_path_factory.mktemp("tls-broker"), sasl_password=PASSWORD)
    b.up()
    try:
        yield b
    finally:
        b.down(purge=True)


@pytest.fixture
def password_file(tmp_path: Path) -> Path:
    path = tmp_path / "kafka-password"
    path.write_text(PASSWORD + "\n")
    path.chmod(0o600)
    return path


def secured(broker: TlsBroker, how: str, password_file: Path) -> tuple[str, dict[str, str]]:
    """The bootstrap servers and REPLYGATE_* settings of one way in."""
    env = broker.scram_env(broker.sasl_user, password_file) if how == "scram" else broker.mtls_env()
    return env.pop("REPLYGATE_KAFKA_BOOTSTRAP_SERVERS"), env


def mtls_client(broker: TlsBroker) -> dict[str, object]:
    import ssl

    context = ssl.create_default_context(cafile=str(broker.ca))
    context.load_cert_chain(str(broker.client_cert), str(broker.client_key))
    return {"security_protocol": "SSL", "ssl_context": context}


def replygate(
    *args: str, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "streams.cli", *args],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def key_body(path: Path) -> str:
    """The base64 body of a PEM key: what a leaked key would show."""
    return "".join(line for line in path.read_text().splitlines() if not line.startswith("-"))


@pytest.mark.kafka
@pytest.mark.parametrize("how", ["scram", "mtls"])
def test_topics_worker_corrector_and_reader_deliver_over_tls(
    broker: TlsBroker, tmp_path: Path, password_file: Path, how: str
) -> None:
    servers, env = secured(broker, how, password_file)
    deployment = Deployment(partitions=2, bootstrap_servers=servers, env=env, loglevel="debug")
    topics = replygate(
        "topics",
        env={**deployment.worker_env(tmp_path), "REPLYGATE_LOGLEVEL": "debug"},
    )
    assert topics.returncode == 0, topics.stderr
    assert f"created {deployment.topic('replies.raw')}" in topics.stdout
    client = broker.admin_client() if how == "scram" else mtls_client(broker)
    result = run_flow(deployment, tmp_path, servers, client, client, {}, {}, tag=how)
    _records, turns = flow_records(how)
    by_turn = {line["turn_id"]: line for line in result.handed_on}
    assert set(by_turn) == {turns["valid"], turns["corrected"]}, result.logs[-3000:]
    assert by_turn[turns["valid"]]["corrected"] is False
    assert by_turn[turns["corrected"]]["corrected"] is True
    assert [letter["reason"] for letter in result.dead_letters] == ["not_json"]
    assert result.reader_status == 0
    # the worker really logged in over TLS the way asked (aiokafka's INFO line for SASL)
    if how == "scram":
        assert f"Authenticated as {broker.sasl_user} via SCRAM-SHA-512" in result.logs
    everything = "\n".join([result.logs, result.metrics, topics.stdout, topics.stderr])
    assert PASSWORD not in everything
    assert key_body(broker.client_key) not in everything
    assert key_body(broker.tls_dir / "server.key") not in everything
    assert "Traceback" not in result.logs


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


@pytest.fixture
def other_ca(tmp_path: Path) -> Path:
    """A CA the broker's certificate does not chain to."""
    ca = tmp_path / "other-ca.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(tmp_path / "other-ca.key"), "-out", str(ca), "-days", "2",
         "-subj", "/CN=another-ca"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return ca


REFUSALS = {
    "another CA": "TLS handshake with localhost:{port} failed: certificate verify failed: "
    "unable to get local issuer certificate",
    "host name": "TLS handshake with 127.0.0.1:{port} failed: certificate verify failed: "
    "IP address mismatch, certificate is not valid for '127.0.0.1'",
    "wrong password": "SaslAuthenticationFailed: Authentication failed during authentication "
    "due to invalid credentials with SASL mechanism SCRAM-SHA-512",
}


def refused_settings(
    broker: TlsBroker, case: str, password_file: Path, other_ca: Path, tmp: Path
) -> tuple[str, dict[str, str]]:
    servers, env = secured(broker, "scram", password_file)
    if case == "another CA":
        env["REPLYGATE_KAFKA_SECURITY__SSL_CAFILE"] = str(other_ca)
    elif case == "host name":
        servers = f"127.0.0.1:{broker.sasl_ssl_port}"
    else:
        wrong = tmp / "wrong-password"
        wrong.write_text(WRONG)
        env["REPLYGATE_KAFKA_SECURITY__SASL_PASSWORD_FILE"] = str(wrong)
    return servers, env


@pytest.mark.kafka
@pytest.mark.parametrize("case", list(REFUSALS))
def test_a_refused_connection_is_one_line_and_exit_1(
    broker: TlsBroker, tmp_path: Path, password_file: Path, other_ca: Path, case: str
) -> None:
    servers, env = refused_settings(broker, case, password_file, other_ca, tmp_path)
    deployment = Deployment(partitions=2, bootstrap_servers=servers, env=env, loglevel="info")
    expected = REFUSALS[case].format(port=broker.sasl_ssl_port)
    settings = {
        **deployment.worker_env(tmp_path),
        "REPLYGATE_ENDPOINT__CONNECT_TIMEOUT_SECONDS": "3",
    }

    topics = replygate("topics", env=settings)
    assert topics.returncode == 1
    assert one_line(topics.stderr) == (
        f"replygate topics: error: cannot create the topics on {servers}: {expected}"
        if case != "wrong password"
        else f"replygate topics: error: cannot create the topics on {servers}: "
        f"{servers}: {expected}"
    )

    reader = Reader(deployment, tmp_path, "reader.log", "rg-refused", **env,  # type: ignore[arg-type]
                    REPLYGATE_ENDPOINT__CONNECT_TIMEOUT_SECONDS="3")  # fmt: skip
    assert reader.end(sig=0) == 1
    line = one_line(reader.stderr())
    assert line.startswith(
        f"replygate deliveries: error: cannot connect to the broker at {servers}"
    )
    assert line.endswith(expected), line

    started = time.monotonic()
    worker = deployment.start_worker(tmp_path)
    code = worker.wait(90)
    log = deployment.logs[0].read_text(errors="replace")
    assert code == 1, log[-3000:]
    (stop,) = [line for line in log.splitlines() if "stopping the worker" in line]
    assert f"cannot connect or authenticate to Kafka at {servers}" in stop
    assert expected in stop
    (error,) = [line for line in log.splitlines() if line.startswith("replygate worker: error:")]
    assert error.endswith(stop.split("stopping the worker: ", 1)[1].strip()), error
    assert "Traceback" not in log
    for text in (log, topics.stderr, reader.stderr()):
        assert PASSWORD not in text and WRONG not in text
    print(f"{case}: the worker stopped after {time.monotonic() - started:.1f}s")


@pytest.mark.kafka
def test_hostname_check_can_be_turned_off_for_an_address_the_certificate_cannot_name(
    broker: TlsBroker, tmp_path: Path, password_file: Path
) -> None:
    """The chain is still checked: only the name is not."""
    _servers, env = secured(broker, "scram", password_file)
    env["REPLYGATE_KAFKA_BOOTSTRAP_SERVERS"] = f"127.0.0.1:{broker.sasl_ssl_port}"
    env["REPLYGATE_TOPIC_PREFIX"] = f"t{secrets.token_hex(4)}."
    env["REPLYGATE_KAFKA_SECURITY__SSL_CHECK_HOSTNAME"] = "false"
    done = replygate("topics", env=env)
    assert done.returncode == 0, done.stderr


@pytest.mark.kafka
def test_mutual_tls_refuses_a_client_without_a_certificate(broker: TlsBroker) -> None:
    _servers, env = secured(broker, "mtls", Path("unused"))
    del env["REPLYGATE_KAFKA_SECURITY__SSL_CERTFILE"], env["REPLYGATE_KAFKA_SECURITY__SSL_KEYFILE"]
    env["REPLYGATE_KAFKA_BOOTSTRAP_SERVERS"] = broker.mtls_bootstrap
    done = replygate("topics", env=env)
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert line.startswith(
        f"replygate topics: error: cannot create the topics on {broker.mtls_bootstrap}"
    )
    assert line.endswith(
        f"Connection at {broker.mtls_bootstrap} closed (the broker hung up: a listener that "
        "requires a client certificate it trusts, or a listener of another protocol)"
    ), line
