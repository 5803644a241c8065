"""`replygate schema`: what the model writes, what a Delivery's message holds, and the records.

`schema NAME` prints the JSON Schema of the reply the model writes (for a contract whose reply is
not JSON it says so and prints the format instructions instead); `--delivered` the JSON Schema of
the Delivery's `message`; `--record NAME` a record's JSON Schema, so a producer in any language can
validate what it sends. Runs on the core dependencies: the settings (the `endpoint` extra) are
loaded only for a contract that a deployment registers (`--config`, or a name not built in).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

import orjson

if TYPE_CHECKING:
    from pydantic import BaseModel

    from schemas.contract import ReplyContract

EXIT_OK: Final = 0
EXIT_USAGE: Final = 2
DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"


def _records() -> Mapping[str, type[BaseModel]]:
    """The records a producer sends or an endpoint reads, by name."""
    from schemas import records

    return {
        model.__name__: model
        for model in (
            records.RawReply,
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


def add_parser(commands: Any) -> None:
    """The `schema` subcommand on `replygate`'s parser."""
    parser = commands.add_parser(
        "schema",
        help="print the JSON Schema of what the model writes, of a Delivery's message "
        "(--delivered) or of a record (--record)",
        description=__doc__,
    )
    parser.add_argument(
        "name", nargs="?", help=f"{_contract_names()}, or a contract the deployment registers"
    )
    parser.add_argument(
        "--delivered",
        action="store_true",
        help="the JSON Schema of the Delivery's message instead of the model's reply",
    )
    parser.add_argument(
        "--record",
        metavar="RECORD",
        help=f"a record's JSON Schema: {', '.join(_records())}",
    )
    parser.add_argument("--config", type=Path, help="a TOML or YAML settings file")


def _error(message: str) -> int:
    print(f"replygate schema: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _dump(schema: Any, stdout: IO[bytes]) -> int:
    stdout.write(orjson.dumps(schema, option=orjson.OPT_INDENT_2) + b"\n")
    return EXIT_OK


def record_schema(name: str) -> dict[str, Any] | None:
    """A record's JSON Schema (draft 2020-12), None for a name that is not a record."""
    model = _records().get(name)
    if model is None:
        return None
    return {"$schema": DRAFT_2020_12, **model.model_json_schema()}


def _deployment_contracts(config: Path | None) -> Mapping[str, ReplyContract] | str:
    """The registry with the deployment's contracts, or why it cannot be had (one line)."""
    try:
        from streams.core.contracts import build_registry
        from streams.settings import load_settings
    except ImportError as exc:
        return (
            f"a deployment's contracts need the settings ({exc.name} is missing): "
            "pip install 'replygate[endpoint]'"
        )
    try:
        return build_registry(load_settings(config))
    except (OSError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        from streams.cli.main import settings_problem

        return f"settings: {settings_problem(exc)}"


def run_schema(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    """0 with the schema printed; 2 for a name that is neither a contract nor a record."""
    from schemas.contract import correction_instructions
    from schemas.registry import CONTRACTS, TOOL_CONTRACT_NAME
    from schemas.rich_output import rich_output_json_schema

    if args.record is not None:
        if args.name is not None or args.delivered:
            return _error("--record takes a record name alone")
        schema = record_schema(args.record)
        if schema is None:
            return _error(f"unknown record {args.record!r}; one of {', '.join(_records())}")
        return _dump(schema, stdout)
    if args.name is None:
        return _error("name a contract, or a record with --record")
    if args.name == TOOL_CONTRACT_NAME:
        if args.delivered:
            return _error(f"{TOOL_CONTRACT_NAME} answers with a ToolResult: --record ToolResult")
        return _dump(rich_output_json_schema(), stdout)
    contracts: Mapping[str, ReplyContract] = CONTRACTS
    if args.config is not None or args.name not in CONTRACTS:
        loaded = _deployment_contracts(args.config)
        if isinstance(loaded, str):
            return _error(loaded)
        contracts = loaded
    contract = contracts.get(args.name)
    if contract is None:
        return _error(f"unknown contract {args.name!r}")
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
        return EXIT_OK
    return _dump(schema, stdout)
