"""The contract registry of one deployment: the built-ins plus those named in settings."""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from schemas.contract import ReplyContract
from schemas.registry import BUILTIN_CONTRACTS


class ContractLoadError(ValueError):
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
    for method in ("validate", "json_schema", "instructions", "notice_message"):
        if not callable(getattr(obj, method, None)):
            raise ContractLoadError(f"extra_contracts.{name}: {target!r} has no {method}()")
    if getattr(obj, "name", None) != name:
        raise ContractLoadError(
            f"extra_contracts.{name}: {target!r} calls itself {getattr(obj, 'name', None)!r}"
        )
    contract: ReplyContract = obj
    return contract


def build_registry(extra: Mapping[str, str]) -> dict[str, ReplyContract]:
    """Built-ins first; a registered contract may not replace a built-in one."""
    registry = dict(BUILTIN_CONTRACTS)
    for name, target in extra.items():
        if name in registry:
            raise ContractLoadError(f"extra_contracts.{name}: a built-in contract has that name")
        registry[name] = load_contract(name, target)
    return registry
