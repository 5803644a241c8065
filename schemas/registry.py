"""The built-in reply contracts by name; deployments add theirs through settings."""

from __future__ import annotations

from collections.abc import Mapping

from schemas.contract import ReplyContract
from schemas.html_answer import ASSISTANT_HTML_V1
from schemas.im_segments import IM_SEGMENTS_V1

BUILTIN_CONTRACTS: Mapping[str, ReplyContract] = {
    IM_SEGMENTS_V1.name: IM_SEGMENTS_V1,
    ASSISTANT_HTML_V1.name: ASSISTANT_HTML_V1,
}
