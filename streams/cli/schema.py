"""`replygate schema NAME`: a contract's JSON Schema. Needs only the core distribution."""

from __future__ import annotations

import argparse
from typing import IO

import orjson

from streams.cli.command import Command, add_config, help_text
from streams.errors import ConfigError


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name",
        help="a registered contract: a built-in one or one the settings register",
    )
    add_config(parser)


def unknown_contract(name: str, known: list[str]) -> ConfigError:
    """The refusal names what is known, so the reader can pick one."""
    return ConfigError(f"unknown contract {name[:100]!r}; known: {', '.join(sorted(known))}")


def run(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    from schemas.rich_output import CONTRACT_NAME, rich_output_json_schema
    from streams.core.contracts import build_registry
    from streams.settings import load_settings

    registry = build_registry(load_settings(args.config))
    if args.name == CONTRACT_NAME:
        schema = rich_output_json_schema()
    else:
        contract = registry.get(args.name)
        if contract is None:
            raise unknown_contract(args.name, [*registry, CONTRACT_NAME])
        schema = contract.json_schema()
    stdout.write(orjson.dumps(schema, option=orjson.OPT_INDENT_2) + b"\n")
    return 0


COMMAND = Command(
    name="schema",
    summary="print a contract's JSON Schema",
    description="Print the JSON Schema of a contract (what a reply under it must hold).",
    help=help_text(
        "  schema_contracts, extra_contracts: the contracts a deployment registers\n"
        "  (docs/settings.md).",
        "  0  the schema was printed\n  2  an unknown contract or a bad setting",
        "replygate schema im.segments.v1",
    ),
    arguments=arguments,
    run=run,
)
