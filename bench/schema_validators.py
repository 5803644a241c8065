"""Which JSON Schema validator the caller-owned contracts use: measured, not assumed.

`python -m bench.schema_validators` checks each candidate on draft 2020-12 cases that a
2020-12 validator must get right (prefixItems, unevaluatedProperties, $dynamicRef,
dependentRequired, $ref beside other keywords, ...), then times one validation of a ticket-like
record (valid and invalid, every error listed) in microseconds. Nothing is asserted.
"""

from __future__ import annotations

import importlib
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DRAFT = "https://json-schema.org/draft/2020-12/schema"

# (schema, instance, valid?) cases whose answer differs from older drafts or needs 2020-12.
CASES: list[tuple[dict[str, Any], Any, bool]] = [
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1], True),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1, 2], False),
    ({"items": {"type": "integer"}}, [1, "x"], False),
    ({"properties": {"a": {}}, "unevaluatedProperties": False}, {"a": 1, "b": 2}, False),
    (
        {"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False},
        {"a": 1},
        True,
    ),
    ({"prefixItems": [{}], "unevaluatedItems": False}, [1, 2], False),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, False),
    ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1}, False),
    ({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s", "maxLength": 2}, "abc", False),
    ({"contains": {"type": "integer"}, "minContains": 2}, [1, "x"], False),
    ({"contains": {"type": "integer"}, "maxContains": 1}, [1, 2], False),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 1, False),
    ({"const": 1}, 1.0, True),
    ({"type": "integer"}, 1.0, True),
    ({"type": "integer"}, True, False),
    ({"enum": [False]}, 0, False),
    ({"format": "email"}, "not an email", True),  # format is an annotation by default
    (
        {
            "$id": "https://example.com/tree",
            "$dynamicAnchor": "node",
            "type": "object",
            "properties": {"children": {"type": "array", "items": {"$dynamicRef": "#node"}}},
        },
        {"children": [{"children": [1]}]},
        False,
    ),
    ({"propertyNames": {"pattern": "^[a-z]+$"}}, {"A": 1}, False),
    ({"$defs": {"n": {"type": "null"}}, "items": {"$ref": "#/$defs/n"}}, [None, 0], False),
]

# The demo's caller-owned contract: a `$ref` to a `oneOf`, an enum, `additionalProperties: false`.
TICKET: dict[str, Any] = json.loads(
    (
        Path(__file__).resolve().parent.parent
        / "dev/replygate_dev/samples/contracts/ticket.schema.json"
    ).read_text(encoding="utf-8")
)
VALID = {
    "title": "Printer on floor 3 is jammed",
    "priority": "high",
    "steps": [f"step {i}" for i in range(6)] + [{"link": "https://example.com/kb/17"}],
}
INVALID = {
    "title": "",
    "priority": "urgent",
    "steps": ["", {"link": 3}, {"link": "x", "y": 1}],
    "extra": True,
}


def _candidates() -> dict[str, Callable[[dict[str, Any]], Callable[[Any], int]]]:
    """name -> compile(schema) -> validate(instance) returning the number of errors found."""
    out: dict[str, Callable[[dict[str, Any]], Callable[[Any], int]]] = {}
    # jsonschema and jsonschema-rs share the API: Draft202012Validator(schema).iter_errors(x)
    for name, module in (("jsonschema", "jsonschema"), ("jsonschema-rs", "jsonschema_rs")):
        try:
            validator = importlib.import_module(module).Draft202012Validator
        except ImportError:
            continue

        def counter(schema: dict[str, Any], cls: Any = validator) -> Callable[[Any], int]:
            v = cls({"$schema": DRAFT, **schema})
            return lambda x: sum(1 for _ in v.iter_errors(x))

        out[name] = counter
    try:
        from schemas.schema_contract import compile_schema, schema_issues

        def gate(schema: dict[str, Any]) -> Callable[[Any], int]:
            v = compile_schema({"$schema": DRAFT, **schema})
            return lambda x: len(schema_issues(v, x))

        out["replygate (rs + Issues)"] = gate
    except ImportError:
        pass
    try:
        import fastjsonschema

        def fast(schema: dict[str, Any]) -> Callable[[Any], int]:
            check = fastjsonschema.compile({"$schema": DRAFT, **schema})

            def run(x: Any) -> int:
                try:
                    check(x)
                except fastjsonschema.JsonSchemaException:
                    return 1  # the first error only
                return 0

            return run

        out["fastjsonschema"] = fast
    except ImportError:
        pass
    return out


def correctness(compile_: Callable[[dict[str, Any]], Callable[[Any], int]]) -> int:
    """How many CASES the validator answers right (a compile failure counts as wrong)."""
    right = 0
    for schema, instance, valid in CASES:
        try:
            right += (compile_(schema)(instance) == 0) == valid
        except Exception:
            continue
    return right


def microseconds(validate: Callable[[Any], int], instance: Any, rounds: int = 5) -> float:
    """Median µs for one validation over `rounds` rounds of 2,000."""
    per_round = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(2000):
            validate(instance)
        per_round.append((time.perf_counter() - start) / 2000 * 1e6)
    return statistics.median(per_round)


def main() -> int:
    print(f"{'validator':24s} {'2020-12 cases':>14s} {'valid µs':>10s} {'invalid µs':>11s}")
    for name, compile_ in _candidates().items():
        right = correctness(compile_)
        try:
            validate = compile_(TICKET)
            ok, bad = microseconds(validate, VALID), microseconds(validate, INVALID)
            timing = f"{ok:10.1f} {bad:11.1f}"
        except Exception as exc:
            timing = f"  cannot compile the ticket schema ({type(exc).__name__})"
        print(f"{name:24s} {right:>9d}/{len(CASES):<4d} {timing}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
