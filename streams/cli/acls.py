"""`replygate acls PART`: the Kafka ACLs a part needs, as `kafka-acls` commands.

The list comes from `streams.broker.acls` (the one place that derives ACLs from the topology);
the prefix and app id are the deployment's settings unless given here.
"""

from __future__ import annotations

import argparse
from typing import IO, Any

from streams.cli.command import Command, add_config, help_text
from streams.errors import ConfigError

# The parts, as `streams.broker.acls.Part` names them (kept here so `-h` imports nothing).
PARTS = ("topics", "worker", "corrector", "endpoint", "agent")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("part", choices=PARTS, help="which part")
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
    add_config(parser)


def run_acls(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    """0 with one `kafka-acls` command a line; a ConfigError for a bad argument or setting."""
    from streams.broker.acls import PART_ROLES, Part, acls, kafka_acls_commands
    from streams.broker.topology import Topology
    from streams.cli.deliveries import PLATFORM
    from streams.settings import load_settings

    overrides: dict[str, Any] = {}
    if args.prefix is not None:
        overrides["topic_prefix"] = args.prefix
    if args.app_id is not None:
        overrides["app_id"] = args.app_id
    if not PLATFORM.match(args.platform):
        raise ConfigError(f"--platform {args.platform[:80]!r} is not a platform name")
    settings = load_settings(args.config, **overrides)
    if not settings.app_id:
        raise ConfigError("an empty app id would grant every topic starting with '-'")
    part = Part(args.part)
    # the corrector runs inside the worker: its ACLs go to the worker's principal
    own = Part.WORKER if part is Part.CORRECTOR else part
    principal = args.principal or f"User:replygate-{own.value}"
    if not principal.startswith("User:") or len(principal) == len("User:"):
        raise ConfigError("--principal must look like User:NAME")
    entries = acls(part, Topology.of(settings), args.platform, args.group)
    bootstrap = args.bootstrap_server or settings.kafka_bootstrap_servers
    lines = [f"# {part.value}: {PART_ROLES[part]}"]
    lines += kafka_acls_commands(entries, principal, bootstrap, args.command_config)
    stdout.write("".join(f"{line}\n" for line in lines).encode())
    return 0


COMMAND = Command(
    name="acls",
    summary="print the Kafka ACLs a part needs, as kafka-acls commands",
    description="Print the Kafka ACLs one part of a deployment needs (topics, worker, "
    "corrector, endpoint, agent) as `kafka-acls.sh --add` commands, from the topology the "
    "settings give (docs/security.md has the table).",
    help=help_text(
        "  topic_prefix, app_id: the topic and group names the ACLs grant;\n"
        "  kafka_bootstrap_servers: what the printed commands connect to.",
        "  0  the commands were printed\n  2  a bad argument or setting",
        "replygate acls worker --prefix prod. --app-id replygate",
    ),
    arguments=arguments,
    run=run_acls,
)
