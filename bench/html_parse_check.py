"""What the HTML parse check costs the gate: `gate_us_per_record` with and without it, one run.

`python -m bench.html_parse_check` (not in `make bench`'s list; no broker needed). The gate is
built as `check_vs_baseline` builds it (`CheckSession.line` over the benchmark mix, 10% HTML
answers); every record goes through the gate as shipped and through the same gate with
`assistant.html.v1`'s parse check taken out (`_check_tokens`, the strict shortcut and html5lib
when it cannot vouch, replaced by the token scan alone, as before the check), in alternating
order, so the machine's load falls on both alike. Process CPU per
record, median round of each; `RATIO html_parse_check_growth` = with / without. Figures in
bench/README.md.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from bench.common import fmt, median, ratio, say
from bench.workload import Workload, write_workspace

N_RECORDS = int(os.environ.get("BENCH_CHECK_RECORDS", "400"))
ROUNDS = int(os.environ.get("BENCH_CHECK_ROUNDS", "4"))


def run(n: int = N_RECORDS, rounds: int = ROUNDS) -> None:
    import schemas.html_answer.contract as html_contract
    from schemas.html_answer.state import Walk
    from streams.cli.check_session import CheckSession
    from streams.core.pipeline import Gate
    from streams.files.stage import DiskFiles
    from streams.settings import Settings
    from streams.settings.contracts import build_registry

    say(f"== html_parse_check: {n} records of the mix, {rounds} rounds, each record both ways")
    shipped = html_contract._check_tokens
    skipped = html_contract._check_scan

    cpu: dict[str, list[float]] = {"without": [], "with": []}
    html_cpu: dict[str, float] = {"without": 0.0, "with": 0.0}
    html_n = 0
    with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp:
        settings = Settings(workspaces_root=write_workspace(Path(tmp)))
        gate = Gate(settings, DiskFiles.from_settings(settings), build_registry(settings))
        # One session per variant (a session remembers turns): each sees every record once.
        sessions = {"without": CheckSession(gate), "with": CheckSession(gate)}
        checks: dict[str, Callable[[str, Walk], bool]] = {"without": skipped, "with": shipped}
        now = datetime.now(UTC)
        for r in range(rounds):
            records = list(Workload(200 + r).records(n))
            spent = {"without": 0.0, "with": 0.0}
            for i, rec in enumerate(records):
                # Record by record, in alternating order: load on the box falls on both alike.
                for variant in ("without", "with") if i % 2 == 0 else ("with", "without"):
                    html_contract._check_tokens = checks[variant]  # type: ignore[assignment]
                    started = time.process_time()
                    sessions[variant].line(rec.value, i + 1, now)
                    took = time.process_time() - started
                    spent[variant] += took
                    if rec.kind == "html":
                        html_cpu[variant] += took
                html_n += rec.kind == "html"
            for variant, total in spent.items():
                cpu[variant].append(total / n * 1e6)
        html_contract._check_tokens = shipped
    for variant in ("without", "with"):
        per_html = html_cpu[variant] / max(html_n, 1) * 1e6
        say(
            f"  {variant:8s} parse check: gate CPU {fmt(cpu[variant])} us/record, "
            f"HTML answers {per_html:.0f} us each"
        )
    ratio("html_parse_check_growth", median(cpu["with"]) / median(cpu["without"]))


if __name__ == "__main__":
    run()
