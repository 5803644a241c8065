"""Caller-owned JSON Schema contracts (docs/contracts.md section 5): loading, rules, CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from schemas.contract import ReplyInput
from schemas.delivered import check_delivery
from schemas.records import CorrectionRequest, Delivery
from schemas.registry import issue_codes
from schemas.schema_contract import SchemaContract, SchemaError, failing_keyword
from streams.cli.check_session import CheckSession
from streams.cli.worker import run_worker
from streams.core.pipeline import Gate
from streams.settings import Settings, load_settings
from streams.settings.contracts import MAX_SCHEMA_BYTES, ContractLoadError, build_registry
from tests.cli.test_cli_check import replygate
from tests.support.gates import disk_gate
from tests.support.samples import GITHUB_PAT, NOW, encode, raw_reply

DRAFT = "https://json-schema.org/draft/2020-12/schema"

# `$ref`, `oneOf` and `additionalProperties: false` together, as a deployment would write it.
TICKET: dict[str, Any] = {
    "$schema": DRAFT,
    "type": "object",
    "additionalProperties": False,
    "required": ["title", "priority", "items"],
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "priority": {"enum": ["low", "high"]},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
    },
    "$defs": {
        "item": {
            "oneOf": [
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["kind", "title"],
                    "properties": {"kind": {"const": "task"}, "title": {"type": "string"}},
                },
                {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["kind", "url"],
                    "properties": {"kind": {"const": "link"}, "url": {"type": "string"}},
                },
            ]
        }
    },
}
VALID = {"title": "Jammed", "priority": "high", "items": [{"kind": "task", "title": "open it"}]}


def write_config(tmp_path: Path, entries: list[dict[str, Any]], schemas: dict[str, Any]) -> Path:
    """A TOML config beside its schema files (written as given: dicts as JSON, str as text)."""
    folder = tmp_path / "contracts"
    folder.mkdir(exist_ok=True)
    for name, body in schemas.items():
        data = body if isinstance(body, str) else json.dumps(body)
        (folder / name).write_text(data)
    lines = []
    for entry in entries:
        lines.append("[[schema_contracts]]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in entry.items()]
    config = tmp_path / "gate.toml"
    config.write_text("\n".join(lines) + "\n")
    return config


def ticket_settings(tmp_path: Path, instructions: str | None = None) -> Settings:
    entry = {"name": "acme.ticket.v1", "schema": "contracts/ticket.schema.json"}
    if instructions:
        entry["instructions"] = instructions
    config = write_config(tmp_path, [entry], {"ticket.schema.json": TICKET})
    return load_settings(config, workspaces_root=tmp_path, media_root=tmp_path)


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    return disk_gate(ticket_settings(tmp_path, "Answer with the ticket object only."))


def ticket(reply: Any, **changes: Any) -> dict[str, Any]:
    text = reply if isinstance(reply, str) else json.dumps(reply)
    return raw_reply(contract="acme.ticket.v1", output={"text": text}, **changes)


def check(gate: Gate, record: dict[str, Any]) -> dict[str, Any]:
    return CheckSession(gate).line(encode(record), 1, NOW).line()


def errors(line: dict[str, Any]) -> list[tuple[str, str]]:
    return [(e["path"], e["code"]) for e in line["errors"]]


# ---- validation ------------------------------------------------------------------------------


def test_a_valid_reply_is_delivered_as_the_object_masked(gate: Gate) -> None:
    reply = {**VALID, "title": f"leak {GITHUB_PAT}"}
    line = check(gate, ticket(reply))
    assert (line["verdict"], line["action"]) == ("accepted", "deliver")
    delivery = Delivery.model_validate(line["output"])
    assert delivery.message == {**VALID, "title": "leak [REDACTED:github-pat]"}
    assert delivery.preview == orjson.dumps(delivery.message).decode()
    assert GITHUB_PAT not in orjson.dumps(line).decode()


def test_the_json_tool_call_is_the_reply_too(gate: Gate) -> None:
    output = {"tool_calls": [{"name": "json", "arguments": VALID}]}
    line = check(gate, raw_reply(contract="acme.ticket.v1", output=output))
    assert line["output"]["message"] == VALID


def test_ref_oneof_and_additional_properties_violations(gate: Gate) -> None:
    reply = {
        "title": "",
        "priority": "urgent",
        "items": [{"kind": "task"}, {"kind": "link", "url": "u", "extra": 1}],
        "colour": "red",
    }
    line = check(gate, ticket(reply))
    assert (line["verdict"], line["action"]) == ("rejected", "request_correction")
    assert sorted(errors(line)) == sorted(
        [
            ("title", "schema.minLength"),
            ("priority", "schema.enum"),
            ("items[0]", "schema.oneOf"),
            ("items[1]", "schema.oneOf"),
            ("colour", "schema.additionalProperties"),
        ]
    )


def test_required_names_the_missing_property_and_types_are_strict(gate: Gate) -> None:
    line = check(gate, ticket({"title": 7, "items": []}))
    assert sorted(errors(line)) == [("priority", "schema.required"), ("title", "schema.type")]
    assert check(gate, ticket({**VALID, "title": "7"}))["action"] == "deliver"


def test_messages_never_quote_the_value(gate: Gate) -> None:
    line = check(gate, ticket({**VALID, "priority": "value-XYZZY", "zz-key": 1}))
    assert line["errors"]
    assert all("XYZZY" not in e["message"] for e in line["errors"])


@pytest.mark.parametrize(
    "text",
    [
        "```json\n" + json.dumps(VALID) + "\n```",
        "Here it is: " + json.dumps(VALID),
        json.dumps(VALID) + json.dumps(VALID),
        '{"title": NaN}',
        '{"title": Infinity}',
        "null",
    ],
)
def test_transport_rules_are_those_of_the_im_contract(gate: Gate, text: str) -> None:
    assert [c for _, c in errors(check(gate, ticket(text)))] == ["not_json"]


@pytest.mark.parametrize("text", ["[1, 2]", '"a ticket"', "7", "true"])
def test_a_value_that_is_not_an_object_is_judged_by_the_schema(gate: Gate, text: str) -> None:
    """One JSON value, not one object: the schema says what it must be (here an object)."""
    assert errors(check(gate, ticket(text))) == [("$", "schema.type")]


def test_a_schema_of_another_type_delivers_that_value_and_the_endpoint_accepts_it(
    tmp_path: Path,
) -> None:
    names = {"type": "array", "items": {"type": "string"}, "minItems": 1}
    entry = {"name": "acme.names.v1", "schema": "contracts/names.schema.json"}
    config = write_config(tmp_path, [entry], {"names.schema.json": names})
    names_gate = disk_gate(load_settings(config, workspaces_root=tmp_path, media_root=tmp_path))
    for output in (
        {"text": f'["ada", "{GITHUB_PAT}"]'},
        {"tool_calls": [{"name": "json", "arguments": ["ada", GITHUB_PAT]}]},
    ):
        line = check(names_gate, raw_reply(contract="acme.names.v1", output=output))
        assert line["action"] == "deliver"
        assert line["output"]["message"] == ["ada", "[REDACTED:github-pat]"]
        assert line["output"]["preview"] == '["ada","[REDACTED:github-pat]"]'
        assert check_delivery(line["output"], names_gate.contracts).valid
    wrong = check(names_gate, raw_reply(contract="acme.names.v1", output={"text": "[]"}))
    assert errors(wrong) == [("$", "schema.minItems")]


def test_the_endpoint_accepts_the_failure_notice_of_a_caller_owned_contract(gate: Gate) -> None:
    """The host's notice is `{"text": ...}`, which the caller's schema cannot describe."""
    line = check(gate, ticket({"title": "x"}, attempt=1))
    assert check_delivery(line["output"], gate.contracts).valid
    forged = {**line["output"], "message": {"text": "", "title": "x"}}
    assert [i.code for i in check_delivery(forged, gate.contracts).issues] == ["unknown_field"]
    assert [i.code for i in check_delivery({**forged, "message": [1]}, gate.contracts).issues] == [
        "wrong_type"
    ]


def test_surrounding_whitespace_is_fine(gate: Gate) -> None:
    assert check(gate, ticket("\n  " + json.dumps(VALID) + "  \n"))["action"] == "deliver"


def test_selection_rules_apply(gate: Gate) -> None:
    both = {"text": json.dumps(VALID), "tool_calls": [{"name": "json", "arguments": VALID}]}
    line = check(gate, raw_reply(contract="acme.ticket.v1", output=both))
    assert [c for _, c in errors(line)] == ["ambiguous_reply"]


def test_correction_carries_this_schema_and_its_instructions_only(gate: Gate) -> None:
    line = check(gate, ticket({"title": "x"}))
    request = CorrectionRequest.model_validate(line["output"])
    assert "Answer with the ticket object only." in request.instructions
    assert '"$defs"' in request.instructions and '"acme' not in request.invalid_output
    assert "segments" not in request.instructions and "html" not in request.instructions


def test_the_failure_notice_is_host_text(gate: Gate) -> None:
    line = check(gate, ticket({"title": "x"}, attempt=1))
    assert line["action"] == "failure_notice"
    assert line["output"]["message"] == {"text": Settings().failure_notice_text}


# Each registered `schema.<keyword>` code, made to happen by a schema and an instance.
KEYWORD_CASES: dict[str, tuple[dict[str, Any], Any, str]] = {
    "type": ({"type": "string"}, 1, "$"),
    "enum": ({"enum": [1]}, 2, "$"),
    "const": ({"const": 1}, 2, "$"),
    "multipleOf": ({"multipleOf": 3}, 4, "$"),
    "maximum": ({"maximum": 1}, 2, "$"),
    "exclusiveMaximum": ({"exclusiveMaximum": 1}, 1, "$"),
    "minimum": ({"minimum": 1}, 0, "$"),
    "exclusiveMinimum": ({"exclusiveMinimum": 1}, 1, "$"),
    "maxLength": ({"maxLength": 1}, "ab", "$"),
    "minLength": ({"minLength": 2}, "a", "$"),
    "pattern": ({"pattern": "^a+$"}, "b", "$"),
    "maxItems": ({"maxItems": 0}, [1], "$"),
    "minItems": ({"minItems": 1}, [], "$"),
    "uniqueItems": ({"uniqueItems": True}, [1, 1], "$"),
    "contains": ({"contains": {"const": 1}}, [2], "$"),
    "minContains": ({"contains": {"const": 1}, "minContains": 2}, [1], "$"),
    "maxContains": ({"contains": {"const": 1}, "maxContains": 1}, [1, 1], "$"),
    "maxProperties": ({"maxProperties": 0}, {"a": 1}, "$"),
    "minProperties": ({"minProperties": 1}, {}, "$"),
    "required": ({"required": ["a"]}, {}, "a"),
    "dependentRequired": ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, "b"),
    "additionalProperties": ({"additionalProperties": False}, {"x": 1}, "x"),
    "unevaluatedProperties": ({"unevaluatedProperties": False}, {"x": 1}, "x"),
    "unevaluatedItems": ({"unevaluatedItems": False}, [1], "$"),
    "items": ({"prefixItems": [{}], "items": False}, [1, 2], "[1]"),
    "propertyNames": ({"propertyNames": {"maxLength": 1}}, {"ab": 1}, "$"),
    "oneOf": ({"oneOf": [{}, {}]}, 1, "$"),
    "anyOf": ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 1, "$"),
    "not": ({"not": {"type": "integer"}}, 1, "$"),
    "false": ({"properties": {"a": False}}, {"a": 1}, "a"),
    "format": ({}, None, ""),
    "contentEncoding": ({}, None, ""),
    "contentMediaType": ({}, None, ""),
}
# Annotations only under draft 2020-12's defaults: registered for schemas that assert them.
NOT_ASSERTED = {"format", "contentEncoding", "contentMediaType"}


@pytest.mark.parametrize("keyword", sorted(KEYWORD_CASES))
def test_each_registered_schema_code_is_reachable(keyword: str) -> None:
    """The case's schema sits at `v`, so the expected path is the case's path under `v`."""
    assert f"schema.{keyword}" in issue_codes()
    if keyword in NOT_ASSERTED:
        assert failing_keyword([keyword], keyword[0].upper() + keyword[1:]) == keyword
        return
    schema, instance, path = KEYWORD_CASES[keyword]
    contract = SchemaContract("t.v1", {"$schema": DRAFT, "properties": {"v": schema}})
    result = contract.validate(ReplyInput("tool", arguments={"v": instance}), None)
    expected = "v" if path == "$" else ("v" + path if path.startswith("[") else "v." + path)
    assert (expected, f"schema.{keyword}") in [(i.path, i.code) for i in result.issues]


def test_every_schema_code_has_a_case() -> None:
    registered = {c.removeprefix("schema.") for c in issue_codes() if c.startswith("schema.")}
    assert registered == set(KEYWORD_CASES)


def test_errors_are_bounded() -> None:
    contract = SchemaContract("t.v1", {"additionalProperties": False})
    result = contract.validate(ReplyInput("tool", arguments={f"k{i}": i for i in range(500)}))
    assert len(result.issues) == 101 and result.issues[-1].code == "too_many_errors"


def test_patterns_run_in_linear_time_and_lookaround_is_refused() -> None:
    contract = SchemaContract("t.v1", {"properties": {"a": {"pattern": "^(a+)+$"}}})
    result = contract.validate(ReplyInput("tool", arguments={"a": "a" * 50_000 + "!"}))
    assert [i.code for i in result.issues] == ["schema.pattern"]
    with pytest.raises(SchemaError, match="not a valid JSON Schema"):
        SchemaContract("t.v1", {"pattern": "(?=a)a"})


# ---- loading ---------------------------------------------------------------------------------


def test_schema_path_is_relative_to_the_config_file(tmp_path: Path) -> None:
    settings = ticket_settings(tmp_path)
    registry = build_registry(settings)
    assert registry["acme.ticket.v1"].json_schema() == TICKET
    assert "im.segments.v1" in registry and "text.plain.v1" in registry


def test_schema_contracts_from_the_environment(tmp_path: Path) -> None:
    (tmp_path / "t.json").write_text(json.dumps(TICKET))
    entries = json.dumps([{"name": "acme.env.v2", "schema": str(tmp_path / "t.json")}])
    os.environ["REPLYGATE_SCHEMA_CONTRACTS"] = entries
    try:
        settings = load_settings()
    finally:
        del os.environ["REPLYGATE_SCHEMA_CONTRACTS"]
    assert "acme.env.v2" in build_registry(settings)


BAD_CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any], str]] = [
    ("missing file", [{"name": "a.b.v1", "schema": "contracts/nope.json"}], {}, "does not exist"),
    ("invalid JSON", [{"name": "a.b.v1", "schema": "contracts/s.json"}], {"s.json": "{nope"},
     "not valid JSON"),
    ("invalid schema", [{"name": "a.b.v1", "schema": "contracts/s.json"}],
     {"s.json": {"type": "nope"}}, "not a valid JSON Schema"),
    ("other draft", [{"name": "a.b.v1", "schema": "contracts/s.json"}],
     {"s.json": {"$schema": "http://json-schema.org/draft-07/schema#"}}, "draft 2020-12"),
    ("unresolvable $ref", [{"name": "a.b.v1", "schema": "contracts/s.json"}],
     {"s.json": {"$ref": "https://example.com/other.json"}}, "not a valid JSON Schema"),
    ("not an object", [{"name": "a.b.v1", "schema": "contracts/s.json"}], {"s.json": [1]},
     "is an object"),
    ("bad name", [{"name": "Acme.Ticket", "schema": "contracts/s.json"}], {"s.json": {}},
     "not lowercase dotted"),
    ("no version", [{"name": "acme.ticket", "schema": "contracts/s.json"}], {"s.json": {}},
     "ending in .v<N>"),
    ("empty name", [{"name": "", "schema": "contracts/s.json"}], {"s.json": {}},
     "not lowercase dotted"),
    ("long name", [{"name": "a" * 100 + ".v1", "schema": "contracts/s.json"}], {"s.json": {}},
     "at most 100"),
    ("built-in name", [{"name": "im.segments.v1", "schema": "contracts/s.json"}],
     {"s.json": {}}, "built-in"),
    ("rich output name", [{"name": "kandev.rich_output.v1", "schema": "contracts/s.json"}],
     {"s.json": {}}, "built-in"),
    ("plain name", [{"name": "text.plain.v1", "schema": "contracts/s.json"}], {"s.json": {}},
     "built-in"),
    ("duplicate", [{"name": "a.b.v1", "schema": "contracts/s.json"},
                   {"name": "a.b.v1", "schema": "contracts/s.json"}], {"s.json": {}},
     "registered twice"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("why", "entries", "files", "problem"), BAD_CASES, ids=[c[0] for c in BAD_CASES]
)
def test_a_bad_schema_contract_stops_the_start_with_one_message(
    tmp_path: Path, why: str, entries: list[dict[str, Any]], files: dict[str, Any], problem: str
) -> None:
    config = write_config(tmp_path, entries, files)
    settings = load_settings(config)
    with pytest.raises(ContractLoadError) as caught:
        disk_gate(settings)
    message = str(caught.value)
    assert problem in message and "\n" not in message
    assert entries[-1]["name"] in message and entries[-1]["schema"] in message


def test_an_oversized_schema_file_is_refused(tmp_path: Path) -> None:
    big = '{"description": "' + "x" * MAX_SCHEMA_BYTES + '"}'
    config = write_config(tmp_path, [{"name": "a.b.v1", "schema": "contracts/s.json"}],
                          {"s.json": big})  # fmt: skip
    with pytest.raises(ContractLoadError, match="larger than"):
        build_registry(load_settings(config))


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    (tmp_path / "contracts").mkdir()
    os.mkfifo(tmp_path / "contracts" / "s.json")
    config = write_config(tmp_path, [{"name": "a.b.v1", "schema": "contracts/s.json"}], {})
    with pytest.raises(ContractLoadError, match="not a regular file"):
        build_registry(load_settings(config))


def test_an_extra_contract_may_not_take_a_schema_contracts_name(tmp_path: Path) -> None:
    settings = ticket_settings(tmp_path)
    settings = settings.model_copy(
        update={"extra_contracts": {"acme.ticket.v1": "tests.support.kafka:BOOM_CONTRACT"}}
    )
    with pytest.raises(ContractLoadError, match="schema_contracts has that name"):
        build_registry(settings)


def test_extra_contracts_still_register_python_objects() -> None:
    settings = Settings(extra_contracts={"boom.v1": "tests.support.kafka:BOOM_CONTRACT"})
    assert build_registry(settings)["boom.v1"].name == "boom.v1"


# ---- the command line ------------------------------------------------------------------------


def test_check_exits_2_with_one_message_for_a_bad_schema_file(tmp_path: Path) -> None:
    config = write_config(tmp_path, [{"name": "acme.ticket.v1", "schema": "contracts/s.json"}],
                          {"s.json": "{not json"})  # fmt: skip
    result = replygate("check", "--config", str(config), stdin=encode(raw_reply()) + b"\n")
    assert result.returncode == 2 and result.stdout == b""
    message = result.stderr.decode().strip()
    assert len(message.splitlines()) == 1
    assert "s.json" in message and "not valid JSON" in message and "acme.ticket.v1" in message


def test_check_judges_with_a_registered_schema(tmp_path: Path) -> None:
    entry = {"name": "acme.ticket.v1", "schema": "contracts/t.json"}
    config = write_config(tmp_path, [entry], {"t.json": TICKET})
    lines = encode(ticket(VALID)) + b"\n" + encode(ticket({"title": 1}, turn_id="t-2")) + b"\n"
    result = replygate("check", "--config", str(config), stdin=lines)
    assert result.returncode == 0, result.stderr
    first, second = (orjson.loads(x) for x in result.stdout.splitlines())
    assert first["action"] == "deliver" and second["action"] == "request_correction"
    assert {e["code"] for e in second["errors"]} == {"schema.type", "schema.required"}


def test_schema_prints_the_registered_schema(tmp_path: Path) -> None:
    config = write_config(tmp_path, [{"name": "acme.ticket.v1", "schema": "contracts/t.json"}],
                          {"t.json": TICKET})  # fmt: skip
    result = replygate("schema", "acme.ticket.v1", "--config", str(config))
    assert result.returncode == 0 and orjson.loads(result.stdout) == TICKET
    plain = replygate("schema", "text.plain.v1")
    assert plain.returncode == 0 and b"the model writes no JSON" in plain.stdout
    unknown = replygate("schema", "acme.other.v1", "--config", str(config))
    assert unknown.returncode == 2


def test_the_worker_refuses_to_start_with_a_bad_schema_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, [{"name": "acme.ticket.v1", "schema": "contracts/s.json"}],
                          {"s.json": {"type": 12}})  # fmt: skip
    try:
        assert run_worker(["--config", str(config)]) == 2
    finally:
        os.environ.pop("REPLYGATE_CONFIG_FILE", None)
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "s.json" in err and "not a valid JSON Schema" in err


def test_a_large_invalid_reply_is_told_its_first_error_only() -> None:
    """Listing errors costs time per error: past 10,000 values only the first is listed."""
    contract = SchemaContract("t.v1", {"properties": {"a": {"items": {"type": "string"}}}})
    result = contract.validate(ReplyInput("tool", arguments={"a": list(range(150_000))}))
    assert [(i.path, i.code) for i in result.issues] == [
        ("a[0]", "schema.type"),
        ("$", "too_many_errors"),
    ]
    small = contract.validate(ReplyInput("tool", arguments={"a": [1, "x", 2]}))
    assert [i.path for i in small.issues] == ["a[0]", "a[2]"]
