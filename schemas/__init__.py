"""replygate contracts and record models: pure, no Kafka, no I/O.

A platform endpoint imports this package to re-validate what it receives: `check_delivery` with
the registry `CONTRACTS` (or its own, `register` adds one), the record models, and `Issue`.
The names load on first use, so importing the package (or `python -m schemas.catalogue`)
stays light.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from schemas.audit import AuditRecord
    from schemas.contract import ContractBase, ContractResult, ReplyContract, ReplyInput
    from schemas.delivered import Checked, check_delivery
    from schemas.issue import Issue, Notice, json_path
    from schemas.records import (
        CorrectionRequest,
        DeadLetter,
        Delivery,
        RawReply,
        ToolCall,
        ToolResult,
        TurnControl,
    )
    from schemas.registry import CONTRACTS, register, registered

# Each exported name and the module that holds it.
_HOMES = {
    "AuditRecord": "schemas.audit",
    "check_delivery": "schemas.delivered",
    "Checked": "schemas.delivered",
    "CONTRACTS": "schemas.registry",
    "register": "schemas.registry",
    "registered": "schemas.registry",
    "ReplyContract": "schemas.contract",
    "ContractBase": "schemas.contract",
    "ContractResult": "schemas.contract",
    "ReplyInput": "schemas.contract",
    "RawReply": "schemas.records",
    "ToolCall": "schemas.records",
    "TurnControl": "schemas.records",
    "Delivery": "schemas.records",
    "CorrectionRequest": "schemas.records",
    "ToolResult": "schemas.records",
    "DeadLetter": "schemas.records",
    "Issue": "schemas.issue",
    "Notice": "schemas.issue",
    "json_path": "schemas.issue",
}

__all__ = [
    "CONTRACTS",
    "AuditRecord",
    "Checked",
    "ContractBase",
    "ContractResult",
    "CorrectionRequest",
    "DeadLetter",
    "Delivery",
    "Issue",
    "Notice",
    "RawReply",
    "ReplyContract",
    "ReplyInput",
    "ToolCall",
    "ToolResult",
    "TurnControl",
    "check_delivery",
    "json_path",
    "register",
    "registered",
]


def __getattr__(name: str) -> Any:
    """An exported name, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'schemas' has no attribute {name!r}")
    return getattr(import_module(home), name)
