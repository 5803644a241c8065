"""Kill a worker at a chosen point, start another, and check every turn's one outcome.

Used by the crash tests (`tests/worker/test_kafka_resilience.py`, one kill point each) and by the
soak (`make crash N=...`, random points). A run produces a mix of turns, waits until the armed
worker has died by SIGKILL (so the path under test was taken), starts a clean worker, produces the
corrections, and reads every output topic.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tests.support.kafka import Deployment, collect, publish
from tests.support.samples import GITHUB_PAT, im_text, raw_reply

OUTPUT_TOPICS = ("delivery.im", "corrections.requests", "replies.dlq")
REPLAY_LINE = re.compile(r"replayed (\d+) input records")


NOTICE, REPLY, CORRECTED = ("failure_notice", False), ("reply", False), ("reply", True)


def expected(i: int, corrections: bool) -> set[tuple[str, bool]]:
    """Turn i's possible outcomes (delivery kind, corrected); empty: nothing is delivered.

    A corrected turn may also end in the notice when a loaded machine lets the deadline pass
    before its correction arrives: either is one outcome of the right kind.
    """
    if i % 10 == 7:
        return set()  # cancelled
    if i % 10 == 0 or (i % 10 == 5 and not corrections):
        return {NOTICE}
    return {CORRECTED, NOTICE} if i % 10 == 5 else {REPLY}


def conversation(i: int) -> str:
    return f"c-{i % 97}"


def turn_records(start: int, stop: int) -> list[tuple[str, dict[str, Any]]]:
    """Valid (some with a secret to mask), invalid to be corrected, invalid to expire."""
    out = []
    for i in range(start, stop):
        conv, turn = conversation(i), f"t-{i}"
        if i % 10 in (0, 5, 7):
            record = raw_reply(turn_id=turn, conversation_id=conv, output={"text": "prose"})
        else:
            secret = f" key {GITHUB_PAT}" if i % 10 == 3 else ""
            text = im_text([{"type": "text", "data": {"text": f"answer {i}{secret}"}}])
            record = raw_reply(turn_id=turn, conversation_id=conv, output={"text": text})
        out.append((conv, record))
    return out


def cancel_records(start: int, stop: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            conversation(i),
            {"turn_id": f"t-{i}", "conversation_id": conversation(i), "action": "cancel"},
        )
        for i in range(start, stop)
        if i % 10 == 7
    ]


def correction_records(start: int, stop: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (conversation(i), raw_reply(turn_id=f"t-{i}", conversation_id=conversation(i), attempt=1))
        for i in range(start, stop)
        if i % 10 == 5
    ]


@dataclass
class Report:
    """What the output topics hold after a run."""

    turns: int
    lost: list[str] = field(default_factory=list)
    conflicting: list[str] = field(default_factory=list)
    wrong_kind: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    repeats: int = 0
    corrected: int = 0
    dead_letters: int = 0
    secrets: int = 0
    replayed: float = 0.0
    restarts: int = 0

    @property
    def sound(self) -> bool:
        return not (
            self.lost
            or self.conflicting
            or self.wrong_kind
            or self.unexpected
            or self.dead_letters
            or self.secrets
        )

    def line(self) -> str:
        return (
            f"turns={self.turns} lost={len(self.lost)} conflicting={len(self.conflicting)} "
            f"wrong_kind={len(self.wrong_kind)} unexpected={len(self.unexpected)} "
            f"repeats={self.repeats} corrected={self.corrected} "
            f"dead_letters={self.dead_letters} secrets={self.secrets} "
            f"replayed={self.replayed:g} restarts={self.restarts}"
        )


def judge(records: list[tuple[str, bytes | None, bytes]], total: int, corrections: bool) -> Report:
    report = Report(total)
    seen: dict[str, set[bytes]] = defaultdict(set)
    copies = 0
    for topic, _key, value in records:
        if GITHUB_PAT.encode() in value:
            report.secrets += 1
        if topic.endswith("replies.dlq"):
            report.dead_letters += 1
        elif topic.endswith("delivery.im"):
            seen[orjson.loads(value)["delivery_id"]].add(value)
            copies += 1
    for i in range(total):
        turn, want = f"t-{i}", expected(i, corrections)
        values = seen.get(turn, set())
        if not want:
            if values:
                report.unexpected.append(turn)
            continue
        if not values:
            report.lost.append(turn)
        elif len(values) > 1:
            report.conflicting.append(turn)
        else:
            delivery = orjson.loads(next(iter(values)))
            outcome = (delivery["kind"], delivery["corrected"])
            report.corrected += outcome == CORRECTED
            if outcome not in want:
                report.wrong_kind.append(turn)
    report.repeats = copies - sum(len(v) for v in seen.values())
    return report


def delivered_count(total: int, corrections: bool) -> int:
    return sum(bool(expected(i, corrections)) for i in range(total))


def wait_killed(proc: subprocess.Popen[bytes], seconds: float) -> bool:
    """Whether the armed worker died by SIGKILL (its failpoint) within `seconds`."""
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == -signal.SIGKILL


class Supervisor(threading.Thread):
    """Restart a worker that stopped itself (exit 1), as Kubernetes does; count the restarts."""

    def __init__(self, deployment: Deployment, tmp: Path, env: dict[str, str]) -> None:
        super().__init__(daemon=True)
        self.deployment, self.tmp, self.env = deployment, tmp, env
        self.restarts = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            for proc in list(self.deployment.workers):
                if proc.returncode is None and proc.poll() == 1:
                    self.restarts += 1
                    self.deployment.start_worker(self.tmp, **self.env)

    def latest(self) -> subprocess.Popen[bytes]:
        return self.deployment.workers[-1]


@dataclass
class CrashRun:
    """Kills at `failpoint` (`name`, `name@N`, or several joined by commas: one worker dies at
    each in turn, each while recovering from the one before), then a clean worker finishes."""

    tmp: Path
    failpoint: str
    total: int = 300
    corrections: bool = True
    deadline_seconds: float = 20.0
    partitions: int = 2
    env: dict[str, str] = field(default_factory=dict)
    # per kill: the log of the worker that died there (its successor's log follows it)
    victims: list[Path] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.deployment = Deployment(
            partitions=self.partitions, loglevel=os.environ.get("CRASH_LOGLEVEL", "warn")
        )
        self.base_env = {
            "REPLYGATE_CORRECTION_DEADLINE_SECONDS": str(self.deadline_seconds),
            "REPLYGATE_SESSION_TIMEOUT_SECONDS": "6",
            "REPLYGATE_STALL_SECONDS": "8",
            # Kill points count batches (`name@N`): batches of at most 100 keep them spread over
            # a run as the points were chosen for, and leave turns for the later workers.
            "REPLYGATE_BATCH_MAX_RECORDS": "100",
            **self.env,
        }
        self.self_stops = 0

    def run(self) -> Report:
        """Each kill gets its own slice of turns; a slice's corrections come after its kill."""
        d = self.deployment
        d.create_topics()
        points = self.failpoint.split(",")
        bounds = [self.total * k // len(points) for k in range(len(points) + 1)]
        try:
            for k, point in enumerate(points):
                victim = d.start_worker(self.tmp, REPLYGATE_FAILPOINT=point, **self.base_env)
                asyncio.run(
                    publish(d.settings(), d.topic("replies.raw"), turn_records(*bounds[k : k + 2]))
                )
                asyncio.run(
                    publish(
                        d.settings(), d.topic("turns.control"), cancel_records(*bounds[k : k + 2])
                    )
                )
                self._wait_killed(victim, point)
                if k:
                    self._correct(bounds[k - 1], bounds[k])
            d.start_worker(self.tmp, **self.base_env)
            self._correct(bounds[-2], bounds[-1])
            report = self.finish()
        finally:
            d.stop_all()
        report.restarts += self.self_stops
        return report

    def _wait_killed(self, victim: subprocess.Popen[bytes], point: str) -> None:
        """The armed worker must die at its point; one that stopped itself (exit 1, a guard
        against a Faust fault) is replaced by another armed one, as Kubernetes would."""
        d = self.deployment
        for _ in range(10):
            if wait_killed(victim, 120):
                self.victims.append(d.logs[-1])
                return
            if victim.returncode != 1:
                break
            self.self_stops += 1
            victim = d.start_worker(self.tmp, REPLYGATE_FAILPOINT=point, **self.base_env)
        raise AssertionError(f"the worker did not die at {point}\n{d.log_tail()}")

    def _correct(self, start: int, stop: int) -> None:
        if self.corrections:
            topic = self.deployment.topic("replies.raw")
            asyncio.run(publish(self.deployment.settings(), topic, correction_records(start, stop)))

    def replays_after(self, kill: int) -> float:
        """Replays logged by the workers that ran after kill number `kill` (0-based). Which of
        them reads the killed batch again depends on how Faust splits the backlog into batches,
        so the count is over all of them; the last kill's is the clean worker's alone."""
        logs = self.deployment.logs
        return self._replayed(logs[logs.index(self.victims[kill]) + 1 :])

    def finish(self) -> Report:
        """Read the outputs until every turn has its outcome, restarting stopped workers."""
        d = self.deployment
        supervisor = Supervisor(d, self.tmp, self.base_env)
        supervisor.start()
        try:
            report = self._read()
            report.replayed = self._replayed()
        finally:
            supervisor.done.set()
            supervisor.join()
        report.restarts = supervisor.restarts
        return report

    def _replayed(self, logs: list[Path] | None = None) -> float:
        """Replays by every worker of the run, stopped ones too (their logs say it)."""
        total = 0
        for log in self.deployment.logs if logs is None else logs:
            for match in REPLAY_LINE.finditer(log.read_text(errors="replace")):
                total += int(match.group(1))
        return float(total)

    def _read(self) -> Report:
        d = self.deployment
        want = delivered_count(self.total, self.corrections)
        delivery = d.topic("delivery.im")

        def complete(records: list[tuple[str, bytes | None, bytes]]) -> bool:
            ids = {orjson.loads(v)["delivery_id"] for t, _k, v in records if t == delivery}
            return len(ids) >= want

        records = asyncio.run(
            collect(
                [d.topic(t) for t in OUTPUT_TOPICS],
                complete,
                timeout=self.deadline_seconds + 150,
                settle=3,
            )
        )
        return judge(records, self.total, self.corrections)


def soak(runs: int, tmp: Path) -> list[tuple[str, Report]]:
    """Random kill points and hit counts, producer batching on (the default)."""
    import random

    from streams.ops.failpoints import POINTS

    # the soak's turns are whole replies: no chunk is ever buffered
    rebalance = ("revoke_before_commit", "partitions_revoked")  # a single worker never revokes
    # the warm-up reads a RocksDB store before joining; the soak's workers keep memory://
    points = [p for p in POINTS if p not in (*rebalance, "chunk_state_written", "warmup_step")]
    out = []
    for n in range(runs):
        name = random.choice(points)
        # deadlines and correction requests come in a few batches only
        point = f"{name}@{random.randint(1, 2 if name.endswith('written') else 6)}"
        started = time.monotonic()
        run_dir = tmp / f"run-{n}"
        run_dir.mkdir(parents=True)
        deadline = "6" if point.startswith("deadline") else "20"
        report = CrashRun(
            run_dir,
            point,
            total=1000,
            corrections=deadline == "20",
            deadline_seconds=float(deadline),
        ).run()
        print(
            f"run {n + 1}/{runs} {point:28s} {report.line()} ({time.monotonic() - started:.0f} s)"
        )
        out.append((point, report))
    return out


def main() -> int:
    import sys
    import tempfile

    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        results = soak(runs, Path(tmp))
    bad = [p for p, r in results if not r.sound]
    print(f"{len(results) - len(bad)} passed, {len(bad)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
