"""`replygate deliveries PLATFORM`: the arguments, their checks and the exit status.

Exit status: 0 after a stop (SIGINT, SIGTERM); 2 with one line for a bad argument or setting;
1 with the broker, group and client named when the broker cannot be reached within the bound
(with the TLS or SASL refusal when there is one), or with the topic or group when the broker's
ACLs refuse this reader.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final
from urllib.parse import urlsplit

from streams.cli.command import Command, add_config, help_text
from streams.errors import ConfigError, error_line

if TYPE_CHECKING:
    from schemas.contract import ReplyContract
    from streams.endpoint.dedup import SeenIds
    from streams.settings import Settings

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
PLATFORM: Final = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
MAX_GROUP_CHARS: Final = 200

log = logging.getLogger("replygate.deliveries")


def arguments(parser: argparse.ArgumentParser) -> None:
    """The `deliveries` subcommand's arguments."""
    parser.add_argument("platform", help="reads delivery.<PLATFORM>")
    parser.add_argument("--group", help="the consumer group (replygate-endpoint-<PLATFORM>)")
    parser.add_argument(
        "--state", type=Path, help="the SQLite file of ids handed on (deliveries-<PLATFORM>.sqlite)"
    )
    parser.add_argument("--webhook", help="POST each delivery here instead of printing it")
    parser.add_argument(
        "--from-beginning",
        action="store_true",
        help="a group without committed offsets starts at the oldest delivery, not the newest",
    )
    add_config(parser)


def is_webhook_url(url: str) -> bool:
    """An absolute http(s) URL with a host and a valid port, as an HTTP client takes it (RFC 3986
    hosts: `bot_internal` as a compose service name is one)."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return False
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  # raises ValueError for a port out of range or not a number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def argument_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments, in one line; None when nothing is."""
    if not PLATFORM.match(args.platform):
        return (
            f"PLATFORM {args.platform[:80]!r} is not a platform name "
            "(lowercase letters, digits, _ and -, up to 64)"
        )
    if args.group is not None and not 0 < len(args.group) <= MAX_GROUP_CHARS:
        return f"--group must be 1 to {MAX_GROUP_CHARS} characters"
    if args.webhook is not None and not is_webhook_url(args.webhook):
        # not echoed: a webhook URL may carry credentials
        return "--webhook is not an absolute http:// or https:// URL with a host and a valid port"
    if args.state is not None and args.state.is_dir():
        return f"--state {args.state} is a directory; name a file"
    if args.state is not None and not args.state.parent.is_dir():
        return f"--state {args.state}: the directory {args.state.parent} does not exist"
    return None


def run_deliveries(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    """Check everything that can be checked before connecting, then read until stopped."""
    from streams.broker.options import aiokafka_options
    from streams.endpoint.dedup import SeenIds, StateFileError
    from streams.settings import load_settings
    from streams.settings.contracts import build_registry

    problem = argument_problem(args)
    if problem is not None:
        raise ConfigError(problem)
    settings = load_settings(args.config)
    contracts = build_registry(settings)
    try:
        aiokafka_options(settings)  # the security settings, checked before connecting
    except (OSError, ValueError) as exc:
        raise ConfigError(f"settings: {exc}") from None
    state = args.state or Path(f"deliveries-{args.platform}.sqlite")
    try:
        seen = SeenIds(state, settings.endpoint.horizon_seconds)
    except StateFileError as exc:
        raise ConfigError(f"--state: {exc}") from None
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    # httpx logs every request's URL at INFO, and a webhook URL may carry credentials
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        return asyncio.run(_read(args, settings, contracts, seen, stdout))
    finally:
        seen.close()


async def _read(
    args: argparse.Namespace,
    settings: Settings,
    contracts: Mapping[str, ReplyContract],
    seen: SeenIds,
    stdout: IO[bytes],
) -> int:
    from streams.endpoint.deliveries import Endpoint
    from streams.endpoint.handoff import HandOff, StreamHandOff, WebhookHandOff

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    webhook: WebhookHandOff | None = None
    hand_off: HandOff = StreamHandOff(stdout)
    if args.webhook is not None:
        limits = settings.endpoint
        webhook = WebhookHandOff(
            args.webhook,
            limits.webhook_timeout_seconds,
            limits.webhook_first_backoff_seconds,
            limits.webhook_max_backoff_seconds,
            stop,
        )
        hand_off = webhook
    endpoint = Endpoint(
        settings,
        args.platform,
        seen,
        hand_off,
        contracts,
        group=args.group or "",
        from_beginning=args.from_beginning,
        stop=stop,
    )
    try:
        counts = await endpoint.run()
    except BrokenPipeError:
        # Nothing more can be written: the delivery in progress was not recorded, so the next
        # start hands it on again. Point stdout at /dev/null so the exit's flush stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        print(error_line("deliveries", "standard output was closed; stopping"), file=sys.stderr)
        return EXIT_FAILED
    finally:
        if webhook is not None:
            await webhook.close()
    log.info("stopped: %s", counts.line())
    return EXIT_OK


COMMAND = Command(
    name="deliveries",
    summary="hand each delivery of a platform on once (stdout or a webhook)",
    description=(
        "Read delivery.<PLATFORM>, re-validate each Delivery against its contract, drop a\n"
        "repeat by delivery_id, and hand each on once: one JSON line on standard output, or\n"
        "a POST to --webhook (retried until it answers 2xx)."
    ),
    help=help_text(
        "  kafka_bootstrap_servers, kafka_security.*; topic_prefix; endpoint.horizon_seconds,\n"
        "  endpoint.connect_timeout_seconds, endpoint.webhook_* (docs/settings.md).",
        "  0  stopped by SIGINT or SIGTERM\n"
        "  1  the broker could not be reached within the bound, or the output closed\n"
        "  2  a bad argument or setting, or the endpoint extra is not installed",
        "replygate deliveries im --webhook http://bot:8080/deliveries",
    ),
    arguments=arguments,
    run=run_deliveries,
    extra="endpoint",
    needs=("aiokafka", "httpx"),
)
