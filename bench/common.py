"""Small shared pieces of the benchmarks: timing, medians and the `RATIO` line."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

RATIOS: list[tuple[str, float]] = []


def ratio(name: str, value: float) -> None:
    """Print the one machine-readable line of a benchmark and remember it for the summary."""
    RATIOS.append((name, value))
    print(f"RATIO {name} {value:.3f}", flush=True)


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def fmt(values: Sequence[float], digits: int = 1) -> str:
    return "[" + ", ".join(f"{v:.{digits}f}" for v in values) + "]"


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def say(text: str) -> None:
    print(text, flush=True)
