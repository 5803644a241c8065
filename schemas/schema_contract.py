"""Contracts that a deployment brings as JSON Schemas (docs/contracts.md section 5), pure.

The reply is one JSON object (the `json` tool call or `output.text`, the transport rules of
`im.segments.v1`); validation is the schema, nothing added and nothing relaxed. Each violation is
an Issue coded `schema.<keyword>` at a path in the project's notation. Validator: jsonschema-rs
(draft 2020-12, chosen by measurement: bench/README.md), offline (a `$ref` is never fetched) and
with the linear-time regex engine, so a hostile reply cannot make a `pattern` run long.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any, Final

import jsonschema_rs
import orjson

from schemas.codes import MAX_ISSUES, NOT_JSON, SHARED_CODES
from schemas.contract import ContractBase, ContractResult, ReplyContract, ReplyInput
from schemas.issue import Issue, child_path, json_path
from schemas.issue_sink import IssueSink, capped
from schemas.json_read import is_large, parse_value
from schemas.records import Context
from schemas.text_rules import tree_control_issues

DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"
NAME_PATTERN: Final = re.compile(r"^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*\.v[0-9]+$")
MAX_NAME_CHARS: Final = 100
# Replies with more values than this get their first error only (see `schema_issues`).
MAX_LISTED_NODES: Final = 10_000

# The keywords whose failures are reported as `schema.<keyword>`: those schemas/codes.py lists.
KEYWORDS: Final = tuple(
    code.removeprefix("schema.") for code in SHARED_CODES if code.startswith("schema.")
)
_KEYWORD_SET: Final = frozenset(KEYWORDS)
# Keywords followed in a schema path by a name or an index before the next subschema.
_NAMED: Final = frozenset({"properties", "patternProperties", "$defs", "definitions",
                           "dependentSchemas", "dependentRequired"})  # fmt: skip
_INDEXED: Final = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
# jsonschema-rs error kinds -> keyword, for a path that does not name it.
_KIND_KEYWORDS: Final = {
    "AdditionalItems": "items", "AdditionalProperties": "additionalProperties",
    "AnyOf": "anyOf", "Constant": "const", "Contains": "contains",
    "ContentEncoding": "contentEncoding", "ContentMediaType": "contentMediaType", "Enum": "enum",
    "ExclusiveMaximum": "exclusiveMaximum", "ExclusiveMinimum": "exclusiveMinimum",
    "FalseSchema": "false", "Format": "format", "MaxItems": "maxItems",
    "MaxLength": "maxLength", "MaxProperties": "maxProperties", "Maximum": "maximum",
    "MinItems": "minItems", "MinLength": "minLength", "MinProperties": "minProperties",
    "Minimum": "minimum", "MultipleOf": "multipleOf", "Not": "not",
    "OneOfMultipleValid": "oneOf", "OneOfNotValid": "oneOf", "Pattern": "pattern",
    "BacktrackLimitExceeded": "pattern", "RegexEngineFailure": "pattern",
    "PropertyNames": "propertyNames", "Required": "required", "Type": "type",
    "UnevaluatedItems": "unevaluatedItems", "UnevaluatedProperties": "unevaluatedProperties",
    "UniqueItems": "uniqueItems",
}  # fmt: skip
# What each keyword asks, said without quoting the reply (the schema itself is host text).


class SchemaError(ValueError):
    """A caller-owned schema that cannot be used: invalid, not draft 2020-12, or unresolvable."""


def _schema_problem(exc: Exception) -> str:
    """The first line of a compile error (jsonschema-rs appends the offending schema part)."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return first[:300]


_SUBSCHEMA: Final = frozenset({"items", "additionalProperties", "unevaluatedProperties",
                               "unevaluatedItems", "contains", "propertyNames", "not", "if",
                               "then", "else", "contentSchema"})  # fmt: skip


def _subschemas(node: dict[str, Any]) -> Iterator[Any]:
    """The subschemas a schema object holds (never its data: `const`, `enum`, `default`)."""
    for key, value in node.items():
        if key in _SUBSCHEMA:
            yield value
        elif key in _NAMED and key != "dependentRequired" and isinstance(value, dict):
            yield from value.values()
        elif key in _INDEXED and isinstance(value, list):
            yield from value


def with_named_extras(schema: Any) -> Any:
    """The same schema, where `additionalProperties: false` has a `properties` beside it.

    Without one jsonschema-rs reports a single error that names no property; `properties: {}`
    changes nothing that is valid, and makes it list every property it refuses.
    """
    copy = orjson.loads(orjson.dumps(schema))
    stack = [copy]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("additionalProperties") is False and "properties" not in node:
            node["properties"] = {}
        stack.extend(_subschemas(node))
    return copy


def compile_schema(schema: Any, assert_formats: bool = False) -> Any:
    """A draft 2020-12 validator that never fetches and matches patterns in linear time;
    `format` is an annotation unless `assert_formats` (draft 2020-12's default is off)."""
    if not isinstance(schema, dict | bool):
        raise SchemaError("a JSON Schema is an object (or true/false)")
    if isinstance(schema, dict) and schema.get("$schema", DRAFT_2020_12) != DRAFT_2020_12:
        raise SchemaError(f"$schema must be {DRAFT_2020_12} (draft 2020-12)")
    try:
        jsonschema_rs.meta.validate(schema)
        return jsonschema_rs.Draft202012Validator(
            with_named_extras(schema),
            offline=True,
            pattern_options=jsonschema_rs.RegexOptions(),
            validate_formats=assert_formats,
        )
    except Exception as exc:  # jsonschema-rs raises its own ValidationError / ValueError
        raise SchemaError(f"not a valid JSON Schema: {_schema_problem(exc)}") from None


def failing_keyword(schema_path: Sequence[str | int], kind: str) -> str:
    """The keyword that failed: the error kind's, made precise by the schema path.

    `required` and `dependentRequired` share a kind, so do `contains` and `min/maxContains`;
    a `false` subschema is reported under the keyword that holds it (`items: false`), or as
    `false` when that is a named place (`properties.a: false`) or the root.
    """
    keyword: str | None = None
    skip = False
    for part in schema_path:
        if skip:
            skip = False
        elif isinstance(part, str):
            keyword, skip = part, part in _NAMED or part in _INDEXED
    if kind == "FalseSchema":
        return keyword if keyword in _KEYWORD_SET else "false"
    if keyword in ("dependentRequired", "minContains", "maxContains"):
        return keyword
    return _KIND_KEYWORDS.get(kind, "false")


def _context(detail: dict[str, Any]) -> dict[str, object]:
    """What a `schema.<keyword>` template may name, from jsonschema-rs's error detail."""
    types = detail.get("types") or ([detail["expected"]] if "expected" in detail else [])
    values = {
        "types": " or ".join(str(t) for t in types) or "other types",
        "limit": detail.get("limit", "the limit"),
        "multiple_of": detail.get("multiple_of", "the given number"),
        "pattern": str(detail.get("pattern", ""))[:200],
        "format": str(detail.get("format", "format"))[:100],
    }
    return values


def _detail(kind: Any) -> dict[str, Any]:
    try:
        detail = kind.as_dict()
    except Exception:
        return {}
    return detail if isinstance(detail, dict) else {}


def violation_issues(error: Any) -> Iterator[Issue]:
    """One jsonschema-rs error as Issues: named properties each get their own path."""
    kind = type(error.kind).__name__
    keyword = failing_keyword(list(error.schema_path), kind)
    code = SHARED_CODES[f"schema.{keyword}"]
    base = json_path(*error.instance_path)
    detail = _detail(error.kind)
    context = _context(detail)
    if keyword in ("required", "dependentRequired") and isinstance(detail.get("property"), str):
        yield code.issue(child_path(base, detail["property"]), **context)
        return
    unexpected = detail.get("unexpected")
    if keyword in ("additionalProperties", "unevaluatedProperties") and unexpected:
        for name in unexpected[: MAX_ISSUES + 1]:  # one more shows the list was cut
            yield code.issue(child_path(base, str(name)), **context)
        return
    yield code.issue(base, **context)


def _nodes_within(value: Any, limit: int) -> bool:
    """Whether the JSON value has at most `limit` nodes (counting stops past the limit)."""
    stack, seen = [value], 0
    while stack:
        node = stack.pop()
        seen += 1
        if seen > limit:
            return False
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


def schema_issues(validator: Any, value: Any) -> list[Issue]:
    """Every violation (at most MAX_ISSUES, then `too_many_errors`).

    Listing errors costs time per error, so a reply of more than MAX_LISTED_NODES values is
    told its first error only: a hostile reply cannot buy seconds of work with many errors.
    """
    if validator.is_valid(value):
        return []
    if not _nodes_within(value, MAX_LISTED_NODES):
        try:
            validator.validate(value)
        except jsonschema_rs.ValidationError as first_error:
            sink = IssueSink()
            sink.extend(violation_issues(first_error))
            sink.cut = True  # told the first error only
            return sink.result()
        return []
    sink = IssueSink()
    for error in validator.iter_errors(value):
        sink.extend(violation_issues(error))
        if sink.full:
            break
    return sink.result()


_INSTRUCTIONS: Final = (
    "Your previous reply broke the required format. Send it again as exactly one JSON value "
    "that matches the JSON Schema below: no Markdown code fence, no text before or after the "
    "value, no second value. Keep the content of your reply; change only its format to fix "
    "the listed errors."
)


class SchemaContract(ContractBase):
    """A caller-owned contract: a name, a draft 2020-12 schema and optional instructions."""

    def __init__(
        self,
        name: str,
        schema: dict[str, Any],
        instructions: str | None = None,
        assert_formats: bool = False,
    ):
        if len(name) > MAX_NAME_CHARS or not NAME_PATTERN.match(name):
            raise SchemaError(
                f"the name {name[:MAX_NAME_CHARS]!r} is not lowercase dotted ending in .v<N> "
                f"(e.g. acme.ticket.v1), at most {MAX_NAME_CHARS} characters"
            )
        self.name = name
        self._schema_bytes = orjson.dumps(schema)
        self._validator = compile_schema(schema, assert_formats)
        self._instructions = (
            f"{_INSTRUCTIONS}\n\n{instructions.strip()}" if instructions else _INSTRUCTIONS
        )

    def validate(self, reply: ReplyInput, context: Context | None = None) -> ContractResult:
        """The one JSON value against the schema; the value is delivered untouched.

        Any JSON value but `null`, which is no message (a schema decides the rest)."""
        del context
        message, problems = parse_value(reply)
        if message is None:
            return ContractResult(issues=problems or (NOT_JSON.issue("$", "null"),))
        issues = [
            *problems,
            *schema_issues(self._validator, message),
            *tree_control_issues(message, large=is_large(reply), read_from=reply.text),
        ]
        if issues:
            return ContractResult(issues=tuple(capped(issues)))
        return ContractResult(message=message)

    def json_schema(self) -> dict[str, Any]:
        """A fresh copy of the registered schema."""
        schema: dict[str, Any] = orjson.loads(self._schema_bytes)
        return schema

    def instructions(self) -> str:
        return self._instructions

    def notice_message(self, text: str) -> dict[str, Any]:
        """The host's notice; a caller's schema cannot describe it, so it is plain text."""
        return {"text": text}


def _check(contract: SchemaContract) -> ReplyContract:
    """For mypy: a SchemaContract is a ReplyContract (there is no instance to assign here)."""
    return contract
