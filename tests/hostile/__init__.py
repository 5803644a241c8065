"""Hostile records, generated at test time (nothing large is committed).

Records are built as bytes: a normal record with a `"@@HOLE@@"` placeholder that is spliced
with raw JSON, so a 100,000-deep value never passes through Python recursion (`copy.deepcopy`
or `orjson.dumps` would fail on it before the gate ever saw it). `Case` says what the gate must
answer for each record and within what bounds; files (CSVs, FIFOs, symlink loops) are made by
`make_files` under a temporary directory.
"""

from __future__ import annotations

import base64
import os
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tests.support.samples import im_text

MiB = 1024 * 1024
HOLE = b'"@@HOLE@@"'
MEMBER = "555000111"
SENDER = "123456789"
PRODUCED_AT = "2026-11-30T12:00:00Z"


def reply(output: Any, contract: str = "im.segments.v1", **changes: Any) -> dict[str, Any]:
    """A RawReply (docs/records.md) around `output`; `"@@HOLE@@"` anywhere marks a splice point."""
    platform = "assistant" if contract == "assistant.html.v1" else "im"
    record: dict[str, Any] = {
        "turn_id": "t-hostile",
        "conversation_id": "c-hostile",
        "platform": platform,
        "contract": contract,
        "attempt": 0,
        "output": output,
        "context": {
            "sender_id": SENDER,
            "members": [SENDER, MEMBER],
            "fragments": {"docid-17-c2-p3": ["text-21", "text-22"]},
        },
        "produced_at": PRODUCED_AT,
    }
    record.update(changes)
    return record


def tool_call(arguments: Any, workspace: str = "ws", **changes: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "call_id": "call-hostile",
        "task_id": "task-hostile",
        "workspace": workspace,
        "tool": "show_rich_output_kandev",
        "arguments": arguments,
    }
    record.update(changes)
    return record


def splice(record: Mapping[str, Any], raw_value: bytes) -> bytes:
    """The record's JSON with its one `"@@HOLE@@"` replaced by `raw_value` (raw JSON bytes)."""
    data = orjson.dumps(record)
    assert data.count(HOLE) == 1, "exactly one splice point"
    return data.replace(HOLE, raw_value)


def text_segment(text: str) -> dict[str, Any]:
    return {"type": "text", "data": {"text": text}}


def im_reply(*segments: dict[str, Any]) -> bytes:
    return orjson.dumps(reply({"text": im_text(list(segments))}))


def html_reply(payload: str) -> bytes:
    return orjson.dumps(reply({"text": f"```html\n{payload}\n```"}, "assistant.html.v1"))


def deep_array(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_object(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def one_line(unit: str, size: int = 1_000_000) -> str:
    """`unit` repeated to `size` characters, no line break: a single-line regex target."""
    return (unit * (size // len(unit) + 1))[:size]


def base64_run(size: int = 1_000_000) -> str:
    """A long deterministic run of base64 alphabet characters (high entropy, no padding)."""
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    out = bytearray(size)
    state = 0x2545F491
    for i in range(size):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        out[i] = alphabet[state >> 25]
    return out.decode("ascii")


# --- media whose headers claim 1 GB --------------------------------------------------------------


def png_claiming_huge() -> bytes:
    """A PNG signature and IHDR claiming 65535 x 65535 RGBA (~17 GB decoded): 33 real bytes."""
    ihdr = struct.pack(">IIBBBBB", 65535, 65535, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\0\0\0\0"


def wav_claiming_1gb() -> bytes:
    """A RIFF/WAVE header whose chunk sizes claim 1 GiB of samples: 44 real bytes."""
    fmt = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 2, 44100, 176400, 4, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 1 << 30)
        + b"WAVE"
        + fmt
        + b"data"
        + struct.pack("<I", (1 << 30) - 36)
    )


def mp4_claiming_1gb() -> bytes:
    """An `ftyp` box, then an `mdat` box whose 64-bit size claims 1 GiB."""
    ftyp = struct.pack(">I4s4sI4s", 20, b"ftyp", b"isom", 512, b"isom")
    return ftyp + struct.pack(">I4sQ", 1, b"mdat", 1 << 30)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def media_segment(kind: str, value: str, segment_type: str = "image") -> dict[str, Any]:
    return {"type": segment_type, "data": {"media": {"kind": kind, "value": value}}}


# --- CSV ---------------------------------------------------------------------------------------


def csv_arguments(path: str, x_column: str = "month", column: str = "sales") -> dict[str, Any]:
    return {
        "version": 1,
        "title": "Hostile CSV",
        "blocks": [
            {
                "type": "chart",
                "chart_type": "line",
                "title": "Chart",
                "summary": "A chart read from a CSV",
                "csv": {"path": path, "x_column": x_column, "series": [{"column": column}]},
            }
        ],
    }


def wide_csv(columns: int, rows: int = 3) -> str:
    header = ",".join(["month", *(f"c{i}" for i in range(1, columns))])
    lines = [header]
    for r in range(rows):
        lines.append(",".join([f"m{r}", *("1" for _ in range(1, columns))]))
    return "\n".join(lines) + "\n"


# Every hostile CSV and media file, relative to the workspace / media root.
CSV_FILES: Mapping[str, str | bytes] = {
    "quoted_newlines.csv": 'month,sales\n"Jan\nuary",10\n"Feb\r\nruary",11\n',
    "crlf.csv": "month,sales\r\nJan,10\r\nFeb,11\r\n",
    "big_field.csv": "month,sales\n" + "J" + "a" * MiB + ",10\n",
    "wide.csv": wide_csv(10_000),
    "too_wide.csv": wide_csv(20_000, rows=1),
    "bare_cr.csv": "month,sales\rJan,10\rFeb,11\r",
    "nul.csv": "month,sales\nJan,1\x000\n",
    "bad_utf8.csv": b"month,sales\nJ\xffn,10\n",
}


def make_files(root: Path) -> tuple[Path, Path]:
    """(workspaces_root, media_root) with the hostile files, FIFOs and symlinks in place."""
    workspaces = root / "workspaces"
    media = root / "media"
    data = workspaces / "ws" / "data"
    data.mkdir(parents=True)
    media.mkdir()
    for name, content in CSV_FILES.items():
        target = data / name
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8", newline="")
    os.mkfifo(data / "fifo.csv")
    os.symlink("/proc/self/environ", data / "environ.csv")
    os.symlink("/proc/self/fd/0", data / "stdin.csv")
    os.symlink("loop_b.csv", data / "loop_a.csv")
    os.symlink("loop_a.csv", data / "loop_b.csv")
    os.symlink("/proc/self", workspaces / "procws")
    (media / "ok.png").write_bytes(png_claiming_huge())
    os.mkfifo(media / "fifo.png")
    os.symlink("/proc/self/environ", media / "environ.png")
    os.symlink("/dev/zero", media / "zero.png")
    os.symlink("loop_b.png", media / "loop_a.png")
    os.symlink("loop_a.png", media / "loop_b.png")
    (media / "folder.png").mkdir()
    return workspaces, media


# --- cases -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One hostile record and everything the gate must answer for it.

    `build` makes the bytes (lazily: only the case being run holds its 10 MB). `codes` must all
    appear among the error codes; `notices` are the Delivery's notice reasons, in order.
    `max_peak` bounds tracemalloc's peak during `CheckSession.line`, in bytes; `max_seconds` the
    time (with tracemalloc on, on a shared box: generous, it is there to catch a hang or a quadratic
    blow-up, which on these inputs would take minutes, not to time the gate).
    """

    name: str
    build: Callable[[], bytes]
    verdict: str
    action: str
    codes: tuple[str, ...] = ()
    dead_reason: str | None = None
    notices: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    max_peak: int = 32 * MiB
    max_seconds: float = 30.0
    check: Callable[[dict[str, Any]], bool] | None = None  # an extra look at the output
    xfail: str | None = None  # a known bug, reported; strict, so the fix flips it

    def __str__(self) -> str:
        return self.name
