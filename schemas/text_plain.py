"""The `text.plain.v1` reply contract (docs/contracts.md section 4): text delivered as text.

For agents configured without an output schema. Nothing is parsed or stripped: a literal `@name`
or `**x**` stays text. Only what no chat surface can show safely is refused: control characters.
"""

from __future__ import annotations

from typing import Any, Final

from schemas.codes import MISSING_REPLY, table
from schemas.contract import ContractBase, ContractResult, ReplyContract, ReplyInput
from schemas.issue_sink import capped
from schemas.records import Context
from schemas.text_rules import NO_CONTROLS_PATTERN, control_character_issues

NAME: Final = "text.plain.v1"
# Its one rule is every contract's (schemas/text_rules.py); it has no code of its own.
CODES: Final = table()


# The delivered text: any text but the control characters this contract refuses.
_TEXT_SCHEMA: Final = {
    "type": "string",
    "description": "the reply's output.text, exactly as sent; blank text means no reply",
    "pattern": NO_CONTROLS_PATTERN,
}

_INSTRUCTIONS: Final = (
    "Your previous reply broke the required format. Send it again as plain text in output.text "
    "(not as a json tool call): the same content, without control characters (NUL and the "
    "other C0/C1 control characters; tab, line feed and carriage return are fine) and without "
    "bidirectional override, embedding or isolate characters (U+202A-U+202E, U+2066-U+2069)."
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
        issues = capped(control_character_issues(reply.text, "text"))
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
