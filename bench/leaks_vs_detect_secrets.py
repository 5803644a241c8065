"""Masking throughput (MB/s) against detect-secrets on the same replies, plus recall and FPR.

replygate masks every reply of a 10 MB generated corpus (bench/corpus.py) with the built-in
rules (`Masker()`), one `mask_text` call per reply as the gate does. detect-secrets scans
replies with its file scanner (default plugins and filters, line by line, as `detect-secrets
scan` does); at well under 1 MB/s the whole corpus would take minutes, so each of its rounds
scans a different stratified sample (every k-th reply) of `DS_SAMPLE_BYTES`, and its MB/s is
measured on that. Recall and false-positive rate use the labelled corpus in tests/leak_corpus:
a secret is caught when it no longer appears in the masked text (replygate) or when a reported
secret value contains it (detect-secrets; "lenient" also counts a reported value of 8+
characters inside the secret). detect-secrets' ad-hoc `scan_line` mode is shown too. Rows
with a `form` hide their secret (references, escapes, invisible characters): replygate catches
one when some rule fires and the secret is gone from the masked text as a reader decodes it.

Decoded views (streams/core/leak_views.py): what building and pre-filtering the views costs per MB,
on the corpus as generated and on an encoded copy where every reply needs them (HTML-escaped in
a paragraph, percent-encoded, JSON-escaped, or with zero-width spaces between words), plus the
masking throughput on that encoded copy. `RATIO leak_views_ms_per_mb` is the encoded figure.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING
from urllib.parse import quote

from bench.common import fmt, median, ratio, say
from bench.corpus import build, load_labelled

if TYPE_CHECKING:
    from streams.core.leaks import Masker

CORPUS_BYTES = int(os.environ.get("BENCH_LEAK_BYTES", str(10 * 1024 * 1024)))
ROUNDS = int(os.environ.get("BENCH_LEAK_ROUNDS", "3"))
DS_SAMPLE_BYTES = int(os.environ.get("BENCH_DS_SAMPLE_BYTES", str(160 * 1024)))


def _size(texts: list[str]) -> int:
    return sum(len(t.encode("utf-8")) for t in texts)


def ds_values(text: str, adhoc: bool = False) -> list[str]:
    """The secret values detect-secrets reports in `text`."""
    from detect_secrets.core.scan import _process_line_based_plugins, scan_line

    if adhoc:
        return [s.secret_value or "" for line in text.splitlines() for s in scan_line(line)]
    lines = list(enumerate(text.splitlines(), 1))
    return [s.secret_value or "" for s in _process_line_based_plugins(lines, "reply.txt")]


def quality(adhoc: bool = False) -> tuple[float, float, float]:
    """detect-secrets' (recall, lenient recall, false-positive rate) on the labelled corpus."""
    secrets = load_labelled("secrets.jsonl")
    benign = load_labelled("benign.jsonl")
    strict = lenient = 0
    for row in secrets:
        values = [v for v in ds_values(row["text"], adhoc) if v]
        strict += any(row["secret"] in v for v in values)
        lenient += any(row["secret"] in v or (len(v) >= 8 and v in row["secret"]) for v in values)
    fp = sum(1 for row in benign if ds_values(row["text"], adhoc))
    return strict / len(secrets), lenient / len(secrets), fp / len(benign)


def gate_quality() -> tuple[float, float, float]:
    """replygate's (recall, recall with the right rule id, false-positive rate)."""
    from streams.core.leak_views import decoded_text
    from streams.core.leaks import Masker

    masker = Masker()
    secrets = load_labelled("secrets.jsonl")
    benign = load_labelled("benign.jsonl")
    caught = labelled = 0
    for row in secrets:
        out, counts = masker.mask_text(row["text"])
        gone = row["secret"] not in out and row["secret"] not in decoded_text(out)
        hidden = "form" in row  # its secret was never spelled out: a rule must have fired
        caught += gone and (bool(counts) or not hidden)
        labelled += gone and row["rule"] in counts
    fp = sum(1 for row in benign if masker.mask_text(row["text"])[1])
    return caught / len(secrets), labelled / len(secrets), fp / len(benign)


# How the encoded copy writes each reply, in turn.
ENCODINGS: tuple[Callable[[str], str], ...] = (
    lambda t: f"<p>{escape(t)}</p>",
    lambda t: quote(t, safe=" "),
    lambda t: json.dumps(t)[1:-1].replace("/", "\\/"),
    lambda t: t.replace(" ", "\u200b "),
)


def encoded(replies: list[str]) -> list[str]:
    return [ENCODINGS[i % len(ENCODINGS)](t) for i, t in enumerate(replies)]


def seconds_per_mb(texts: list[str], rounds: int, work: Callable[[Masker, str], object]) -> float:
    """Median time per MB of `work` on every text, with a fresh masker each round."""
    from streams.core.leaks import Masker

    size = _size(texts) / 1e6
    times: list[float] = []
    for _ in range(rounds):
        masker = Masker()
        started = time.perf_counter()
        for text in texts:
            work(masker, text)
        times.append((time.perf_counter() - started) / size)
    return median(times)


def views_ms_per_mb(texts: list[str], rounds: int) -> float:
    """Building every decoded view of every text and pre-filtering each, in ms per MB."""
    return 1000 * seconds_per_mb(texts, rounds, lambda masker, text: masker._views_with_hits(text))


def masking_mbs(texts: list[str], rounds: int) -> float:
    return 1 / seconds_per_mb(texts, rounds, lambda masker, text: masker.mask_text(text))


def run(total: int = CORPUS_BYTES, rounds: int = ROUNDS) -> None:
    from detect_secrets.settings import default_settings

    from streams.core.leaks import Masker

    replies, with_secret = build(total)
    size = _size(replies)
    say(
        f"== leaks_vs_detect_secrets: corpus {size / 1e6:.1f} MB, {len(replies)} replies "
        f"({with_secret} with a secret), {rounds} rounds"
    )
    gate_mbs: list[float] = []
    masked_replies = 0
    for _ in range(rounds):
        masker = Masker()  # a fresh masker: no clean-string cache carried between rounds
        started = time.perf_counter()
        hits = 0
        for text in replies:
            hits += bool(masker.mask_text(text)[1])
        gate_mbs.append(size / 1e6 / (time.perf_counter() - started))
        masked_replies = hits
    step = max(1, round(size / DS_SAMPLE_BYTES))
    ds_mbs: list[float] = []
    with default_settings():
        ds_values("warm-up")
        for r in range(rounds):
            sample = replies[r % step :: step]
            started = time.perf_counter()
            for text in sample:
                ds_values(text)
            ds_mbs.append(_size(sample) / 1e6 / (time.perf_counter() - started))
        ds_recall, ds_lenient, ds_fpr = quality()
        adhoc_recall, adhoc_lenient, adhoc_fpr = quality(adhoc=True)
    say(f"  replygate masking  {fmt(gate_mbs, 2)} MB/s (whole corpus per round)")
    say(f"  detect-secrets     {fmt(ds_mbs, 3)} MB/s (samples of {DS_SAMPLE_BYTES // 1024} KiB)")
    say(f"  replies masked by replygate: {masked_replies} (corpus has {with_secret} secrets)")
    g_recall, g_labelled, g_fpr = gate_quality()
    say(
        f"  labelled corpus: replygate recall {g_recall:.3f} (right rule {g_labelled:.3f}), "
        f"false-positive rate {g_fpr:.3f}"
    )
    say(
        f"  labelled corpus: detect-secrets file scan recall {ds_recall:.3f} "
        f"(lenient {ds_lenient:.3f}), false-positive rate {ds_fpr:.3f}"
    )
    say(
        f"  labelled corpus: detect-secrets scan_line recall {adhoc_recall:.3f} "
        f"(lenient {adhoc_lenient:.3f}), false-positive rate {adhoc_fpr:.3f}"
    )
    best = max(ds_recall, adhoc_recall)
    say(
        f"  recall: replygate {g_recall:.3f} vs detect-secrets' best {best:.3f}: "
        + ("replygate >= detect-secrets" if g_recall >= best else "replygate BELOW detect-secrets")
    )
    ratio("leaks_vs_detect_secrets", median(gate_mbs) / median(ds_mbs))
    plain_ms = views_ms_per_mb(replies, rounds)
    hidden = encoded(replies)
    encoded_ms = views_ms_per_mb(hidden, rounds)
    say(
        f"  decoded views: {plain_ms:.1f} ms per MB on the corpus, {encoded_ms:.1f} ms per MB "
        f"on its encoded copy ({_size(hidden) / 1e6:.1f} MB, every reply needs them); masking "
        f"the encoded copy {masking_mbs(hidden, rounds):.1f} MB/s"
    )
    ratio("leak_views_ms_per_mb", encoded_ms)


if __name__ == "__main__":
    run()
