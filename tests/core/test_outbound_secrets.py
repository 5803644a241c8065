"""Nothing outbound carries a secret, wherever it stands: a real-format secret placed in any
field or key of any record type (and of the reply inside it) appears in no output of the gate:
the check line (errors, ids), the record sent (delivery, correction request, tool result, dead
letter), nor the log line an endpoint writes."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from schemas.issue import Issue
from streams.cli.check import check_one
from streams.cli.check_session import CheckSession
from streams.core.pipeline import Gate, outbound_issue
from tests.support.samples import html_reply, raw_reply, tool_call

SECRETS = [
    "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "AKIAZ7Q3XK2M4N6P8R1T",
    "xoxb-2145367890-1234567890123-Qw8Er7Ty6Ui5Op4As3Df2Gh1",
    "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    "glpat-Zx9Yw8Vu7Ts6Rq5Po4Nm",
]


def _plain() -> dict[str, Any]:
    return raw_reply(contract="text.plain.v1", output={"text": "Hello"})


def _json_call() -> dict[str, Any]:
    arguments = {"segments": [{"type": "text", "data": {"text": "hi"}}]}
    return raw_reply(output={"tool_calls": [{"name": "json", "arguments": arguments}]})


RECORDS = {
    "im": raw_reply,
    "im_tool": _json_call,
    "html": html_reply,
    "plain": _plain,
    "tool_call": tool_call,
    "cancel": lambda: {"turn_id": "t-42", "conversation_id": "c-7", "action": "cancel"},
    "chunk": lambda: {
        "turn_id": "t-42",
        "conversation_id": "c-7",
        "attempt": 0,
        "chunk": {"seq": 0, "text": "Hel"},
        "produced_at": "2026-11-30T12:00:00Z",
    },
}


def _objects(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every object in a JSON value (the root too)."""
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        found.append(path)
        for key, child in value.items():
            found += _objects(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _objects(child, (*path, index))
    return found


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _place(value: Any, where: int, how: str, key_index: int, secret: str) -> None:
    """Put `secret` in one object of `value`: as a field's value, as an extra key, as a renamed
    key, or glued after other text in a key (`x <secret>`)."""
    objects = _objects(value)
    target = _at(value, objects[where % len(objects)])
    keys = list(target)
    if how == "extra" or not keys:
        target[secret] = 1
        return
    key = keys[key_index % len(keys)]
    if how == "value":
        target[key] = secret
    elif how == "rename":
        target[secret] = target.pop(key)
    else:
        target[f"{key} {secret}"] = target.pop(key)


def _build(kind: str, inside_reply: bool, where: int, how: str, key: int, secret: str) -> bytes:
    record = copy.deepcopy(RECORDS[kind]())
    output = record.get("output")
    text = output.get("text") if isinstance(output, dict) else None
    if inside_reply and isinstance(output, dict) and isinstance(text, str) and text[:1] == "{":
        reply = orjson.loads(text)
        _place(reply, where, how, key, secret)
        output["text"] = orjson.dumps(reply).decode()
    else:
        _place(record, where, how, key, secret)
    return orjson.dumps(record)


@given(
    kind=st.sampled_from(sorted(RECORDS)),
    inside_reply=st.booleans(),
    where=st.integers(0, 50),
    how=st.sampled_from(["value", "extra", "rename", "glued"]),
    key=st.integers(0, 20),
    secret=st.sampled_from(SECRETS),
)
@example(  # the tool's name is echoed in its ToolResult
    kind="tool_call", inside_reply=False, where=0, how="value", key=4, secret=SECRETS[0]
)
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_property_a_secret_in_any_field_or_key_leaves_in_no_output(
    gate: Gate, kind: str, inside_reply: bool, where: int, how: str, key: int, secret: str
) -> None:
    raw = _build(kind, inside_reply, where, how, key, secret)
    assert secret.encode() in raw
    decision = check_one(CheckSession(gate), raw, 1)
    written = decision.line_json()
    assert secret.encode() not in written, written[:400]
    assert secret.encode() not in orjson.dumps([e.as_dict() for e in decision.errors])


def test_a_secret_key_in_a_closed_object_is_masked_in_the_path(gate: Gate) -> None:
    secret = SECRETS[0]
    segment = {"type": "text", "data": {"text": "x", secret: 1}}
    record = raw_reply(output={"text": orjson.dumps({"segments": [segment]}).decode()})
    line = check_one(CheckSession(gate), orjson.dumps(record), 1).line()
    assert line["errors"][0]["path"] == "segments[0].data.[REDACTED:github-pat]"
    request = line["output"]
    assert request["errors"][0]["path"] == "segments[0].data.[REDACTED:github-pat]"
    assert secret not in orjson.dumps(line).decode()


def test_an_outbound_issue_is_masked_key_by_key_and_escaped(gate: Gate) -> None:
    issue = Issue(f"a.{SECRETS[1]}[0].b\x1b", "unknown_field", f"quote {SECRETS[2]}")
    shown = outbound_issue(gate.masker, issue)
    assert shown.path == "a.[REDACTED:aws-access-key-id][0].b\\x1b"
    assert shown.message == "quote [REDACTED:slack-token]"
