"""`replygate acls PART`: the Kafka ACLs a part needs, as `kafka-acls` commands.

The list comes from `streams.broker.acls` (the one place that derives ACLs from the topology);
the prefix and app id are the deployment's settings unless given here.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import IO, Any, Final

EXIT_OK: Final = 0
EXIT_USAGE: Final = 2


def add_parser(commands: Any) -> None:
    """The `acls` subcommand on `replygate`'s parser."""
    from streams.broker.acls import Part

    parser = commands.add_parser(
        "acls", help="print the Kafka ACLs a part needs, as kafka-acls commands"
    )
    parser.add_argument("part", choices=[p.value for p in Part], help="which part")
    parser.add_argument(
        "--principal",
        help="the part's principal (User:replygate-PART; the corrector's is the worker's)",
    )
    parser.add_argument("--prefix", help="the topic prefix (topic_prefix of the settings)")
    parser.add_argument("--app-id", help="the worker's app id (app_id of the settings)")
    parser.add_argument("--platform", default="im", help="the endpoint's platform (im)")
    parser.add_argument(
        "--group", help="the endpoint's consumer group (replygate-endpoint-PLATFORM)"
    )
    parser.add_argument(
        "--bootstrap-server", help="what the commands connect to (kafka_bootstrap_servers)"
    )
    parser.add_argument(
        "--command-config", help="the admin client's properties file the commands pass on"
    )
    parser.add_argument("--config", type=Path, help="a TOML or YAML settings file")


def run_acls(args: argparse.Namespace, stdout: IO[str]) -> int:
    from pydantic import ValidationError

    from streams.broker.acls import PART_ROLES, Part, acls, kafka_acls_commands
    from streams.broker.topology import Topology
    from streams.cli.deliveries import PLATFORM
    from streams.cli.main import settings_problem
    from streams.settings import load_settings

    overrides: dict[str, Any] = {}
    if args.prefix is not None:
        overrides["topic_prefix"] = args.prefix
    if args.app_id is not None:
        overrides["app_id"] = args.app_id
    if not PLATFORM.match(args.platform):
        return _usage(f"--platform {args.platform[:80]!r} is not a platform name")
    try:
        settings = load_settings(args.config, **overrides)
    except (OSError, ValueError, ValidationError) as exc:
        return _usage(f"settings: {settings_problem(exc)}")
    if not settings.app_id:
        return _usage("an empty app id would grant every topic starting with '-'")
    part = Part(args.part)
    # the corrector runs inside the worker: its ACLs go to the worker's principal
    own = Part.WORKER if part is Part.CORRECTOR else part
    principal = args.principal or f"User:replygate-{own.value}"
    if not principal.startswith("User:") or len(principal) == len("User:"):
        return _usage("--principal must look like User:NAME")
    entries = acls(part, Topology.of(settings), args.platform, args.group)
    bootstrap = args.bootstrap_server or settings.kafka_bootstrap_servers
    print(f"# {part.value}: {PART_ROLES[part]}", file=stdout)
    for line in kafka_acls_commands(entries, principal, bootstrap, args.command_config):
        print(line, file=stdout)
    return EXIT_OK


def _usage(message: str) -> int:
    print(f"replygate acls: error: {message}", file=sys.stderr)
    return EXIT_USAGE
