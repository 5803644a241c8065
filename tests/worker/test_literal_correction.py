"""A model that follows a CorrectionRequest's instructions to the letter gets its reply accepted.

For every contract: an invalid attempt 0 asks for a correction; the scripted LLM server plays a
model that reads only the system message (the instructions) and writes what they say (one reply
that matches the stated JSON Schema, or the fenced HTML block, or plain text); the corrector's
own client sends the request, and the gate accepts the answer as the corrected reply.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import orjson
import pytest
from jsonschema import Draft202012Validator
from replygate_dev.demo import with_demo_contract
from replygate_dev.scripted_llm import Canned, ScriptedLLM

from schemas.records import CorrectionRequest
from schemas.registry import CONTRACTS
from streams.core.decision import Source
from streams.core.pipeline import Gate
from streams.settings import CorrectorSettings, Settings
from streams.worker.corrector import build_messages, complete, reply_from_completion, reply_json
from tests.support.gates import disk_gate
from tests.support.samples import NOW, raw_reply

TICKET = "acme.ticket.v1"  # the demo's schema contract
_FENCE = re.compile(r"^```html\n(.*?)\n```$", re.MULTILINE | re.DOTALL)


def instance(schema: Any, root: dict[str, Any]) -> Any:
    """The first value the schema describes, read literally: consts, enums, required fields,
    one item per array, the first alternative of a oneOf."""
    if "$ref" in schema:
        *_, name = schema["$ref"].split("/")
        return instance(root["$defs"][name], root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    if "oneOf" in schema or "anyOf" in schema:
        return instance((schema.get("oneOf") or schema["anyOf"])[0], root)
    kind = schema.get("type")
    if kind == "object":
        return {name: instance(schema["properties"][name], root) for name in schema["required"]}
    if kind == "array":
        return [instance(schema["items"], root)]
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return True
    return "x" * max(1, schema.get("minLength", 1))


def literal_model(body: dict[str, Any]) -> Canned:
    """Write what the instructions (the system message) ask for, nothing else."""
    system = body["messages"][0]["content"]
    if "JSON Schema:\n" in system:
        schema = orjson.loads(system.split("JSON Schema:\n", 1)[1])
        reply = instance(schema, schema)
        Draft202012Validator(schema).validate(reply)  # the model did follow the stated schema
        return Canned(content=orjson.dumps(reply).decode())
    fence = _FENCE.search(system)
    if fence is not None:  # the example fence, with real text in place of the ellipsis
        return Canned(content=f"```html\n{fence.group(1).replace('...', 'Fixed.')}\n```")
    assert "plain text" in system
    return Canned(content="Fixed.")


def invalid(contract: str) -> bytes:
    """An attempt 0 that breaks its contract."""
    text = "prose, not the format" if contract != "text.plain.v1" else "bell\x07"
    platform = "assistant" if contract == "assistant.html.v1" else "im"
    record = raw_reply(contract=contract, platform=platform, output={"text": text})
    return orjson.dumps(record)


@pytest.fixture(scope="module")
def gate() -> Gate:
    return disk_gate(with_demo_contract(Settings()))


@pytest.mark.parametrize("contract", [*CONTRACTS, TICKET])
async def test_a_literal_model_answers_a_correction_with_an_accepted_reply(
    gate: Gate, contract: str
) -> None:
    asked = gate.decide_reply(invalid(contract), Source("replies.raw"), NOW)
    assert asked.action == "request_correction"
    request = asked.output
    assert isinstance(request, CorrectionRequest)
    with ScriptedLLM(literal_model) as llm:
        settings = CorrectorSettings(base_url=llm.base_url, model="literal")
        async with httpx.AsyncClient() as client:
            content = await complete(client, settings, build_messages(request))
    corrected = reply_from_completion(request, content, "literal", NOW)
    decision = gate.decide_reply(reply_json(corrected), Source("replies.raw"), NOW)
    assert (decision.verdict, decision.action, decision.errors) == ("accepted", "deliver", ())
    assert decision.line()["output"]["corrected"] is True
