"""The demo's policy part: a candidate bundle tried as a shadow, its disagreement seen in the
worker's counter and in the audit record, then promoted and enforced without a restart.

It runs after the samples and the burst, on the same worker and topics (`Demo.main` calls
`policy_story`), and says what it saw in a few lines (`render_policy`); a check that fails is a
problem the demo reports and fails on.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import orjson

from streams.broker.topology import Topology
from streams.settings import Settings

# The candidate masks one literal the worker's settings do not know.
CANARY: Final = "demo-canary-7f3a9c"
CANDIDATE: Final = f'[default]\nleak_literals = ["{CANARY}"]\n'
SWITCH_SECONDS: Final = 15.0  # a bound on each wait; the switch itself is measured by bench
STORY: Final = {
    "t-policy-plain": "Nothing secret in this one.",
    "t-policy-shadow": f"Ask {CANARY} about the release.",
    "t-policy-enforced": f"Ask {CANARY} again.",
}


@dataclass
class PolicyStory:
    """What the policy part saw: lines for the screen and the problems (none: it passed)."""

    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    switch_seconds: float | None = None

    def check(self, ok: bool, problem: str) -> bool:
        if not ok:
            self.problems.append(problem)
        return ok


def metric(port: int, name: str, **labels: str) -> float:
    """The sum of a worker metric's samples with these labels (0 when there is none)."""
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read(4 * 1024 * 1024).decode()
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
    )


async def _until(what: Callable[[], bool], alive: Callable[[], None]) -> bool:
    deadline = time.monotonic() + SWITCH_SECONDS
    while time.monotonic() < deadline:
        if what():
            return True
        alive()
        await asyncio.sleep(0.1)
    return what()


def _reply(turn: str) -> dict[str, Any]:
    text = orjson.dumps({"segments": [{"type": "text", "data": {"text": STORY[turn]}}]})
    return {
        "turn_id": turn,
        "conversation_id": f"c-{turn}",
        "platform": "im",
        "contract": "im.segments.v1",
        "attempt": 0,
        "output": {"text": text.decode()},
        "produced_at": "2026-11-30T12:00:00Z",
    }


class Outputs:
    """The deliveries and audit records of the story's turns, read as they come."""

    def __init__(self, settings: Settings) -> None:
        topology = Topology.of(settings)
        self.delivery = topology.delivery("im").name
        self.audit = topology.audit.name
        self.settings = settings
        self.seen: dict[tuple[str, str], dict[str, Any]] = {}

    async def read(self) -> None:
        from aiokafka import AIOKafkaConsumer

        from streams.broker.options import aiokafka_options

        consumer = AIOKafkaConsumer(
            self.delivery,
            self.audit,
            **aiokafka_options(self.settings),
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            metadata_max_age_ms=1000,
        )
        await consumer.start()
        try:
            while True:
                batch = await consumer.getmany(timeout_ms=200)
                for tp, messages in batch.items():
                    for message in messages:
                        self._add(tp.topic, message.value)
        finally:
            await consumer.stop()

    def _add(self, topic: str, value: bytes | None) -> None:
        with contextlib.suppress(orjson.JSONDecodeError, TypeError):
            record = orjson.loads(value or b"")
            turn = record.get("turn_id") if isinstance(record, dict) else None
            if turn in STORY:
                self.seen[("delivery" if topic == self.delivery else "audit", turn)] = record

    def has(self, *turns: str) -> bool:
        return all(("delivery", t) in self.seen and ("audit", t) in self.seen for t in turns)


async def policy_story(
    settings: Settings, producer: Any, root: Path, metrics_port: int, alive: Callable[[], None]
) -> PolicyStory:
    """Shadow, disagreement, promotion, enforcement: the worker is the demo's, running."""
    from streams.policy.topic import perform

    story = PolicyStory()
    path = root / "policy-candidate.toml"
    path.write_text(CANDIDATE, encoding="utf-8")
    outputs = Outputs(settings)
    reader = asyncio.create_task(outputs.read())

    def holds(role: str, version: str) -> Callable[[], bool]:
        return lambda: (
            metric(metrics_port, "replygate_policy_info", role=role, version=version) == 1
        )

    try:
        (line,) = await perform("publish", settings, path, shadow=True)
        version = line.split()[1]
        short = version[:19] + "…"
        if not story.check(await _until(holds("shadow", version), alive), "shadow not held"):
            return story
        for turn in ("t-policy-plain", "t-policy-shadow"):
            await producer.send(_from(turn))
        got = await _until(lambda: outputs.has("t-policy-plain", "t-policy-shadow"), alive)
        if not story.check(got, "the shadow turns' outcomes did not come"):
            return story
        _shadow_lines(story, outputs.seen, version, short, metrics_port)

        began = time.perf_counter()
        await perform("promote", settings)
        if not story.check(await _until(holds("active", version), alive), "promote not applied"):
            return story
        story.switch_seconds = time.perf_counter() - began
        await producer.send(_from("t-policy-enforced"))
        got = await _until(lambda: outputs.has("t-policy-enforced"), alive)
        if story.check(got, "the enforced turn's outcome did not come"):
            _enforced_lines(story, outputs.seen, version, short)
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await reader
    return story


def _from(turn: str) -> Any:
    from streams.client import input_record

    return input_record(_reply(turn))


def _shadow_lines(
    story: PolicyStory,
    seen: Mapping[tuple[str, str], dict[str, Any]],
    version: str,
    short: str,
    port: int,
) -> None:
    delivery, audit = seen[("delivery", "t-policy-shadow")], seen[("audit", "t-policy-shadow")]
    shadow = audit.get("shadow") or {}
    plain = (seen[("audit", "t-policy-plain")].get("shadow") or {}).get("disagreements")
    counted = metric(port, "replygate_policy_shadow_disagreements_total", kind="masking")
    story.check(CANARY in delivery.get("preview", ""), "the shadow changed a delivery")
    # without a bundle the settings file judges, and the outputs are as they always were
    story.check(delivery.get("policy_version") in (None, "settings"), "not judged by settings")
    story.check(shadow.get("policy_version") == version, "no shadow judgement in the audit")
    story.check(shadow.get("disagreements") == ["masking"], "the disagreement is not audited")
    story.check(plain == [], "a plain turn counted as a disagreement")
    story.check(counted == 1, f"{counted:g} masking disagreements counted, not 1")
    said = {"masked": shadow.get("masked"), "disagreements": shadow.get("disagreements")}
    story.lines.append(
        f"policy: candidate {short} published as a shadow; t-policy-shadow was delivered as the "
        f"settings judged it ({CANARY} in clear), the shadow would have masked it: "
        f"{counted:g} masking disagreement counted, its audit record says shadow "
        f"{orjson.dumps(said).decode()}"
    )


def _enforced_lines(
    story: PolicyStory, seen: Mapping[tuple[str, str], dict[str, Any]], version: str, short: str
) -> None:
    delivery = seen[("delivery", "t-policy-enforced")]
    story.check(delivery.get("policy_version") == version, "not judged by the promoted version")
    story.check(CANARY not in orjson.dumps(delivery).decode(), "the promoted version did not mask")
    seconds = story.switch_seconds or 0.0
    story.lines.append(
        f"policy: promoted {short}, the worker enforcing it {seconds:.1f} s later, without a "
        f'restart; t-policy-enforced delivered as "{delivery.get("preview", "")}" '
        f"(policy_version {short})"
    )


def render_policy(console: Any, story: PolicyStory | None) -> list[str]:
    """The policy part's lines; `["policy"]` when it did not run or a check failed."""
    if story is None:
        console.print("[red]policy: the policy part did not run[/]")
        return ["policy"]
    for line in story.lines:
        console.print(line, markup=False, highlight=False)
    for problem in story.problems:
        console.print(f"[red]policy: {problem}[/]")
    return ["policy"] if story.problems else []
