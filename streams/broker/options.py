"""Broker connection options from settings, for Faust and for plain aiokafka clients alike.

Both builders check the security settings first and refuse combinations that would silently
do something else than asked (a key without its certificate, TLS files with a protocol that
does not use TLS, SASL without a user name or password). A SASL password they hand out is
also masked in aiokafka's connection log: at DEBUG aiokafka prints every request, and SASL
PLAIN's request carries the password in clear.
"""

from __future__ import annotations

import logging
import ssl
import threading
from pathlib import Path
from typing import Any

from streams.settings.files import NamedFileError, read_named_file
from streams.settings.model import KafkaSecurity, KafkaSettings, WorkerSettings

MASK = "**********"
TLS_PROTOCOLS = frozenset({"SSL", "SASL_SSL"})
SASL_PROTOCOLS = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})


class RedactedStr(str):
    """A str that is the secret for every use except `repr()`.

    aiokafka and Faust need the password as a plain `str`; this keeps it out of any
    `repr()` of the options (a logged dict, a traceback's locals, Faust's settings dump).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return repr(MASK)


# aiokafka.conn logs each request at DEBUG ("Request to host:port n: <request>").
AIOKAFKA_LOGGERS = ("aiokafka.conn",)


def _logged_forms(secret: str) -> set[str]:
    """How a secret can appear in a log line: as is, or escaped inside a str/bytes repr."""
    body = repr(secret.encode("utf-8"))[2:-1]
    return {
        secret,
        repr(secret)[1:-1],
        body,
        body.replace("\\'", "'"),  # repr picked double quotes: ' is not escaped
        body.replace("'", "\\'"),
    } - {""}


class SecretMaskFilter(logging.Filter):
    """Replaces registered secrets in a logger's records by `**********`."""

    def __init__(self) -> None:
        super().__init__("replygate-secret-mask")
        self._forms: tuple[str, ...] = ()  # longest first: a form inside another goes last
        self._lock = threading.Lock()

    def add(self, secret: str) -> None:
        if secret:
            with self._lock:
                forms = set(self._forms) | _logged_forms(secret)
                self._forms = tuple(sorted(forms, key=len, reverse=True))

    def mask(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, MASK)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        forms = self._forms
        if not forms:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a broken record is the logging module's business, not ours
            return True
        masked = message
        for form in forms:
            masked = masked.replace(form, MASK)
        if masked != message:
            # args: an empty tuple, not None: mode's log formatter re-applies `msg % args`
            # with None wrapped as (None,)
            record.msg, record.args = masked, ()
        return True


_mask_filter = SecretMaskFilter()


def mask_text(text: str) -> str:
    """`text` with every registered secret replaced by `**********`."""
    return _mask_filter.mask(text)


def mask_in_client_logs(secret: str) -> None:
    """Mask `secret` in aiokafka's connection log from now on (idempotent)."""
    _mask_filter.add(secret)
    for name in AIOKAFKA_LOGGERS:
        logger = logging.getLogger(name)
        if _mask_filter not in logger.filters:
            logger.addFilter(_mask_filter)


# A secret file is a password or passphrase, never a document: a larger one is a mistake.
MAX_SECRET_FILE_BYTES = 4096


def read_secret_file(setting: str, path: Path) -> str:
    """A secret from its file (a mounted Secret), without its trailing line end.

    A problem names the setting and the file, never what the file holds.
    """
    try:
        data = read_named_file(path, MAX_SECRET_FILE_BYTES)
    except NamedFileError as exc:
        if exc.problem == "oversized":
            too_large = f"{path} is larger than {MAX_SECRET_FILE_BYTES} bytes"
            raise ValueError(f"{setting}: {too_large}") from None
        why = exc.cause or "it does not exist or is not a regular file"
        raise ValueError(f"{setting}: cannot read {path}: {why}") from None
    try:
        return data.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise ValueError(f"{setting}: {path} is not UTF-8 text") from None


def _secret(security: KafkaSecurity, name: str) -> str:
    """A secret setting's value: given as is, or read from its `<name>_file`."""
    path: Path | None = getattr(security, f"{name}_file")
    if path is not None:
        return read_secret_file(f"kafka_security.{name}_file", path)
    value: str = getattr(security, name).get_secret_value()
    return value


def _password(security: KafkaSecurity) -> RedactedStr:
    secret = _secret(security, "sasl_password")
    mask_in_client_logs(secret)
    return RedactedStr(secret)


def check_security(security: KafkaSecurity) -> None:
    """Raise ValueError, naming the setting, for a combination that cannot do what it says."""
    prefix = "kafka_security"
    for name in ("sasl_password", "ssl_key_password"):
        if getattr(security, name).get_secret_value() and getattr(security, f"{name}_file"):
            raise ValueError(f"{prefix}.{name} and {prefix}.{name}_file are both set: keep one")
    tls_files = [
        name
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_key_password_file")
        if getattr(security, name) is not None
    ]
    if tls_files and security.protocol not in TLS_PROTOCOLS:
        raise ValueError(
            f"{prefix}.{tls_files[0]} is set but {prefix}.protocol is {security.protocol}, "
            "which does not use TLS: set the protocol to SSL or SASL_SSL, or drop the file"
        )
    if security.ssl_keyfile is not None and security.ssl_certfile is None:
        raise ValueError(
            f"{prefix}.ssl_keyfile is set without {prefix}.ssl_certfile: "
            "a client key is only used together with its certificate"
        )
    if security.sasl_password_file is not None and security.protocol not in SASL_PROTOCOLS:
        raise ValueError(
            f"{prefix}.sasl_password_file is set but {prefix}.protocol is {security.protocol}, "
            "which does not use SASL"
        )
    if security.protocol in SASL_PROTOCOLS:
        if not security.sasl_username:
            raise ValueError(f"{prefix}.sasl_username is empty but the protocol uses SASL")
        if not _secret(security, "sasl_password"):
            raise ValueError(f"{prefix}.sasl_password is empty but the protocol uses SASL")


def identity(security: KafkaSecurity) -> str:
    """Who we connect as, for a message: the protocol and the SASL user or the certificate."""
    if security.protocol in SASL_PROTOCOLS:
        return f"as {security.sasl_username!r} ({security.protocol} {security.sasl_mechanism})"
    if security.ssl_certfile is not None:
        return f"with the client certificate {security.ssl_certfile} ({security.protocol})"
    return f"({security.protocol})"


def bootstrap_hosts(servers: str) -> list[str]:
    """`host:port` entries of a comma-separated list, trimmed, empty ones dropped."""
    hosts = [h.strip() for h in servers.split(",") if h.strip()]
    if not hosts:
        raise ValueError("kafka_bootstrap_servers is empty")
    return hosts


def ssl_context(security: KafkaSecurity) -> ssl.SSLContext | None:
    """A verifying TLS context when the protocol uses TLS, else None."""
    check_security(security)
    if security.protocol not in TLS_PROTOCOLS:
        return None
    try:
        context = ssl.create_default_context(
            cafile=str(security.ssl_cafile) if security.ssl_cafile else None
        )
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(
            f"kafka_security.ssl_cafile: cannot load {security.ssl_cafile}: {_ssl_reason(exc)}"
        ) from None
    context.check_hostname = security.ssl_check_hostname
    if security.ssl_certfile is not None:
        # the passphrase is handed over as a callable: no str of it lingers in the context
        passphrase = _secret(security, "ssl_key_password")
        try:
            context.load_cert_chain(
                str(security.ssl_certfile),
                str(security.ssl_keyfile) if security.ssl_keyfile else None,
                password=(lambda: passphrase) if passphrase else None,
            )
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(
                f"kafka_security.ssl_certfile/ssl_keyfile: cannot load the client certificate "
                f"{security.ssl_certfile}: {_ssl_reason(exc)}"
            ) from None
    return context


def _ssl_reason(exc: BaseException) -> str:
    """An ssl or file error's own words, without the errno/library prefix."""
    if isinstance(exc, ssl.SSLError) and exc.reason:
        return str(exc.reason).replace("_", " ").lower()
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__


def aiokafka_options(settings: KafkaSettings) -> dict[str, Any]:
    """Keyword arguments for AIOKafkaProducer/Consumer/AdminClient."""
    security = settings.kafka_security
    context = ssl_context(security)  # checks the settings first
    options: dict[str, Any] = {
        "bootstrap_servers": bootstrap_hosts(settings.kafka_bootstrap_servers),
        "security_protocol": security.protocol,
    }
    if context is not None:
        options["ssl_context"] = context
    if security.protocol in SASL_PROTOCOLS:
        options["sasl_mechanism"] = security.sasl_mechanism
        options["sasl_plain_username"] = security.sasl_username
        options["sasl_plain_password"] = _password(security)
    return options


def fetch_options(settings: WorkerSettings) -> dict[str, int]:
    """How long a group consumer's fetch waits for records (AIOKafkaConsumer keywords): the
    worker's, and the benchmark baselines' that must fetch as it does."""
    return {
        "fetch_min_bytes": settings.fetch_min_bytes,
        "fetch_max_wait_ms": settings.fetch_max_wait_ms,
    }


def faust_broker_options(settings: KafkaSettings) -> dict[str, Any]:
    """`broker` and `broker_credentials` for faust.App."""
    import faust

    security = settings.kafka_security
    context = ssl_context(security)  # checks the settings first
    brokers = [f"kafka://{h}" for h in bootstrap_hosts(settings.kafka_bootstrap_servers)]
    options: dict[str, Any] = {"broker": brokers}
    if security.protocol in SASL_PROTOCOLS:
        options["broker_credentials"] = faust.SASLCredentials(
            username=security.sasl_username,
            password=_password(security),
            mechanism=security.sasl_mechanism,
            ssl_context=context,
        )
    elif context is not None:
        options["broker_credentials"] = faust.SSLCredentials(context)
    return options
