"""The `im.segments.v1` reply contract (docs/contracts.md section 1): one closed object of segments.

Nothing is repaired or coerced: the delivered message is the parsed object itself. Structure is
checked by strict pydantic models per `data` shape, but segment dispatch, the top level and the
issue bookkeeping are done here so that every path and code is precise and stable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from math import isfinite
from typing import Annotated, Any, Final, Literal

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)
from pydantic.types import Strict

from schemas.codes import (
    INVALID_URL,
    MAX_ISSUES,
    MISSING_FIELD,
    TOO_LONG,
    UNKNOWN_FIELD,
    WRONG_TYPE,
    code,
    table,
)
from schemas.contract import ContractBase, ContractResult, ReplyContract, ReplyInput
from schemas.errors import issues_from_validation_error
from schemas.issue import Issue, child_path, json_path
from schemas.issue_sink import IssueSink, capped
from schemas.json_read import is_large, not_json, parse_object
from schemas.preview import segments_text
from schemas.records import Context
from schemas.text_rules import tree_control_issues
from schemas.uris import HTTP_URL_SCHEMA, is_http_url

NAME: Final = "im.segments.v1"

# fmt: off
CODES: Final = table(
    UNKNOWN_SEGMENT_TYPE := code(
       "unknown_segment_type", NAME, "A segment `type` outside the closed list.",
       "segments[1].type",
       {"types": "text, markdown, mention, image, audio, video, file, reply, forward, face, "
        "dice, rps, share"},
       "is not a segment type; use one of {types}"),
    UNKNOWN_MENTION_TARGET := code(
       "unknown_mention_target", NAME,
       "A mention of someone who is neither `context.sender_id` nor in `context.members`.",
       "segments[1].data.target", "",
       "is not the sender or a member of this conversation; mention only a given user ID, "
       "exactly as given"),
)
# fmt: on
MAX_SEGMENTS: Final = 1_000

MEDIA_TYPES: Final = ("image", "audio", "video", "file")
MEDIA_KINDS: Final = ("url", "path", "base64", "file")

# --- data shapes ------------------------------------------------------------------------------
_CLOSED = ConfigDict(strict=True, extra="forbid", frozen=True)


class _Data(BaseModel):
    model_config = _CLOSED


class TextData(_Data):
    text: StrictStr


class MarkdownData(_Data):
    content: StrictStr


class MentionData(_Data):
    target: StrictStr


class Media(_Data):
    kind: Literal["url", "path", "base64", "file"]
    value: Annotated[StrictStr, Field(min_length=1)]


class MediaData(_Data):
    media: Media


class ReplyData(_Data):
    message_id: StrictStr


class ForwardData(_Data):
    forward_id: StrictStr


class FaceData(_Data):
    # A JSON number: int or finite float; bool is never a number (strict mode refuses it).
    id: StrictStr | StrictInt | Annotated[StrictFloat, Field(allow_inf_nan=False)]


class EmptyData(_Data):
    pass


class ShareData(_Data):
    url: StrictStr
    title: StrictStr


DATA_MODELS: Final[Mapping[str, type[_Data]]] = {
    "text": TextData,
    "markdown": MarkdownData,
    "mention": MentionData,
    "image": MediaData,
    "audio": MediaData,
    "video": MediaData,
    "file": MediaData,
    "reply": ReplyData,
    "forward": ForwardData,
    "face": FaceData,
    "dice": EmptyData,
    "rps": EmptyData,
    "share": ShareData,
}
SEGMENT_TYPES: Final = tuple(DATA_MODELS)


def _string_fields(model: type[_Data]) -> frozenset[str] | None:
    """The field names of a model made only of unconstrained strict strings, else None."""
    fields = model.model_fields
    plain = all(
        f.annotation is str and all(isinstance(m, Strict) for m in f.metadata)
        for f in fields.values()
    )
    return frozenset(fields) if plain else None


_STRING_SHAPES: Final[Mapping[type[_Data], frozenset[str]]] = {
    model: names
    for model in set(DATA_MODELS.values())
    if (names := _string_fields(model)) is not None
}
_MEDIA_KEYS: Final = frozenset(Media.model_fields)
# Field names per model, read once: pydantic's `model_fields` on a class is a slow descriptor.
_MODELS: Final[tuple[type[_Data], ...]] = (*DATA_MODELS.values(), Media)
_FIELDS: Final[Mapping[type[_Data], tuple[str, ...]]] = {
    model: tuple(model.model_fields) for model in _MODELS
}


def _plainly_valid(model: type[_Data], data: dict[Any, Any]) -> bool:
    """True when `data` is certainly valid for `model` (the common case), checked without
    building a model that would only be thrown away; anything else goes to pydantic, which
    names what is wrong."""
    if model is MediaData:
        media = data.get("media")
        return (
            data.keys() == _MEDIA_DATA_KEYS
            and isinstance(media, dict)
            and media.keys() == _MEDIA_KEYS
            and type(media["kind"]) is str
            and media["kind"] in MEDIA_KINDS
            and type(media["value"]) is str
            and media["value"] != ""
        )
    if model is FaceData:
        face = data.get("id")
        return data.keys() == _FACE_KEYS and (
            type(face) is str or type(face) is int or (type(face) is float and isfinite(face))
        )
    names = _STRING_SHAPES.get(model)
    return (
        names is not None
        and data.keys() == names
        and all(type(value) is str for value in data.values())
    )


_MEDIA_DATA_KEYS: Final = frozenset({"media"})
_FACE_KEYS: Final = frozenset({"id"})


_SEGMENT_KEYS: Final = ("type", "data")
_SEGMENT_KEY_SET: Final = frozenset(_SEGMENT_KEYS)


def _plain_segment(segment: object, mentionable: frozenset[str]) -> bool:
    """True when a segment is certainly valid (the common case), so no bookkeeping is needed;
    anything else goes to `_segment_issues`, which names what is wrong."""
    if type(segment) is not dict or segment.keys() != _SEGMENT_KEY_SET:
        return False
    seg_type, data = segment["type"], segment["data"]
    if type(seg_type) is not str or type(data) is not dict:
        return False
    model = DATA_MODELS.get(seg_type)
    if model is None or not _plainly_valid(model, data):
        return False
    if model is MediaData:
        media = data["media"]
        return media["kind"] != "url" or is_http_url(media["value"])
    if model is ShareData:
        return is_http_url(data["url"])
    if model is MentionData:
        return data["target"] in mentionable
    return True


# --- issue bookkeeping ------------------------------------------------------------------------
def _key_part(key: object) -> str:
    """A JSON key as a path part (non-string keys only come from non-JSON callers)."""
    return key if isinstance(key, str) else str(key)


def _unknown_keys(
    obj: Mapping[Any, Any], allowed: Iterable[str], base: str, sink: IssueSink
) -> None:
    allowed_set = frozenset(allowed)
    for key in obj:
        if sink.full:
            return
        if key not in allowed_set:
            sink.add(UNKNOWN_FIELD.issue(child_path(base, _key_part(key))))


def _bounded(obj: dict[Any, Any], fields: Iterable[str]) -> dict[Any, Any]:
    """The listed fields plus at most MAX_ISSUES others, so validation work stays bounded."""
    wanted = frozenset(fields)
    if len(obj) <= len(wanted) + MAX_ISSUES:
        return obj
    out = {k: v for k, v in obj.items() if k in wanted}
    extras = 0
    for key, value in obj.items():
        if key in wanted:
            continue
        out[key] = value
        extras += 1
        if extras > MAX_ISSUES:
            break
    return out


# --- the checks -------------------------------------------------------------------------------
def _data_issues(
    seg_type: str, data: dict[Any, Any], base: str, mentionable: frozenset[str], sink: IssueSink
) -> None:
    """Check one segment's `data` against its closed shape, then the rules beyond types."""
    model = DATA_MODELS[seg_type]
    media = data.get("media")
    if not _plainly_valid(model, data):
        candidate = _bounded(data, _FIELDS[model])
        media = candidate.get("media")
        if model is MediaData and isinstance(media, dict):
            candidate = {**candidate, "media": _bounded(media, _FIELDS[Media])}
        try:
            model.model_validate(candidate)
        except ValidationError as exc:
            sink.extend(issues_from_validation_error(exc, base))

    if model is MediaData and isinstance(media, dict):
        value = media.get("value")
        is_url = media.get("kind") == "url" and isinstance(value, str) and value != ""
        if is_url and isinstance(value, str) and not is_http_url(value):
            sink.add(INVALID_URL.issue(child_path(base, "media", "value"), "media"))
    elif model is ShareData:
        url = data.get("url")
        if isinstance(url, str) and not is_http_url(url):
            sink.add(INVALID_URL.issue(child_path(base, "url")))
    elif model is MentionData:
        target = data.get("target")
        if isinstance(target, str) and target not in mentionable:
            sink.add(UNKNOWN_MENTION_TARGET.issue(child_path(base, "target")))


@lru_cache(maxsize=MAX_SEGMENTS)
def _segment_paths(index: int) -> tuple[str, str]:
    """`segments[i]` and `segments[i].data`: built once per index, not once per segment."""
    base = json_path("segments", index)
    return base, child_path(base, "data")


def _segment_issues(
    segment: object, index: int, mentionable: frozenset[str], sink: IssueSink
) -> None:
    base, data_path = _segment_paths(index)
    if not isinstance(segment, dict):
        sink.add(WRONG_TYPE.issue(base, expected='an object {"type": ..., "data": {...}}'))
        return
    _unknown_keys(segment, _SEGMENT_KEYS, base, sink)

    seg_type: str | None = None
    if "type" not in segment:
        sink.add(MISSING_FIELD.issue(child_path(base, "type")))
    elif not isinstance(segment["type"], str):
        sink.add(WRONG_TYPE.issue(child_path(base, "type"), expected="a string"))
    elif segment["type"] not in DATA_MODELS:
        types = ", ".join(SEGMENT_TYPES)
        sink.add(UNKNOWN_SEGMENT_TYPE.issue(child_path(base, "type"), types=types))
    else:
        seg_type = segment["type"]

    if "data" not in segment:
        sink.add(MISSING_FIELD.issue(data_path))
        return
    data = segment["data"]
    if not isinstance(data, dict):
        sink.add(WRONG_TYPE.issue(data_path, expected="an object"))
        return
    if seg_type is not None:
        _data_issues(seg_type, data, data_path, mentionable, sink)


def message_issues(message: object, mentionable: frozenset[str] = frozenset()) -> list[Issue]:
    """Every broken rule of a parsed reply (bounded): structure, URLs and mention targets."""
    sink = IssueSink()
    if not isinstance(message, dict):
        sink.add(WRONG_TYPE.issue("$", expected='an object {"segments": [...]}'))
        return sink.result()
    _unknown_keys(message, ("segments",), "$", sink)
    if "segments" not in message:
        sink.add(MISSING_FIELD.issue("segments"))
        return sink.result()
    segments = message["segments"]
    if not isinstance(segments, list):
        sink.add(WRONG_TYPE.issue("segments", expected="an array of segments"))
        return sink.result()
    if len(segments) > MAX_SEGMENTS:
        sink.add(TOO_LONG.issue("segments", "items", limit=MAX_SEGMENTS, items="segments"))
    for index, segment in enumerate(segments[:MAX_SEGMENTS]):
        if _plain_segment(segment, mentionable):
            continue
        if sink.full:
            break
        _segment_issues(segment, index, mentionable, sink)
    return sink.result()


def _has_mention(message: dict[str, Any]) -> bool:
    """Whether any segment is a mention: only those read the mentionable IDs."""
    segments = message.get("segments")
    return isinstance(segments, list) and any(
        type(s) is dict and s.get("type") == "mention" for s in segments
    )


# --- the contract -----------------------------------------------------------------------------
def _segment_schema(seg_type: str) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["type", "data"],
        "properties": {"type": {"const": seg_type}, "data": _DATA_SCHEMAS[seg_type]},
    }


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(properties),
        "properties": properties,
    }


_MEDIA_SCHEMA: Final[dict[str, Any]] = {
    **_closed(
        {
            "kind": {"enum": list(MEDIA_KINDS)},
            "value": {"type": "string", "minLength": 1},
        }
    ),
    "if": {"properties": {"kind": {"const": "url"}}, "required": ["kind"]},
    "then": {"properties": {"value": {"$ref": "#/$defs/http_url"}}},
}
_DATA_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "text": _closed({"text": {"type": "string"}}),
    "markdown": _closed({"content": {"type": "string"}}),
    "mention": _closed(
        {"target": {"type": "string", "description": "the sender's or a member's user ID"}}
    ),
    **{t: _closed({"media": {"$ref": "#/$defs/media"}}) for t in MEDIA_TYPES},
    "reply": _closed({"message_id": {"type": "string"}}),
    "forward": _closed({"forward_id": {"type": "string"}}),
    "face": _closed({"id": {"type": ["string", "number"]}}),
    "dice": _closed({}),
    "rps": _closed({}),
    "share": _closed({"url": {"$ref": "#/$defs/http_url"}, "title": {"type": "string"}}),
}


def _schema() -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:replygate:contract:im.segments.v1",
        "title": NAME,
        "description": 'One JSON object {"segments": [...]}; "segments": [] means no reply.',
        **_closed(
            {
                "segments": {
                    "type": "array",
                    "maxItems": MAX_SEGMENTS,
                    "items": {"oneOf": [_segment_schema(t) for t in SEGMENT_TYPES]},
                }
            }
        ),
        "$defs": {"media": _MEDIA_SCHEMA, "http_url": dict(HTTP_URL_SCHEMA)},
    }


_INSTRUCTIONS: Final = (
    "Your previous reply broke the required format. Send it again as exactly one JSON object "
    '{"segments": [...]} that matches the JSON Schema below: no Markdown code fence, no text '
    "before or after the object, no second object. Keep the content of your reply; change only "
    "its format to fix the listed errors. Every object is closed: use only the fields the schema "
    "lists, include all of them, and use the JSON types it gives (a number is not a string). "
    "Mention only the user IDs you were given, exactly as given; anyone else goes in plain text."
)


class ImSegmentsContract(ContractBase):
    """`im.segments.v1`: closed segments for instant-messaging platforms."""

    name = NAME
    delivers_object = True
    notice_in_message_shape = True
    needs_file_stage = True  # its media segments are read and checked by their bytes
    codes = CODES

    def validate(self, reply: ReplyInput, context: Context | None = None) -> ContractResult:
        """Parse the one JSON object, check every rule, and return the object untouched."""
        message, problems = parse_object(reply)
        if message is None:
            return ContractResult(issues=problems or (not_json("not_object"),))
        mentionable = (
            context.mentionable()
            if context is not None and _has_mention(message)
            else frozenset[str]()
        )
        issues = [
            *problems,
            *message_issues(message, mentionable),
            *tree_control_issues(message, large=is_large(reply), read_from=reply.text),
        ]
        if issues:
            return ContractResult(issues=tuple(capped(issues)))
        if not message["segments"]:
            return ContractResult(no_reply=True)
        return ContractResult(message=message)

    def json_schema(self) -> dict[str, Any]:
        """A fresh draft 2020-12 schema of the message (structure and URLs, not mentions)."""
        schema: dict[str, Any] = orjson.loads(orjson.dumps(_schema()))
        return schema

    def instructions(self) -> str:
        return _INSTRUCTIONS

    def notice_message(self, text: str) -> dict[str, Any]:
        """The host's notice as a single text segment, so endpoints need no special case."""
        return {"segments": [{"type": "text", "data": {"text": text}}]}

    def preview_text(self, message: Any) -> str:
        return segments_text(message)

    def endpoint_context(self, message: Any) -> Context:
        """A mention target is taken as a member: the gate checked it against the members."""
        return Context(members=mention_targets(message))


def mention_targets(message: Any) -> list[str]:
    """The mention targets of a delivered message, in order."""
    segments = message.get("segments") if isinstance(message, dict) else None
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


IM_SEGMENTS_V1: Final = ImSegmentsContract()
_: ReplyContract = IM_SEGMENTS_V1
