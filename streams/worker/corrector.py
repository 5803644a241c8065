"""The optional built-in corrector: one format-only completion per CorrectionRequest.

It consumes `corrections.requests`, asks an OpenAI-compatible chat endpoint once with only what
the request holds (the format instructions, the invalid reply and its errors: no history, no
tools), and publishes the answer on `replies.raw` as the turn's attempt 1, on the partition of
the record it answers (the request's own partition number). When the call fails
it publishes nothing: the worker's deadline then delivers the host's failure notice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import httpx
import orjson
from pydantic import ValidationError

from schemas.records import CorrectionRequest, ErrorEntry, ModelOutput, RawReply
from streams.core.decision import iso
from streams.core.leaks import Masker
from streams.core.pipeline import outbound_text
from streams.core.trace import trace_of
from streams.settings import CorrectorSettings

if TYPE_CHECKING:
    import faust

    from streams.broker.topology import Topology

log = logging.getLogger("replygate.corrector")

_BUILT_IN: list[Masker] = []


def _built_in_masker() -> Masker:
    """The built-in leak rules, built once, for a corrector run without the gate's masker."""
    if not _BUILT_IN:
        _BUILT_IN.append(Masker())
    return _BUILT_IN[0]


MAX_RESPONSE_BYTES: Final = 1024 * 1024
PROVIDER: Final = "corrector"
_PROVIDER_MAX_CHARS: Final = 200

_USER_TEMPLATE: Final = (
    "Your previous reply does not follow the required format.\n\n"
    "Previous reply:\n{invalid_output}\n\n"
    "Errors:\n{errors}\n\n"
    "Send the corrected reply only: the same content, in the required format."
)


class CorrectionFailed(Exception):
    """Why a completion produced no usable answer; `reason` is a stable snake_case word.

    The message names the failure only (status code, limit, exception type): never the api
    key, the request text or the response text.
    """

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


# ---- pure parts ---------------------------------------------------------------------------


def parse_request(raw: bytes) -> CorrectionRequest:
    """A correction request, checked against the closed record (ValueError)."""
    try:
        decoded = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    try:
        return CorrectionRequest.model_validate(decoded)
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) or "$" for e in exc.errors()})
        raise ValueError(f"not a CorrectionRequest (fields: {', '.join(fields)})") from None


def format_errors(errors: Sequence[ErrorEntry]) -> str:
    """One line per error: `path: code: message`, the way the gate reported it."""
    return "\n".join(f"- {e.path}: {e.code}: {e.message}" for e in errors) or "-"


def build_messages(request: CorrectionRequest) -> list[dict[str, str]]:
    """System: the request's format instructions. User: the invalid reply and its errors.

    Nothing else is sent: no conversation history, no tools, no context.
    """
    user = _USER_TEMPLATE.format(
        invalid_output=request.invalid_output, errors=format_errors(request.errors)
    )
    return [
        {"role": "system", "content": request.instructions},
        {"role": "user", "content": user},
    ]


def reply_from_completion(
    request: CorrectionRequest, content: str, model: str, now: datetime
) -> RawReply:
    """The turn's attempt-1 RawReply; `context` is null (the worker keeps the turn's own)."""
    provider = f"{PROVIDER}:{model}" if model else PROVIDER
    return RawReply(
        turn_id=request.turn_id,
        conversation_id=request.conversation_id,
        platform=request.platform,
        contract=request.contract,
        attempt=1,
        provider=provider[:_PROVIDER_MAX_CHARS],
        output=ModelOutput(text=content),
        context=None,
        produced_at=iso(now),
    )


def reply_json(reply: RawReply) -> bytes:
    """The fields the corrector sets, in model order (no `kind`, `seq`): what `replies.raw` gets."""
    return orjson.dumps(reply.model_dump(exclude_unset=True))


def content_of(body: bytes) -> str:
    """`choices[0].message.content` of an OpenAI chat completion, or CorrectionFailed."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise CorrectionFailed("malformed_response", "the body is not JSON") from None
    choices = decoded.get("choices") if isinstance(decoded, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise CorrectionFailed("malformed_response", "no choices[0]")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str):
        raise CorrectionFailed("malformed_response", "choices[0].message.content is not a string")
    return content


# ---- I/O ----------------------------------------------------------------------------------


def completions_url(settings: CorrectorSettings) -> str:
    return settings.base_url.rstrip("/") + "/chat/completions"


def _headers(settings: CorrectorSettings) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    key = settings.api_key.get_secret_value()
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


async def _read_bounded(response: httpx.Response, limit: int) -> bytes:
    """The (decoded) body, reading no more than `limit` + one chunk."""
    declared = response.headers.get("Content-Length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise CorrectionFailed("response_too_large", f"Content-Length {declared} > {limit}")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            raise CorrectionFailed("response_too_large", f"more than {limit} bytes")
    return bytes(body)


async def complete(
    client: httpx.AsyncClient,
    settings: CorrectorSettings,
    messages: list[dict[str, str]],
    *,
    max_response_bytes: int = MAX_RESPONSE_BYTES,
) -> str:
    """One chat completion (no retry), bounded in time and size; CorrectionFailed otherwise."""
    payload = orjson.dumps({"model": settings.model, "messages": messages, "temperature": 0})
    seconds = settings.timeout_seconds
    try:
        # httpx's timeout bounds each phase; the outer one bounds the whole call.
        async with (
            asyncio.timeout(seconds),
            client.stream(
                "POST",
                completions_url(settings),
                content=payload,
                headers=_headers(settings),
                timeout=httpx.Timeout(seconds),
            ) as response,
        ):
            if not response.is_success:
                raise CorrectionFailed("http_status", f"HTTP {response.status_code}")
            body = await _read_bounded(response, max_response_bytes)
    except TimeoutError:
        raise CorrectionFailed("timeout", f"no answer within {seconds:g} s") from None
    except httpx.TimeoutException:
        raise CorrectionFailed("timeout", f"no answer within {seconds:g} s") from None
    except httpx.HTTPError as exc:
        raise CorrectionFailed("transport", type(exc).__name__) from None
    return content_of(body)


async def correct(
    client: httpx.AsyncClient,
    settings: CorrectorSettings,
    raw: bytes,
    now: datetime | None = None,
    masker: Masker | None = None,
) -> RawReply | None:
    """The attempt-1 reply for one correction request, or None (logged) when there is none.

    What is logged goes out like everything replygate writes: masked by `masker` (the gate's;
    the built-in rules without one), its control characters escaped."""
    masker = masker or _built_in_masker()
    try:
        request = parse_request(raw)
    except ValueError as exc:
        log.error("skipping a malformed correction request: %s", outbound_text(masker, str(exc)))
        return None
    try:
        content = await complete(client, settings, build_messages(request))
    except CorrectionFailed as exc:
        log.warning(
            "correction of turn %s failed (%s); the deadline will send the failure notice",
            outbound_text(masker, request.turn_id),
            outbound_text(masker, str(exc)),
        )
        return None
    moment = now or datetime.now(UTC)
    return reply_from_completion(request, content, settings.model, moment)


def register_corrector(
    app: faust.App,
    settings: CorrectorSettings,
    topology: Topology,
    partitions: int,
    masker: Masker | None = None,
) -> Any:
    """Add the corrector agent to the worker: corrections in, attempt-1 replies out; its logs
    masked by `masker` (the gate's)."""
    from streams.broker.refusals import denied, is_denied
    from streams.worker.sender import fail_stop

    corrections = app.topic(topology.corrections.name, partitions=partitions)
    replies = app.topic(
        topology.replies.name, partitions=partitions, config=dict(topology.replies.config)
    )

    async def corrector(stream: Any) -> None:
        async with httpx.AsyncClient(follow_redirects=False) as client:
            async for event in stream.events():
                raw, message = event.value, event.message
                try:
                    reply = await correct(client, settings, raw, masker=masker)
                except Exception as exc:  # one odd record must not stop the corrector
                    # The type only: a message or traceback could quote the request.
                    log.error("correction failed unexpectedly (%s)", type(exc).__name__)
                    continue
                if reply is None:
                    continue
                # The worker sends a request to its turn's partition number: the answer goes
                # to that partition of replies.raw, whatever partitioner the agent uses, and
                # carries the request's trace context.
                try:
                    await replies.send(
                        key=reply.conversation_id.encode(),
                        value=reply_json(reply),
                        partition=message.partition,
                        headers=list(trace_of(message.headers)) or None,
                    )
                except Exception as exc:
                    if is_denied(exc):  # the ACLs will not change: say which, and stop
                        fail_stop(denied("write to", "topic", topology.replies.name, "corrector"))
                    raise
                log.info("published the correction of turn %s", reply.turn_id)

    # HTTP calls are slow and independent: `concurrency` actors share the stream.
    agent = app.agent(corrections, name="replygate-corrector", concurrency=settings.concurrency)
    return agent(corrector)
