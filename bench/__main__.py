"""`make bench`: every benchmark in turn, then a summary of the RATIO lines and their targets.

`python -m bench [name ...]` runs only the named ones (pipeline_vs_passthrough, check_vs_baseline,
leaks_vs_detect_secrets, latency, recovery, state_memory, rebalance, rebalance_1m, broker_outage,
soak, policy).
The broker ones need a broker:
KAFKA_BOOTSTRAP_SERVERS, or the local one on 127.0.0.1:$KAFKA_PORT (`make bench` starts it).
"""

from __future__ import annotations

import os
import sys
import time

from bench import (
    broker_outage,
    check_vs_baseline,
    latency,
    leaks_vs_detect_secrets,
    pipeline_vs_passthrough,
    policy,
    rebalance,
    recovery,
    soak,
    state_memory,
)
from bench.common import RATIOS, say

# name -> (comparison, target) for the summary; the RATIO lines themselves carry no verdict.
TARGETS: dict[str, tuple[str, float]] = {
    "pipeline_vs_passthrough": (">=", 0.3),
    "worker_vs_faust_copy": (">=", 0.8),
    "worker_peak_rss_mb": ("<", 250.0),
    "finished_turn_state_bytes": ("<=", 100.0),
    "check_vs_baseline": (">=", 90.0),
    "gate_us_per_record": ("<=", 80.0),
    "leaks_vs_detect_secrets": (">=", 20.0),
    "latency_p99_ms": ("<", 50.0),
    "worker_p99_ms": ("<=", 20.0),
    "latency_p99_vs_passthrough": ("<=", 1.5),
    "recovery_seconds_ratio": ("<=", 1.5),
    "rebalance_pause_join_s": ("<=", 3.0),
    "rebalance_pause_leave_s": ("<=", 3.0),
    "rebalance_pause_crash_s": ("<=", rebalance.session_timeout() + 2.0),
    "rebalance_pause_join_1m_s": ("<=", 3.0),
    "rebalance_pause_leave_1m_s": ("<=", 3.0),
    "rebalance_pause_crash_1m_s": ("<=", rebalance.session_timeout() + 2.0),
    "broker_resume_s": ("<=", 5.0),
    "soak_longest_pause_s": ("<=", 12.0),
    # A shadow is one more judgement per record (docs/policy.md), plus comparing the two;
    # a new version is applied within 5 s of its publication, and loading it is most of that.
    "shadow_cost": ("<=", 2.1),
    "policy_load_seconds": ("<=", 5.0),
    "policy_switch_seconds": ("<=", 5.0),
}
ORDER = (
    "pipeline_vs_passthrough",
    "check_vs_baseline",
    "leaks_vs_detect_secrets",
    "latency",
    "recovery",
    "state_memory",
    "rebalance",
    "rebalance_1m",
    "broker_outage",
    "soak",
    "policy",
)


def _meets(value: float, op: str, target: float) -> bool:
    if op == ">=":
        return value >= target
    return value <= target if op == "<=" else value < target


def main(argv: list[str]) -> int:
    chosen = [a for a in argv if a in ORDER] or list(ORDER)
    unknown = [a for a in argv if a not in ORDER]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(ORDER)}")
        return 2
    started = time.monotonic()
    say(f"bench: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    max_rate: float | None = None
    for name in chosen:
        if name == "pipeline_vs_passthrough":
            max_rate = pipeline_vs_passthrough.run()
        elif name == "check_vs_baseline":
            check_vs_baseline.run()
        elif name == "leaks_vs_detect_secrets":
            leaks_vs_detect_secrets.run()
        elif name == "recovery":
            recovery.run()
        elif name == "state_memory":
            state_memory.run()
        elif name == "rebalance":
            rebalance.run()
        elif name == "rebalance_1m":
            rebalance.run_horizon()
        elif name == "broker_outage":
            broker_outage.run()
        elif name == "soak":
            soak.run()
        elif name == "policy":
            policy.run()
        else:
            latency.run(max_rate)
    say(f"\nsummary ({time.monotonic() - started:.0f} s, load average {os.getloadavg()[0]:.2f}):")
    for name, value in RATIOS:
        if name not in TARGETS:
            say(f"  {name:28s} {value:10.3f}  (reported, no target)")
            continue
        op, target = TARGETS[name]
        verdict = "meets" if _meets(value, op, target) else "MISSES"
        say(f"  {name:28s} {value:10.3f}  target {op} {target:g}  {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
