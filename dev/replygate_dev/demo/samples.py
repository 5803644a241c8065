"""The sample file: each story of the demo, the records that tell it and what must come out.

The expected outcome of every sample lives beside the record in `samples/demo.jsonl` (the
`_demo` mapping), never inside the record itself, since records are closed. Lines sharing an
`_demo.id` are the parts of one sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson
from pydantic import ValidationError

from replygate_dev.scripted_llm import Canned
from streams.client import InputRecord, input_record
from streams.settings import SchemaContractEntry, Settings

SAMPLES_DIR: Final = Path(__file__).resolve().parents[1] / "samples"
SAMPLES_FILE: Final = SAMPLES_DIR / "demo.jsonl"
# The demo's own caller-owned contract, registered beside any the settings bring.
DEMO_SCHEMA_CONTRACT: Final = {
    "name": "acme.ticket.v1",
    "schema": str(SAMPLES_DIR / "contracts" / "ticket.schema.json"),
    "instructions": "Answer with the ticket object only.",
}
INPUT_TOPICS: Final = ("replies_raw", "toolcalls_raw", "turns_control")
_TOPICS_BY_ID: Final = {"replies_raw": "turn_id", "toolcalls_raw": "call_id"}


@dataclass(frozen=True, slots=True)
class Part:
    """One record to produce: its logical topic, key, bytes, how often, and when.

    `record` is the record as the agent-side client sends it; None for a sample that no
    client would send (not JSON, not a valid envelope, a key of its own), sent as its bytes.
    """

    topic: str
    key: bytes | None
    value: bytes
    times: int = 1
    after: str | None = None
    record: InputRecord | None = None


def _client_record(record: Any, meta: Mapping[str, Any]) -> InputRecord | None:
    if not isinstance(record, dict) or "key" in meta:
        return None
    try:
        return input_record(record)
    except ValidationError:
        return None


@dataclass
class Sample:
    """One story of the demo: what it is, the records that tell it, what must come out."""

    id: str
    what: str
    expect: dict[str, Any]
    parts: list[Part] = field(default_factory=list)
    llm: dict[str, Any] | None = None
    ref: str | None = None  # the turn_id or call_id the gate's outputs carry


def _key_of(topic: str, record: Any, meta: Mapping[str, Any]) -> bytes | None:
    if "key" in meta:
        return str(meta["key"]).encode()
    if not isinstance(record, dict):
        return None
    field_name = "task_id" if topic == "toolcalls_raw" else "conversation_id"
    value = record.get(field_name)
    return value.encode() if isinstance(value, str) else None


def load_samples(lines: Iterable[bytes]) -> list[Sample]:
    """Samples in file order; lines sharing an `_demo.id` are parts of one sample."""
    samples: dict[str, Sample] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        entry = orjson.loads(line)
        meta = entry["_demo"]
        topic = meta["topic"]
        if topic not in INPUT_TOPICS:
            raise ValueError(f"line {number}: unknown topic {topic!r}")
        if "record" in entry:
            record = entry["record"]
            value = orjson.dumps(record)
        else:
            record, value = None, str(entry["raw"]).encode()
        part = Part(
            topic,
            _key_of(topic, record, meta),
            value,
            int(meta.get("times", 1)),
            meta.get("after"),
            _client_record(record, meta),
        )
        sample = samples.get(meta["id"])
        if sample is None:
            if "expect" not in meta:
                raise ValueError(f"line {number}: the first line of {meta['id']} needs expect")
            ref_field = _TOPICS_BY_ID.get(topic)
            ref = record.get(ref_field) if ref_field and isinstance(record, dict) else None
            sample = samples[meta["id"]] = Sample(
                meta["id"], meta.get("what", ""), meta["expect"], llm=meta.get("llm"), ref=ref
            )
        sample.parts.append(part)
    return list(samples.values())


def read_samples(path: Path = SAMPLES_FILE) -> list[Sample]:
    with path.open("rb") as handle:
        return load_samples(handle)


def llm_script(samples: Iterable[Sample]) -> list[Canned]:
    """The scripted corrector's answers: one per sample that expects a correction call."""
    script = []
    for sample in samples:
        if sample.llm is None:
            continue
        llm = sample.llm
        script.append(
            Canned(
                match=llm["match"],
                content=llm.get("content", ""),
                status=int(llm.get("status", 200)),
                delay=float(llm.get("delay", 0.0)),
            )
        )
    return script


def with_demo_contract(settings: Settings) -> Settings:
    """The settings with the demo's JSON Schema contract added (schema paths made absolute)."""
    entries = [
        {**entry.model_dump(by_alias=True), "schema": str(settings.schema_path(entry).resolve())}
        for entry in settings.schema_contracts
    ]
    if all(entry["name"] != DEMO_SCHEMA_CONTRACT["name"] for entry in entries):
        entries.append(dict(DEMO_SCHEMA_CONTRACT))
    return settings.model_copy(
        update={"schema_contracts": [SchemaContractEntry.model_validate(e) for e in entries]}
    )
