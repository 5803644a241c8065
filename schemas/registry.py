"""The one list of reply contracts: the built-ins, and any registered through `register`.

Everything that depends on a contract (the gate, the preview, an endpoint's re-validation, the
codes catalogue, the metrics allow-list, the CLI) asks this registry and the contract object;
nothing compares contract names. A deployment adds its own through settings
(`streams.settings.contracts.build_registry`); a library or a test adds one with `register`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Final

from schemas.codes import Code, ContractCodes, all_codes
from schemas.contract import ReplyContract, completed
from schemas.html_answer import ASSISTANT_HTML_V1
from schemas.im_segments import IM_SEGMENTS_V1
from schemas.rich_output import CONTRACT_NAME as RICH_OUTPUT_NAME
from schemas.rich_output_codes import TOOL_CODES
from schemas.text_plain import TEXT_PLAIN_V1

# The registered reply contracts by name, in catalogue order; `register` adds to it.
_CONTRACTS: Final[dict[str, ReplyContract]] = {
    IM_SEGMENTS_V1.name: IM_SEGMENTS_V1,
    ASSISTANT_HTML_V1.name: ASSISTANT_HTML_V1,
    TEXT_PLAIN_V1.name: TEXT_PLAIN_V1,
}
CONTRACTS: Mapping[str, ReplyContract] = _CONTRACTS  # read-only: change it with `register`
# The rich-output tool's contract name: not a reply contract, but no deployment may reuse it.
TOOL_CONTRACT_NAME: Final = RICH_OUTPUT_NAME


class RegistrationError(ValueError):
    """A contract registered under a name that is taken."""


def builtin_names() -> frozenset[str]:
    """Every name a deployment may not reuse: the registered contracts and the tool's."""
    return frozenset({*_CONTRACTS, TOOL_CONTRACT_NAME})


def register(contract: object) -> ReplyContract:
    """Add a contract to the list (missing optional members get `ContractBase`'s defaults)."""
    complete = completed(contract)
    if complete.name in builtin_names():
        raise RegistrationError(f"a contract named {complete.name!r} is already registered")
    all_codes([*owned_codes(), (complete.catalogue_title, complete.codes)])  # no code twice
    _CONTRACTS[complete.name] = complete
    return complete


def unregister(name: str) -> None:
    """Remove a contract that `register` added (the built-ins stay)."""
    if name in (IM_SEGMENTS_V1.name, ASSISTANT_HTML_V1.name, TEXT_PLAIN_V1.name):
        raise RegistrationError(f"{name!r} is built in")
    _CONTRACTS.pop(name, None)


@contextmanager
def registered(contract: object) -> Iterator[ReplyContract]:
    """`register` for the duration of a block; the list is as before afterwards."""
    complete = register(contract)
    try:
        yield complete
    finally:
        unregister(complete.name)


def contract_codes() -> ContractCodes:
    """Each registered contract's heading and own codes, in registry order."""
    return [(c.catalogue_title, c.codes) for c in _CONTRACTS.values()]


def owned_codes() -> ContractCodes:
    """Every code an owner brings besides the shared ones: each contract's, then the tool's."""
    return [*contract_codes(), (TOOL_CONTRACT_NAME, TOOL_CODES)]


def issue_codes() -> Mapping[str, Code]:
    """Every error code: the shared ones, each registered contract's own and the tool's."""
    return all_codes(owned_codes())
