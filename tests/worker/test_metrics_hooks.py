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
