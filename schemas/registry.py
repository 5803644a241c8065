"""The built-in reply contracts by name; deployments add theirs through settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from schemas.contract import ReplyContract
from schemas.html_answer import ASSISTANT_HTML_V1
from schemas.im_segments import IM_SEGMENTS_V1
from schemas.rich_output import CONTRACT_NAME as RICH_OUTPUT_NAME
from schemas.text_plain import TEXT_PLAIN_V1

BUILTIN_CONTRACTS: Mapping[str, ReplyContract] = {
    IM_SEGMENTS_V1.name: IM_SEGMENTS_V1,
    ASSISTANT_HTML_V1.name: ASSISTANT_HTML_V1,
    TEXT_PLAIN_V1.name: TEXT_PLAIN_V1,
}
# Every name a deployment may not reuse: the reply contracts and the rich-output tool's.
BUILTIN_NAMES: Final = frozenset({*BUILTIN_CONTRACTS, RICH_OUTPUT_NAME})
