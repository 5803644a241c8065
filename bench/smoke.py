"""`make bench-smoke`: every benchmark once, with tiny sizes, each in a process of its own; exit 1
unless each ran to its end and printed every one of its RATIO lines.

The figures mean nothing at these sizes. What is checked is that `make bench` still runs end to
end: an API change in the worker once stopped the whole bench at its first Kafka step, and
nothing noticed because nothing ran it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

from bench.kafka import REPO

# Every benchmark module (`python -m bench NAME`) and the RATIO lines it must print.
EXPECTED: Mapping[str, tuple[str, ...]] = {
    "pipeline_vs_passthrough": (
        "pipeline_vs_passthrough",
        "worker_vs_faust_copy",
        "worker_rss_mb_this_run",
    ),
    "check_vs_baseline": ("check_vs_baseline", "gate_us_per_record"),
    "leaks_vs_detect_secrets": ("leaks_vs_detect_secrets", "leak_views_ms_per_mb"),
    "latency": ("latency_p99_ms", "worker_p99_ms", "latency_p99_vs_passthrough"),
    "recovery": ("recovery_seconds_ratio",),
    "state_memory": ("finished_turn_state_bytes", "pending_turn_state_bytes", "worker_peak_rss_mb"),
    "rebalance": (
        "rebalance_pause_join_s",
        "rebalance_pause_leave_s",
        "rebalance_pause_crash_s",
    ),
    "rebalance_1m": (
        "rebalance_pause_join_1m_s",
        "rebalance_pause_leave_1m_s",
        "rebalance_pause_crash_1m_s",
    ),
    "broker_outage": ("broker_resume_s",),
    "soak": ("soak_longest_pause_s",),
    "policy": ("shadow_cost", "policy_load_seconds", "policy_switch_seconds"),
}

# Tiny sizes: a round each, a few hundred records, short windows and horizons.
SMOKE_ENV: Mapping[str, str] = {
    "BENCH_RECORDS": "300",
    "BENCH_ROUNDS": "1",
    "BENCH_CHECK_RECORDS": "40",
    "BENCH_CHECK_ROUNDS": "1",
    "BENCH_POLICY_RECORDS": "40",
    "BENCH_POLICY_ROUNDS": "1",
    "BENCH_POLICY_SWITCH_ROUNDS": "1",
    "BENCH_LEAK_BYTES": str(256 * 1024),
    "BENCH_LEAK_ROUNDS": "1",
    "BENCH_DS_SAMPLE_BYTES": str(16 * 1024),
    "BENCH_LATENCY_SECONDS": "1",
    "BENCH_LATENCY_ROUNDS": "1",
    "BENCH_MAX_RATE": "200",
    "BENCH_RECOVERY_SIZES": "50,100",
    "BENCH_RECOVERY_HORIZON": "5",
    "BENCH_RECOVERY_TICK": "2",
    "BENCH_RECOVERY_ROUNDS": "1",
    "BENCH_STATE_TURNS": "2000",
    "BENCH_REBALANCE_ROUNDS": "1",
    "BENCH_REBALANCE_WINDOW": "3",
    "BENCH_REBALANCE_TURNS": "2000",
    "BENCH_OUTAGE_SECONDS": "3",
    "BENCH_OUTAGE_ROUNDS": "1",
    "BENCH_SOAK_RATE": "100",
    "BENCH_SOAK_SECONDS": "40",
    "BENCH_SOAK_INTERVAL": "15",
    "REPLYGATE_SESSION_TIMEOUT_SECONDS": "6",
}
MODULE_TIMEOUT_SECONDS = 300.0
_RATIO = re.compile(r"^RATIO (\S+) (\S+)$")


def printed(output: str) -> dict[str, float]:
    """The RATIO lines of a benchmark's output, name -> value (a value that is no number is
    left out, as if the line were missing)."""
    found: dict[str, float] = {}
    for line in output.splitlines():
        match = _RATIO.match(line.strip())
        if match is None:
            continue
        try:
            found[match.group(1)] = float(match.group(2))
        except ValueError:
            continue
    return found


def missing(module: str, output: str) -> list[str]:
    """The RATIO names `module` should have printed and did not."""
    seen = printed(output)
    return [name for name in EXPECTED[module] if name not in seen]


def problems(module: str, code: int, output: str) -> list[str]:
    """Why a benchmark's smoke run failed: its exit status, each RATIO line it did not print."""
    found = [f"exited with {code}"] if code != 0 else []
    return found + [f"printed no RATIO line for {name}" for name in missing(module, output)]


def _run(module: str) -> tuple[int, str, float]:
    env = {**os.environ, **SMOKE_ENV, "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "bench", module],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=MODULE_TIMEOUT_SECONDS,
        )
        code, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout or ""
        code = -1
        output = (out.decode(errors="replace") if isinstance(out, bytes) else out) + (
            f"\n(timed out after {MODULE_TIMEOUT_SECONDS:.0f} s)"
        )
    return code, output, time.monotonic() - started


def main(argv: Sequence[str]) -> int:
    modules = [a for a in argv if a in EXPECTED] or list(EXPECTED)
    started = time.monotonic()
    failed: list[str] = []
    for module in modules:
        code, output, seconds = _run(module)
        found = problems(module, code, output)
        print(f"bench-smoke: {module}: {'FAILED' if found else 'ok'} ({seconds:.0f} s)", flush=True)
        if found:
            failed.append(module)
            print(output[-6000:], flush=True)
            print(f"bench-smoke: {module}: {'; '.join(found)}", flush=True)
    total = time.monotonic() - started
    if failed:
        print(f"bench-smoke: FAILED: {', '.join(failed)} ({total:.0f} s)")
        return 1
    print(f"bench-smoke: all {len(modules)} benchmarks printed their RATIO lines ({total:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
