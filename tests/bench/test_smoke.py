"""`make bench-smoke` fails when a benchmark stops early or prints no RATIO line."""

from __future__ import annotations

import re
from pathlib import Path

from bench import __main__ as bench_main
from bench import smoke

FULL = "== pipeline\n  round 0: ...\nRATIO pipeline_vs_passthrough 0.210\n"


def test_every_benchmark_of_make_bench_is_smoked() -> None:
    assert set(smoke.EXPECTED) == set(bench_main.ORDER)


def test_a_missing_ratio_line_fails_the_smoke() -> None:
    output = FULL + "RATIO worker_vs_faust_copy 0.700\n"
    assert smoke.problems("pipeline_vs_passthrough", 0, output) == [
        "printed no RATIO line for worker_rss_mb_this_run"
    ]


def test_no_ratio_line_at_all_fails_for_each_name() -> None:
    found = smoke.problems("recovery", 0, "recovery: time to ready ...\n")
    assert found == ["printed no RATIO line for recovery_seconds_ratio"]


def test_a_ratio_line_without_a_number_counts_as_missing() -> None:
    assert smoke.missing("recovery", "RATIO recovery_seconds_ratio nan?\n") == [
        "recovery_seconds_ratio"
    ]


def test_a_failed_exit_fails_even_with_every_line() -> None:
    output = "".join(f"RATIO {n} 1.0\n" for n in smoke.EXPECTED["rebalance"])
    assert smoke.problems("rebalance", 0, output) == []
    assert smoke.problems("rebalance", 1, output) == ["exited with 1"]


def test_each_expected_name_is_printed_by_its_module() -> None:
    """The table cannot drift from the modules: each name is spelled in a `ratio(...)` call of
    its module (or, for the rebalance events, built from the event names)."""
    root = Path(smoke.__file__).parent
    modules = {"rebalance_1m": "rebalance"}  # a second run of one module
    for module, names in smoke.EXPECTED.items():
        source = (root / f"{modules.get(module, module)}.py").read_text()
        spelled = set(re.findall(r'ratio\(\s*"([a-z0-9_]+)"', source))
        templates = [
            re.compile(re.sub(r"\\\{[a-z_]+\\\}", "[a-z0-9_]*", re.escape(t)))
            for t in re.findall(r'ratio\(\s*f"([a-z0-9_{}]+)"', source)
        ]
        for name in names:
            built = any(t.fullmatch(name) for t in templates)
            assert name in spelled or built, (module, name)
