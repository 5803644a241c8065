"""Scale and crash under traffic: turns (with corrections by the scripted corrector and cancels)
produced at a steady rate while the Deployment goes 2 -> 4 replicas, a worker pod crashes
(its process SIGKILLed, the pod force-deleted) and it goes 4 -> 1 (graceful). Every turn has
exactly one outcome, nothing conflicts, nothing is lost, no secret reaches a topic; the repeats
and the longest delivery pause are reported (K8S_SCALE_TURNS, K8S_SCALE_RATE size the run).
Then a scale-in alone (2 -> 1: the pod's termination, SIGTERM) under traffic repeats nothing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from replygate_dev.scripted_llm import Canned, ScriptedLLM

from tests.k8s.kube import kubectl, scale, wait_ready, worker_pods
from tests.k8s.traffic import (
    CANCELLED,
    FIXABLE,
    GOOD,
    HOPELESS,
    Producer,
    Record,
    all_outcomes,
    longest_wait_s,
    new_run,
    read_outputs,
    this_run,
)
from tests.support.crash_harness import Report, judge

TURNS = int(os.environ.get("K8S_SCALE_TURNS", "5000"))
RATE = float(os.environ.get("K8S_SCALE_RATE", "40"))
# Each stage runs under traffic a while (and is scraped) before the next.
HOLD_SECONDS = 15.0
# The graceful scale-in's traffic: a third before the pod is terminated, the rest after.
GRACEFUL_TURNS = int(os.environ.get("K8S_GRACEFUL_TURNS", "1200"))
REPORT = Path(os.environ.get("K8S_REPORT_DIR", ".run")) / "k8s-scale-report.txt"
# The corrector answers a cancelled turn late, so that its cancel is read first.
SCRIPT = [
    Canned(FIXABLE, content=GOOD),
    Canned(HOPELESS, content="still prose, not JSON"),
    Canned(CANCELLED, content=GOOD, delay=3.0),
]


def crash(pod: dict[str, object]) -> None:
    """SIGKILL the worker's process from the host, then force-delete its pod."""
    status = pod["status"]
    assert isinstance(status, dict)
    container_id = status["containerStatuses"][0]["containerID"].split("://", 1)[1]
    ctr = ["ctr", "-a", os.environ["K8S_CONTAINERD"], "-n", "k8s.io"]
    tasks = subprocess.run(
        [*ctr, "tasks", "ls"], capture_output=True, text=True, check=True, timeout=30
    ).stdout.splitlines()
    (pid,) = [int(line.split()[1]) for line in tasks if line.startswith(container_id)]
    os.kill(pid, signal.SIGKILL)
    meta = pod["metadata"]
    assert isinstance(meta, dict)
    kubectl("-n", "replygate", "delete", "pod", meta["name"], "--grace-period=0", "--force")


def outcomes(workers: str, turns: int, run: str) -> tuple[list[Record], Report]:
    """A traffic run's output records (its own, ids without the prefix) once every turn has
    its outcome, and how they judge."""
    records = this_run(asyncio.run(read_outputs(workers, all_outcomes(turns, run), 300)), run)
    return records, judge([(t, k, v) for t, k, v, _ts in records], turns, corrections=True)


@pytest.fixture
def corrector() -> object:
    """The scripted corrector on the pod bridge's gateway, where the local overlay points."""
    with ScriptedLLM(SCRIPT, host="10.244.0.1", port=18080) as llm:
        yield llm


def test_scale_and_crash_under_traffic(workers: str, corrector: object, prometheus: object) -> None:
    producer = Producer(workers, TURNS, RATE)
    producer.start()
    steps: list[str] = []
    try:
        producer.wait_produced(TURNS // 10, 120)
        scale(4)
        wait_ready(4)
        steps.append(f"2->4 ready at turn {producer.produced}")
        time.sleep(HOLD_SECONDS)
        victim = worker_pods()[0]
        crash(victim)
        wait_ready(4)
        steps.append(f"crash replaced at turn {producer.produced}")
        time.sleep(HOLD_SECONDS)
        scale(1)
        wait_ready(1)
        steps.append(f"4->1 ready at turn {producer.produced}")
    finally:
        producer.join(TURNS / RATE + 300)
    assert producer.error is None, producer.error
    records, report = outcomes(workers, TURNS, producer.prefix)
    pause = longest_wait_s(records, producer.sent_ms)
    line = f"{report.line()} longest_wait_s={pause:.2f} rate={RATE:g}/s steps: {'; '.join(steps)}"
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(line + "\n")
    print(line)
    assert not report.lost, report.lost[:20]
    assert not report.conflicting, report.conflicting[:20]
    assert not report.wrong_kind, report.wrong_kind[:20]
    assert not report.unexpected, report.unexpected[:20]
    assert report.secrets == 0
    assert report.dead_letters == 0
    assert report.corrected > 0  # the scripted corrector was reached from the pods


def test_a_graceful_scale_in_under_traffic_repeats_nothing(workers: str, corrector: object) -> None:
    """2 -> 1 replicas while turns flow: the terminated pod finishes its batch, commits and
    leaves the group, so the worker taking its partitions starts where it stopped: every turn
    one outcome and not one delivery twice (a crash may repeat; a graceful stop must not)."""
    scale(2)
    wait_ready(2)
    run = new_run()
    producer = Producer(workers, GRACEFUL_TURNS, RATE, prefix=run)
    producer.start()
    try:
        producer.wait_produced(GRACEFUL_TURNS // 3, 120)
        stopping = {pod["metadata"]["name"] for pod in worker_pods()}
        scale(1)
        wait_ready(1)
        assert len(stopping - {pod["metadata"]["name"] for pod in worker_pods()}) == 1
        at = producer.produced
    finally:
        producer.join(GRACEFUL_TURNS / RATE + 300)
    assert producer.error is None, producer.error
    assert 0 < at < GRACEFUL_TURNS  # the pod stopped while turns were flowing
    _records, report = outcomes(workers, GRACEFUL_TURNS, run)
    line = f"graceful 2->1 at turn {at}: {report.line()}"
    with REPORT.open("a") as out:
        out.write(line + "\n")
    print(line)
    assert not report.lost, report.lost[:20]
    assert not report.conflicting, report.conflicting[:20]
    assert report.repeats == 0
    assert report.corrected > 0
