"""The key rule of the input topics (`streams.core.keys`): the key is the id's UTF-8 bytes."""

from __future__ import annotations

import orjson
import pytest

from schemas.codes import DEAD_LETTER_REASONS
from schemas.registry import issue_codes
from streams.core.keys import CONVERSATION, TASK, key_issue

REPLY = orjson.dumps({"turn_id": "t-1", "conversation_id": "c-ü7"})
CALL = orjson.dumps({"call_id": "call-1", "task_id": "task-9"})


def test_the_ids_utf8_bytes_are_the_key() -> None:
    assert key_issue(REPLY, "c-ü7".encode(), CONVERSATION) is None
    assert key_issue(CALL, b"task-9", TASK) is None


@pytest.mark.parametrize(
    "key", [None, b'"c-\xc3\xbc7"', b"t-1", b"", b"c-\xfc7", b"prefix:c-\xc3\xbc7"]
)
def test_any_other_key_is_wrong_and_says_what_it_must_be(key: bytes | None) -> None:
    issue = key_issue(REPLY, key, CONVERSATION)
    assert issue is not None and issue.code == "wrong_key" and issue.path == "(key)"
    assert "UTF-8 bytes of its conversation_id" in issue.message
    assert "c-ü7" not in issue.message and "t-1" not in issue.message  # never the values


def test_a_tool_call_is_keyed_by_its_task() -> None:
    issue = key_issue(CALL, b"call-1", TASK)
    assert issue is not None and "task_id" in issue.message


@pytest.mark.parametrize("raw", [b"not json", b"[1]", b'{"conversation_id": 7}', b"{}"])
def test_a_record_without_the_id_is_left_to_the_gates_own_checks(raw: bytes) -> None:
    assert key_issue(raw, b"anything", CONVERSATION) is None


def test_wrong_key_is_a_registered_code_and_dead_letter_reason() -> None:
    assert "wrong_key" in issue_codes() and "wrong_key" in DEAD_LETTER_REASONS
