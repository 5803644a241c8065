"""Policy bundles: what a shadow costs per record, and what loading a bundle costs.

`shadow_cost`: CPU time to judge the benchmark mix's replies under the active version and
under a shadow (which masks one more literal) and compare the two judgements, over the time
to judge them under the active version alone. A shadow is one more judgement per record, so
the ratio is about 2; more would mean the comparison or the second gate costs extra.

`policy_load_seconds`: a bundle with a default and four tenant sections, each with its own
literals (five maskers), loaded and its gates built, as a worker's follower does off the event
loop before a switch.

Run alone with `python -m bench.policy`.
"""

from __future__ import annotations

import os
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.common import fmt, median, ratio, say
from bench.workload import Workload, write_workspace
from streams.core.decision import Source
from streams.files.stage import DiskFiles
from streams.policy.bundle import read_bundle
from streams.policy.judgement import disagreements
from streams.policy.load import PolicyGates, load_policy
from streams.settings import FileSettings, GateSettings, Settings

N_RECORDS = int(os.environ.get("BENCH_POLICY_RECORDS", "400"))
ROUNDS = int(os.environ.get("BENCH_POLICY_ROUNDS", "4"))
ACTIVE = '[default]\nleak_literals = ["canary-0001"]\n'
SHADOW = '[default]\nleak_literals = ["canary-0001", "canary-0002"]\n'
TENANTS = "[default]\n" + "".join(
    f'[tenant.t{n}]\nleak_literals = ["tenant-{n}-secret"]\n' for n in range(4)
)


def _gates(folder: Path, name: str, text: str, files: DiskFiles) -> PolicyGates:
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return PolicyGates(load_policy(read_bundle(path), GateSettings()), files)


def run(n: int = N_RECORDS, rounds: int = ROUNDS) -> None:
    say(f"== policy: shadow cost over {n} records of the mix, {rounds} rounds; bundle load")
    with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
        folder = Path(tmp)
        files = DiskFiles.from_settings(
            Settings(workspaces_root=write_workspace(folder)).group(FileSettings)
        )
        active = _gates(folder, "active", ACTIVE, files).gate(None, None)
        shadow = _gates(folder, "shadow", SHADOW, files).gate(None, None)
        now = datetime.now(UTC)
        replies = GateSettings().topic("replies_raw")
        for rec in Workload(299).records(50):  # warm-up: first-use caches are not per record
            if rec.topic == "replies_raw":
                active.decide_reply(rec.value, Source(replies, 0, 0), now)
                shadow.decide_reply(rec.value, Source(replies, 0, 0), now)
        alone: list[float] = []
        both: list[float] = []
        differ = 0
        for r in range(rounds):
            records = [rec for rec in Workload(300 + r).records(n) if rec.topic == "replies_raw"]
            sources = [Source(replies, 0, i) for i in range(len(records))]
            started = time.process_time()
            for rec, source in zip(records, sources, strict=True):
                active.decide_reply(rec.value, source, now)
            alone.append((time.process_time() - started) / len(records))
            started = time.process_time()
            for rec, source in zip(records, sources, strict=True):
                a = active.decide_reply(rec.value, source, now)
                s = shadow.decide_reply(rec.value, source, now)
                differ += bool(disagreements(a, s))
            both.append((time.process_time() - started) / len(records))
        say(f"  active alone     {fmt([s * 1e6 for s in alone])} us/record (CPU)")
        say(f"  active + shadow  {fmt([s * 1e6 for s in both])} us/record (CPU)")
        say(f"  disagreements    {differ} (the shadow's extra literal is in no record)")
        ratio("shadow_cost", median(both) / median(alone))
        loads = []
        for _ in range(3):
            started = time.perf_counter()
            _gates(folder, "tenants", TENANTS, files)
            loads.append(time.perf_counter() - started)
        say(f"  bundle with 4 tenant sections loaded, gates built: {fmt(loads, 2)} s")
        ratio("policy_load_seconds", median(loads))


if __name__ == "__main__":
    run()
