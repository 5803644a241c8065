"""In-process cost per record: `CheckSession.line` against jsonschema + detect-secrets.

The baseline is the obvious alternative built from off-the-shelf parts, given every advantage:
validators compiled once (`validator_for(schema)(schema)`), the envelope checked with the JSON
Schemas of the pydantic record models, the reply with the contract's own JSON Schema
(`contract.json_schema()`; `rich_output_json_schema()` for tool calls; for HTML answers the
delivered-message shape, taken ready-made from the gate's own output so the baseline does no
HTML work at all), then every string of the reply scanned by detect-secrets (its line scanner,
with its default plugins and filters: what `detect-secrets scan` runs on a file).
Both sides see the same records of the benchmark mix; ratio = baseline time / gate time.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from bench.common import fmt, median, ratio, say
from bench.workload import BenchRecord, Workload, write_workspace
from streams.cli.check_session import CheckSession

N_RECORDS = int(os.environ.get("BENCH_CHECK_RECORDS", "400"))
ROUNDS = int(os.environ.get("BENCH_CHECK_ROUNDS", "4"))


def strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value (keys too), without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for k, v in item.items():
                yield k
                stack.append(v)
        elif isinstance(item, list):
            stack.extend(item)


class Baseline:
    """jsonschema validators built once, and detect-secrets' line scanner."""

    def __init__(self) -> None:
        from jsonschema.validators import validator_for

        from schemas.html_answer import ASSISTANT_HTML_V1
        from schemas.im_segments import IM_SEGMENTS_V1
        from schemas.records import RawReply, ToolCall
        from schemas.rich_output import rich_output_json_schema

        def build(schema: dict[str, Any]) -> Any:
            cls = validator_for(schema)
            cls.check_schema(schema)
            return cls(schema)

        self.reply_envelope = build(RawReply.model_json_schema())
        self.tool_envelope = build(ToolCall.model_json_schema())
        self.contracts = {
            "im.segments.v1": build(IM_SEGMENTS_V1.json_schema()),
            "assistant.html.v1": build(ASSISTANT_HTML_V1.json_schema()),
        }
        self.rich = build(rich_output_json_schema())
        self.delivered: dict[str, Any] = {}  # turn id -> the HTML message the gate delivered

    def check(self, raw: bytes) -> tuple[bool, int]:
        """(valid, secrets found) for one record."""
        record = orjson.loads(raw)
        if "call_id" in record:
            errors = list(self.tool_envelope.iter_errors(record))
            reply = record.get("arguments")
            errors += list(self.rich.iter_errors(reply))
        else:
            errors = list(self.reply_envelope.iter_errors(record))
            text = (record.get("output") or {}).get("text") or ""
            if record.get("contract") == "assistant.html.v1":
                reply = self.delivered.get(record["turn_id"], text)
            else:
                try:
                    reply = orjson.loads(text)
                except orjson.JSONDecodeError:
                    reply = text
                    errors.append("not_json")
            errors += list(self.contracts[record["contract"]].iter_errors(reply))
        found = sum(scan_text(s) for s in strings(reply))
        return not errors, found


def scan_text(text: str, filename: str = "reply.txt") -> int:
    """How many secrets detect-secrets reports in `text` (its file scanner, line by line)."""
    from detect_secrets.core.scan import _process_line_based_plugins

    lines = list(enumerate(text.splitlines(), 1))
    return sum(1 for _ in _process_line_based_plugins(lines=lines, filename=filename))


def _time_each(fn: Callable[[BenchRecord, int], Any], records: list[BenchRecord]) -> float:
    started = time.perf_counter()
    for i, r in enumerate(records):
        fn(r, i)
    return time.perf_counter() - started


def run(n: int = N_RECORDS, rounds: int = ROUNDS) -> None:
    from detect_secrets.settings import default_settings

    from schemas.records import Delivery
    from streams.core.pipeline import Gate
    from streams.files.stage import DiskFiles
    from streams.settings import Settings
    from streams.settings.contracts import build_registry

    say(f"== check_vs_baseline: {n} records of the mix, {rounds} rounds")
    gate_s: list[float] = []
    gate_cpu_s: list[float] = []
    base_s: list[float] = []
    per_kind_gate: Counter[str] = Counter()
    per_kind_base: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    disagreements: Counter[str] = Counter()
    verdicts: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp, default_settings():
        settings = Settings(workspaces_root=write_workspace(Path(tmp)))
        gate = Gate(settings, DiskFiles.from_settings(settings), build_registry(settings))
        baseline = Baseline()
        now = datetime.now(UTC)
        scan_text("warm-up line")  # plugin initialisation is not per record
        session = CheckSession(gate)
        # One round untimed, of records no timed round repeats: what a running worker has
        # done before (RE2 builds its automata's states as new text comes), not per record.
        for i, rec in enumerate(Workload(199).records(n)):
            session.line(rec.value, i + 1, now)
        for r in range(rounds):
            records = list(Workload(200 + r).records(n))
            verdicts.clear()

            def gate_one(rec: BenchRecord, i: int) -> None:
                started = time.perf_counter()
                decision = session.line(rec.value, i + 1, now)
                per_kind_gate[rec.kind] += time.perf_counter() - started  # type: ignore[assignment]
                verdicts[rec.id] = decision.verdict
                if rec.kind == "html" and isinstance(decision.output, Delivery):
                    baseline.delivered[rec.id] = decision.output.message

            def base_one(rec: BenchRecord, i: int) -> None:
                started = time.perf_counter()
                valid, found = baseline.check(rec.value)
                per_kind_base[rec.kind] += time.perf_counter() - started  # type: ignore[assignment]
                gate_valid = verdicts[rec.id] == "accepted"
                if valid != gate_valid:
                    disagreements[f"{rec.kind}: baseline {'valid' if valid else 'invalid'}"] += 1
                if rec.kind == "secret" and not found:
                    disagreements["secret: detect-secrets found none"] += 1

            kinds.update(rec.kind for rec in records)
            cpu_started = time.process_time()
            gate_s.append(_time_each(gate_one, records))
            gate_cpu_s.append(time.process_time() - cpu_started)
            base_s.append(_time_each(base_one, records))
            baseline.delivered.clear()
    say(f"  gate     {fmt([s / n * 1e6 for s in gate_s])} us/record")
    say(f"  gate CPU {fmt([s / n * 1e6 for s in gate_cpu_s])} us/record (process time)")
    say(f"  baseline {fmt([s / n * 1e6 for s in base_s])} us/record")
    for kind in sorted(kinds):
        g = per_kind_gate[kind] / kinds[kind] * 1e6
        b = per_kind_base[kind] / kinds[kind] * 1e6
        say(f"    {kind:8s} gate {g:8.1f} us  baseline {b:9.1f} us  ({b / g:5.1f}x)")
    total = sum(kinds.values())
    for what, count in sorted(disagreements.items()):
        say(f"  baseline disagrees with the gate: {what}: {count} of {total} records")
    ratio("check_vs_baseline", median(base_s) / median(gate_s))
    # Process CPU time: what other processes on a shared box do to wall time stays out of it.
    ratio("gate_us_per_record", median(gate_cpu_s) / n * 1e6)


if __name__ == "__main__":
    run()
