"""Profile a real worker (pyinstrument) on the benchmark mix; not part of `make bench`.

`python -m bench.profile_worker [N]` pre-produces N records, runs `replygate worker` under
pyinstrument until every output is there, and prints the worker's profile (call tree) to stdout
and writes it to .run/bench/worker-profile.txt. `python -m bench.profile_worker --gate [N]`
profiles the in-process pipeline (`CheckSession.line`) instead.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.kafka import REPO, Deployment, produce_all, watch
from bench.workload import Workload, write_workspace
from streams.cli.check_session import CheckSession

OUT = REPO / ".run" / "bench"


def profile_worker(n: int) -> str:
    dep = Deployment(partitions=4)
    OUT.mkdir(parents=True, exist_ok=True)
    report = OUT / "worker-profile.txt"
    try:
        dep.create_topics()
        records = list(Workload(5).records(n))
        triples = ((dep.topic(r.topic), r.key, r.value) for r in records)
        asyncio.run(produce_all(dep.servers, triples))
        with tempfile.TemporaryDirectory(prefix="rg-prof-") as tmp:
            root = write_workspace(Path(tmp) / "ws")
            env = dep.worker_env(Path(tmp) / "data", REPLYGATE_WORKSPACES_ROOT=str(root))
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pyinstrument",
                    "--interval",
                    "0.0005",
                    "-r",
                    "text",
                    "--show-all",
                    "-o",
                    str(report),
                    "-m",
                    "streams.cli",
                    "worker",
                    "--loglevel",
                    "info",
                ],
                cwd=REPO,
                env=env,
                start_new_session=True,
            )
            started = time.time()
            seen = asyncio.run(watch(dep.servers, dep.output_topics(), n, 300))
            print(f"{len(seen.records)} outputs in {time.time() - started:.1f} s", flush=True)
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    finally:
        dep.cleanup()
    return report.read_text()


def profile_gate(n: int) -> str:
    from pyinstrument import Profiler

    from streams.core.pipeline import Gate
    from streams.files.stage import DiskFiles
    from streams.settings import Settings
    from streams.settings.contracts import build_registry

    with tempfile.TemporaryDirectory(prefix="rg-prof-") as tmp:
        settings = Settings(workspaces_root=write_workspace(Path(tmp)))
        gate = Gate(settings, DiskFiles.from_settings(settings), build_registry(settings))
        now = datetime.now(UTC)
        records = list(Workload(3).records(n))
        profiler = Profiler(interval=0.0005)
        profiler.start()
        session = CheckSession(gate)
        for i, r in enumerate(records):
            session.line(r.value, i + 1, now)
        profiler.stop()
    text: str = profiler.output_text(unicode=False, color=False)
    return text


def main(argv: list[str]) -> int:
    gate = "--gate" in argv
    rest = [a for a in argv if a != "--gate"]
    n = int(rest[0]) if rest else (5000 if gate else 4000)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    print(profile_gate(n) if gate else profile_worker(n))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
