"""Media inspection for valid `im.segments.v1` messages: check inline and local attachments.

The contract has already checked the structure; this stage does the I/O it must not do. A base64
or path attachment that cannot be decoded or read, lies outside the media root, is of the wrong
kind or too large is replaced by a host text segment, and a Notice says why. The reply is still
delivered. `url` and `file` references pass through untouched (the gate never fetches a URL).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from schemas.issue import Notice, json_path
from streams.files.paths import FileRefused, read_regular, resolve_inside

if TYPE_CHECKING:
    from streams.settings.model import FileSettings

MEDIA_SEGMENT_TYPES: Final = frozenset({"image", "audio", "video", "file"})
SNIFF_BYTES: Final = 16  # enough for every magic number below (WAV/WebP need 12)

UNDECODABLE: Final = "attachment_undecodable"
UNREADABLE: Final = "attachment_unreadable"
OUTSIDE_ROOT: Final = "attachment_outside_root"
WRONG_KIND: Final = "attachment_wrong_kind"
OVERSIZED: Final = "attachment_oversized"


@dataclass(frozen=True, slots=True)
class MediaPolicy:
    """Where local media may live, how big an attachment may be, and what replaces a bad one."""

    media_root: Path
    max_attachment_bytes: int
    unavailable_text: str

    @classmethod
    def from_settings(cls, settings: FileSettings) -> MediaPolicy:
        return cls(
            media_root=Path(settings.media_root),
            max_attachment_bytes=settings.max_attachment_bytes,
            unavailable_text=settings.attachment_unavailable_text,
        )


class AttachmentError(Exception):
    """Why an attachment cannot be delivered; `reason` is the Notice reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- sniffing ---------------------------------------------------------------------------------
def _is_png(head: bytes) -> bool:
    return head.startswith(b"\x89PNG\r\n\x1a\n")


def _is_jpeg(head: bytes) -> bool:
    return head.startswith(b"\xff\xd8\xff")


def _is_gif(head: bytes) -> bool:
    return head.startswith((b"GIF87a", b"GIF89a"))


def _is_webp(head: bytes) -> bool:
    return head.startswith(b"RIFF") and head[8:12] == b"WEBP"


def _is_wav(head: bytes) -> bool:
    return head.startswith(b"RIFF") and head[8:12] == b"WAVE"


def _is_ogg(head: bytes) -> bool:
    return head.startswith(b"OggS")


def _is_mp3(head: bytes) -> bool:
    """An ID3v2 tag, or an MPEG audio frame header: 11 sync bits, version and layer not reserved."""
    if head.startswith(b"ID3"):
        return True
    if len(head) < 2 or head[0] != 0xFF or head[1] & 0xE0 != 0xE0:
        return False
    version = (head[1] >> 3) & 0b11
    layer = (head[1] >> 1) & 0b11
    return version != 0b01 and layer != 0b00


def _is_mp4(head: bytes) -> bool:
    return head[4:8] == b"ftyp"


def _is_webm(head: bytes) -> bool:
    return head.startswith(b"\x1a\x45\xdf\xa3")


def _anything(head: bytes) -> bool:
    return True


SNIFFERS: Final[Mapping[str, tuple[Callable[[bytes], bool], ...]]] = {
    "image": (_is_png, _is_jpeg, _is_gif, _is_webp),
    "audio": (_is_wav, _is_ogg, _is_mp3),
    "video": (_is_mp4, _is_webm),
    "file": (_anything,),
}


def sniff_matches(segment_type: str, head: bytes) -> bool:
    """Whether the first bytes carry a magic number this segment type accepts."""
    return any(check(head) for check in SNIFFERS[segment_type])


# --- base64 -----------------------------------------------------------------------------------
# The standard alphabet, possessive: one linear pass that never backtracks, nothing allocated.
_ALPHABET_RE: Final = re.compile(r"[A-Za-z0-9+/]*+")
# The last data character before `==` / `=` carries 4 / 2 unused bits, which must be zero.
_BEFORE_TWO_PADS: Final = frozenset("AQgw")
_BEFORE_ONE_PAD: Final = frozenset("AEIMQUYcgkosw048")


def is_canonical_base64(value: str) -> bool:
    """Whether `value` is the one canonical standard-base64 spelling of some bytes: whole
    4-character quanta of the alphabet, at most `==` or `=` at the end, unused bits zero. Read
    as text only (nothing is decoded), so it can be asked of a value of any length."""
    if len(value) % 4:
        return False
    pads = 2 if value.endswith("==") else 1 if value.endswith("=") else 0
    if _ALPHABET_RE.fullmatch(value, 0, len(value) - pads) is None:
        return False
    if pads == 2:
        return value[-3] in _BEFORE_TWO_PADS
    return pads == 0 or value[-2] in _BEFORE_ONE_PAD


def decoded_length(value: str) -> int:
    """The byte length a base64 string claims, from its length alone (nothing is decoded);
    exact for a canonical value."""
    padding = 2 if value.endswith("==") else 1 if value.endswith("=") else 0
    return (len(value) + 3) // 4 * 3 - padding


def decode_base64(value: str, limit: int) -> bytes:
    """Strict standard base64 (no blanks, no URL-safe alphabet, canonical padding). The spelling
    is judged first, as text, so a non-canonical value is undecodable whatever its length; the
    exact size of a canonical one is then known from its length and judged before decoding, so
    nothing over `limit` is ever decoded or allocated."""
    if not is_canonical_base64(value):
        raise AttachmentError(UNDECODABLE)
    if decoded_length(value) > limit:
        raise AttachmentError(OVERSIZED)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):  # not reached after the spelling check; kept as a guard
        raise AttachmentError(UNDECODABLE) from None


# --- local paths ------------------------------------------------------------------------------
def _refusal(refused: FileRefused) -> AttachmentError:
    """Media name two of the path rule's refusals apart; every other one is "unreadable"."""
    if refused.kind == "outside":
        return AttachmentError(OUTSIDE_ROOT)
    if refused.kind == "oversized":
        return AttachmentError(OVERSIZED)
    return AttachmentError(UNREADABLE)


def resolve_media_path(value: str, media_root: Path) -> str:
    """The real path (symlinks resolved) of `value` under the media root, or why not."""
    try:
        return resolve_inside(os.path.realpath(media_root), value, strict=False)
    except FileRefused as refused:
        raise _refusal(refused) from None
    except (OSError, ValueError):
        raise AttachmentError(UNREADABLE) from None


def read_media_head(real: str, limit: int) -> bytes:
    """The first bytes of a resolved path, if it is a regular file no larger than `limit`."""
    try:
        return read_regular(real, SNIFF_BYTES, size_limit=limit)
    except FileRefused as refused:
        raise _refusal(refused) from None


# --- the stage --------------------------------------------------------------------------------
def check_attachment(segment_type: str, kind: str, value: str, policy: MediaPolicy) -> None:
    """Raise AttachmentError unless this base64/path attachment may be delivered."""
    if kind == "base64":
        head = decode_base64(value, policy.max_attachment_bytes)[:SNIFF_BYTES]
    else:
        real = resolve_media_path(value, policy.media_root)
        head = read_media_head(real, policy.max_attachment_bytes)
    if not sniff_matches(segment_type, head):
        raise AttachmentError(WRONG_KIND)


def _checked_media(segment: Any) -> tuple[str, str, str] | None:
    """(type, kind, value) of a segment this stage must check, else None."""
    if not isinstance(segment, dict) or segment.get("type") not in MEDIA_SEGMENT_TYPES:
        return None
    data = segment.get("data")
    media = data.get("media") if isinstance(data, dict) else None
    if not isinstance(media, dict):
        return None
    kind, value = media.get("kind"), media.get("value")
    if kind not in ("base64", "path") or not isinstance(value, str):
        return None
    return segment["type"], kind, value


def inspect_media(
    message: dict[str, Any], policy: MediaPolicy
) -> tuple[dict[str, Any], list[Notice]]:
    """A new message with every bad base64/path attachment replaced by the host's text, and why."""
    notices: list[Notice] = []
    segments: list[Any] = []
    for index, segment in enumerate(message.get("segments") or ()):
        target = _checked_media(segment)
        if target is not None:
            try:
                check_attachment(*target, policy)
            except AttachmentError as exc:
                segments.append({"type": "text", "data": {"text": policy.unavailable_text}})
                notices.append(Notice(path=json_path("segments", index), reason=exc.reason))
                continue
        segments.append(segment)
    return {**message, "segments": segments}, notices
