"""`replygate policy`: check a policy bundle offline, publish it (active or shadow), show what
the topic holds and what each worker enforces, promote the shadow, roll back."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import IO

from streams.cli.command import Command, add_config, help_text


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check", help="validate a bundle with the worker's own loading code; print its version"
    )
    check.add_argument("file", type=Path, metavar="FILE", help="the bundle (TOML or YAML)")
    add_config(check)
    publish = actions.add_parser(
        "publish", help="check a bundle, then make it the active (or --shadow) version"
    )
    publish.add_argument("file", type=Path, metavar="FILE", help="the bundle (TOML or YAML)")
    publish.add_argument(
        "--shadow", action="store_true", help="publish it as the shadow: judged, never enforced"
    )
    parser.set_defaults(shadow=False)
    add_config(publish)
    for name, summary in (
        ("status", "the versions on the topic and the version each live worker enforces"),
        ("promote", "make the shadow version the active one"),
        ("rollback", "make the previous active version active again"),
    ):
        add_config(actions.add_parser(name, help=summary))


def run(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    from streams.policy.bundle import read_bundle
    from streams.policy.load import load_policy
    from streams.settings import GateSettings, load_settings

    settings = load_settings(args.config)
    if args.action == "check":
        bundle = read_bundle(args.file)
        load_policy(bundle, settings.group(GateSettings), str(args.file))
        stdout.write(f"{bundle.version}\n".encode())
        return 0
    from streams.cli.command import installed
    from streams.errors import MissingExtra

    if not installed("aiokafka"):
        raise MissingExtra("worker")
    from streams.policy import topic

    return topic.run_action(args, settings, stdout)


COMMAND = Command(
    name="policy",
    summary="check, publish, promote and roll back policy bundles",
    description=(
        "A policy bundle holds what decides a verdict (contracts, leak masking, the "
        "correction loop, platforms, bounds) with default, platform and tenant sections. "
        "`check` needs no broker; the other actions use the policy topic."
    ),
    help=help_text(
        "  check: the contracts the worker registers (extra_contracts) and topic names;\n"
        "  the others also kafka_bootstrap_servers, kafka_security.*, topic_prefix\n"
        "  (docs/policy.md).",
        "  0  done (check: the bundle loads; its version is printed)\n"
        "  1  the broker refused or could not be reached\n"
        "  2  a bundle that does not load (every reason said), a bad setting or argument",
        "replygate policy check policy.toml && replygate policy publish --shadow policy.toml",
    ),
    arguments=_arguments,
    run=run,
)
