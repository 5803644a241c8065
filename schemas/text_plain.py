"""The `text.plain.v1` reply contract (docs/contracts.md section 4): text delivered as text.

For agents configured without an output schema. Nothing is parsed or stripped: a literal `@name`
or `**x**` stays text. Only what no chat surface can show safely is refused: control characters.
"""

from __future__ import annotations

from typing import Any, Final

from schemas.codes import MAX_ISSUES, MISSING_REPLY, TOO_MANY_ERRORS, code, table
from schemas.contract import ContractBase, ContractResult, ReplyContract, ReplyInput
from schemas.errors import Issue
from schemas.records import Context

NAME: Final = "text.plain.v1"
# fmt: off
CODES: Final = table(
    CONTROL_CHARACTER := code(
       "control_character", NAME,
       "NUL or another C0/C1 control character (tab, line feed and carriage return are "
       "fine); the path names the code point's index. Also in a progress summary's text.",
       "text[5]",
       "contains the control character U+0007; only tab, line feed and carriage return are "
       "allowed",
       "contains the control character U+{code_point:04X}; only tab, line feed and carriage "
       "return are allowed"),
)
# fmt: on
# NUL and the C0/C1 controls; tab, line feed and carriage return are ordinary text.
_ALLOWED_CONTROLS: Final = frozenset("\t\n\r")
_CONTROLS: Final = (
    frozenset(chr(c) for c in (*range(0x00, 0x20), *range(0x80, 0xA0))) - _ALLOWED_CONTROLS
)
# Every control character (Unicode category Cc: C0, DEL and C1) but tab, line feed and carriage
# return: the rule for progress text, which says "control characters" and not "C0/C1".
CC_CONTROLS: Final = _CONTROLS | {"\x7f"}


def control_character_issues(
    text: str, base: str, controls: frozenset[str] = _CONTROLS
) -> list[Issue]:
    """One issue per control character (bounded), at `base[<code point index>]`."""
    issues: list[Issue] = []
    if controls.isdisjoint(text):
        return issues
    for index, char in enumerate(text):
        if char not in controls:
            continue
        if len(issues) == MAX_ISSUES:
            issues.append(TOO_MANY_ERRORS.issue(base, listed=MAX_ISSUES))
            break
        issues.append(CONTROL_CHARACTER.issue(f"{base}[{index}]", code_point=ord(char)))
    return issues


# The delivered text: any text but the control characters this contract refuses.
_TEXT_SCHEMA: Final = {
    "type": "string",
    "description": "the reply's output.text, exactly as sent; blank text means no reply",
    "pattern": "^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u0080-\\u009f]*$",
}

_INSTRUCTIONS: Final = (
    "Your previous reply broke the required format. Send it again as plain text in output.text "
    "(not as a json tool call): the same content, without control characters (NUL and the "
    "other C0/C1 control characters; tab, line feed and carriage return are fine)."
)


class TextPlainContract(ContractBase):
    """`text.plain.v1`: `output.text` as it is, masked, never parsed."""

    name = NAME
    delivers_object = True
    notice_in_message_shape = True
    codes = CODES
    catalogue_title = f"`{NAME}` and progress summaries"

    def validate(self, reply: ReplyInput, context: Context | None = None) -> ContractResult:
        """Text only; blank is no reply; control characters are invalid."""
        del context
        if reply.transport != "text" or reply.text is None:
            return ContractResult(issues=(MISSING_REPLY.issue("output", "text_only"),))
        if reply.text.strip() == "":
            return ContractResult(no_reply=True)
        issues = control_character_issues(reply.text, "text")
        if issues:
            return ContractResult(issues=tuple(issues))
        return ContractResult(message={"text": reply.text})

    def instructions(self) -> str:
        return _INSTRUCTIONS

    def notice_message(self, text: str) -> dict[str, Any]:
        return {"text": text}

    def model_schema(self) -> dict[str, Any] | None:
        """The model writes plain text, not JSON: the instructions say all there is."""
        return None

    def json_schema(self) -> dict[str, Any]:
        """The delivered message: `{"text": ...}`, closed."""
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:replygate:contract:text.plain.v1",
            "title": NAME,
            "type": "object",
            "properties": {"text": _TEXT_SCHEMA},
            "required": ["text"],
            "additionalProperties": False,
        }

    def preview_text(self, message: Any) -> str:
        return str(message.get("text", ""))

    def reply_of(self, message: Any) -> ReplyInput:
        """The message is `{"text": ...}`; its reply is that text."""
        text = message.get("text") if isinstance(message, dict) else None
        return ReplyInput("text", text=text if isinstance(text, str) else None)


TEXT_PLAIN_V1: Final = TextPlainContract()
_: ReplyContract = TEXT_PLAIN_V1
