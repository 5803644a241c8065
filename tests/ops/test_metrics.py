"""Metrics: names, types, bounded labels, lag, and the /metrics, /livez, /readyz server."""

from __future__ import annotations

import random
import string
import urllib.error
import urllib.request
from typing import NamedTuple

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streams.core.outcomes import OUTCOMES
from streams.ops.metrics import (
    Metrics,
    compute_lag,
    serve,
    settings_topics,
)
from streams.settings import Settings

TOPICS = [
    "replies.raw",
    "toolcalls.raw",
    "turns.control",
    "corrections.requests",
    "delivery.im",
    "delivery.ide",
    "delivery.assistant",
    "toolresults.kandev",
    "replies.dlq",
]


class TP(NamedTuple):
    topic: str
    partition: int


def make() -> Metrics:
    return Metrics(
        contracts=["im.segments.v1", "assistant.html.v1", "kandev.rich_output.v1"],
        platforms=["im", "ide", "assistant"],
        topics=TOPICS,
        rules=["github-pat", "aws-access-key"],
        codes=["not_json", "unknown_mention_target"],
        reasons=["attachment_oversized"],
        partitions=4,
        version="9.9.9",
    )


def families(m: Metrics) -> dict[str, tuple[str, list[tuple[str, dict[str, str], float]]]]:
    text = m.exposition()
    out = {}
    for fam in text_string_to_metric_families(text):
        out[fam.name] = (fam.type, [(s.name, dict(s.labels), s.value) for s in fam.samples])
    return out


def exercise(m: Metrics) -> None:
    m.record_in("replies.raw")
    m.record_out("delivery.im")
    m.outcome("im.segments.v1", "im", "delivered")
    m.validation_error("im.segments.v1", "not_json")
    m.leak_masked("github-pat", 2)
    m.attachment_notice("attachment_oversized")
    m.dead_letter("wrong_key")
    m.set_pending_corrections(3)
    m.observe_correction_roundtrip(1.5)
    m.correction_expired()
    m.replayed(4)
    m.turns_expired(2)
    m.observe_processing("replies.raw", 0.002)
    m.observe_batch(500)
    m.batch_off_loop()
    m.observe_csv_snapshot(2048)
    m.set_consumer_lag({TP("replies.raw", 1): 7})


# parser family name (counters lose `_total`) -> (type, sample name)
EXPECTED = {
    "replygate_records_in": ("counter", "replygate_records_in_total"),
    "replygate_records_out": ("counter", "replygate_records_out_total"),
    "replygate_outcomes": ("counter", "replygate_outcomes_total"),
    "replygate_validation_errors": ("counter", "replygate_validation_errors_total"),
    "replygate_leaks_masked": ("counter", "replygate_leaks_masked_total"),
    "replygate_attachment_notices": ("counter", "replygate_attachment_notices_total"),
    "replygate_dead_letters": ("counter", "replygate_dead_letters_total"),
    "replygate_pending_corrections": ("gauge", "replygate_pending_corrections"),
    "replygate_correction_roundtrip_seconds": (
        "histogram",
        "replygate_correction_roundtrip_seconds_bucket",
    ),
    "replygate_correction_deadline_expired": (
        "counter",
        "replygate_correction_deadline_expired_total",
    ),
    "replygate_replayed_records": ("counter", "replygate_replayed_records_total"),
    "replygate_quoted_keys_accepted": ("counter", "replygate_quoted_keys_accepted_total"),
    "replygate_expired_turns": ("counter", "replygate_expired_turns_total"),
    "replygate_processing_seconds": ("histogram", "replygate_processing_seconds_bucket"),
    "replygate_batch_records": ("histogram", "replygate_batch_records_bucket"),
    "replygate_batches_off_loop": ("counter", "replygate_batches_off_loop_total"),
    "replygate_csv_snapshot_bytes": ("histogram", "replygate_csv_snapshot_bytes_bucket"),
    "replygate_consumer_lag": ("gauge", "replygate_consumer_lag"),
    "replygate_build_info": ("gauge", "replygate_build_info"),
}


def test_every_metric_has_its_name_and_type() -> None:
    m = make()
    exercise(m)
    fams = families(m)
    for name, (mtype, sample) in EXPECTED.items():
        assert name in fams, name
        assert fams[name][0] == mtype, name
        assert any(s[0] == sample for s in fams[name][1]), (name, sample)
    assert set(fams) == set(EXPECTED)


def test_values_and_labels_after_calls() -> None:
    m = make()
    exercise(m)
    fams = families(m)

    def value(fam: str, sample: str, **labels: str) -> float:
        for name, lab, val in fams[fam][1]:
            if name == sample and all(lab.get(k) == v for k, v in labels.items()):
                return val
        raise AssertionError((fam, sample, labels))

    assert value("replygate_records_in", "replygate_records_in_total", topic="replies.raw") == 1
    assert value("replygate_records_out", "replygate_records_out_total", topic="delivery.im") == 1
    assert (
        value(
            "replygate_outcomes",
            "replygate_outcomes_total",
            contract="im.segments.v1",
            platform="im",
            outcome="delivered",
        )
        == 1
    )
    assert value("replygate_leaks_masked", "replygate_leaks_masked_total", rule="github-pat") == 2
    assert value("replygate_pending_corrections", "replygate_pending_corrections") == 3
    assert value("replygate_batch_records", "replygate_batch_records_sum") == 500
    assert value("replygate_batches_off_loop", "replygate_batches_off_loop_total") == 1
    assert value("replygate_consumer_lag", "replygate_consumer_lag", partition="1") == 7
    assert value("replygate_build_info", "replygate_build_info", version="9.9.9") == 1
    assert (
        value(
            "replygate_processing_seconds",
            "replygate_processing_seconds_bucket",
            topic="replies.raw",
            le="0.0025",
        )
        == 1
    )
    assert (
        value(
            "replygate_processing_seconds",
            "replygate_processing_seconds_bucket",
            topic="replies.raw",
            le="0.001",
        )
        == 0
    )


def test_processing_buckets_span_half_a_millisecond_to_a_second() -> None:
    m = make()
    m.observe_processing("replies.raw", 0.0001)
    les = {
        s.labels["le"]
        for fam in text_string_to_metric_families(m.exposition())
        if fam.name == "replygate_processing_seconds"
        for s in fam.samples
        if s.name.endswith("_bucket")
    }
    finite = sorted(float(x) for x in les if x != "+Inf")
    assert finite[0] == 0.0005
    assert finite[-1] == 1.0


def label_sets(m: Metrics, family: str) -> list[dict[str, str]]:
    """The distinct series of a family (histogram `le` and `_created` samples folded in)."""
    out: list[dict[str, str]] = []
    for fam in text_string_to_metric_families(m.exposition()):
        if fam.name != family:
            continue
        for s in fam.samples:
            labels = {k: v for k, v in s.labels.items() if k != "le"}
            if labels not in out:
                out.append(labels)
    return out


def test_unknown_label_values_become_other() -> None:
    m = make()
    m.record_in("evil.topic")
    m.outcome("made.up.v9", "telegram", "exploded")
    m.validation_error("im.segments.v1", "brand_new_code")
    m.leak_masked("ghp_realLookingSecretValue123")
    m.attachment_notice("cosmic_rays")
    m.dead_letter("c-42 was keyed badly")
    m.observe_processing("t-42", 0.01)
    m.set_consumer_lag({TP("foreign.topic", 99): 5})
    assert label_sets(m, "replygate_records_in") == [{"topic": "other"}]
    outcomes = label_sets(m, "replygate_outcomes")
    assert outcomes == [{"contract": "other", "platform": "other", "outcome": "other"}]
    assert {"contract": "im.segments.v1", "code": "other"} in label_sets(
        m, "replygate_validation_errors"
    )
    assert label_sets(m, "replygate_leaks_masked") == [{"rule": "other"}]
    assert label_sets(m, "replygate_attachment_notices") == [{"reason": "other"}]
    assert label_sets(m, "replygate_dead_letters") == [{"reason": "other"}]
    assert label_sets(m, "replygate_processing_seconds") == [{"topic": "other"}]
    assert label_sets(m, "replygate_consumer_lag") == [{"topic": "other", "partition": "other"}]
    assert "ghp_realLookingSecretValue123" not in m.exposition()


def test_non_string_label_values_become_other() -> None:
    m = make()
    m.record_in(123)  # type: ignore[arg-type]
    m.outcome(None, ["im"], True)  # type: ignore[arg-type]
    assert label_sets(m, "replygate_records_in") == [{"topic": "other"}]
    assert label_sets(m, "replygate_outcomes") == [
        {"contract": "other", "platform": "other", "outcome": "other"}
    ]


def test_known_values_are_kept() -> None:
    m = make()
    for outcome in sorted(OUTCOMES):
        m.outcome("assistant.html.v1", "assistant", outcome)
    got = {d["outcome"] for d in label_sets(m, "replygate_outcomes")}
    assert got == set(OUTCOMES)


def test_partition_label_is_bounded_by_partition_count() -> None:
    m = make()  # 4 partitions
    assert [m.partition_label(p) for p in (0, 3, 4, -1, True, "1")] == [
        "0",
        "3",
        "other",
        "other",
        "other",
        "other",
    ]


def test_negative_and_zero_counts_do_not_move_counters() -> None:
    m = make()
    m.leak_masked("github-pat", 0)
    m.leak_masked("github-pat", -3)
    m.validation_error("im.segments.v1", "not_json", 0)
    m.set_pending_corrections(-5)
    assert label_sets(m, "replygate_leaks_masked") == []
    assert label_sets(m, "replygate_validation_errors") == []
    assert families(m)["replygate_pending_corrections"][1][0][2] == 0


def test_cardinality_stays_bounded_under_hostile_values() -> None:
    m = make()
    rnd = random.Random(1234)

    def junk() -> str:
        return "".join(rnd.choices(string.ascii_letters + string.digits + "-_.", k=12))

    for i in range(10_000):
        turn = f"t-{junk()}"
        m.record_in(rnd.choice([*TOPICS, turn]))
        m.record_out(rnd.choice([*TOPICS, junk()]))
        m.outcome(
            rnd.choice(["im.segments.v1", junk()]),
            rnd.choice(["im", "ide", junk()]),
            rnd.choice([*OUTCOMES, turn]),
        )
        m.validation_error(rnd.choice(["im.segments.v1", turn]), rnd.choice(["not_json", junk()]))
        m.leak_masked(rnd.choice(["github-pat", junk()]))
        m.attachment_notice(rnd.choice(["attachment_oversized", junk()]))
        m.dead_letter(rnd.choice(["wrong_key", junk()]))
        m.observe_processing(rnd.choice([*TOPICS, turn]), rnd.random())
        if i % 100 == 0:
            m.set_consumer_lag(
                {TP(rnd.choice([*TOPICS, junk()]), rnd.randrange(-5, 500)): i for _ in range(20)}
            )
    n_topics = len(TOPICS) + 1
    bounds = {
        "replygate_records_in": n_topics,
        "replygate_records_out": n_topics,
        "replygate_outcomes": 4 * 4 * (len(OUTCOMES) + 1),
        "replygate_validation_errors": 4 * 3,
        "replygate_leaks_masked": 3,
        "replygate_attachment_notices": 2,
        "replygate_dead_letters": 2,
        "replygate_processing_seconds": n_topics,
        "replygate_consumer_lag": n_topics * (4 + 1),
    }
    for family, limit in bounds.items():
        sets = label_sets(m, family)
        assert 0 < len(sets) <= limit, (family, len(sets))
    assert "t-" not in "".join(str(d) for f in bounds for d in label_sets(m, f))


def test_compute_lag() -> None:
    a, b, c = TP("replies.raw", 0), TP("replies.raw", 1), TP("toolcalls.raw", 0)
    ends = {a: 100, b: 5, c: 10}
    positions = {a: 40, b: 9}  # b: position past a stale end offset; c: unknown position
    assert compute_lag(ends, positions) == {a: 60, b: 0}
    assert compute_lag({}, positions) == {}
    assert compute_lag({a: 3}, {a: 3}) == {a: 0}


def test_set_consumer_lag_replaces_revoked_partitions() -> None:
    m = make()
    m.set_consumer_lag({TP("replies.raw", 0): 5, TP("replies.raw", 1): 6})
    assert len(label_sets(m, "replygate_consumer_lag")) == 2
    m.set_consumer_lag({TP("replies.raw", 1): 2})
    assert label_sets(m, "replygate_consumer_lag") == [{"topic": "replies.raw", "partition": "1"}]


def test_set_consumer_lag_sums_what_collapses_into_other() -> None:
    m = make()
    m.set_consumer_lag({TP("x", 0): 5, TP("y", 0): 6, TP("replies.raw", 50): 1})
    (fam,) = [f for f in text_string_to_metric_families(m.exposition()) if f.name.endswith("lag")]
    values = {(s.labels["topic"], s.labels["partition"]): s.value for s in fam.samples}
    assert values == {("other", "0"): 11, ("replies.raw", "other"): 1}


def test_time_processing_observes_even_on_error() -> None:
    m = make()
    with pytest.raises(RuntimeError), m.time_processing("replies.raw"):
        raise RuntimeError("boom")
    counts = [
        s.value
        for f in text_string_to_metric_families(m.exposition())
        if f.name == "replygate_processing_seconds"
        for s in f.samples
        if s.name.endswith("_count")
    ]
    assert counts == [1]


def test_registry_is_private() -> None:
    from prometheus_client import REGISTRY, generate_latest

    m1, m2 = make(), make()
    m1.record_in("replies.raw")
    assert b"replygate_records_in_total" not in generate_latest(REGISTRY)
    assert 'topic="replies.raw"' not in m2.exposition()


def test_from_settings_derives_allow_lists() -> None:
    s = Settings(
        topic_prefix="prod.",
        platforms=["im", "web"],
        partitions=3,
        extra_contracts={"acme.v1": "acme.contracts:Acme"},
        leak_patterns={"acme-token": "acme_[a-z]{8}"},
        leak_literals=["canary-literal-value"],
    )
    m = Metrics.from_settings(s, rules=["github-pat"], codes=["acme_code"])
    assert "prod.replies.raw" in m.topics and "prod.delivery.web" in m.topics
    assert "prod.replies.dlq" in settings_topics(s)
    assert "replies.raw" not in m.topics
    assert m.platforms == {"im", "web"}
    assert {"acme.v1", "im.segments.v1"} <= m.contracts
    assert m.rules == {"github-pat", "acme-token"}
    assert "canary-literal-value" not in m.rules
    assert {"acme_code", "not_json"} <= m.codes
    assert m.partitions == 3
    m.record_in("prod.replies.raw")
    m.leak_masked("acme-token")
    assert label_sets(m, "replygate_records_in") == [{"topic": "prod.replies.raw"}]
    assert label_sets(m, "replygate_leaks_masked") == [{"rule": "acme-token"}]


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.headers.get("Content-Type", ""), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("Content-Type", ""), exc.read().decode()


def test_server_scrape_liveness_and_readiness() -> None:
    m = make()
    exercise(m)
    state = {"ready": False}
    with serve(m, 0, host="127.0.0.1", ready=lambda: state["ready"]) as srv:
        assert srv.port > 0
        base = f"http://127.0.0.1:{srv.port}"
        status, ctype, body = get(base + "/metrics")
        assert status == 200
        assert ctype.startswith("text/plain")
        names = {f.name for f in text_string_to_metric_families(body)}
        assert set(EXPECTED) <= names
        assert get(base + "/livez")[0] == 200
        assert get(base + "/readyz")[0] == 503
        state["ready"] = True
        assert get(base + "/readyz")[0] == 200
        assert get(base + "/nope")[0] == 404


def test_readiness_probe_that_raises_is_not_ready() -> None:
    def broken() -> bool:
        raise RuntimeError("consumer gone")

    with serve(make(), 0, host="127.0.0.1", ready=broken) as srv:
        assert get(f"http://127.0.0.1:{srv.port}/readyz")[0] == 503
        assert get(f"http://127.0.0.1:{srv.port}/livez")[0] == 200


def test_server_close_frees_the_port() -> None:
    srv = serve(make(), 0, host="127.0.0.1")
    port = srv.port
    srv.close()
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/livez", timeout=2)
