"""A shadow bundle judges every record and sends nothing: over a crafted stream where the
candidate masks one more literal and rejects one more shape of a deployment's contract, the
disagreement counter and the audit records show exactly those turns, with the kinds they
differ in, and no output record carries anything the shadow decided.

A real worker process on the local broker.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.policy.running import CORRECTIONS, DELIVERY, DLQ, PolicyDeployment, Sent, by_turn
from tests.support.samples import im_text, raw_reply

pytestmark = pytest.mark.kafka

OLD, NEW = "canary-old-1111", "canary-new-2222"
TICKET = "acme.ticket.v1"
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {"title": {"type": "string"}, "priority": {"type": "string"}},
    "required": ["title"],
    "additionalProperties": False,
}
# The candidate: one literal more, and a priority must be one of two words.
STRICT = {
    **SCHEMA,
    "properties": {"title": {"type": "string"}, "priority": {"enum": ["low", "high"]}},
}
BUNDLE = """[default]
leak_literals = {literals}
[[default.schema_contracts]]
name = "{ticket}"
schema = "{schema}"
"""
ACTIVE = BUNDLE.format(literals=f'["{OLD}"]', ticket=TICKET, schema="ticket.json")
SHADOW = BUNDLE.format(literals=f'["{OLD}", "{NEW}"]', ticket=TICKET, schema="strict.json")

# turn -> (how it is sent, the kinds the shadow disagrees in)
AGREE = ("t-plain-0", "t-plain-1", "t-old-0", "t-old-1", "t-ticket-0", "t-ticket-1", "t-prose")
MASKING = ("t-new-0", "t-new-1", "t-new-2")
SHAPE = ("t-urgent-0", "t-urgent-1")


def im(turn: str, text: str, attempt: int = 0) -> Sent:
    output = {"text": im_text([{"type": "text", "data": {"text": text}}])}
    return Sent(
        raw_reply(turn_id=turn, conversation_id=f"c-{turn}", attempt=attempt, output=output)
    )


def ticket(turn: str, priority: str) -> Sent:
    output = {"text": orjson.dumps({"title": f"ticket {turn}", "priority": priority}).decode()}
    return Sent(
        raw_reply(turn_id=turn, conversation_id=f"c-{turn}", contract=TICKET, output=output)
    )


def stream() -> list[Sent]:
    return [
        im("t-plain-0", "nothing secret here"),
        im("t-plain-1", "nor here"),
        im("t-old-0", f"the old one {OLD}"),  # both mask it: agreement
        im("t-old-1", f"again {OLD}"),
        ticket("t-ticket-0", "low"),  # valid under both schemas
        ticket("t-ticket-1", "high"),
        Sent(
            raw_reply(turn_id="t-prose", conversation_id="c-t-prose", output={"text": "prose"})
        ),  # both reject it: one correction request, the active one's
        *(im(t, f"the new one {NEW} in {t}") for t in MASKING),
        *(ticket(t, "urgent") for t in SHAPE),
    ]


def turns_done(out: dict[str, list[dict[str, Any]]]) -> bool:
    outcomes = {r["turn_id"] for r in out["audit"]}
    return set(AGREE) | set(MASKING) | set(SHAPE) <= outcomes | {"t-prose"} and bool(
        out[CORRECTIONS]
    )


def test_a_shadow_counts_and_audits_exactly_its_disagreements_and_sends_nothing(
    tmp_path: Path,
) -> None:
    files = {
        "ticket.json": orjson.dumps(SCHEMA).decode(),
        "strict.json": orjson.dumps(STRICT).decode(),
    }
    dep = PolicyDeployment(tmp_path, partitions=1)
    active = dep.bundle("active", ACTIVE, files)
    shadow = dep.bundle("shadow", SHADOW, files)
    active_version, shadow_version = dep.version(active), dep.version(shadow)
    try:
        dep.policy("publish", active)
        (worker,) = dep.start_ready()
        dep.policy("publish", shadow, shadow=True)
        dep.wait_active([worker], active_version)
        dep.wait_shadow([worker], shadow_version)
        dep.send(stream())
        out = dep.read(turns_done)
        # the prose turn's correction: valid under both, judged under both, agreed
        dep.send([im("t-prose", "now in the contract", attempt=1)])
        out = dep.read(lambda o: "t-prose" in {r["turn_id"] for r in o[DELIVERY]})
        counted = {
            kind: dep.metric(worker, "replygate_policy_shadow_disagreements_total", kind=kind)
            for kind in ("verdict", "masking", "codes")
        }
    finally:
        dep.stop()

    # The counter: exactly the crafted records, by kind.
    assert counted == {"verdict": len(SHAPE), "masking": len(MASKING), "codes": len(SHAPE)}

    # The audit: one record per turn's outcome, the shadow's judgement beside the active one's,
    # disagreeing exactly where the counter says.
    audit = by_turn(out["audit"])
    disagreeing: dict[str, list[str]] = {}
    for turn in (*AGREE, *MASKING, *SHAPE):
        (record,) = audit[turn]
        assert record["policy_version"] == active_version, record
        assert record["shadow"] is not None, record
        assert record["shadow"]["policy_version"] == shadow_version, record
        if record["shadow"]["disagreements"]:
            disagreeing[turn] = sorted(record["shadow"]["disagreements"])
    assert disagreeing == {
        **{t: ["masking"] for t in MASKING},
        **{t: ["codes", "verdict"] for t in SHAPE},
    }
    for turn in SHAPE:
        (record,) = audit[turn]
        assert (record["verdict"], record["action"]) == ("accepted", "deliver"), record
        shadow_judgement = record["shadow"]
        assert shadow_judgement["verdict"] == "rejected", record
        assert [e["code"] for e in shadow_judgement["errors"]] == ["schema.enum"], record
    for turn in MASKING:
        (record,) = audit[turn]
        assert record["masked"] == [], record  # the active version masks nothing there
        assert record["shadow"]["masked"], record

    # Nothing the shadow judged was sent: the active version decided every output.
    deliveries = by_turn(out[DELIVERY])
    for turn in MASKING:
        (delivery,) = deliveries[turn]
        assert NEW in delivery["preview"] and not delivery["masked"], delivery
    for turn in SHAPE:
        (delivery,) = deliveries[turn]
        assert delivery["kind"] == "reply" and delivery["message"]["priority"] == "urgent"
    assert [r["turn_id"] for r in out[CORRECTIONS]] == ["t-prose"]
    assert not out[DLQ]
    for topic in (DELIVERY, CORRECTIONS, DLQ):
        for value in dep.raw_values(topic):
            assert shadow_version.encode() not in value, value
            assert orjson.loads(value)["policy_version"] == active_version
