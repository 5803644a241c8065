"""`replygate audit`: the audit records of outcomes, filtered, as JSON lines (follow with -f)."""

from __future__ import annotations

import argparse
from typing import IO, get_args

from schemas.audit import AuditOutcome
from streams.cli.command import Command, add_config, help_text

OUTCOMES = get_args(AuditOutcome)


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep reading new records until interrupted"
    )
    parser.add_argument("--turn", metavar="TURN_ID", help="only this turn")
    parser.add_argument("--conversation", metavar="ID", help="only this conversation")
    parser.add_argument("--platform", help="only this platform")
    parser.add_argument("--outcome", choices=OUTCOMES, help="only this outcome")
    parser.add_argument(
        "--version", dest="policy_version", metavar="VERSION", help="only this policy version"
    )
    add_config(parser)


def run(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    import asyncio
    import sys

    import orjson
    from aiokafka.errors import KafkaError

    from streams.broker.ready import describe
    from streams.broker.refusals import client_errors
    from streams.broker.topology import Topology
    from streams.errors import RuntimeFailure
    from streams.policy.audit import AuditCounts, AuditFilter, read_audit
    from streams.settings import load_settings

    settings = load_settings(args.config)
    wanted = AuditFilter(
        turn_id=args.turn,
        conversation_id=args.conversation,
        platform=args.platform,
        outcome=args.outcome,
        policy_version=args.policy_version,
    )
    counts = AuditCounts()

    async def show() -> None:
        async for record in read_audit(
            settings, Topology.of(settings), wanted, args.follow, counts
        ):
            stdout.write(orjson.dumps(record.model_dump(), option=orjson.OPT_APPEND_NEWLINE))
            stdout.flush()

    with client_errors() as seen:
        try:
            asyncio.run(show())
        except KeyboardInterrupt:
            pass
        except (KafkaError, OSError, TimeoutError) as exc:
            cause = seen.cause() or describe(exc)
            raise RuntimeFailure(
                f"cannot read the audit topic on {settings.kafka_bootstrap_servers}: {cause}"
            ) from None
    if counts.invalid:
        print(f"skipped {counts.invalid} records that are not audit records", file=sys.stderr)
    return 0


COMMAND = Command(
    name="audit",
    summary="read the audit records of outcomes (filter, follow)",
    description=(
        "Print the audit records (one per outcome: turn, platform, tenant, contract, the "
        "outcome, error codes and paths, leak rules that masked something, the policy "
        "version and the times; never reply text) as JSON lines, oldest first per partition."
    ),
    help=help_text(
        "  kafka_bootstrap_servers, kafka_security.*, topic_prefix (docs/policy.md).",
        "  0  read to the end (or interrupted while following)\n"
        "  1  the broker refused or could not be reached\n"
        "  2  a bad setting or argument, or the worker extra is not installed",
        "replygate audit --conversation c-7 --outcome failure_notice",
    ),
    arguments=_arguments,
    run=run,
    extra="worker",
    needs=("aiokafka",),
)
