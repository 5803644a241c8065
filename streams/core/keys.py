"""The key rule of the input topics: a turn's records all land on its conversation's partition.

A turn's state lives on one partition. A record keyed any other way (no key, a JSON-quoted key,
the turn id) can land on another partition, where a cancel, a correction or a repeat would miss
its turn without a word; so such a record is never judged but dead-lettered (`wrong_key`).
Pure: record bytes and key in, an issue out.
"""

from __future__ import annotations

from typing import Final

import orjson

from schemas.codes import WRONG_KEY
from schemas.issue import Issue

# The record field whose UTF-8 bytes are the key, by input role (`streams.broker.topology.Key`).
CONVERSATION: Final = "conversation_id"
TASK: Final = "task_id"
# The path a key issue names: the record's Kafka key, not a field of its JSON.
KEY_PATH: Final = "(key)"


def key_field_value(raw: bytes, field: str) -> str | None:
    """The record's `field` if it is a string; None when the record is not a JSON object with
    one (the gate's own checks then say what is wrong with the record)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    found = value.get(field) if isinstance(value, dict) else None
    return found if isinstance(found, str) else None


def is_quoted_key(raw: bytes, key: bytes | None, field: str) -> bool:
    """Whether `key` is the 0.1.0 form of the record's key: its `field` JSON-quoted (Faust's
    default key serializer), accepted while `accept_quoted_keys` is on."""
    expected = key_field_value(raw, field)
    return expected is not None and key == orjson.dumps(expected)


def key_issue(raw: bytes, key: bytes | None, field: str) -> Issue | None:
    """Why `key` is not the key of this record (None when it is, or when the record has no
    string `field` to compare with). The message says what the key must be, never the values."""
    expected = key_field_value(raw, field)
    if expected is None or key == expected.encode("utf-8"):
        return None
    got = "no key" if key is None else f"a key of {len(key)} bytes that differs from it"
    return WRONG_KEY.issue(KEY_PATH, field=field, got=got)
