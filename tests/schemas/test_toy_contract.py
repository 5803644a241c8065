"""A contract added with no file but this one: `markdown.text.v1`, one rule, registered here.

It proves the contract object is the one place a contract lives: the gate (`check`), the
worker's batch decision, the preview, the correction request, an endpoint's re-validation, the
codes catalogue and the metrics allow-list all work for it through the registry alone.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import orjson
import pytest

from schemas.catalogue import catalogue
from schemas.codes import DEAD_LETTER_REASONS, code, table
from schemas.contract import ContractBase, ContractResult, ReplyInput, correction_instructions
from schemas.delivered import check_delivery
from schemas.records import Context, CorrectionRequest, Delivery
from schemas.registry import CONTRACTS, contract_codes, issue_codes, registered
from streams.cli.check_session import CheckSession
from streams.core.batch import TurnBatch
from streams.core.decision import Source
from streams.core.pipeline import Gate
from streams.core.state import TurnIndex
from streams.ops.metrics import Metrics, bound
from streams.settings import Settings
from tests.support.gates import disk_gate
from tests.support.samples import raw_reply

NAME: Final = "markdown.text.v1"
NOW: Final = datetime(2026, 11, 30, 12, 0, 5, tzinfo=UTC)
RAW_HTML: Final = code(
    "markdown_raw_html",
    NAME,
    "Raw HTML in a Markdown reply (a `<` that opens a tag): write Markdown only.",
    "markdown",
    "",
    "contains raw HTML; write Markdown only",
)


class MarkdownText(ContractBase):
    """Markdown in `output.text`, delivered as `{"markdown": ...}`; no raw HTML tags."""

    name = NAME
    delivers_object = True
    notice_in_message_shape = True
    codes = table(RAW_HTML)

    def validate(self, reply: ReplyInput, context: Context) -> ContractResult:
        del context
        if reply.transport != "text" or not reply.text:
            return ContractResult(no_reply=True)
        if "<" in reply.text:
            return ContractResult(issues=(RAW_HTML.issue("markdown"),))
        return ContractResult(message={"markdown": reply.text})

    def instructions(self) -> str:
        return "Send your reply again as Markdown in output.text, without any HTML tag."

    def model_schema(self) -> None:
        return None

    def json_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"markdown": {"type": "string"}},
            "required": ["markdown"],
            "additionalProperties": False,
        }

    def notice_message(self, text: str) -> dict[str, Any]:
        return {"markdown": text}

    def preview_text(self, message: Any) -> str:
        return str(message["markdown"]).replace("**", "")

    def reply_of(self, message: Any) -> ReplyInput:
        return ReplyInput(
            "text", text=message.get("markdown") if isinstance(message, dict) else None
        )


@pytest.fixture
def toy() -> Iterator[None]:
    assert NAME not in CONTRACTS
    with registered(MarkdownText()):
        yield
    assert NAME not in CONTRACTS  # the registry is as it was


@pytest.fixture
def gate(toy: None, tmp_path: Path) -> Gate:
    return disk_gate(Settings(workspaces_root=tmp_path, media_root=tmp_path))


def reply(text: str, attempt: int = 0) -> bytes:
    return orjson.dumps(raw_reply(contract=NAME, attempt=attempt, output={"text": text}))


def test_check_delivers_a_valid_reply_with_its_own_preview(gate: Gate) -> None:
    line = CheckSession(gate).line(reply("Deploy **done**."), 1, NOW).line()
    assert (line["verdict"], line["action"]) == ("accepted", "deliver")
    assert line["output"]["message"] == {"markdown": "Deploy **done**."}
    assert line["output"]["preview"] == "Deploy done."


def test_check_asks_for_a_correction_with_the_contracts_own_code_and_instructions(
    gate: Gate,
) -> None:
    line = CheckSession(gate).line(reply("<b>done</b>"), 1, NOW).line()
    assert line["action"] == "request_correction"
    request = CorrectionRequest.model_validate(line["output"])
    assert [(e.path, e.code, e.message) for e in request.errors] == [
        ("markdown", "markdown_raw_html", "contains raw HTML; write Markdown only")
    ]
    assert request.instructions == correction_instructions(MarkdownText())
    assert "JSON Schema" not in request.instructions  # the model writes Markdown, not JSON


def test_the_worker_batch_decides_and_the_correction_is_delivered(gate: Gate) -> None:
    stored: dict[bytes, bytes] = {}
    batch = TurnBatch(gate, lambda _p, key: stored.get(key), TurnIndex(timedelta(seconds=1000)))
    replies = gate.settings.topic("replies_raw")
    first = batch.run([(Source(replies, 0, 0, NOW, b"c-7"), reply("<i>x</i>"))], NOW)
    assert [d.action for d in first.outputs] == ["request_correction"]
    for write in first.writes:
        assert write.value is not None
        stored[write.key] = write.value
    second = batch.run([(Source(replies, 0, 1, NOW, b"c-7"), reply("*x*", attempt=1))], NOW)
    (delivered,) = second.outputs
    assert delivered.action == "deliver" and isinstance(delivered.output, Delivery)
    assert delivered.output.corrected and delivered.output.message == {"markdown": "*x*"}


def test_an_endpoint_revalidates_the_delivery_and_refuses_a_changed_one(gate: Gate) -> None:
    output = CheckSession(gate).line(reply("All *good*."), 1, NOW).line()["output"]
    assert check_delivery(output, CONTRACTS, "im").valid
    tampered = {**output, "message": {"markdown": "<script>x</script>"}}
    checked = check_delivery(tampered, CONTRACTS, "im")
    assert [i.code for i in checked.issues] == ["markdown_raw_html"]


def test_the_failure_notice_is_in_the_contracts_shape_and_revalidates(gate: Gate) -> None:
    line = CheckSession(gate).line(reply("<b>x</b>", attempt=1), 1, NOW).line()
    assert line["action"] == "failure_notice"
    assert line["output"]["message"] == {"markdown": gate.settings.failure_notice_text}
    assert check_delivery(line["output"], CONTRACTS, "im").valid


def test_the_codes_catalogue_and_the_metrics_know_its_code(toy: None) -> None:
    text = catalogue(contract_codes())
    assert f"## `{NAME}`" in text and "| `markdown_raw_html` |" in text
    assert issue_codes()["markdown_raw_html"].where == (NAME,)
    assert bound("markdown_raw_html", Metrics.from_settings(Settings()).codes) != "other"
    assert "markdown_raw_html" not in DEAD_LETTER_REASONS  # a reply's code, not a reason


def test_without_registration_the_gate_does_not_know_it(tmp_path: Path) -> None:
    gate = disk_gate(Settings(workspaces_root=tmp_path, media_root=tmp_path))
    line = CheckSession(gate).line(reply("x"), 1, NOW).line()
    assert (line["verdict"], line["errors"][0]["code"]) == ("dead_letter", "unknown_contract")


class Bare:
    """A deployment's object with only the members a contract must have."""

    name = "acme.bare.v1"

    def validate(self, reply: ReplyInput, context: Context) -> ContractResult:
        return ContractResult(message={"n": 1})

    def instructions(self) -> str:
        return "Send {n: 1}."

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object"}

    def notice_message(self, text: str) -> dict[str, Any]:
        return {"text": text}


def test_an_object_with_only_the_required_members_gets_a_json_contracts_defaults() -> None:
    with registered(Bare()) as bare:
        assert bare.model_schema() == {"type": "object"}  # the model writes what is delivered
        assert bare.preview_text({"n": 1}) == '{"n":1}'
        assert bare.reply_of({"n": 1}) == ReplyInput("tool", arguments={"n": 1})
        assert not bare.needs_file_stage and dict(bare.codes) == {}
        assert "JSON Schema" in correction_instructions(bare)
    assert "acme.bare.v1" not in CONTRACTS
