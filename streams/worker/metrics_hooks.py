"""What the worker tells Prometheus: decisions and turn steps turned into bounded metrics."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from schemas.records import OutputRecord, ToolResult
from streams.broker.topology import Topology
from streams.core.pipeline import Decision, Gate
from streams.core.turns import Step
from streams.ops.metrics import Metrics, MetricsServer, compute_lag, serve
from streams.settings import Settings

log = logging.getLogger("replygate.metrics")

# Outcomes that are turn states but not metric outcomes.
_NOT_OUTCOMES = {"correction_requested", "ignored"}


class WorkerMetrics:
    """The worker's metrics, with allow-lists taken from this deployment's gate."""

    def __init__(self, settings: Settings, gate: Gate) -> None:
        self.settings = settings
        self.metrics = Metrics.from_settings(
            settings,
            rules=gate.masker.rule_ids,
            contracts=tuple(gate.contracts),
        )
        self.server: MetricsServer | None = None
        # the partitions whose lag is reported: the inputs' (not the deadline topic's)
        self.inputs = frozenset(topic.name for topic in Topology.of(settings).inputs())

    def serve(self, ready: Callable[[], bool]) -> None:
        if self.server is None and self.settings.metrics_port:
            self.server = serve(self.metrics, self.settings.metrics_port, ready=ready)

    def processed(self, decision: Decision) -> None:
        """Per judged record: its validation errors by code."""
        contract = decision.turn.contract if decision.turn else "kandev.rich_output.v1"
        if decision.verdict == "rejected":
            self.metrics.validation_errors_from(contract, (e.code for e in decision.errors))

    def latency(self, topic: str, seconds: float) -> None:
        """Per input record: counted in and timed."""
        self.metrics.record_in(topic)
        self.metrics.observe_processing(topic, seconds)

    def sent(self, decision: Decision) -> None:
        """Per output record: counted out, with its masked rules and attachment notices."""
        if decision.topic is not None:
            self.metrics.record_out(decision.topic)
        for hit in decision.masked:
            self.metrics.leak_masked(hit.rule, hit.count)
        for notice in decision.notices:
            self.metrics.attachment_notice(notice.reason)
        snapshot = _snapshot(decision.output)
        if snapshot is not None:
            self.metrics.observe_csv_snapshot(snapshot)

    def step(self, step: Step, decision: Decision | None = None) -> None:
        if step.outcome in _NOT_OUTCOMES:
            return
        turn = decision.turn if decision is not None else None
        emitted = step.emit[0].turn if step.emit else None
        turn = turn or emitted
        self.metrics.outcome(
            turn.contract if turn else "other", turn.platform if turn else "other", step.outcome
        )
        if step.expired:
            self.metrics.correction_expired()
        if step.roundtrip_seconds is not None:
            self.metrics.observe_correction_roundtrip(step.roundtrip_seconds)

    def tool(self, decision: Decision) -> None:
        outcome = {"tool_result": "tool_ok", "tool_error": "tool_error"}.get(
            decision.action, "dead_letter"
        )
        self.metrics.outcome("kandev.rich_output.v1", "other", outcome)

    def pending(self, count: int) -> None:
        self.metrics.set_pending_corrections(count)

    async def report_lag(self, app: Any) -> None:
        """Consumer lag per input partition: end offset minus position (aiokafka has none)."""
        try:
            consumer = app.consumer
            assignment = [tp for tp in consumer.assignment() if tp.topic in self.inputs]
            end_offsets = await consumer.highwaters(*assignment) if assignment else {}
            positions = {}
            for tp in assignment:
                position = await consumer.position(tp)
                if position is not None:
                    positions[tp] = position
            self.metrics.set_consumer_lag(compute_lag(end_offsets, positions))
        except Exception:  # a metric must never stop the worker
            log.debug("consumer lag not available", exc_info=True)


def _snapshot(output: OutputRecord | None) -> int | None:
    """A tool result's snapshot size: its `text` is the snapshot's JSON when there is one."""
    if not isinstance(output, ToolResult) or output.metadata.normalized.generic.output is None:
        return None
    return len(output.text.encode())
