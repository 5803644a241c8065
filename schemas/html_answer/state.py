"""The state of one validation: bounded issues, citations in order, reports."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from schemas.html_answer.codes import MISSING_ELEMENT_IDS, UNKNOWN_ELEMENT_ID
from schemas.issue_sink import IssueSink
from schemas.uris import Uri


@dataclass(slots=True)
class Walk:
    """State of one validation: issues, citations and reports, the fragments known."""

    issues: IssueSink
    fragments: Mapping[str, Sequence[str]]
    citations: list[str] = field(default_factory=list)
    cited: set[str] = field(default_factory=set)
    reports: list[str] = field(default_factory=list)
    reported: set[str] = field(default_factory=set)
    elements: int = 0
    stopped: bool = False
    too_deep: bool = False

    def cite(self, uri: Uri, path: str, *, check_ids: bool = True) -> None:
        if uri.value not in self.cited:
            self.cited.add(uri.value)
            self.citations.append(uri.value)
        if check_ids:
            self.check_element_ids(uri, path)

    def check_element_ids(self, uri: Uri, path: str) -> None:
        """The element-ID rule for one written `doc://` URI (any other URI passes): where its
        fragment has known IDs, `?id=` is required and may name only those IDs."""
        if uri.scheme != "doc" or uri.fragment is None:
            return
        known = self.fragments.get(uri.fragment)
        if not known:
            return
        if not uri.ids:
            self.issues.add(MISSING_ELEMENT_IDS.issue(path, uri=uri.value, known=_preview(known)))
            return
        allowed = set(known)
        for element_id in uri.ids:
            if element_id not in allowed:
                self.issues.add(
                    UNKNOWN_ELEMENT_ID.issue(
                        path,
                        uri=uri.value,
                        element_id=element_id,
                        fragment=uri.fragment,
                        known=_preview(known),
                    )
                )

    def report(self, written: str) -> None:
        if written not in self.reported:
            self.reported.add(written)
            self.reports.append(written)


def _preview(values: Sequence[str]) -> str:
    shown = ", ".join(values[:5])
    return shown + (", ..." if len(values) > 5 else "")
