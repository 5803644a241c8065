"""`policy_version` on the outcome records: an optional field of the closed records, in their
JSON Schema (`replygate schema --record`), passed on by the endpoint reader as it came."""

from __future__ import annotations

import orjson
import pytest

from schemas.records import CorrectionRequest, DeadLetter, Delivery, ToolResult
from streams.cli.main import main
from streams.endpoint.deliveries import judge
from streams.endpoint.handoff import delivery_line
from streams.settings import Settings
from tests.support.gates import disk_gate

VERSION = "sha256:" + "5e" * 32


@pytest.mark.parametrize("model", [Delivery, CorrectionRequest, ToolResult, DeadLetter])
def test_the_record_schema_shows_an_optional_policy_version(
    model: type, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", "--record", model.__name__]) == 0
    schema = orjson.loads(capsys.readouterr().out)
    assert "policy_version" in schema["properties"]
    assert "policy_version" not in schema.get("required", [])


def delivery(**changes: object) -> dict[str, object]:
    return {
        "delivery_id": "t-1",
        "turn_id": "t-1",
        "conversation_id": "c-1",
        "platform": "im",
        "contract": "im.segments.v1",
        "kind": "reply",
        "message": {"segments": [{"type": "text", "data": {"text": "hi"}}]},
        "preview": "hi",
        "corrected": False,
        "masked": [],
        "notices": [],
        "delivered_at": "2026-11-30T12:00:00.000Z",
        **changes,
    }


def test_the_endpoint_reader_passes_the_version_on() -> None:
    contracts = disk_gate(Settings()).contracts
    value = orjson.dumps(delivery(policy_version=VERSION))
    checked, decoded = judge(value, contracts, "im", 1 << 20)
    assert checked.valid and checked.delivery is not None
    assert checked.delivery.policy_version == VERSION
    assert orjson.loads(delivery_line(decoded))["policy_version"] == VERSION
    bad, _ = judge(orjson.dumps(delivery(policy_version="v2")), contracts, "im", 1 << 20)
    assert not bad.valid
    unversioned, _ = judge(orjson.dumps(delivery()), contracts, "im", 1 << 20)
    assert unversioned.valid
