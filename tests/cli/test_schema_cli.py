"""`replygate schema` (docs/cli.md): what the model writes, the delivered message, the records."""

from __future__ import annotations

import io
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import orjson
import pytest
from jsonschema import Draft202012Validator

from schemas.records import RawReply
from schemas.registry import CONTRACTS, TOOL_CONTRACT_NAME
from streams.cli.main import run
from streams.cli.schema import COMMAND, record_schema
from tests.support.samples import raw_reply

REPO = Path(__file__).resolve().parents[2]
RECORDS = (
    "RawReply",
    "RawChunk",
    "ToolCall",
    "TurnControl",
    "Delivery",
    "CorrectionRequest",
    "ToolResult",
    "DeadLetter",
)


def schema(
    name: str | None, *, delivered: bool = False, record: str | None = None
) -> tuple[int, bytes]:
    out = io.BytesIO()
    args = Namespace(name=name, delivered=delivered, record=record, config=None)
    return run(COMMAND, args, out), out.getvalue()


@pytest.mark.parametrize("name", list(CONTRACTS))
def test_a_contract_prints_what_the_model_writes(name: str) -> None:
    contract = CONTRACTS[name]
    status, out = schema(name)
    assert status == 0
    expected = contract.model_schema()
    if expected is None:  # HTML, plain text: no schema, the format instructions instead
        assert out.startswith(f"{name}: the model writes no JSON".encode())
        assert contract.instructions().encode() in out
        assert b"JSON Schema" not in out
    else:
        assert orjson.loads(out) == expected


@pytest.mark.parametrize("name", list(CONTRACTS))
def test_delivered_prints_the_schema_of_the_delivery_message(name: str) -> None:
    status, out = schema(name, delivered=True)
    assert status == 0 and orjson.loads(out) == CONTRACTS[name].json_schema()
    Draft202012Validator.check_schema(orjson.loads(out))


def test_the_html_delivered_message_is_not_what_the_model_is_asked_for() -> None:
    _, model = schema("assistant.html.v1")
    _, delivered = schema("assistant.html.v1", delivered=True)
    assert "citations" in orjson.loads(delivered)["properties"]
    assert b"citations" not in model and b"```html" in model


@pytest.mark.parametrize("record", RECORDS)
def test_a_record_schema_is_draft_2020_12(record: str) -> None:
    status, out = schema(None, record=record)
    assert status == 0
    Draft202012Validator.check_schema(orjson.loads(out))


def test_the_raw_reply_schema_accepts_a_valid_reply_and_refuses_an_unknown_field() -> None:
    validator = Draft202012Validator(record_schema("RawReply"))
    RawReply.model_validate(raw_reply())
    assert validator.is_valid(raw_reply())
    assert not validator.is_valid({**raw_reply(), "colour": "red"})


def test_a_streamed_reply_is_described_chunk_and_final_record_alike() -> None:
    """A producer in another language validates each chunk line and the final record."""
    from tests.core.test_chunks import chunk, final

    chunks = Draft202012Validator(record_schema("RawChunk"))
    assert chunks.is_valid(chunk(0, "hel")) and chunks.is_valid(chunk(1, "lo"))
    assert not chunks.is_valid({**chunk(0, "x"), "chunk": {"seq": -1, "text": "x"}})
    assert not chunks.is_valid(raw_reply())  # a final reply is not a chunk
    replies = record_schema("RawReply")
    assert replies is not None and Draft202012Validator(replies).is_valid(final(2))
    described = replies["$defs"]["ModelOutput"]["properties"]["chunks"]["description"]
    assert "RawChunk" in described and "RawChunk" in replies["description"]


def test_the_tool_prints_its_arguments_and_has_no_delivered_message() -> None:
    assert schema(TOOL_CONTRACT_NAME)[0] == 0
    assert schema(TOOL_CONTRACT_NAME, delivered=True)[0] == 2


@pytest.mark.parametrize(
    ("name", "record"), [("nope.v1", None), (None, "Nope"), (None, None), ("im.segments.v1", "X")]
)
def test_bad_names_are_usage_errors(
    name: str | None, record: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert schema(name, record=record)[0] == 2
    assert capsys.readouterr().err.startswith("replygate schema: error: ")


# Run with Faust, aiokafka and pydantic_settings unimportable: the core distribution's view.
_CORE_ONLY = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("faust", "aiokafka", "pydantic_settings", "httpx"):
            raise ImportError(f"blocked: {name}")
        return None
sys.meta_path.insert(0, Block())
from streams.cli.main import main
for argv in (["schema", "im.segments.v1"], ["schema", "assistant.html.v1"],
             ["schema", "text.plain.v1", "--delivered"], ["schema", "--record", "Delivery"],
             ["schema", "kandev.rich_output.v1"]):
    assert main(argv) == 0, argv
assert not {"faust", "aiokafka", "pydantic_settings"} & set(sys.modules)
"""


def test_schema_runs_on_the_core_dependencies_alone() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CORE_ONLY], cwd=REPO, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
