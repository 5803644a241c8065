"""A worker SIGKILLed right after it applied a new policy version, with turns in flight under
the old one: after recovery no turn has two different outcomes, and every outcome's version is
the version that judged its turn's first record, also where the replay runs on a worker whose
active version is another (a rollback before it started).

Real worker processes on the local broker. The two versions mask different literals, so a
record judged under the wrong version would come out different (a conflicting outcome), not
only labelled differently.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.policy.running import (
    CORRECTIONS,
    DELIVERY,
    DLQ,
    PolicyDeployment,
    Sent,
    by_turn,
    killed,
)
from tests.support.samples import im_text, raw_reply

pytestmark = pytest.mark.kafka

ONE, TWO = "canary-one-1111", "canary-two-2222"
V1 = f'[default]\nleak_literals = ["{ONE}"]\n'
V2 = f'[default]\nleak_literals = ["{TWO}"]\n'

PENDING = range(0, 10)  # invalid under V1: correction requested, corrected after the switch
VALID_V1 = range(10, 20)  # delivered under V1 before the switch
VALID_V2 = range(20, 30)  # first judged by the killed worker, under V2
PENDING_V2 = range(30, 35)  # invalid, first judged under V2: their correction requests


def reply(n: int, attempt: int = 0, valid: bool = True) -> Sent:
    text = im_text([{"type": "text", "data": {"text": f"answer {n} {ONE} {TWO}"}}])
    output = {"text": text} if valid else {"text": f"prose {n}"}
    return Sent(
        raw_reply(turn_id=f"t-{n}", conversation_id=f"c-{n % 7}", attempt=attempt, output=output)
    )


def complete(out: dict[str, list[dict[str, Any]]]) -> bool:
    delivered = {r["turn_id"] for r in out[DELIVERY]}
    requested = {r["turn_id"] for r in out[CORRECTIONS]}
    wanted = {f"t-{n}" for r in (PENDING, VALID_V1, VALID_V2) for n in r}
    return (
        wanted <= delivered
        and {f"t-{n}" for r in (PENDING, PENDING_V2) for n in r} <= requested
        and bool(out[DLQ])
    )


def wait_replayed(dep: PolicyDeployment, worker: subprocess.Popen[bytes]) -> bool:
    """Whether the worker replayed input records within a bound (False: it did not, or it
    stopped)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and worker.poll() is None:
        if dep.replayed(worker) > 0:
            return True
        time.sleep(0.5)
    return dep.replayed(worker) > 0


@pytest.mark.parametrize("replacement", ["same version", "after a rollback"])
def test_a_kill_right_after_a_switch_keeps_one_version_per_turn(
    tmp_path: Path, replacement: str
) -> None:
    dep = PolicyDeployment(tmp_path, partitions=1)
    v1, v2 = dep.bundle("v1", V1), dep.bundle("v2", V2)
    one, two = dep.version(v1), dep.version(v2)
    try:
        dep.policy("publish", v1)
        # Turns begun under V1: ten wait for their correction, ten are delivered.
        (first,) = dep.start_ready()
        dep.wait_active([first], one)
        dep.send([reply(n, valid=False) for n in PENDING] + [reply(n) for n in VALID_V1])
        dep.read(lambda out: len(out[CORRECTIONS]) >= 10 and len(out[DELIVERY]) >= 10)
        first.terminate()
        first.wait(60)

        # The next worker is armed to die once its first batch's outputs are acknowledged,
        # before that batch's input is committed. It applies V2 while idle, then gets the
        # corrections of the V1 turns, new turns and a record that is no JSON, in one burst.
        victim = dep.start(REPLYGATE_FAILPOINT="after_outputs@1")
        dep.wait_active([victim], one)
        dep.policy("publish", v2)
        dep.wait_active([victim], two)
        burst = [reply(n, attempt=1) for n in PENDING]
        burst += [reply(n) for n in VALID_V2]
        burst += [reply(n, valid=False) for n in PENDING_V2]
        burst.append(Sent(b"not json at all", key="c-dead"))
        dep.send(burst)
        assert killed(victim), f"the worker did not die at its failpoint\n{dep.tail()}"
        assert "failpoint after_outputs: SIGKILL" in dep.log(victim)

        if replacement == "after a rollback":
            assert dep.policy("rollback") == [f"active {one}"]
        after = dep.start()
        # The replay path is taken: the new worker finds the killed batch's state writes
        # (said in its log before it writes or sends anything of that batch again).
        assert wait_replayed(dep, after), dep.tail()
        out = dep.read(complete, timeout=180)
        if replacement == "after a rollback":
            dep.wait_active([after], one)
    finally:
        dep.stop()

    deliveries = by_turn(out[DELIVERY])
    # No turn has two different outcomes (a replay re-sends the identical record).
    values: dict[str, set[bytes]] = {}
    for value in dep.raw_values(DELIVERY):
        values.setdefault(orjson.loads(value)["turn_id"], set()).add(value)
    conflicting = {turn: len(v) for turn, v in values.items() if len(v) > 1}
    assert not conflicting, conflicting

    def judged_under(n: int, version: str, kept: str, masked: str) -> None:
        (delivery,) = {orjson.dumps(d) for d in deliveries[f"t-{n}"]}
        record = orjson.loads(delivery)
        assert record["policy_version"] == version, (n, record)
        assert kept in record["preview"] and masked not in delivery.decode(), (n, record)

    # Each outcome carries the version that judged its turn's first record, and was judged
    # under it: V1 masks canary-one, V2 canary-two.
    for n in (*PENDING, *VALID_V1):
        judged_under(n, one, TWO, ONE)
    for n in PENDING:
        assert all(d["corrected"] for d in deliveries[f"t-{n}"])
    for n in VALID_V2:
        judged_under(n, two, ONE, TWO)
    requests = by_turn(out[CORRECTIONS])
    for n in PENDING:
        assert {r["policy_version"] for r in requests[f"t-{n}"]} == {one}
    for n in PENDING_V2:
        assert {r["policy_version"] for r in requests[f"t-{n}"]} == {two}
    # A record that writes no turn state (a dead letter) takes the switch offset's version.
    assert {d["policy_version"] for d in out[DLQ]} == {two}
    # The audit says the same version for every outcome of a turn.
    for turn, records in by_turn(out["audit"]).items():
        if turn in deliveries:
            want = {d["policy_version"] for d in deliveries[turn]}
            assert {r["policy_version"] for r in records} == want, (turn, records)
