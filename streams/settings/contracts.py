"""The contract registry of one deployment: the built-ins plus those its settings name.

A deployment adds contracts two ways: JSON Schema files (`schema_contracts`) or Python objects
(`extra_contracts`, for rules a schema cannot say). Reading those files and importing those
modules is the shell's part: each process (the worker, `replygate check`, `deliveries`,
`schema`) builds the registry once, here, and hands it to the `Gate`. Anything wrong stops it
at start with one message that names the file or entry and the problem.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Final

import orjson

from schemas.contract import REQUIRED_MEMBERS, ReplyContract, completed
from schemas.registry import CONTRACTS, builtin_names
from schemas.schema_contract import SchemaContract, SchemaError
from streams.errors import ConfigError
from streams.settings.files import NamedFileError, read_named_file
from streams.settings.model import ContractSettings, SchemaContractEntry

# A schema is configuration, not data: anything larger is a mistake (or an attack).
MAX_SCHEMA_BYTES: Final = 1024 * 1024


# What a schema file that could not be read is said to be (`{}`: the OS's words).
_unread: Final = {
    "missing": "the file does not exist or is not a regular file",
    "not_regular": "the file does not exist or is not a regular file",
    "unreadable": "cannot read it: {}",
    "oversized": f"it is larger than {MAX_SCHEMA_BYTES} bytes",
}


class ContractLoadError(ConfigError):
    """A registered contract could not be imported or does not look like a contract."""


def load_contract(name: str, target: str) -> ReplyContract:
    """Import `module:attribute` and check that it is a contract under the registered name."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ContractLoadError(f"extra_contracts.{name}: use 'module:attribute', got {target!r}")
    try:
        obj = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ContractLoadError(f"extra_contracts.{name}: cannot import {target!r}: {exc}") from exc
    for method in REQUIRED_MEMBERS:
        if not callable(getattr(obj, method, None)):
            raise ContractLoadError(f"extra_contracts.{name}: {target!r} has no {method}()")
    if getattr(obj, "name", None) != name:
        raise ContractLoadError(
            f"extra_contracts.{name}: {target!r} calls itself {getattr(obj, 'name', None)!r}"
        )
    return completed(obj)


def read_schema(path: Path) -> Any:
    """The parsed JSON of a schema file, bounded; ContractLoadError says what is wrong."""
    try:
        data = read_named_file(path, MAX_SCHEMA_BYTES)
    except NamedFileError as exc:
        raise ContractLoadError(_unread[exc.problem].format(exc.cause)) from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise ContractLoadError(f"it is not valid JSON: {exc}") from None


def load_schema_contract(entry: SchemaContractEntry, path: Path) -> SchemaContract:
    """One `schema_contracts` entry as a contract; the error names the entry and the file."""
    try:
        schema = read_schema(path)
        return SchemaContract(entry.name, schema, entry.instructions, entry.assert_formats)
    except (ContractLoadError, SchemaError) as exc:
        raise ContractLoadError(f"schema_contracts {entry.name!r} ({path}): {exc}") from None


def build_registry(settings: ContractSettings) -> dict[str, ReplyContract]:
    """Built-ins first; a registered contract may neither reuse a built-in name nor another's."""
    registry = dict(CONTRACTS)
    taken = builtin_names()
    for entry in settings.schema_contracts:
        path = settings.schema_path(entry)
        if entry.name in taken:
            raise ContractLoadError(
                f"schema_contracts {entry.name!r} ({path}): a built-in contract has that name"
            )
        if entry.name in registry:
            raise ContractLoadError(
                f"schema_contracts {entry.name!r} ({path}): the name is registered twice"
            )
        registry[entry.name] = load_schema_contract(entry, path)
    for name, target in settings.extra_contracts.items():
        if name in taken:
            raise ContractLoadError(f"extra_contracts.{name}: a built-in contract has that name")
        if name in registry:
            raise ContractLoadError(f"extra_contracts.{name}: schema_contracts has that name too")
        registry[name] = load_contract(name, target)
    return registry
