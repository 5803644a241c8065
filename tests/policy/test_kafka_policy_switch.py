"""A new policy version reaches two running workers under steady traffic: each applies it at a
batch boundary without a restart, every outcome names the version that judged its turn, no turn
has outcomes of two versions, and on each input partition the old version gives way to the new
one once, within 5 s of the publication by the records' own times (docs/policy.md)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.policy.running import CORRECTIONS, DELIVERY, PolicyDeployment, Sent
from tests.support.kafka import read_from_start
from tests.support.samples import im_text, raw_reply

pytestmark = pytest.mark.kafka

OLD = '[default]\nleak_literals = ["canary-old-0001"]\n'
NEW = '[default]\nleak_literals = ["canary-new-0002"]\n'
# The spec's bound between a publication and the last record judged under the old version.
SWITCH_BOUND_SECONDS = 5.0
CONVERSATIONS = 16


def turn(n: int, attempt: int = 0, valid: bool = True) -> dict[str, Any]:
    text = im_text([{"type": "text", "data": {"text": f"reply {n}"}}]) if valid else "prose"
    return raw_reply(
        turn_id=f"t-{n}",
        conversation_id=f"c-{n % CONVERSATIONS}",
        attempt=attempt,
        output={"text": text},
    )


class Traffic(threading.Thread):
    """A turn every ~60 ms over 16 conversations; every fourth turn is invalid first and its
    correction comes 1.5 s later, so turns are pending across the switch."""

    def __init__(self, d: PolicyDeployment, seconds: float) -> None:
        super().__init__(daemon=True)
        self.d, self.seconds, self.sent = d, seconds, 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            corrections: list[tuple[float, int]] = []
            end = time.monotonic() + self.seconds
            n = 0
            while time.monotonic() < end or corrections:
                now = time.monotonic()
                due = [m for at, m in corrections if at <= now]
                corrections = [(at, m) for at, m in corrections if at > now]
                batch = [Sent(turn(m, attempt=1)) for m in due]
                if now < end:
                    for _ in range(4):
                        invalid = n % 4 == 3
                        batch.append(Sent(turn(n, valid=not invalid)))
                        if invalid:
                            corrections.append((now + 1.5, n))
                        n += 1
                if batch:
                    self.d.send(batch)
                time.sleep(0.25)
            self.sent = n
        except BaseException as exc:  # the test says it
            self.error = exc


def test_two_workers_switch_versions_under_traffic_one_version_per_turn(tmp_path: Path) -> None:
    d = PolicyDeployment(tmp_path, partitions=2)
    old, new = d.bundle("old", OLD), d.bundle("new", NEW)
    v_old, v_new = d.version(old), d.version(new)
    d.policy("publish", old)
    try:
        workers = d.start_ready(2)
        d.wait_active(workers, v_old)
        pids = [w.pid for w in workers]
        traffic = Traffic(d, seconds=12.0)
        traffic.start()
        time.sleep(5.0)
        d.policy("publish", new)
        d.wait_active(workers, v_new)  # both apply it, without a restart
        traffic.join(120)
        assert traffic.error is None and not traffic.is_alive()
        total = traffic.sent

        def done(out: dict[str, list[dict[str, Any]]]) -> bool:
            ended = {r["turn_id"] for r in out[DELIVERY] if r.get("kind") != "progress"}
            return len(ended) >= total

        out = d.read(done)
        assert [w.poll() for w in workers] == [None, None] and [w.pid for w in workers] == pids
        published = publication_time(d, v_new)
        inputs = input_positions(d, total + total // 4)
    finally:
        d.stop()

    # every outcome names a version; a turn's outcomes (its correction request and its
    # delivery) name one
    versions: dict[str, set[str]] = {}
    for record in out[DELIVERY] + out[CORRECTIONS]:
        versions.setdefault(record["turn_id"], set()).add(record["policy_version"])
    assert len(versions) == total
    assert all(len(v) == 1 for v in versions.values()), {
        t: v for t, v in versions.items() if len(v) > 1
    }
    turn_version = {t: next(iter(v)) for t, v in versions.items()}
    assert set(turn_version.values()) == {v_old, v_new}
    # a corrected turn begun under the old version was delivered under it
    corrected = {r["turn_id"] for r in out[DELIVERY] if r["corrected"]}
    assert any(turn_version[t] == v_old for t in corrected)
    # per input partition, in offset order: the old version, then the new one, switched once;
    # the last turn judged under the old version was produced within 5 s of the publication
    assert {p for p, _o, _t in inputs.values()} == {0, 1}
    for partition in (0, 1):
        ordered = sorted(
            (offset, turn_version[t], at) for t, (p, offset, at) in inputs.items() if p == partition
        )
        kinds = [v for _o, v, _at in ordered]
        cut = kinds.index(v_new)
        assert set(kinds[:cut]) == {v_old} and set(kinds[cut:]) == {v_new}, partition
        last_old = max(at for _o, v, at in ordered if v == v_old)
        assert last_old - published <= SWITCH_BOUND_SECONDS, (partition, last_old - published)
    # the audit names the same version for every outcome of a turn
    audit = [r for r in out["audit"] if r.get("turn_id") in turn_version]
    assert audit and all(r["policy_version"] == turn_version[r["turn_id"]] for r in audit)


def publication_time(d: PolicyDeployment, version: str) -> float:
    """The broker time of the `active` record that published `version`."""
    rows = asyncio.run(
        read_from_start(
            [d.topology.policy.name],
            lambda got: any(isinstance(t, float) for t in got),
            lambda _topic, m: (
                m.timestamp / 1000
                if m.key == b"active" and m.value and _version_of(m.value) == version
                else None
            ),
            30.0,
            0.0,
        )
    )
    return min(t for t in rows if isinstance(t, float))


def _version_of(value: bytes) -> str:
    from streams.policy.bundle import version_of

    return version_of(value)


def input_positions(d: PolicyDeployment, total: int) -> dict[str, tuple[int, int, float]]:
    """Each turn's attempt-0 record: its partition, offset and broker time."""
    topic = d.topic("replies_raw")
    rows = asyncio.run(
        read_from_start(
            [topic],
            lambda got: len(got) >= total,
            lambda _topic, m: (m.partition, m.offset, m.timestamp / 1000, orjson.loads(m.value)),
            10.0,
            0.0,
        )
    )
    return {
        value["turn_id"]: (partition, offset, at)
        for partition, offset, at, value in rows
        if value["attempt"] == 0
    }
