"""A progress summary's text (`kind: progress`): the one rule the gate and endpoints share.

Progress is not validated against the reply contract: it is shown as plain text, so only what a
chat surface cannot show is refused (nothing, too much, control characters).
"""

from __future__ import annotations

from typing import Final

from schemas.errors import Issue
from schemas.text_plain import CC_CONTROLS, control_character_issues

# A progress summary's text, in code points after trimming.
PROGRESS_MAX_CHARS: Final = 4000


def progress_text_issues(text: str | None, base: str = "output.text") -> list[Issue]:
    """Why a progress summary's text cannot be shown (empty list: it can)."""
    if text is None:
        return [Issue(base, "missing_reply", "a progress summary is output.text")]
    length = len(text.strip())
    if length == 0:
        return [Issue(base, "too_short", "is empty; a progress summary needs text")]
    if length > PROGRESS_MAX_CHARS:
        return [
            Issue(
                base,
                "too_long",
                f"has {length} characters after trimming; at most {PROGRESS_MAX_CHARS}",
            )
        ]
    return control_character_issues(text, base, CC_CONTROLS)
