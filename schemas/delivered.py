"""Re-validating a Delivery on the endpoint side, with the contract code the gate used.

An endpoint trusts nothing it reads from a topic: the record must be a closed Delivery, and its
`message` must be what the named contract itself would deliver. The message is turned back into
the reply the contract reads (`reply_of`), validated again, and the contract's result must be
the message, unchanged. Pure: no Kafka, no Faust, no I/O.

What an endpoint cannot know is the conversation the gate saw: a mention target is taken as a
member (the gate checked it against the members), and document fragment ids are not required
(the gate checked them against the loaded fragments). Everything else is checked again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from schemas.contract import ReplyContract, ReplyInput
from schemas.errors import Issue, issues_from_validation_error
from schemas.preview import one_line
from schemas.progress import progress_text_issues
from schemas.records import EMPTY_CONTEXT, Context, Delivery

HTML: Final = "assistant.html.v1"
IM: Final = "im.segments.v1"
PLAIN: Final = "text.plain.v1"
RAG_LINE: Final = "optional_rag_fragment_used: "
# The built-in contracts deliver an object; a caller-owned schema may deliver any JSON value.
OBJECT_MESSAGES: Final = frozenset((HTML, IM, PLAIN))


def _html_reply(message: Mapping[str, Any]) -> ReplyInput:
    """The fenced answer that `assistant.html.v1` turns into this message."""
    html = message.get("html")
    text = f"```html\n{html if isinstance(html, str) else ''}\n```"
    rag = message.get("rag_fragments_used")
    if isinstance(rag, list) and rag and all(isinstance(item, str) for item in rag):
        text += "\n" + RAG_LINE + ";".join(rag)
    return ReplyInput("text", text=text)


def _text_reply(message: Mapping[str, Any]) -> ReplyInput:
    """A plain-text contract's message is `{"text": ...}`; its reply is that text."""
    text = message.get("text")
    return ReplyInput("text", text=text if isinstance(text, str) else None)


def _json_reply(message: Any) -> ReplyInput:
    """JSON contracts (im.segments.v1, caller-owned schemas) deliver the reply value itself."""
    return ReplyInput("tool", arguments=message)


# How a contract's delivered message maps back to its reply; any other contract: `_json_reply`.
REPLY_OF: Final[Mapping[str, Callable[[Any], ReplyInput]]] = {
    HTML: _html_reply,
    PLAIN: _text_reply,
}


def reply_of(contract: str, message: Any) -> ReplyInput:
    """The reply that the contract reads for a delivered message."""
    return REPLY_OF.get(contract, _json_reply)(message)


def _mention_targets(message: Mapping[str, Any]) -> list[str]:
    """The mention targets of an IM message (the gate checked them against the members)."""
    segments = message.get("segments")
    if not isinstance(segments, list):
        return []
    targets = []
    for segment in segments:
        if not isinstance(segment, dict) or segment.get("type") != "mention":
            continue
        data = segment.get("data")
        target = data.get("target") if isinstance(data, dict) else None
        if isinstance(target, str):
            targets.append(target)
    return targets


def context_of(contract: str, message: Mapping[str, Any]) -> Context:
    """What the endpoint can say of the conversation: no more than the message shows."""
    if contract == IM:
        return Context(members=_mention_targets(message))
    return EMPTY_CONTEXT


def message_issues(contract: ReplyContract, message: Any) -> tuple[Issue, ...]:
    """Why `message` is not what `contract` delivers (empty: it is), paths under `message`."""
    if contract.name in OBJECT_MESSAGES and not isinstance(message, dict):
        return (Issue("message", "wrong_type", "must be an object"),)
    result = contract.validate(reply_of(contract.name, message), context_of(contract.name, message))
    if result.issues:
        return tuple(
            Issue(_under_message(issue.path), issue.code, issue.message) for issue in result.issues
        )
    if result.no_reply or result.message is None:
        return (Issue("message", "invalid_value", "holds no reply: nothing would be delivered"),)
    if result.message != message:
        return (
            Issue("message", "invalid_value", f"is not the message that {contract.name} delivers"),
        )
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
        return (Issue("message", "wrong_type", "must be an object"),)
    extra = sorted(str(key) for key in message if key != "text")
    if extra:
        return (Issue(f"message.{extra[0][:100]}", "unknown_field", f"is not a field of {what}"),)
    text = message.get("text")
    if text is not None and not isinstance(text, str):
        return (Issue("message.text", "wrong_type", "must be a string"),)
    if needs_text and not text:
        return (Issue("message.text", "too_short", f"{what} needs text"),)
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
        issue = Issue("platform", "unknown_platform", f"is not {platform!r}, this topic's platform")
        return Checked(None, (issue,))
    if one_line(delivery.preview) != delivery.preview:
        issue = Issue(
            "preview", "invalid_value", "is not one trimmed line of at most 280 characters"
        )
        return Checked(None, (issue,))
    contract = contracts.get(delivery.contract)
    if contract is None:
        issue = Issue("contract", "unknown_contract", "is not a registered contract")
        return Checked(None, (issue,))
    if delivery.kind == "progress":
        issues = progress_issues(delivery.message)
    elif delivery.kind == "failure_notice" and contract.name not in OBJECT_MESSAGES:
        issues = text_issues(delivery.message, "the host's notice", needs_text=True)
    else:
        issues = message_issues(contract, delivery.message)
    return Checked(None if issues else delivery, issues)
