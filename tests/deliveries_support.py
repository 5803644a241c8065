"""Deliveries as the gate writes them, for the endpoint tests (`replygate deliveries`)."""

from __future__ import annotations

from typing import Any

from schemas.html_answer import ASSISTANT_HTML_V1
from schemas.im_segments import IM_SEGMENTS_V1

# A GitHub token of the right shape (not a real one): masked wherever it would be logged.
SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def delivery(
    turn_id: str, text: str = "hello", platform: str = "im", **changes: Any
) -> dict[str, Any]:
    """A valid `im.segments.v1` Delivery for `turn_id`; `changes` replace its fields."""
    record: dict[str, Any] = {
        "delivery_id": turn_id,
        "turn_id": turn_id,
        "conversation_id": "c-1",
        "platform": platform,
        "contract": IM_SEGMENTS_V1.name,
        "kind": "reply",
        "message": {"segments": [{"type": "text", "data": {"text": text}}]},
        "preview": text,
        "corrected": False,
        "masked": [],
        "notices": [],
        "delivered_at": "2026-11-30T12:00:01Z",
    }
    record.update(changes)
    return record


def invalid_delivery(turn_id: str) -> dict[str, Any]:
    """A closed Delivery whose message breaks its contract, with a secret in what is logged."""
    message = {"html": "<p>hi</p>", "citations": [], "rag_fragments_used": [SECRET]}
    return delivery(turn_id, contract=ASSISTANT_HTML_V1.name, message=message)
