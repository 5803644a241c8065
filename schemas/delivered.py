"""Re-validating a Delivery on the endpoint side, with the contract code the gate used.

An endpoint trusts nothing it reads from a topic: the record must be a closed Delivery, and its
`message` must be what the named contract itself would deliver. The message is turned back into
the reply the contract reads (`ReplyContract.reply_of`), validated again, and the contract's
result must be the message, unchanged. Pure: no Kafka, no Faust, no I/O.

What an endpoint cannot know is the conversation the gate saw: a mention target is taken as a
member (the gate checked it against the members), and document fragment ids are not required
(the gate checked them against the loaded fragments). Everything else is checked again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from schemas.codes import (
    INVALID_VALUE,
    TOO_SHORT,
    UNKNOWN_CONTRACT,
    UNKNOWN_FIELD,
    UNKNOWN_PLATFORM,
    WRONG_TYPE,
)
from schemas.contract import ReplyContract
from schemas.errors import issues_from_validation_error
from schemas.issue import Issue
from schemas.preview import MAX_CODE_POINTS, one_line
from schemas.progress import progress_text_issues
from schemas.records import Delivery


def message_issues(contract: ReplyContract, message: Any) -> tuple[Issue, ...]:
    """Why `message` is not what `contract` delivers (empty: it is), paths under `message`."""
    if contract.delivers_object and not isinstance(message, dict):
        return (WRONG_TYPE.issue("message", expected="an object"),)
    result = contract.validate(contract.reply_of(message), contract.endpoint_context(message))
    if result.issues:
        return tuple(
            Issue(_under_message(issue.path), issue.code, issue.message) for issue in result.issues
        )
    if result.no_reply or result.message is None:
        return (INVALID_VALUE.issue("message", "no_reply"),)
    if result.message != message:
        return (INVALID_VALUE.issue("message", "not_delivered", contract=contract.name),)
    return ()


def progress_issues(message: Any) -> tuple[Issue, ...]:
    """A progress summary's message is `{"text": ...}`, under the gate's progress rule."""
    issues = text_issues(message, "progress", needs_text=False)  # the progress rule says why
    if issues:
        return issues
    return tuple(progress_text_issues(message.get("text"), "message.text"))


def text_issues(message: Any, what: str, needs_text: bool) -> tuple[Issue, ...]:
    """Why `message` is not `{"text": "..."}`: a progress summary, or the host's failure notice
    for a caller-owned contract (whose schema cannot describe it)."""
    if not isinstance(message, dict):
        return (WRONG_TYPE.issue("message", expected="an object"),)
    extra = sorted(str(key) for key in message if key != "text")
    if extra:
        return (UNKNOWN_FIELD.issue(f"message.{extra[0][:100]}", "of", what=what),)
    text = message.get("text")
    if text is not None and not isinstance(text, str):
        return (WRONG_TYPE.issue("message.text", expected="a string"),)
    if needs_text and not text:
        return (TOO_SHORT.issue("message.text", "needs_text", what=what),)
    return ()


def _under_message(path: str) -> str:
    if path in ("", "$"):
        return "message"
    return f"message{path}" if path.startswith("[") else f"message.{path}"


@dataclass(frozen=True, slots=True)
class Checked:
    """A re-validated Delivery (`delivery`, no issues) or why it is not one (issues)."""

    delivery: Delivery | None
    issues: tuple[Issue, ...] = ()

    @property
    def valid(self) -> bool:
        return self.delivery is not None and not self.issues


def check_delivery(
    value: object, contracts: Mapping[str, ReplyContract], platform: str | None = None
) -> Checked:
    """The closed Delivery record, its platform (when given), preview and message, checked again.

    A reply or failure notice is checked by its contract; progress by the progress rule (it is
    never validated against the contract, by the gate either).
    """
    try:
        delivery = Delivery.model_validate(value)
    except ValidationError as exc:
        return Checked(None, tuple(issues_from_validation_error(exc)))
    if platform is not None and delivery.platform != platform:
        issue = UNKNOWN_PLATFORM.issue("platform", "topic", platform=platform)
        return Checked(None, (issue,))
    if one_line(delivery.preview) != delivery.preview:
        issue = INVALID_VALUE.issue("preview", "preview", limit=MAX_CODE_POINTS)
        return Checked(None, (issue,))
    contract = contracts.get(delivery.contract)
    if contract is None:
        issue = UNKNOWN_CONTRACT.issue("contract", "unregistered")
        return Checked(None, (issue,))
    if delivery.kind == "progress":
        issues = progress_issues(delivery.message)
    elif delivery.kind == "failure_notice" and not contract.notice_in_message_shape:
        issues = text_issues(delivery.message, "the host's notice", needs_text=True)
    else:
        issues = message_issues(contract, delivery.message)
    return Checked(None if issues else delivery, issues)
