"""One capped issue list for every check: a hostile reply cannot make an error list unbounded,
and every list is cut the same way.

At most MAX_ISSUES distinct issues in the order found; past that, or when a check handed in
had cut its own list, one `too_many_errors` at `$` saying how many are listed. An issue found
twice is listed once.
"""

from __future__ import annotations

from collections.abc import Iterable

from schemas.codes import MAX_ISSUES, TOO_MANY_ERRORS
from schemas.issue import Issue


class IssueSink:
    """Issues of one validation, capped; `full` tells a check it may stop looking."""

    __slots__ = ("_seen", "cut", "items", "limit")

    def __init__(self, limit: int = MAX_ISSUES) -> None:
        self.limit = limit
        self.items: list[Issue] = []
        self.cut = False
        self._seen: set[Issue] = set()

    @property
    def full(self) -> bool:
        """An issue was left out (here or by a check handed in): a check may stop looking."""
        return self.cut

    def add(self, issue: Issue) -> None:
        if issue.code == TOO_MANY_ERRORS.name:  # a check's own cut: the final one replaces it
            self.cut = True
        elif issue in self._seen:
            return
        elif len(self.items) >= self.limit:
            self.cut = True
        else:
            self._seen.add(issue)
            self.items.append(issue)

    def extend(self, issues: Iterable[Issue]) -> None:
        for issue in issues:
            self.add(issue)
            if self.cut and len(self.items) >= self.limit:
                return

    def result(self) -> list[Issue]:
        """The issues listed, then `too_many_errors` if any was left out."""
        if not self.cut:
            return list(self.items)
        return [*self.items, TOO_MANY_ERRORS.issue("$", listed=len(self.items))]


def capped(issues: Iterable[Issue]) -> list[Issue]:
    """Issues gathered from several checks of one reply, as one capped list."""
    sink = IssueSink()
    sink.extend(issues)
    return sink.result()
