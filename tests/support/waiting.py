"""The one poll-until helper of the suite: a test waits for something the system does in its
own time, and fails naming what it waited for, never asserting how long it took."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    what: str,
    check: Callable[[], Any],
    seconds: float,
    *,
    poll: float = 0.5,
    tolerate: tuple[type[BaseException], ...] = (),
    detail: Callable[[], str] | None = None,
) -> Any:
    """`check()` until it is truthy (then return it), or fail naming `what`, its last value and
    `detail()`. An exception of a `tolerate` type counts as a falsy answer (a service still
    starting), not as a failure."""
    deadline = time.monotonic() + seconds
    last: Any = None
    while True:
        try:
            last = check()
        except tolerate as exc:
            last = exc
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            break
        time.sleep(poll)
    more = f"\n{detail()}" if detail is not None else ""
    raise AssertionError(f"timed out after {seconds:g}s waiting for {what} (last: {last!r}){more}")
