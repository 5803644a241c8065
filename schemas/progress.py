"""A progress summary's text (`kind: progress`): the one rule the gate and endpoints share.

Progress is not validated against the reply contract: it is shown as plain text, so only what a
chat surface cannot show is refused (nothing, too much, control characters).
"""

from __future__ import annotations

from typing import Final

from schemas.codes import MISSING_REPLY, TOO_LONG, TOO_SHORT
from schemas.issue import Issue
from schemas.issue_sink import capped
from schemas.text_rules import control_character_issues

# A progress summary's text, in code points after trimming.
PROGRESS_MAX_CHARS: Final = 4000


def progress_text_issues(text: str | None, base: str = "output.text") -> list[Issue]:
    """Why a progress summary's text cannot be shown (empty list: it can)."""
    if text is None:
        return [MISSING_REPLY.issue(base, "progress")]
    length = len(text.strip())
    if length == 0:
        return [TOO_SHORT.issue(base, "progress")]
    if length > PROGRESS_MAX_CHARS:
        return [TOO_LONG.issue(base, "progress", length=length, limit=PROGRESS_MAX_CHARS)]
    return capped(control_character_issues(text, base, with_delete=True))
