"""What came out of the gate for each sample, and whether it is what the sample expects.

`Tracker` routes every record read from the gate's topics to the sample it belongs to;
`evaluate` compares what a sample saw with its `expect` and names every mismatch.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from replygate_dev.demo.samples import Part, Sample
from streams.broker.topology import Topology
from streams.settings import Settings


@dataclass
class Seen:
    """The gate's outputs for one sample."""

    finals: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    corrections: int = 0
    llm_replies: int = 0


@dataclass(frozen=True, slots=True)
class Result:
    ok: bool
    outcome: str
    detail: str
    problems: tuple[str, ...] = ()


def _short(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a space, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"


def _outcome(topic: str, record: Mapping[str, Any]) -> str:
    for name in ("kind", "status", "reason"):
        if name in record:
            return f"{topic} · {record[name]}"
    return topic


def _details(sample: Sample, seen: Seen, record: Mapping[str, Any] | None) -> list[str]:
    """A few words on what happened, from the records themselves."""
    words: list[str] = []
    if record is not None:
        if record.get("corrected"):
            words.append("corrected by the corrector")
        for hit in record.get("masked") or ():
            words.append(f"masked {hit['rule']} at {hit['path']}")
        for notice in record.get("notices") or ():
            words.append(f"notice {notice['reason']} at {notice['path']}")
        message = record.get("message")
        if isinstance(message, dict) and message.get("citations"):
            words.append(f"{len(message['citations'])} citations")
        generic = record.get("metadata", {}).get("normalized", {}).get("generic", {})
        if generic.get("output"):
            charts = generic["output"]["resolved_charts"]
            words.append(f"CSV snapshot: {sum(len(c['labels']) for c in charts)} rows")
        if record.get("status") == "error":
            words.append(_short(str(record.get("text", "")), 60))
        if "source_topic" in record:
            words.append(f"offset {record['offset']} → DLQ")
        if record.get("kind") in ("progress", "reply") and record.get("preview"):
            words.append(f"preview: {_short(str(record['preview']), 48)}")
        if record.get("kind") == "failure_notice":
            words.append(
                "correction invalid too" if seen.llm_replies else "no correction by the deadline"
            )
    if seen.corrections and not (record or {}).get("corrected"):
        words.insert(0, "correction requested")
    if record is None and seen.llm_replies:
        words.append("late correction dropped")
    times = sum(p.times for p in sample.parts if p.topic != "turns_control")
    if times > 1:
        words.append(f"sent {times}×, delivered {len(seen.finals)}×")
    if any(p.topic == "turns_control" for p in sample.parts):
        words.append("cancelled")
    if not words:
        words.append("delivered as sent" if record is not None else "nothing to deliver")
    return words


def evaluate(sample: Sample, seen: Seen, display: Mapping[str, str] | None = None) -> Result:
    """Compare what came out with the sample's `expect`; every mismatch is named.

    `expect.topic` is a logical name (`delivery.im`, `toolresults`, `dlq`, or null for
    nothing); `display` maps it to the name shown in the table.
    """
    shown = display or {}
    expect = sample.expect
    problems: list[str] = []
    want_topic = expect.get("topic")
    record: dict[str, Any] | None = None
    if want_topic is None:
        if seen.finals:
            problems.append(f"expected nothing, got {len(seen.finals)} record(s)")
        outcome = "nothing delivered"
    else:
        if len(seen.finals) != 1:
            problems.append(f"expected one record on {want_topic}, got {len(seen.finals)}")
        if seen.finals:
            topic, record = seen.finals[0]
            if topic != want_topic:
                problems.append(f"went to {topic}, not {want_topic}")
            outcome = _outcome(shown.get(topic, topic), record)
        else:
            outcome = "nothing yet"
    if record is not None:
        problems.extend(_field_problems(expect, record))
    if "correction" in expect and bool(seen.corrections) != expect["correction"]:
        problems.append(f"correction requested: {bool(seen.corrections)}")
    if "llm_reply" in expect and bool(seen.llm_replies) != expect["llm_reply"]:
        problems.append(f"corrector answered: {bool(seen.llm_replies)}")
    detail = "; ".join(_details(sample, seen, record))
    return Result(not problems, outcome, detail, tuple(problems))


def _field_problems(expect: Mapping[str, Any], record: Mapping[str, Any]) -> list[str]:
    problems = []
    for name in ("kind", "corrected", "status", "reason"):
        if name in expect and record.get(name) != expect[name]:
            problems.append(f"{name} is {record.get(name)!r}, not {expect[name]!r}")
    if "masked" in expect:
        rules = sorted({hit["rule"] for hit in record.get("masked") or ()})
        if rules != sorted(expect["masked"]):
            problems.append(f"masked rules {rules}, not {sorted(expect['masked'])}")
    if "notices" in expect:
        reasons = sorted({n["reason"] for n in record.get("notices") or ()})
        if reasons != sorted(expect["notices"]):
            problems.append(f"notices {reasons}, not {sorted(expect['notices'])}")
    if "citations" in expect:
        message = record.get("message")
        count = len(message.get("citations") or ()) if isinstance(message, dict) else 0
        if count != expect["citations"]:
            problems.append(f"{count} citations, not {expect['citations']}")
    if "snapshot" in expect:
        generic = record.get("metadata", {}).get("normalized", {}).get("generic", {})
        if bool(generic.get("output")) != expect["snapshot"]:
            problems.append(f"snapshot present: {bool(generic.get('output'))}")
    return problems


def expected_outcomes(samples: Iterable[Sample], extra: Mapping[str, int]) -> Counter[str]:
    """The worker's outcome counts the samples (plus warm-up and burst) must produce."""
    counts: Counter[str] = Counter(extra)
    for sample in samples:
        counts.update(sample.expect.get("outcomes", ()))
    return counts


class Tracker:
    """Routes every record read from the gate's topics to the sample it belongs to."""

    def __init__(self, settings: Settings, samples: list[Sample]) -> None:
        topology = Topology.of(settings)
        watched = (topology.replies, *topology.outputs())
        self.logical = {t.name: t.logical for t in watched}
        self.display = {t.logical: topology.plain_name(t) for t in watched}
        self.replies_topic = topology.replies.name
        self.samples = samples
        self.seen: dict[str, Seen] = {s.id: Seen() for s in samples}
        self.by_ref = {s.ref: s.id for s in samples if s.ref is not None}
        self.by_offset: dict[tuple[int, int], str] = {}
        self.burst_delivered = 0
        self.last_burst_at = 0.0

    def produced(self, sample: Sample, part: Part, partition: int, offset: int) -> None:
        if part.topic == "replies_raw":
            self.by_offset[(partition, offset)] = sample.id

    def add(self, topic: str, value: bytes) -> None:
        logical = self.logical.get(topic)
        if logical is None:
            return
        try:
            record = orjson.loads(value)
        except orjson.JSONDecodeError:
            return  # our own malformed sample, read back from replies.raw
        if not isinstance(record, dict):
            return
        if logical == "dlq":
            if record.get("source_topic") == self.replies_topic:
                sample_id = self.by_offset.get((record["partition"], record["offset"]))
                if sample_id is not None:
                    self.seen[sample_id].finals.append((logical, record))
            return
        ref = record.get("call_id") if logical == "toolresults" else record.get("turn_id")
        if logical.startswith("delivery.") and str(ref).startswith("burst-"):
            self.burst_delivered += 1
            self.last_burst_at = time.perf_counter()
            return
        sample_id = self.by_ref.get(ref) if isinstance(ref, str) else None
        if sample_id is None:
            return
        seen = self.seen[sample_id]
        if logical == "corrections":
            seen.corrections += 1
        elif logical == "replies_raw":
            provider = record.get("provider") or ""
            if record.get("attempt") == 1 and provider.startswith("corrector"):
                seen.llm_replies += 1
        else:
            seen.finals.append((logical, record))

    def settled(self, sample: Sample) -> bool:
        """Whether everything the sample waits for has come out (nothing-expected: barrier)."""
        seen, expect = self.seen[sample.id], sample.expect
        if expect.get("topic") is not None and not seen.finals:
            return False
        if expect.get("correction") and not seen.corrections:
            return False
        return not (expect.get("llm_reply") and not seen.llm_replies)

    def ready(self, part: Part, sample: Sample) -> bool:
        if part.after is None:
            return True
        if part.after == "correction_requested":
            return self.seen[sample.id].corrections > 0
        raise ValueError(f"{sample.id}: unknown condition {part.after!r}")
