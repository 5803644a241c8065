"""The benchmarks' record mix, generated deterministically from a seed (no files committed).

Mix (by record): 70% valid IM replies, 10% invalid IM replies (attempt 0, so each asks for a
correction), 10% HTML answers, 5% IM replies carrying a secret, 5% kandev tool calls (a third of
them read a CSV from the workspace `bench-ws`, see `write_workspace`). Every record has its own
turn or call id and yields exactly one output record from the worker.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

Kind = Literal["valid", "invalid", "html", "secret", "tool"]
MIX: tuple[tuple[Kind, int], ...] = (
    ("valid", 70),
    ("invalid", 10),
    ("html", 10),
    ("secret", 5),
    ("tool", 5),
)
WORKSPACE = "bench-ws"
CSV_NAME = "reports/sales.csv"
CSV_TEXT = "month,sales,cost\n" + "".join(
    f"M{i:02d},{10 + i * 1.5},{4 + i * 0.25}\n" for i in range(1, 25)
)

_WORDS_TEXT = """
the a to of and in is it for on that this with you can be as are your if we will not or
from at have by use run file build test change update config deploy service request
response error log value table query index cache server client branch commit merge review
check result output input version release window user account team project report chart
data metric latency throughput memory disk network schedule meeting tomorrow today
morning thanks sure great done next step first then after before because however also
please note here there which would should could might
"""
WORDS: tuple[str, ...] = tuple(_WORDS_TEXT.split())
LANGS = ("en", "de", "fr", "ja", "es")


@dataclass(frozen=True, slots=True)
class BenchRecord:
    """One input record: its kind, topic (logical name), key and bytes, and its id."""

    kind: Kind
    topic: Literal["replies_raw", "toolcalls_raw"]
    key: bytes
    value: bytes
    id: str


def _sentence(rng: random.Random, lo: int = 6, hi: int = 18) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    words[0] = words[0].capitalize()
    return " ".join(words) + rng.choice((".", ".", ".", "?", "!"))


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def _ident(rng: random.Random, n: int = 9) -> str:
    return "".join(rng.choice(string.digits) for _ in range(n))


def _code(rng: random.Random) -> str:
    name = rng.choice(("load", "parse", "fetch", "render", "merge"))
    return (
        f"```python\ndef {name}_{rng.randint(1, 99)}(path: str) -> dict:\n"
        f"    with open(path) as fh:\n        return json.load(fh)\n```"
    )


def fake_secrets(rng: random.Random) -> list[str]:
    """Fake credentials in real vendor formats (none of them is a real key)."""
    b62 = string.ascii_letters + string.digits

    def run(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    return [
        "ghp_" + run(b62, 36),
        "AKIA" + run(string.ascii_uppercase + string.digits, 16),
        "xoxb-" + _ident(rng, 11) + "-" + _ident(rng, 12) + "-" + run(b62, 24),
        "sk-proj-" + run(b62, 48),
        "sk_live_" + run(b62, 24),
        "glpat-" + run(b62, 20),
        "postgres://app:" + run(b62, 16) + "@db.internal:5432/prod",
    ]


class Workload:
    """Deterministic record generator for one seed; `records(n)` yields the mix in order."""

    def __init__(self, seed: int = 7, conversations: int = 500) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.conversations = conversations
        self.members = [_ident(self.rng) for _ in range(8)]
        self.secrets = fake_secrets(random.Random(seed + 1))

    def kinds(self, n: int) -> list[Kind]:
        """Exactly the mix's shares for `n` records (rounded), shuffled."""
        out: list[Kind] = []
        for kind, share in MIX:
            out += [kind] * (n * share // 100)
        out += ["valid"] * (n - len(out))
        self.rng.shuffle(out)
        return out

    def records(self, n: int, prefix: str = "b") -> Iterator[BenchRecord]:
        for i, kind in enumerate(self.kinds(n)):
            yield self.record(kind, f"{prefix}{self.seed}-{i}")

    def record(self, kind: Kind, rid: str) -> BenchRecord:
        rng = self.rng
        conv = f"c-{rng.randrange(self.conversations)}"
        if kind == "tool":
            value = self.tool_call(rid, conv)
            return BenchRecord(kind, "toolcalls_raw", conv.encode(), orjson.dumps(value), rid)
        if kind == "html":
            value = self.html_reply(rid, conv)
        elif kind == "invalid":
            value = self.im_reply(rid, conv, self.invalid_text())
        elif kind == "secret":
            value = self.im_reply(rid, conv, self.im_text(secret=rng.choice(self.secrets)))
        else:
            value = self.im_reply(rid, conv, self.im_text())
        return BenchRecord(kind, "replies_raw", conv.encode(), orjson.dumps(value), rid)

    # --- replies ---------------------------------------------------------------------------

    def context(self) -> dict[str, Any]:
        return {
            "sender_id": self.members[0],
            "members": self.members,
            "fragments": {
                f"docid-{n}-c{n % 7}-p{n % 3}": [f"text-{n}", f"text-{n + 1}"]
                for n in range(17, 21)
            },
            "language": self.rng.choice(LANGS),
        }

    def im_reply(self, rid: str, conv: str, text: str) -> dict[str, Any]:
        return {
            "turn_id": rid,
            "conversation_id": conv,
            "platform": "im",
            "contract": "im.segments.v1",
            "attempt": 0,
            "provider": "minimax",
            "output": {"text": text, "reasoning": _paragraph(self.rng, 2)},
            "context": self.context(),
            "produced_at": "2026-11-30T12:00:00Z",
        }

    def segments(self, secret: str | None = None) -> list[dict[str, Any]]:
        rng = self.rng
        segs: list[dict[str, Any]] = [
            {"type": "text", "data": {"text": _paragraph(rng, rng.randint(1, 4))}}
        ]
        for _ in range(rng.randint(0, 3)):
            pick = rng.randrange(6)
            if pick == 0:
                segs.append({"type": "mention", "data": {"target": rng.choice(self.members)}})
            elif pick == 1:
                body = f"**{rng.choice(WORDS)}**\n\n{_code(rng)}\n- {_sentence(rng)}"
                segs.append({"type": "markdown", "data": {"content": body}})
            elif pick == 2:
                url = f"https://docs.example.com/{rng.choice(WORDS)}/{rng.randint(1, 999)}"
                segs.append({"type": "share", "data": {"url": url, "title": _sentence(rng, 3, 6)}})
            elif pick == 3:
                url = f"https://cdn.example.com/img/{rng.randint(1, 10**6)}.png"
                segs.append({"type": "image", "data": {"media": {"kind": "url", "value": url}}})
            elif pick == 4:
                segs.append({"type": "face", "data": {"id": rng.randint(1, 300)}})
            else:
                segs.append({"type": "text", "data": {"text": _paragraph(rng, 2)}})
        if secret is not None:
            where = f"Here is the value from the CI settings: {secret} (rotate it after use)."
            segs.insert(rng.randint(0, len(segs)), {"type": "text", "data": {"text": where}})
        return segs

    def im_text(self, secret: str | None = None) -> str:
        return orjson.dumps({"segments": self.segments(secret)}).decode()

    def invalid_text(self) -> str:
        rng = self.rng
        pick = rng.randrange(4)
        if pick == 0:  # prose instead of JSON
            return _paragraph(rng, 3)
        if pick == 1:  # a Markdown fence around the JSON
            return f"```json\n{self.im_text()}\n```"
        if pick == 2:  # a mention nobody can resolve
            segs = [*self.segments(), {"type": "mention", "data": {"target": "404404404"}}]
            return orjson.dumps({"segments": segs}).decode()
        segs = [*self.segments(), {"type": "text", "data": {"text": rng.randint(1, 9)}}]
        return orjson.dumps({"segments": segs}).decode()  # a number where a string belongs

    def html_reply(self, rid: str, conv: str) -> dict[str, Any]:
        rng = self.rng
        n = rng.randint(17, 20)
        frag = f"docid-{n}-c{n % 7}-p{n % 3}"
        paras = []
        for k in range(rng.randint(1, 4)):
            paras.append(
                f'<p id="text-{k + 1}">{_paragraph(rng, 2)} '
                f'<b class="info-source" id="doc://{frag}?id=text-{n}">[{k + 1}]</b></p>'
            )
        paras.append(
            f'<p>See <a class="http-source" target="_blank" '
            f'href="https://example.com/r/{rng.randint(1, 999)}">the report</a> and '
            f"docid-113-c0.</p>"
        )
        if rng.random() < 0.5:
            rows = "".join(
                f"<tr><td>{rng.choice(WORDS)}</td><td>{rng.randint(1, 999)}</td></tr>"
                for _ in range(rng.randint(2, 6))
            )
            paras.append(f"<table><tbody>{rows}</tbody></table>")
        html = "\n".join(paras)
        text = f"```html\n{html}\n```\noptional_rag_fragment_used: doc://{frag}?id=text-{n}"
        return {
            "turn_id": rid,
            "conversation_id": conv,
            "platform": "assistant",
            "contract": "assistant.html.v1",
            "attempt": 0,
            "output": {"text": text},
            "context": self.context(),
            "produced_at": "2026-11-30T12:00:00Z",
        }

    # --- tool calls ------------------------------------------------------------------------

    def tool_call(self, rid: str, conv: str) -> dict[str, Any]:
        rng = self.rng
        pick = rng.randrange(3)
        if pick == 0:
            block: dict[str, Any] = {
                "type": "metrics",
                "items": [
                    {"label": rng.choice(WORDS), "value": f"{rng.randint(1, 9999)} passed"}
                    for _ in range(rng.randint(1, 6))
                ],
            }
        elif pick == 1:
            labels = [f"w{k}" for k in range(rng.randint(2, 12))]
            block = {
                "type": "chart",
                "chart_type": "bar",
                "title": _sentence(rng, 2, 5),
                "summary": _sentence(rng),
                "labels": labels,
                "series": [
                    {"label": "p50", "values": [rng.random() * 100 for _ in labels]},
                ],
            }
        else:
            block = {
                "type": "chart",
                "chart_type": "line",
                "title": "Monthly sales",
                "summary": "Sales and cost per month",
                "csv": {
                    "path": CSV_NAME,
                    "x_column": "month",
                    "series": [{"column": "sales", "label": "Sales (k)"}, {"column": "cost"}],
                },
            }
        return {
            "call_id": rid,
            "task_id": conv,
            "session_id": "s-1",
            "workspace": WORKSPACE,
            "tool": "show_rich_output_kandev",
            "arguments": {"version": 1, "title": _sentence(rng, 2, 6), "blocks": [block]},
        }


def write_workspace(root: Path) -> Path:
    """The workspaces root the tool calls expect, with its CSV file."""
    csv_path = root / WORKSPACE / CSV_NAME
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    csv_path.write_text(CSV_TEXT, encoding="utf-8")
    return root
