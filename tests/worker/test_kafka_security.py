"""Broker security: option mapping for every KafkaSecurity combination, and a SASL broker.

Unit part (no broker): `aiokafka_options` / `faust_broker_options` for every protocol and
mechanism, TLS contexts checked by real handshakes against a throwaway CA, refused
combinations, and the password kept out of every repr.

Broker part (`kafka` mark): a private broker with a SASL_PLAINTEXT listener. A worker with
the right password delivers a reply end to end (read back by a SASL client); with a wrong
password it logs the authentication failure, exits with status 1 within seconds, never
becomes ready and processes nothing.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import logging
import secrets
import shutil
import ssl
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiokafka.admin import AIOKafkaAdminClient
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
from mode.utils.logging import ExtensionFormatter
from pydantic import SecretStr

from streams.broker.options import aiokafka_options, faust_broker_options, ssl_context
from streams.broker.topology import Topology, create_topics
from streams.settings import KafkaSecurity, Settings, load_settings
from tests.support.kafka import Deployment, PrivateBroker, collect, free_port, produce, readyz
from tests.support.samples import raw_reply

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
UNIT_PASSWORD = "unit-" + secrets.token_hex(8)

# --- a throwaway PKI (openssl CLI) ---------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


EC_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=30)


def _issue(tmp: Path, name: str, subject: str, ext: str) -> tuple[Path, Path]:
    """A key and a certificate signed by the test CA, with one extension line."""
    key, csr, cert, extfile = (tmp / f"{name}.{s}" for s in ("key", "csr", "pem", "ext"))
    extfile.write_text(ext + "\n")
    _openssl("req", "-new", *EC_KEY, "-keyout", key, "-out", csr, "-subj", subject)
    ca = ("-CA", tmp / "ca.pem", "-CAkey", tmp / "ca.key", "-CAcreateserial")
    _openssl("x509", "-req", "-in", csr, *ca, "-days", "2", "-out", cert, "-extfile", extfile)
    return cert, key


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    assert shutil.which("openssl"), "the TLS tests need the openssl command line tool"
    tmp = tmp_path_factory.mktemp("pki")
    ca_ext = ("basicConstraints=critical,CA:TRUE", "keyUsage=critical,keyCertSign,cRLSign")
    _openssl(
        "req", "-x509", *EC_KEY, "-keyout", tmp / "ca.key", "-out", tmp / "ca.pem",
        "-days", "2", "-subj", "/CN=replygate-test-ca",
        *(arg for ext in ca_ext for arg in ("-addext", ext)),
    )  # fmt: skip
    server_cert, server_key = _issue(
        tmp, "server", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1"
    )
    client_cert, client_key = _issue(
        tmp, "client", "/CN=replygate-client", "extendedKeyUsage=clientAuth"
    )
    return Pki(tmp / "ca.pem", server_cert, server_key, client_cert, client_key)


async def _handshake(
    client: ssl.SSLContext, pki: Pki, *, hostname: str = "localhost", want_client_cert: bool = False
) -> dict[str, Any] | None:
    """One TLS handshake against a local server with a cert from `pki`; the client's cert
    as the server saw it. Raises the client's ssl/connection error when it fails."""
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(pki.server_cert, pki.server_key)
    if want_client_cert:
        server.load_verify_locations(pki.ca)
        server.verify_mode = ssl.CERT_REQUIRED
    seen: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await seen.put(writer.get_extra_info("peercert"))
        writer.write(b"ok")
        await writer.drain()
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server)
    port = srv.sockets[0].getsockname()[1]
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname=hostname), 10
        )
        try:
            # TLS 1.3: a server that refuses the client's certificate closes after the
            # client's side of the handshake is done, so the refusal shows up here
            if await asyncio.wait_for(reader.read(2), 10) != b"ok":
                raise ConnectionResetError("the server closed the connection (handshake refused)")
        finally:
            writer.close()
        return await asyncio.wait_for(seen.get(), 10)
    finally:
        srv.close()


def security(protocol: str, mechanism: str = "PLAIN", **tls: Path) -> KafkaSecurity:
    sasl = protocol.startswith("SASL")
    return KafkaSecurity(
        protocol=protocol,
        sasl_mechanism=mechanism,
        sasl_username="replygate" if sasl else "",
        sasl_password=SecretStr(UNIT_PASSWORD if sasl else ""),
        **tls,
    )


def settings_with(sec: KafkaSecurity, servers: str = "k1:9092,k2:9093") -> Settings:
    return Settings(kafka_bootstrap_servers=servers, kafka_security=sec)


# --- unit: every combination ---------------------------------------------------------------


@pytest.mark.parametrize(("protocol", "mechanism"), list(itertools.product(PROTOCOLS, MECHANISMS)))
def test_every_security_combination_maps_the_same_for_aiokafka_and_faust(
    protocol: str, mechanism: str, pki: Pki
) -> None:
    tls = {"ssl_cafile": pki.ca} if "SSL" in protocol else {}
    settings = settings_with(security(protocol, mechanism, **tls))
    options = aiokafka_options(settings)
    faust_options = faust_broker_options(settings)
    # what Faust's aiokafka driver turns broker_credentials into, for its consumer/producer/admin
    faust_auth = dict(credentials_to_aiokafka_auth(faust_options.get("broker_credentials")))

    assert options["bootstrap_servers"] == ["k1:9092", "k2:9093"]
    assert faust_options["broker"] == ["kafka://k1:9092", "kafka://k2:9093"]
    for auth in (options, faust_auth):
        assert auth["security_protocol"] == protocol
        if "SSL" in protocol:
            context = auth["ssl_context"]
            assert isinstance(context, ssl.SSLContext)
            assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        else:
            assert auth.get("ssl_context") is None
        if protocol.startswith("SASL"):
            assert auth["sasl_mechanism"] == mechanism
            assert auth["sasl_plain_username"] == "replygate"
            assert auth["sasl_plain_password"] == UNIT_PASSWORD
            assert str(auth["sasl_plain_password"]) == UNIT_PASSWORD
        else:
            assert not {k for k in auth if k.startswith("sasl")}
    # the password (if any) is in no repr of what we build
    assert UNIT_PASSWORD not in repr(options)
    assert UNIT_PASSWORD not in repr(faust_options)
    assert UNIT_PASSWORD not in repr(faust_auth)


@pytest.mark.parametrize(
    ("protocol", "mechanism"),
    [("SASL_PLAINTEXT", "SCRAM-SHA-256"), ("SASL_SSL", "PLAIN"), ("SSL", "PLAIN")],
)
async def test_aiokafka_accepts_the_options(protocol: str, mechanism: str, pki: Pki) -> None:
    """aiokafka validates its options when a client is built (no connection is made)."""
    tls = {"ssl_cafile": pki.ca} if "SSL" in protocol else {}
    settings = settings_with(security(protocol, mechanism, **tls))
    admin = AIOKafkaAdminClient(**aiokafka_options(settings))
    assert admin._client._security_protocol == protocol
    await admin.close()


def test_environment_variables_reach_the_options(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {
        "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": " b1:9094 , b2:9094 ,",
        "REPLYGATE_KAFKA_SECURITY__PROTOCOL": "SASL_PLAINTEXT",
        "REPLYGATE_KAFKA_SECURITY__SASL_MECHANISM": "SCRAM-SHA-512",
        "REPLYGATE_KAFKA_SECURITY__SASL_USERNAME": "svc-gate",
        "REPLYGATE_KAFKA_SECURITY__SASL_PASSWORD": UNIT_PASSWORD,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    options = aiokafka_options(load_settings())
    assert options["bootstrap_servers"] == ["b1:9094", "b2:9094"]
    assert (options["security_protocol"], options["sasl_mechanism"]) == (
        "SASL_PLAINTEXT",
        "SCRAM-SHA-512",
    )
    assert (options["sasl_plain_username"], options["sasl_plain_password"]) == (
        "svc-gate",
        UNIT_PASSWORD,
    )


def test_password_is_in_no_repr_or_dump_of_the_settings() -> None:
    settings = settings_with(security("SASL_SSL", "SCRAM-SHA-256"))
    for text in (
        repr(settings),
        str(settings),
        repr(settings.kafka_security),
        settings.model_dump_json(),
        repr(settings.model_dump()),
        repr(faust_broker_options(settings)["broker_credentials"]),
    ):
        assert UNIT_PASSWORD not in text
    assert settings.kafka_security.sasl_password.get_secret_value() == UNIT_PASSWORD


@pytest.mark.parametrize("label", ["plain", "quote", "non-ascii"])
def test_password_is_masked_in_aiokafkas_request_log(
    label: str, caplog: pytest.LogCaptureFixture
) -> None:
    """aiokafka logs every request at DEBUG, and SASL PLAIN's carries the password in clear."""
    from aiokafka.protocol.admin import SaslAuthenticateRequest_v1

    token = secrets.token_hex(6)
    password = {"plain": f"pw-{token}", "quote": f"pw'{token}", "non-ascii": f"pä\\{token}"}[label]
    # aiokafka's PLAIN payload: authzid NUL username NUL password
    request = SaslAuthenticateRequest_v1(b"replygate\x00replygate\x00" + password.encode())
    forms = {password, repr(password.encode())[2:-1], repr(password)[1:-1]}
    conn_log = logging.getLogger("aiokafka.conn")
    with caplog.at_level(logging.DEBUG, logger="aiokafka.conn"):
        # as aiokafka's AIOKafkaConnection.send logs it; unknown password: not masked yet
        conn_log.debug("Request to %s:%d %d: %s", "127.0.0.1", 9094, 3, request)
        assert any(f in caplog.text for f in forms)
        caplog.clear()
        sec = security("SASL_PLAINTEXT", "PLAIN").model_copy(
            update={"sasl_password": SecretStr(password)}
        )
        aiokafka_options(settings_with(sec))
        conn_log.debug("Request to %s:%d %d: %s", "127.0.0.1", 9094, 4, request)
        conn_log.info("Authenticated as %s via %s", "replygate", "PLAIN")
    text = caplog.text
    assert "SaslAuthenticateRequest_v1(sasl_auth_bytes=b" in text
    assert "replygate\\x00replygate\\x00**********" in text  # the whole password, masked
    # the worker's log formatter (mode's, via Faust) formats a masked record without error
    worker_formatter = ExtensionFormatter(stream=io.StringIO(), fmt="%(message)s")
    assert "**********" in worker_formatter.format(caplog.records[0])
    assert "Authenticated as replygate via PLAIN" in text
    assert not [f for f in forms if f in text]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"protocol": "SASL_PLAINTEXT", "sasl_username": ""}, "sasl_username is empty"),
        ({"protocol": "SASL_SSL", "sasl_password": SecretStr("")}, "sasl_password is empty"),
        ({"protocol": "PLAINTEXT", "ssl_cafile": Path("ca.pem")}, "ssl_cafile is set but"),
        (
            {"protocol": "SASL_PLAINTEXT", "ssl_certfile": Path("c.pem")},
            "ssl_certfile is set but",
        ),
        ({"protocol": "SSL", "ssl_keyfile": Path("k.pem")}, "ssl_keyfile is set without"),
    ],
)
def test_settings_that_cannot_do_what_they_say_are_refused(
    changes: dict[str, Any], message: str
) -> None:
    base = {"sasl_username": "replygate", "sasl_password": SecretStr(UNIT_PASSWORD)}
    settings = settings_with(KafkaSecurity(**{**base, **changes}))
    for build in (aiokafka_options, faust_broker_options):
        with pytest.raises(ValueError, match=message):
            build(settings)


def test_empty_bootstrap_servers_are_refused() -> None:
    with pytest.raises(ValueError, match="kafka_bootstrap_servers is empty"):
        aiokafka_options(settings_with(KafkaSecurity(), servers=" , "))


def test_plaintext_has_no_tls_context() -> None:
    assert ssl_context(security("PLAINTEXT")) is None
    assert ssl_context(security("SASL_PLAINTEXT")) is None


# --- unit: the TLS context does what it says, by real handshakes -----------------------------


async def test_tls_context_trusts_the_configured_ca_and_checks_the_host(pki: Pki) -> None:
    context = ssl_context(security("SSL", ssl_cafile=pki.ca))
    assert context is not None
    assert await _handshake(context, pki) is None  # no client certificate was configured
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        await _handshake(context, pki, hostname="kafka.example.com")


async def test_tls_context_without_cafile_does_not_trust_a_private_ca(pki: Pki) -> None:
    context = ssl_context(security("SASL_SSL", "SCRAM-SHA-256"))
    assert context is not None
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        await _handshake(context, pki)


async def test_tls_context_presents_the_client_certificate(pki: Pki) -> None:
    mutual = ssl_context(
        security("SSL", ssl_cafile=pki.ca, ssl_certfile=pki.client_cert, ssl_keyfile=pki.client_key)
    )
    assert mutual is not None
    peer = await _handshake(mutual, pki, want_client_cert=True)
    assert peer is not None and (("commonName", "replygate-client"),) in peer["subject"]
    without = ssl_context(security("SSL", ssl_cafile=pki.ca))
    assert without is not None
    with pytest.raises((ssl.SSLError, ConnectionError)):
        await _handshake(without, pki, want_client_cert=True)


# --- a real broker with a SASL listener ------------------------------------------------------

USER = "replygate"
PASSWORD = "rg-sasl." + secrets.token_hex(8)  # unique per run: a grep for it means a leak
WRONG = "rg-wrong." + secrets.token_hex(8)
OUTPUTS = ("delivery.im", "corrections.requests", "replies.dlq")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateBroker]:
    home = tmp_path_factory.mktemp("sasl-broker")
    b = PrivateBroker(home, sasl_port=free_port(), sasl_user=USER, sasl_password=PASSWORD)
    started = time.monotonic()
    b.up()
    print(f"SASL broker up in {time.monotonic() - started:.1f}s")
    try:
        yield b
    finally:
        b.down(purge=True)


def worker_security(mechanism: str, password: str) -> dict[str, str]:
    return {
        "REPLYGATE_KAFKA_SECURITY__PROTOCOL": "SASL_PLAINTEXT",
        "REPLYGATE_KAFKA_SECURITY__SASL_MECHANISM": mechanism,
        "REPLYGATE_KAFKA_SECURITY__SASL_USERNAME": USER,
        "REPLYGATE_KAFKA_SECURITY__SASL_PASSWORD": password,
    }


def sasl_deployment(broker: PrivateBroker, mechanism: str, loglevel: str) -> Deployment:
    """A deployment on the SASL listener; its topics made by our admin client, over SASL."""
    deployment = Deployment(
        partitions=2, bootstrap_servers=broker.sasl_bootstrap, loglevel=loglevel
    )
    sec = KafkaSecurity(
        protocol="SASL_PLAINTEXT",
        sasl_mechanism=mechanism,
        sasl_username=USER,
        sasl_password=SecretStr(PASSWORD),
    )
    settings = deployment.settings(kafka_security=sec)
    asyncio.run(create_topics(Topology.of(settings), settings))
    return deployment


def one_reply(deployment: Deployment, mechanism: str) -> tuple[str, str, dict[str, Any]]:
    turn = f"sasl-{mechanism.lower()}-{uuid.uuid4().hex[:8]}"
    conv = f"c-{turn}"
    return turn, conv, raw_reply(turn_id=turn, conversation_id=conv)


@pytest.mark.kafka
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_worker_with_the_right_password_delivers_over_sasl(
    broker: PrivateBroker, tmp_path: Path, mechanism: str
) -> None:
    started = time.monotonic()
    deployment = sasl_deployment(broker, mechanism, loglevel="debug")
    worker = deployment.start_worker(tmp_path, **worker_security(mechanism, PASSWORD))
    client = broker.sasl_client(mechanism)
    turn, conv, record = one_reply(deployment, mechanism)
    delivery_topic = deployment.topic("delivery.im")
    servers = broker.sasl_bootstrap
    try:
        asyncio.run(produce(deployment.topic("replies.raw"), [(conv, record)], servers, client))

        def delivered(records: list[tuple[str, bytes | None, bytes]]) -> bool:
            return any(orjson.loads(v).get("delivery_id") == turn for _, _, v in records)

        records = asyncio.run(
            collect([delivery_topic], delivered, timeout=90, servers=servers, client=client)
        )
        ready = readyz(worker.metrics_port)  # type: ignore[attr-defined]
    finally:
        deployment.stop_all()
    log = deployment.logs[0].read_text(errors="replace")
    assert delivered(records), deployment.log_tail()
    ((key, value),) = [(k, v) for _, k, v in records]
    assert key == conv.encode()
    delivery = orjson.loads(value)
    assert (delivery["turn_id"], delivery["kind"], delivery["corrected"]) == (turn, "reply", False)
    assert ready == 200
    # aiokafka logs each SASL login (INFO): the worker really authenticated with this mechanism
    assert f"Authenticated as {USER} via {mechanism}" in log
    assert PASSWORD not in log, "the SASL password leaked into the worker's (debug) log"
    assert "--- Logging error ---" not in log
    if mechanism == "PLAIN":  # aiokafka's DEBUG request log, with the password masked
        assert "SaslAuthenticateRequest_v1(sasl_auth_bytes=b'replygate\\x00replygate\\x00***" in log
    print(f"{mechanism}: reply in -> delivery out over SASL in {time.monotonic() - started:.1f}s")


EXPECTED_FAILURE = {
    "PLAIN": "Authentication failed: Invalid username or password",
    "SCRAM-SHA-256": "Authentication failed during authentication due to invalid credentials "
    "with SASL mechanism SCRAM-SHA-256",
}


@pytest.mark.kafka
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_worker_with_a_wrong_password_is_refused_and_exits(
    broker: PrivateBroker, tmp_path: Path, mechanism: str
) -> None:
    """The first broker call (creating topics on start) fails to authenticate: the worker
    logs it, exits with status 1 and never reads a record nor becomes ready."""
    deployment = sasl_deployment(broker, mechanism, loglevel="info")
    client = broker.sasl_client(mechanism)
    _turn, conv, record = one_reply(deployment, mechanism)
    asyncio.run(
        produce(deployment.topic("replies.raw"), [(conv, record)], broker.sasl_bootstrap, client)
    )
    started = time.monotonic()
    worker = deployment.start_worker(tmp_path, **worker_security(mechanism, WRONG))
    statuses: set[int | None] = set()
    try:
        while worker.poll() is None and time.monotonic() - started < 30:
            statuses.add(readyz(worker.metrics_port))  # type: ignore[attr-defined]
            time.sleep(0.2)
        exited_after = time.monotonic() - started
        code = worker.poll()
    finally:
        deployment.stop_all()
    log = deployment.logs[0].read_text(errors="replace")
    assert code == 1, f"worker still running or odd exit ({code})\n{deployment.log_tail()}"
    assert 200 not in statuses
    assert "SaslAuthenticationFailed" in log
    assert EXPECTED_FAILURE[mechanism] in log
    assert WRONG not in log and PASSWORD not in log
    # nothing was processed: no output on any topic, and the group never committed an offset
    outputs = [deployment.topic(o) for o in OUTPUTS]
    out = asyncio.run(
        collect(outputs, lambda r: False, timeout=3, servers=broker.sasl_bootstrap, client=client)
    )
    assert out == []
    assert deployment.app_id not in asyncio.run(_groups(broker, client))
    print(f"{mechanism}, wrong password: worker exited with {code} after {exited_after:.1f}s")


async def _groups(broker: PrivateBroker, client: dict[str, Any]) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=broker.sasl_bootstrap, **client)
    await admin.start()
    try:
        return {str(group[0]) for group in await admin.list_consumer_groups()}
    finally:
        await admin.close()
