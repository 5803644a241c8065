"""The worker's metrics are counted once a batch per label set: the totals of every record."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streams.worker.metrics_hooks import WorkerMetrics, worker_metrics
from tests.core.test_batch import Harness
from tests.support.samples import GITHUB_PAT, raw_reply, tool_call


def samples(metrics: WorkerMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.metrics.exposition()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.name.endswith("_created")
    }


def value(
    got: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str
) -> float:
    return got.get((name, tuple(sorted(labels.items()))), 0.0)


def test_a_batch_is_counted_once_per_label_set_with_every_record(tmp_path: Path) -> None:
    h = Harness(tmp_path)
    leaky = raw_reply(turn_id="t-1", conversation_id="c-1")
    leaky["output"] = {"text": leaky["output"]["text"].replace("Hello", f"Hello {GITHUB_PAT}")}
    records = [
        (h.source("replies_raw", 0, key=b"c-0"), raw_reply(turn_id="t-0", conversation_id="c-0")),
        (h.source("replies_raw", 1, key=b"c-1"), leaky),
        (h.source("replies_raw", 2), raw_reply(turn_id="t-2", output={"text": "prose"})),
        (h.source("replies_raw", 3), raw_reply(turn_id="t-3", output={"text": "prose"})),
        (h.source("toolcalls_raw", 4), tool_call()),
        (h.source("replies_raw", 5), b"not json"),
        # keyed the way Faust's JSON key serializer writes it: a wrong_key dead letter
        (h.source("replies_raw", 6, key=b'"c-7"'), raw_reply(turn_id="t-6")),
    ]
    result = h.run(records)
    metrics = worker_metrics(h.settings, h.gate)
    metrics.batch(result, 7, 0.02)
    got = samples(metrics)
    replies, tools = h.settings.topic("replies_raw"), h.settings.topic("toolcalls_raw")
    assert value(got, "replygate_records_in_total", topic=replies) == 6
    assert value(got, "replygate_records_in_total", topic=tools) == 1
    assert value(got, "replygate_processing_seconds_count", topic=replies) == 6
    assert value(got, "replygate_processing_seconds_sum", topic=replies) == pytest.approx(6 * 0.02)
    outcome = "replygate_outcomes_total"
    im = {"contract": "im.segments.v1", "platform": "im"}
    assert value(got, outcome, outcome="delivered", **im) == 2
    assert value(got, outcome, outcome="dead_letter", contract="other", platform="other") == 2
    assert sum(v for (n, _l), v in got.items() if n == outcome) == 5  # corrections: no outcome
    errors = [
        (dict(ls), v) for (n, ls), v in got.items() if n == "replygate_validation_errors_total"
    ]
    assert errors and all(labels["contract"] == "im.segments.v1" for labels, _ in errors)
    assert sum(v for _l, v in errors) == 2  # one code for each of the two invalid replies
    out = [v for (n, _l), v in got.items() if n == "replygate_records_out_total"]
    assert sum(out) == len([d for d in result.outputs if d.topic is not None])
    assert value(got, "replygate_leaks_masked_total", rule="github-pat") == 1
    dead = {
        dict(ls)["reason"]: v for (n, ls), v in got.items() if n == "replygate_dead_letters_total"
    }
    assert dead == {"wrong_key": 1, "not_json": 1}, dead


def test_lag_counts_from_the_committed_offset_else_the_log_start() -> None:
    from aiokafka import TopicPartition as TP

    from streams.worker.metrics_hooks import committed_marks

    committed = {("in", 0): 40}
    log_starts = {("in", 1): 7, ("in", 0): 0}
    marks = committed_marks(
        [TP("in", 0), TP("in", 1), TP("in", 2)],
        lambda topic, partition: committed.get((topic, partition)),
        log_starts,
    )
    # partition 2: neither a commit nor a known log start yet, so no figure rather than a guess
    assert marks == {TP("in", 0): 40, TP("in", 1): 7}


class _Consumer:
    """Faust's consumer as report_lag reads it: its assignment and the inputs' end offsets.
    A stand-in: a real worker holds fetched-but-uncommitted records only for a moment
    (tests/worker/test_kafka_flows.py reads the real gauge); here the position runs ahead of
    the commit on purpose, and the gauge must not follow the position."""

    def __init__(self, ends: dict[object, int]) -> None:
        self.ends = ends

    def assignment(self) -> set[object]:
        return set(self.ends)

    async def highwaters(self, *tps: object) -> dict[object, int]:
        return {tp: self.ends[tp] for tp in tps}

    async def position(self, tp: object) -> int:
        return self.ends[tp]  # everything fetched


class _App:
    def __init__(self, consumer: _Consumer, log_starts: dict[tuple[str, int], int]) -> None:
        self.consumer = consumer
        self.log_starts = log_starts


def test_fetched_but_uncommitted_records_are_lag(tmp_path: Path) -> None:
    import asyncio

    from aiokafka import TopicPartition as TP

    h = Harness(tmp_path)
    metrics = worker_metrics(h.settings, h.gate)
    replies, tools = h.settings.topic("replies_raw"), h.settings.topic("toolcalls_raw")
    ends = {TP(replies, 0): 500, TP(replies, 1): 90, TP(tools, 0): 12, TP("foreign", 0): 9}
    committed = {(replies, 0): 120}  # replies 1 never committed: from its log start
    app = _App(_Consumer(ends), {(replies, 1): 30, (tools, 0): 12})
    asyncio.run(metrics.report_lag(app, lambda t, p: committed.get((t, p))))
    got = samples(metrics)
    lag = "replygate_consumer_lag"
    assert value(got, lag, topic=replies, partition="0") == 380
    assert value(got, lag, topic=replies, partition="1") == 60
    assert (lag, (("partition", "0"), ("topic", tools))) in got  # caught up: reported as 0
    assert value(got, lag, topic=tools, partition="0") == 0
    assert not [labels for (n, labels) in got if n == lag and ("topic", "foreign") in labels]
