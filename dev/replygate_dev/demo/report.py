"""What the demo shows at the end: a table of the samples, the measured figures, and what
failed."""

from __future__ import annotations

import sys
from typing import Any

from replygate_dev.demo.outcomes import Result
from replygate_dev.demo.samples import Sample
from replygate_dev.demo.story import BURST, Figures


def _mib(value: int) -> str:
    return f"{value / (1024 * 1024):.0f} MiB"


def render(console: Any, samples: list[Sample], results: dict[str, Result]) -> None:
    from rich.table import Table

    table = Table(title="replygate demo: what happened to each sample", title_justify="left")
    table.add_column("id", no_wrap=True, style="bold")
    table.add_column("sample")
    table.add_column("outcome", no_wrap=True)
    table.add_column("detail")
    table.add_column("ok", no_wrap=True, justify="center")
    for sample in samples:
        result = results[sample.id]
        detail = result.detail
        if result.problems:
            detail = (
                f"{detail}; [red]{'; '.join(result.problems)}[/]"
                if detail
                else (f"[red]{'; '.join(result.problems)}[/]")
            )
        table.add_row(
            sample.id,
            sample.what,
            result.outcome,
            detail,
            "[green]✓[/]" if result.ok else "[red]✗[/]",
        )
    console.print(table)


def render_figures(console: Any, figures: Figures) -> None:
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(figures.outcomes.items()))
    console.print(f"worker outcomes: {outcomes or 'n/a'}")
    console.print(
        f"measured: total {figures.total_seconds:.1f} s (worker ready after "
        f"{figures.startup_seconds:.1f} s, samples {figures.samples_seconds:.1f} s); "
        f"burst of {figures.burst} replies delivered in {figures.burst_seconds:.2f} s = "
        f"{figures.records_per_second:.0f} records/s; worker RSS {_mib(figures.rss)} "
        f"(peak {_mib(figures.rss_peak)}); worker stopped with exit code {figures.worker_exit}"
    )


def make_console() -> Any:
    from rich.console import Console

    # Off a terminal (CI, pipes), a wide fixed width keeps every table row on one line.
    return Console() if sys.stdout.isatty() else Console(width=180, soft_wrap=False)


def failures(
    console: Any, samples: list[Sample], results: dict[str, Result], figures: Figures
) -> list[str]:
    failed = [s.id for s in samples if not results[s.id].ok]
    if figures.outcomes != figures.expected_outcomes:
        missing = figures.expected_outcomes - figures.outcomes
        extra = figures.outcomes - figures.expected_outcomes
        console.print(
            f"[red]worker outcome counts differ: missing {dict(missing)}, "
            f"unexpected {dict(extra)}[/]"
        )
        failed.append("worker outcomes")
    if figures.burst < BURST:
        console.print(f"[red]only {figures.burst} of {BURST} burst replies were delivered[/]")
        failed.append("burst")
    return failed
