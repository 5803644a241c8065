"""Broker connection options from settings, for Faust and for plain aiokafka clients alike."""

from __future__ import annotations

import ssl
from typing import Any

from streams.settings import KafkaSecurity, Settings


def ssl_context(security: KafkaSecurity) -> ssl.SSLContext | None:
    """A verifying TLS context when the protocol uses TLS, else None."""
    if security.protocol not in ("SSL", "SASL_SSL"):
        return None
    context = ssl.create_default_context(
        cafile=str(security.ssl_cafile) if security.ssl_cafile else None
    )
    if security.ssl_certfile is not None:
        context.load_cert_chain(
            str(security.ssl_certfile),
            str(security.ssl_keyfile) if security.ssl_keyfile else None,
        )
    return context


def aiokafka_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for AIOKafkaProducer/Consumer/AdminClient."""
    security = settings.kafka_security
    options: dict[str, Any] = {
        "bootstrap_servers": settings.kafka_bootstrap_servers,
        "security_protocol": security.protocol,
    }
    context = ssl_context(security)
    if context is not None:
        options["ssl_context"] = context
    if security.protocol.startswith("SASL"):
        options["sasl_mechanism"] = security.sasl_mechanism
        options["sasl_plain_username"] = security.sasl_username
        options["sasl_plain_password"] = security.sasl_password.get_secret_value()
    return options


def faust_broker_options(settings: Settings) -> dict[str, Any]:
    """`broker` and `broker_credentials` for faust.App."""
    import faust

    security = settings.kafka_security
    brokers = [f"kafka://{h.strip()}" for h in settings.kafka_bootstrap_servers.split(",")]
    options: dict[str, Any] = {"broker": brokers}
    context = ssl_context(security)
    if security.protocol.startswith("SASL"):
        options["broker_credentials"] = faust.SASLCredentials(
            username=security.sasl_username,
            password=security.sasl_password.get_secret_value(),
            mechanism=security.sasl_mechanism,
            ssl_context=context,
        )
    elif context is not None:
        options["broker_credentials"] = faust.SSLCredentials(context)
    return options
