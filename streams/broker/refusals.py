"""When the broker refuses us: one line that says why, never aiokafka's log lines and a traceback.

Two kinds. A connection the broker does not let through (a TLS handshake that fails, a SASL
login with the wrong password): aiokafka logs the cause at ERROR and raises a bare
"Unable to bootstrap"; `client_errors` keeps that cause (masked) for the one line. And a request
the broker's ACLs do not allow: `denied` words it with the topic or group and the operation.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

MAX_CAUSE_CHARS: Final = 300
_UNABLE = re.compile(r'^Unable connect to "(?P<where>[^"]+)": ')
_SSL_FILE = re.compile(r"\s*\(_ssl\.c:\d+\)")
_SSL_TAG = re.compile(r"^\[SSL: [A-Z0-9_]+\] ")
_ERROR_NO = re.compile(r"^\[Error \d+\] ")
_CLOSED = re.compile(r"Connection at \S+ closed$")
CLOSED_HINT: Final = (
    "the broker hung up: a listener that requires a client certificate it trusts, "
    "or a listener of another protocol"
)


class ClientErrors(logging.Handler):
    """Keeps the last ERROR that aiokafka logged while it connected, instead of printing it."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        from streams.broker.options import mask_text

        try:
            self.last = mask_text(record.getMessage())
        except Exception:  # a broken record: nothing to keep
            return

    def cause(self) -> str | None:
        """The last connection error in words (`cause_of`), if aiokafka logged one."""
        return cause_of(self.last) if self.last else None


@contextmanager
def client_errors() -> Iterator[ClientErrors]:
    """Within: aiokafka's log goes to a `ClientErrors`, not to the process's handlers."""
    logger = logging.getLogger("aiokafka")
    handler = ClientErrors()
    propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def cause_of(message: str) -> str:
    """aiokafka's connection error as one plain line: where, and the TLS or SASL reason.

    `Unable connect to "h:9093": [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed:
    unable to get local issuer certificate (_ssl.c:1006)` becomes `TLS handshake with h:9093
    failed: certificate verify failed: unable to get local issuer certificate`.
    """
    text = " ".join(message.split())
    where = ""
    match = _UNABLE.match(text)
    if match:
        where, text = match["where"], text[match.end() :]
    text = _SSL_FILE.sub("", text)
    if _SSL_TAG.match(text) or "certificate" in text.lower():
        text = _SSL_TAG.sub("", text)
        text = f"TLS handshake{' with ' + where if where else ''} failed: {text}"
    else:
        text = _ERROR_NO.sub("", text)
        text = f"{where}: {text}" if where else text
        if _CLOSED.search(text):
            text += f" ({CLOSED_HINT})"
    return text.rstrip(". ")[:MAX_CAUSE_CHARS]


_AUTHORIZATION: Final = (
    "TopicAuthorizationFailedError",
    "GroupAuthorizationFailedError",
    "ClusterAuthorizationFailedError",
    "TransactionalIdAuthorizationFailed",
)


def is_denied(exc: BaseException) -> bool:
    """Whether the broker refused a request by its ACLs (retrying cannot help)."""
    return type(exc).__name__ in _AUTHORIZATION


def denied(operation: str, resource: str, name: str, part: str) -> str:
    """One line for a refused request: what, on which resource, and where the ACLs are listed."""
    return (
        f"not authorized to {operation} {resource} {name!r}: the broker's ACLs do not allow it "
        f"for this principal (`replygate acls {part}` prints what it needs)"
    )


TOPIC_AUTHORIZATION_FAILED: Final = 29


async def preflight(
    options: dict[str, Any], part: str, group: str, topic: str | None = None
) -> str | None:
    """The one line when the ACLs hide `topic` or refuse consumer group `group`, else None.

    A consumer meets neither as an error: aiokafka waits for a topic it may not see, and for a
    coordinator of a group it may not use, for ever. Asking once up front says which.
    """
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(**options)
    await admin.start()
    try:
        if topic is not None:
            for entry in await admin.describe_topics([topic]):
                if entry.get("error_code") == TOPIC_AUTHORIZATION_FAILED:
                    return denied("read", "topic", topic, part)
        await admin.describe_consumer_groups([group])
    except Exception as exc:
        if is_denied(exc):
            return denied("use", "consumer group", group, part)
        return None  # anything else is the consumer's to meet and report
    finally:
        await admin.close()
    return None
