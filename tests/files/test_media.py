"""Media inspection: strict base64, confined non-blocking path reads, magic numbers, notices."""

from __future__ import annotations

import base64
import binascii
import copy
import os
import string
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.contract import ReplyInput
from schemas.im_segments import IM_SEGMENTS_V1
from schemas.issue import Notice
from schemas.records import Context
from streams.files.media import (
    OUTSIDE_ROOT,
    OVERSIZED,
    SNIFF_BYTES,
    UNDECODABLE,
    UNREADABLE,
    WRONG_KIND,
    AttachmentError,
    MediaPolicy,
    decoded_length,
    inspect_media,
    is_canonical_base64,
    read_media_head,
)
from streams.settings import Settings

UNAVAILABLE = "[attachment unavailable]"
PAD = b"\x00" * 32

SAMPLES: dict[str, tuple[str, bytes]] = {
    "png": ("image", b"\x89PNG\r\n\x1a\n" + PAD),
    "jpeg": ("image", b"\xff\xd8\xff\xe0" + PAD),
    "gif87": ("image", b"GIF87a" + PAD),
    "gif89": ("image", b"GIF89a" + PAD),
    "webp": ("image", b"RIFF\x24\x00\x00\x00WEBPVP8 " + PAD),
    "wav": ("audio", b"RIFF\x24\x00\x00\x00WAVEfmt " + PAD),
    "ogg": ("audio", b"OggS\x00\x02" + PAD),
    "mp3_id3": ("audio", b"ID3\x04\x00\x00" + PAD),
    "mp3_mpeg1_l3": ("audio", b"\xff\xfb\x90\x64" + PAD),
    "mp3_mpeg2_l3": ("audio", b"\xff\xf3\x48\xc4" + PAD),
    "mp4": ("video", b"\x00\x00\x00\x18ftypisom" + PAD),
    "webm": ("video", b"\x1a\x45\xdf\xa3" + PAD),
}
NOT_MEDIA = {
    "text": b"hello, world, this is plain text",
    "riff_avi": b"RIFF\x24\x00\x00\x00AVI LIST" + PAD,
    "aac_adts": b"\xff\xf1\x50\x80" + PAD,  # frame sync but reserved MPEG-audio layer
    "empty": b"",
    "short_png": b"\x89PN",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "media"
    path.mkdir()
    return path


def policy_for(root: Path, limit: int = 1024 * 1024) -> MediaPolicy:
    return MediaPolicy(media_root=root, max_attachment_bytes=limit, unavailable_text=UNAVAILABLE)


def seg(seg_type: str, kind: str, value: str) -> dict[str, Any]:
    return {"type": seg_type, "data": {"media": {"kind": kind, "value": value}}}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def run(
    segment: dict[str, Any], root: Path, limit: int = 1024 * 1024
) -> tuple[dict[str, Any], list[Notice]]:
    message = {"segments": [segment]}
    return inspect_media(message, policy_for(root, limit))


def reasons(segment: dict[str, Any], root: Path, limit: int = 1024 * 1024) -> list[str]:
    out, notices = run(segment, root, limit)
    if notices:
        assert out["segments"][0] == {"type": "text", "data": {"text": UNAVAILABLE}}
    else:
        assert out["segments"][0] == segment
    return [n.reason for n in notices]


def write(root: Path, name: str, data: bytes) -> str:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return name


# --- policy -----------------------------------------------------------------------------------
def test_policy_from_settings(tmp_path: Path) -> None:
    settings = Settings(
        media_root=tmp_path,
        max_attachment_bytes=77,
        attachment_unavailable_text="gone",
    )
    assert MediaPolicy.from_settings(settings) == MediaPolicy(tmp_path, 77, "gone")


# --- magic numbers ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_magic_positive_base64_and_path(name: str, root: Path) -> None:
    seg_type, data = SAMPLES[name]
    assert reasons(seg(seg_type, "base64", b64(data)), root) == []
    assert reasons(seg(seg_type, "path", write(root, f"{name}.bin", data)), root) == []
    assert reasons(seg("file", "base64", b64(data)), root) == []


WRONG_KIND_CASES = [
    (seg_type, name)
    for seg_type in ("image", "audio", "video")
    for name, (kind, _) in sorted(SAMPLES.items())
    if kind != seg_type
] + [(seg_type, name) for seg_type in ("image", "audio", "video") for name in sorted(NOT_MEDIA)]


@pytest.mark.parametrize(("seg_type", "name"), WRONG_KIND_CASES)
def test_magic_wrong_kind(seg_type: str, name: str, root: Path) -> None:
    data = SAMPLES[name][1] if name in SAMPLES else NOT_MEDIA[name]
    if data:
        assert reasons(seg(seg_type, "base64", b64(data)), root) == [WRONG_KIND]
    assert reasons(seg(seg_type, "path", write(root, f"{name}.bin", data)), root) == [WRONG_KIND]


@pytest.mark.parametrize("name", sorted(NOT_MEDIA))
def test_file_accepts_anything(name: str, root: Path) -> None:
    data = NOT_MEDIA[name]
    if data:
        assert reasons(seg("file", "base64", b64(data)), root) == []
    assert reasons(seg("file", "path", write(root, f"{name}.bin", data)), root) == []


# --- base64 -----------------------------------------------------------------------------------
PNG = SAMPLES["png"][1]


@pytest.mark.parametrize(
    "value",
    [
        "QQ",  # missing padding
        "QQ=",  # short padding
        "Q===",  # too much padding
        "QQ==QQ==",  # data after padding
        "=QQQ",  # leading padding
        "QR==",  # non-canonical: padding bits set
        b64(PNG)[:8] + " " + b64(PNG)[8:],  # blank inside
        b64(PNG)[:8] + "\n" + b64(PNG)[8:],  # line break inside
        " " + b64(PNG),  # surrounding blank
        base64.urlsafe_b64encode(b"\xfb\xff\xfe" * 4).decode(),  # URL-safe alphabet
        "data:image/png;base64," + b64(PNG),
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB" + "é" * 4,  # non-ASCII
        "ＱＵＪＤ",  # full-width look-alikes
        "QUJD\x00AAA",
    ],
)
def test_base64_undecodable(value: str, root: Path) -> None:
    assert reasons(seg("file", "base64", value), root) == [UNDECODABLE]


def test_base64_oversized_after_exact_size(root: Path) -> None:
    data = PNG + b"\x00" * (100 - len(PNG))
    assert reasons(seg("image", "base64", b64(data)), root, limit=100) == []
    assert reasons(seg("image", "base64", b64(data + b"\x00")), root, limit=100) == [OVERSIZED]


def test_decoded_length_from_length_alone() -> None:
    for n in range(0, 20):
        assert decoded_length(b64(b"x" * n)) == n


def test_huge_base64_claim_is_never_decoded(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("decoded a claim over the limit")

    monkeypatch.setattr(base64, "b64decode", boom)
    monkeypatch.setattr(base64, "b64encode", boom)
    value = "A" * (2 * 1024 * 1024)  # claims 1.5 MiB
    assert reasons(seg("image", "base64", value), root, limit=1024 * 1024) == [OVERSIZED]
    # a value that is not base64 at all is undecodable, however long, and is not decoded either
    assert reasons(seg("image", "base64", "*" * (2 * 1024 * 1024)), root, limit=1024 * 1024) == [
        UNDECODABLE
    ]
    assert reasons(seg("image", "base64", value + "\n"), root, limit=1024 * 1024) == [UNDECODABLE]


PNG20 = PNG[:20]  # a PNG magic number, 20 bytes: exactly the limit below


@pytest.mark.parametrize(
    "value",
    [
        b64(PNG20).rstrip("="),  # no padding: its length claims 21 bytes
        b64(PNG20)[:8] + "\n" + b64(PNG20)[8:],  # a line break: 29 characters
        b64(PNG20)[:8] + " " + b64(PNG20)[8:] + "A==",
        b64(PNG20) + "====",
        b64(PNG20 + b"\x00")[:-2] + "R=",  # non-canonical padding bits, 21 bytes
        b64(PNG20) + "*" * 1000,
    ],
)
def test_non_canonical_base64_is_undecodable_whatever_its_length(
    value: str, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spelling is judged before the size: at the limit, a value that is not canonical
    base64 is `attachment_undecodable` (not `attachment_oversized`), and nothing is decoded."""
    assert reasons(seg("image", "base64", b64(PNG20)), root, limit=20) == []

    def boom(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("decoded a value that is not canonical base64")

    monkeypatch.setattr(base64, "b64decode", boom)
    assert reasons(seg("image", "base64", value), root, limit=20) == [UNDECODABLE]


def test_canonical_base64_over_the_limit_is_oversized_and_not_decoded(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("decoded a value over the limit")

    monkeypatch.setattr(base64, "b64decode", boom)
    for extra in (1, 2, 3, 100):  # every padding form
        value = b64(PNG20 + b"\x00" * extra)
        assert reasons(seg("image", "base64", value), root, limit=20) == [OVERSIZED]


def _strict_oracle(value: str) -> bool:
    """Canonical base64 by decoding: the strict decoder accepts it and re-encoding gives it back."""
    try:
        data = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return base64.b64encode(data).decode() == value


B64_CHARS = string.ascii_letters + string.digits + "+/=" + "-_ \n*\u00e9"


def test_is_canonical_base64_matches_decode_and_reencode_on_every_last_quantum() -> None:
    """Exhaustive where the rules bite: every padded last quantum (its unused bits), and every
    one-character change around a valid value."""
    for a in B64_CHARS:
        for b in B64_CHARS:
            for tail in ("==", "A=", "w=", "AA"):
                value = "QUJD" + a + b + tail
                assert is_canonical_base64(value) is _strict_oracle(value), value
            value = "QUJD" + "Q" + a + b + "="
            assert is_canonical_base64(value) is _strict_oracle(value), value


@given(st.text(alphabet=B64_CHARS, max_size=24))
def test_is_canonical_base64_matches_decode_and_reencode(value: str) -> None:
    assert is_canonical_base64(value) is _strict_oracle(value)


@given(st.binary(max_size=64))
def test_every_encoding_is_canonical_with_its_exact_length(data: bytes) -> None:
    value = b64(data)
    assert is_canonical_base64(value)
    assert decoded_length(value) == len(data)


# --- paths ------------------------------------------------------------------------------------
def test_path_nested_and_dotdot_inside_root(root: Path) -> None:
    write(root, "a/b/pic.png", PNG)
    assert reasons(seg("image", "path", "a/b/pic.png"), root) == []
    assert reasons(seg("image", "path", "a/x/../b/pic.png"), root) == []
    assert reasons(seg("image", "path", "./a/b/pic.png"), root) == []


def test_path_absolute_inside_root_is_accepted(root: Path) -> None:
    write(root, "pic.png", PNG)
    assert reasons(seg("image", "path", str(root / "pic.png")), root) == []


def test_path_symlink_inside_root_is_followed(root: Path) -> None:
    write(root, "real/pic.png", PNG)
    (root / "alias.png").symlink_to("real/pic.png")
    assert reasons(seg("image", "path", "alias.png"), root) == []


def test_path_dotdot_escape(root: Path) -> None:
    (root.parent / "secret.png").write_bytes(PNG)
    assert reasons(seg("image", "path", "../secret.png"), root) == [OUTSIDE_ROOT]
    assert reasons(seg("image", "path", "a/../../secret.png"), root) == [OUTSIDE_ROOT]


def test_path_sibling_with_root_prefix_is_outside(root: Path) -> None:
    sibling = root.parent / (root.name + "-evil")
    sibling.mkdir()
    (sibling / "pic.png").write_bytes(PNG)
    value = f"../{sibling.name}/pic.png"
    assert reasons(seg("image", "path", value), root) == [OUTSIDE_ROOT]


def test_path_absolute_outside(root: Path) -> None:
    assert reasons(seg("file", "path", "/etc/passwd"), root) == [OUTSIDE_ROOT]


def test_path_symlink_escape(root: Path) -> None:
    outside = root.parent / "outside.png"
    outside.write_bytes(PNG)
    (root / "rel.png").symlink_to("../outside.png")
    (root / "abs.png").symlink_to(outside)
    (root / "dir").symlink_to(root.parent)
    assert reasons(seg("image", "path", "rel.png"), root) == [OUTSIDE_ROOT]
    assert reasons(seg("image", "path", "abs.png"), root) == [OUTSIDE_ROOT]
    assert reasons(seg("image", "path", "dir/outside.png"), root) == [OUTSIDE_ROOT]


def test_path_symlink_escape_to_missing_target(root: Path) -> None:
    (root / "dangling").symlink_to("/nonexistent/replygate/x.png")
    assert reasons(seg("image", "path", "dangling"), root) == [OUTSIDE_ROOT]


def test_path_proc_via_absolute_symlink(root: Path) -> None:
    (root / "status").symlink_to("/proc/self/status")
    (root / "zero").symlink_to("/dev/zero")
    assert reasons(seg("file", "path", "status"), root) == [OUTSIDE_ROOT]
    assert reasons(seg("file", "path", "zero"), root) == [OUTSIDE_ROOT]


def test_path_symlink_loop_is_unreadable(root: Path) -> None:
    (root / "a").symlink_to("b")
    (root / "b").symlink_to("a")
    (root / "self").symlink_to("self")
    assert reasons(seg("file", "path", "a"), root) == [UNREADABLE]
    assert reasons(seg("file", "path", "self"), root) == [UNREADABLE]


def _in_thread(segment: dict[str, Any], root: Path) -> list[str]:
    box: list[list[str]] = []
    worker = threading.Thread(target=lambda: box.append(reasons(segment, root)), daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert not worker.is_alive(), "inspect_media blocked"
    return box[0]


@pytest.mark.timeout(30)  # a blocking open of the FIFO would hang here
def test_path_fifo_is_unreadable_and_never_blocks(root: Path) -> None:
    os.mkfifo(root / "pipe")
    (root / "to_pipe").symlink_to("pipe")
    assert _in_thread(seg("file", "path", "pipe"), root) == [UNREADABLE]
    assert _in_thread(seg("file", "path", "to_pipe"), root) == [UNREADABLE]


@pytest.mark.parametrize("value", [".", "sub", "sub/", "missing.png", "pic.png/x", "a\x00b"])
def test_path_unreadable(value: str, root: Path) -> None:
    (root / "sub").mkdir()
    write(root, "pic.png", PNG)
    assert reasons(seg("file", "path", value), root) == [UNREADABLE]


def test_path_media_root_missing(tmp_path: Path) -> None:
    assert reasons(seg("file", "path", "x"), tmp_path / "nope") == [UNREADABLE]


def test_path_oversized_by_size_not_content(root: Path) -> None:
    write(root, "exact.png", PNG + b"\x00" * (100 - len(PNG)))
    assert reasons(seg("image", "path", "exact.png"), root, limit=100) == []
    big = root / "big.png"
    with big.open("wb") as fh:
        fh.write(PNG)
        fh.truncate(10 * 1024 * 1024 * 1024)  # sparse 10 GiB
    assert reasons(seg("image", "path", "big.png"), root, limit=100) == [OVERSIZED]


def test_path_reads_only_the_head(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, "pic.png", PNG + b"\x00" * (512 * 1024))
    requested: list[int] = []
    real_read = os.read

    def spy(fd: int, n: int) -> bytes:
        requested.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", spy)
    assert reasons(seg("image", "path", "pic.png"), root) == []
    assert 0 < sum(requested) <= SNIFF_BYTES


def test_read_head_refuses_a_symlink_even_to_a_regular_file(root: Path) -> None:
    write(root, "pic.png", PNG)
    (root / "link.png").symlink_to("pic.png")
    with pytest.raises(AttachmentError) as err:
        read_media_head(str(root / "link.png"), 1024)
    assert err.value.reason == UNREADABLE


def test_read_head_refuses_a_swapped_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(root, "pic.png", PNG)
    other = os.stat(root / write(root, "other.png", PNG))  # a regular file, but another one
    monkeypatch.setattr(os, "fstat", lambda fd: other)
    with pytest.raises(AttachmentError) as err:
        read_media_head(str(root / "pic.png"), 1024)
    assert err.value.reason == UNREADABLE


# --- the stage as a whole ---------------------------------------------------------------------
def test_url_and_file_kinds_and_other_segments_pass_untouched(root: Path) -> None:
    message = {
        "segments": [
            {"type": "text", "data": {"text": "hi"}},
            seg("image", "url", "https://x.example/not-an-image.txt"),
            seg("video", "file", "../../etc/passwd"),
            seg("audio", "url", "http://x.example/a.mp3"),
            {"type": "share", "data": {"url": "https://x.example", "title": "t"}},
        ]
    }
    before = copy.deepcopy(message)
    out, notices = inspect_media(message, policy_for(root))
    assert notices == []
    assert out == before


def test_several_segments_new_dict_and_input_untouched(root: Path) -> None:
    write(root, "song.mp3", SAMPLES["mp3_id3"][1])
    message = {
        "segments": [
            {"type": "text", "data": {"text": "look"}},
            seg("image", "base64", b64(PNG)),
            seg("image", "base64", "QQ"),
            seg("audio", "path", "song.mp3"),
            seg("video", "path", "../x.mp4"),
            seg("audio", "base64", b64(PNG)),
        ]
    }
    before = copy.deepcopy(message)
    out, notices = inspect_media(message, policy_for(root))
    assert message == before
    assert out is not message and out["segments"] is not message["segments"]
    replaced = {"type": "text", "data": {"text": UNAVAILABLE}}
    assert out["segments"] == [
        before["segments"][0],
        before["segments"][1],
        replaced,
        before["segments"][3],
        replaced,
        replaced,
    ]
    assert notices == [
        Notice("segments[2]", UNDECODABLE),
        Notice("segments[4]", OUTSIDE_ROOT),
        Notice("segments[5]", WRONG_KIND),
    ]
    # the result is still a valid im.segments message
    assert IM_SEGMENTS_V1.validate(ReplyInput("tool", arguments=out), Context()).valid


def test_unavailable_text_comes_from_policy(root: Path) -> None:
    policy = MediaPolicy(root, 10, "(missing)")
    out, _ = inspect_media({"segments": [seg("file", "path", "nope")]}, policy)
    assert out["segments"][0]["data"]["text"] == "(missing)"
