"""A bundle that does not load, written straight to the policy topic (as another tool, or a
worker of an older release, might): every worker keeps the version it holds, counts the
refusal and goes on judging; `replygate policy publish` of the same file is refused with the
reason and writes nothing; the next good bundle is taken.

Two real worker processes on the local broker.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.policy.running import DELIVERY, PolicyDeployment, Sent, by_turn
from tests.support.kafka import REPO
from tests.support.samples import im_text, raw_reply

pytestmark = pytest.mark.kafka

ONE, TWO = "canary-one-1111", "canary-two-2222"
V1 = f'[default]\nleak_literals = ["{ONE}"]\n'
V2 = f'[default]\nleak_literals = ["{TWO}"]\n'
# Reads as a bundle; does not load: the pattern does not compile.
BAD = f'[default]\nleak_literals = ["{TWO}"]\nleak_patterns = {{ "x-y" = "(" }}\n'
REASON = "leak rule 'x-y': does not compile under RE2"


def replies(start: int, stop: int) -> list[Sent]:
    text = im_text([{"type": "text", "data": {"text": f"answer {ONE} {TWO}"}}])
    return [
        Sent(raw_reply(turn_id=f"t-{n}", conversation_id=f"c-{n}", output={"text": text}))
        for n in range(start, stop)
    ]


def delivered(stop: int) -> Any:
    return lambda out: {f"t-{n}" for n in range(stop)} <= {r["turn_id"] for r in out[DELIVERY]}


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", *args],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def wait_status(dep: PolicyDeployment, done: Callable[[list[str]], bool]) -> list[str]:
    """`replygate policy status`'s worker lines, once `done` holds (a liveness bound)."""
    deadline = time.monotonic() + 60
    while True:
        lines = [line for line in dep.policy("status") if line.startswith("worker ")]
        if done(lines) or time.monotonic() > deadline:
            return lines
        time.sleep(1)


def test_a_bundle_that_does_not_load_is_refused_whole_and_the_workers_go_on(
    tmp_path: Path,
) -> None:
    dep = PolicyDeployment(tmp_path, partitions=2)
    v1, v2, bad = dep.bundle("v1", V1), dep.bundle("v2", V2), dep.bundle("bad", BAD)
    one, two = dep.version(v1), dep.version(v2)
    from streams.policy.bundle import read_bundle

    bad_record = read_bundle(bad).canonical  # its canonical form: a worker reads it, then fails
    try:
        dep.policy("publish", v1)
        workers = dep.start_ready(2)
        dep.wait_active(workers, one)
        dep.send(replies(0, 20))
        dep.read(delivered(20))

        dep.write_policy_record("active", bad_record)
        for worker in workers:
            dep.wait_metric(worker, "replygate_policy_refused_total", 1)
        dep.send(replies(20, 40))
        out = dep.read(delivered(40))
        for worker in workers:
            assert worker.poll() is None, dep.tail()
            assert dep.metric(worker, "replygate_policy_info", role="active", version=one) == 1
            log = dep.log(worker)
            refusals = [line for line in log.splitlines() if "policy active refused" in line]
            assert len(refusals) == 1 and f"keeping {one}" in refusals[0], refusals
            assert REASON in refusals[0]
        # each worker's report says it too (a report goes out every 10 s)
        lines = wait_status(dep, lambda ls: len(ls) == 2 and all("refused 1" in x for x in ls))
        assert len(lines) == 2, lines
        assert all(f"active {one}" in x and "refused 1" in x for x in lines), lines

        # The same file through `replygate policy publish`: refused, with the reason; the
        # topic is left as it was.
        before = dep.policy_latest()
        env = {
            "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": dep.d.bootstrap_servers,
            "REPLYGATE_TOPIC_PREFIX": dep.d.prefix,
        }
        proc = cli("policy", "publish", str(bad), env=env)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert REASON in proc.stderr and proc.stdout == ""
        assert dep.policy_latest() == before

        # The workers go on: the next good bundle is taken.
        dep.policy("publish", v2)
        dep.wait_active(workers, two)
        dep.send(replies(40, 60))
        out = dep.read(delivered(60))
    finally:
        dep.stop()

    deliveries = by_turn(out[DELIVERY])
    for n in range(60):
        (record,) = deliveries[f"t-{n}"]
        want = one if n < 40 else two
        assert record["policy_version"] == want, (n, record)
        # judged under that version: V1 masks canary-one, V2 canary-two
        kept, masked = (TWO, ONE) if want == one else (ONE, TWO)
        assert kept in record["preview"] and masked not in str(record), (n, record)
