"""`replygate schema`: what the model writes, what a Delivery's message holds, and the records.

`schema NAME` prints the JSON Schema of the reply the model writes (for a contract whose reply is
not JSON it says so and prints the format instructions instead); `--delivered` the JSON Schema of
the Delivery's `message`; `--record NAME` a record's JSON Schema, so a producer in any language can
validate what it sends. Runs on the core distribution: the settings are loaded only for a contract
that a deployment registers (`--config`, or a name not built in).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any, Final

import orjson

from streams.cli.command import Command, add_config, help_text
from streams.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import BaseModel

    from schemas.contract import ReplyContract

DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"


def _records() -> Mapping[str, type[BaseModel]]:
    """The records a producer sends or an endpoint reads, by name."""
    from schemas import records

    return {
        model.__name__: model
        for model in (
            records.RawReply,
            records.RawChunk,
            records.ToolCall,
            records.TurnControl,
            records.Delivery,
            records.CorrectionRequest,
            records.ToolResult,
            records.DeadLetter,
        )
    }


def _contract_names() -> str:
    from schemas.registry import CONTRACTS, TOOL_CONTRACT_NAME

    return ", ".join([*CONTRACTS, TOOL_CONTRACT_NAME])


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name", nargs="?", help=f"{_contract_names()}, or a contract the deployment registers"
    )
    parser.add_argument(
        "--delivered",
        action="store_true",
        help="the JSON Schema of the Delivery's message instead of the model's reply",
    )
    parser.add_argument(
        "--record", metavar="RECORD", help=f"a record's JSON Schema: {', '.join(_records())}"
    )
    add_config(parser)


def unknown_contract(name: str, known: list[str]) -> ConfigError:
    """The refusal names what is known, so the reader can pick one."""
    return ConfigError(f"unknown contract {name[:100]!r}; known: {', '.join(sorted(known))}")


def _dump(schema: Any, stdout: IO[bytes]) -> int:
    stdout.write(orjson.dumps(schema, option=orjson.OPT_INDENT_2) + b"\n")
    return 0


def record_schema(name: str) -> dict[str, Any] | None:
    """A record's JSON Schema (draft 2020-12), None for a name that is not a record."""
    model = _records().get(name)
    if model is None:
        return None
    return {"$schema": DRAFT_2020_12, **model.model_json_schema()}


def _deployment_contracts(config: Any) -> Mapping[str, ReplyContract]:
    """The registry with the deployment's contracts (a bad setting is a ConfigError)."""
    from streams.settings import load_settings
    from streams.settings.contracts import build_registry

    return build_registry(load_settings(config))


def run_schema(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    """0 with the schema printed; a ConfigError for a name that is neither contract nor record."""
    from schemas.contract import correction_instructions
    from schemas.registry import CONTRACTS, TOOL_CONTRACT_NAME
    from schemas.rich_output import rich_output_json_schema

    if args.record is not None:
        if args.name is not None or args.delivered:
            raise ConfigError("--record takes a record name alone")
        schema = record_schema(args.record)
        if schema is None:
            raise ConfigError(
                f"unknown record {args.record[:100]!r}; one of {', '.join(_records())}"
            )
        return _dump(schema, stdout)
    if args.name is None:
        raise ConfigError("name a contract, or a record with --record")
    if args.name == TOOL_CONTRACT_NAME:
        if args.delivered:
            raise ConfigError(
                f"{TOOL_CONTRACT_NAME} answers with a ToolResult: --record ToolResult"
            )
        return _dump(rich_output_json_schema(), stdout)
    contracts: Mapping[str, ReplyContract] = CONTRACTS
    if args.config is not None or args.name not in CONTRACTS:
        contracts = _deployment_contracts(args.config)
    contract = contracts.get(args.name)
    if contract is None:
        raise unknown_contract(args.name, [*contracts, TOOL_CONTRACT_NAME])
    if args.delivered:
        return _dump(contract.json_schema(), stdout)
    schema = contract.model_schema()
    if schema is None:
        stdout.write(
            f"{contract.name}: the model writes no JSON, so there is no schema of its reply. "
            "It is asked to write:\n\n".encode()
            + correction_instructions(contract).encode()
            + b"\n"
        )
        return 0
    return _dump(schema, stdout)


COMMAND = Command(
    name="schema",
    summary="print the JSON Schema of what the model writes, a Delivery's message or a record",
    description="Print the JSON Schema of the reply the model writes under a contract "
    "(HTML and plain text: the format instructions, there is no schema), of the Delivery's "
    "message (--delivered), or of a record (--record NAME).",
    help=help_text(
        "  schema_contracts, extra_contracts: the contracts a deployment registers\n"
        "  (docs/settings.md).",
        "  0  the schema was printed\n  2  an unknown contract or record, or a bad setting",
        "replygate schema --record RawReply",
    ),
    arguments=arguments,
    run=run_schema,
)
