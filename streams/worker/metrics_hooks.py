"""What the worker tells Prometheus: decisions and turn steps turned into bounded metrics."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from schemas.records import DeadLetter, OutputRecord, ToolResult
from schemas.registry import TOOL_CONTRACT_NAME
from streams.broker.topology import Topology
from streams.core.batch import BatchResult, Judged
from streams.core.decision import Decision
from streams.core.pipeline import Gate
from streams.ops.metrics import Metrics, MetricsServer, compute_lag, serve
from streams.settings import Settings

log = logging.getLogger("replygate.metrics")

# Outcomes that are turn states but not metric outcomes.
_NOT_OUTCOMES = {"correction_requested", "ignored"}


def worker_metrics(settings: Settings, gate: Gate) -> WorkerMetrics:
    """The worker's metrics: their allow-lists span the deployment (contracts, platforms,
    topics, leak rules), so they are built from the whole settings, here only."""
    metrics = Metrics.from_settings(
        settings, rules=gate.masker.rule_ids, contracts=tuple(gate.contracts)
    )
    return WorkerMetrics(metrics, Topology.of(settings), settings.metrics_port)


class WorkerMetrics:
    """The worker's metrics, with allow-lists taken from this deployment's gate; `port`
    serves them (0: not served)."""

    def __init__(self, metrics: Metrics, topology: Topology, port: int) -> None:
        self.metrics = metrics
        self.port = port
        self.server: MetricsServer | None = None
        # the partitions whose lag is reported: the inputs' (not the deadline topic's)
        self.inputs = frozenset(topic.name for topic in topology.inputs())
        self.toolcalls = topology.toolcalls.name

    def serve(self, ready: Callable[[], bool]) -> None:
        if self.server is None and self.port:
            self.server = serve(self.metrics, self.port, ready=ready)

    def batch(self, result: BatchResult, size: int, seconds: float) -> None:
        """One handled batch of `size` records: its inputs counted and timed, its outcomes,
        validation errors and outputs counted. Each label set is counted once a batch with its
        total: prometheus_client's `labels()` is costly per call (bench/README.md, "The worker's
        metrics, counted once a batch")."""
        tally: Counter[tuple[str, ...]] = Counter()
        roundtrips: list[float] = []  # correction round trips, observed each
        for judged in result.judged:
            tally["in", judged.topic] += 1
            self._judged(tally, roundtrips, judged)
        for decision in result.outputs:
            self._sent(tally, decision)
        m = self.metrics
        m.observe_batch(size)
        for key, n in tally.items():
            kind, *labels = key
            if kind == "in":
                m.record_in(labels[0], n)
                m.observe_processing(labels[0], seconds, n)
            elif kind == "out":
                m.record_out(labels[0], n)
            elif kind == "outcome":
                m.outcome(labels[0], labels[1], labels[2], n)
            elif kind == "error":
                m.validation_error(labels[0], labels[1], n)
            elif kind == "masked":
                m.leak_masked(labels[0], n)
            elif kind == "notice":
                m.attachment_notice(labels[0], n)
            elif kind == "dead":
                m.dead_letter(labels[0], n)
        m.correction_expired(tally[("expired",)])
        for roundtrip in roundtrips:
            m.observe_correction_roundtrip(roundtrip)
        m.replayed(result.replayed)
        m.turns_expired(result.expired)
        m.quoted_keys(result.quoted_keys)

    def _judged(self, tally: Counter[tuple[str, ...]], roundtrips: list[float], j: Judged) -> None:
        """A judged record's outcome (a tool call's, or its turn's) and validation errors."""
        decision = j.decision
        if j.topic == self.toolcalls:  # the step says it: tool_ok, tool_error, a repeat, ...
            tally["outcome", TOOL_CONTRACT_NAME, "other", j.step.outcome] += 1
        elif j.step.outcome not in _NOT_OUTCOMES:
            turn = decision.turn if decision is not None else None
            turn = turn or (j.step.emit[0].turn if j.step.emit else None)
            contract, platform = (turn.contract, turn.platform) if turn else ("other", "other")
            tally["outcome", contract, platform, j.step.outcome] += 1
            tally[("expired",)] += j.step.expired
            if j.step.roundtrip_seconds is not None:
                roundtrips.append(j.step.roundtrip_seconds)
        if decision is not None and decision.verdict == "rejected":
            contract = decision.turn.contract if decision.turn else TOOL_CONTRACT_NAME
            for error in decision.errors:
                tally["error", contract, error.code] += 1

    def _sent(self, tally: Counter[tuple[str, ...]], decision: Decision) -> None:
        """An output record: counted out, with its masked rules and attachment notices."""
        if decision.topic is not None:
            tally["out", decision.topic] += 1
        for hit in decision.masked:
            tally["masked", hit.rule] += hit.count
        for notice in decision.notices:
            tally["notice", notice.reason] += 1
        if isinstance(decision.output, DeadLetter):
            tally["dead", decision.output.reason] += 1
        snapshot = _snapshot(decision.output)
        if snapshot is not None:
            self.metrics.observe_csv_snapshot(snapshot)

    def pending(self, count: int) -> None:
        self.metrics.set_pending_corrections(count)

    async def report_lag(self, app: Any, committed: Callable[[str, int], int | None]) -> None:
        """Consumer lag per owned input partition: its log end minus the group's committed
        offset (`committed`, what this worker last committed or found on assignment; a
        never-committed partition counts from its log start). Records fetched, or being
        judged, and not committed yet are lag: a user is still waiting on them. One end-offset
        request per scrape; the marks are in memory."""
        try:
            consumer = app.consumer
            assignment = [tp for tp in consumer.assignment() if tp.topic in self.inputs]
            end_offsets = await consumer.highwaters(*assignment) if assignment else {}
            marks = committed_marks(assignment, committed, app.log_starts)
            self.metrics.set_consumer_lag(compute_lag(end_offsets, marks))
        except Exception:  # a metric must never stop the worker
            log.debug("consumer lag not available", exc_info=True)


def committed_marks(
    partitions: Iterable[Any],
    committed: Callable[[str, int], int | None],
    log_starts: Mapping[tuple[str, int], int],
) -> dict[Any, int]:
    """Where each partition's lag counts from: the group's committed offset, else (never
    committed) the log start; a partition with neither known yet is left out, not guessed."""
    marks: dict[Any, int] = {}
    for tp in partitions:
        mark = committed(tp.topic, tp.partition)
        if mark is None:
            mark = log_starts.get((tp.topic, tp.partition))
        if mark is not None:
            marks[tp] = mark
    return marks


def _snapshot(output: OutputRecord | None) -> int | None:
    """A tool result's snapshot size: its `text` is the snapshot's JSON when there is one."""
    if not isinstance(output, ToolResult) or output.metadata.normalized.generic.output is None:
        return None
    return len(output.text.encode())
