"""Prometheus metrics for the worker, with bounded labels, and the /metrics, /livez, /readyz server.

Every label value goes through an allow-list built from settings; anything else becomes `other`,
so a hostile record (a random platform, a made-up rule name, a turn id) can never grow the series
count. No label ever carries a turn, user or conversation id, nor a secret.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from typing import TYPE_CHECKING, Final, Protocol, TypeVar

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.exposition import choose_encoder

from schemas.codes import DEAD_LETTER_REASONS, NOTICE_REASONS
from schemas.registry import builtin_names, issue_codes
from streams.core.outcomes import OUTCOMES

if TYPE_CHECKING:
    from streams.settings import Settings

OTHER: Final = "other"
MAX_LABEL_CHARS: Final = 128

# Label values for validation error codes and attachment notices: every code replygate emits
# (schemas/codes.py, the registry the error-code catalogue is generated from). The worker adds
# a deployment's own codes; anything else is `other`.
DEFAULT_VALIDATION_CODES: Final = frozenset(issue_codes())
DEFAULT_NOTICE_REASONS: Final = frozenset(NOTICE_REASONS)
DEAD_REASONS: Final = frozenset(DEAD_LETTER_REASONS)

# 0.5 ms .. 1 s: one record's processing time in the pipeline.
PROCESSING_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0)
# Correction round trip: request out to attempt 1 in; the default deadline is 30 s.
ROUNDTRIP_BUCKETS: Final = (0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 120.0, 300.0)
# Input records per worker batch: 1 (a lone record) .. batch_max_records (500 by default).
BATCH_BUCKETS: Final = (1, 5, 10, 25, 50, 100, 250, 500, 1000, 10000, 100000)
# CSV snapshots are capped at 64 KiB (the CSV read at 256 KiB by default).
CSV_BYTES_BUCKETS: Final = (256, 1024, 4096, 16384, 32768, 65536, 131072, 262144, 1048576)


class TopicPartitionLike(Protocol):
    """What aiokafka's / Faust's `TopicPartition` offers: a topic name and a partition number."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...


K = TypeVar("K")


def compute_lag(end_offsets: Mapping[K, int], marks: Mapping[K, int]) -> dict[K, int]:
    """Per partition, end offset minus where its lag counts from (never negative).

    aiokafka exposes no lag; the worker feeds the end offsets and the group's committed offsets
    (`streams.worker.metrics_hooks.committed_marks`). A partition without a known mark is left
    out rather than guessed.
    """
    lags: dict[K, int] = {}
    for tp, end in end_offsets.items():
        pos = marks.get(tp)
        if pos is None or isinstance(end, bool) or isinstance(pos, bool):
            continue
        lags[tp] = max(0, int(end) - int(pos))
    return lags


def _clean(values: Iterable[str]) -> frozenset[str]:
    """An allow-list: strings only, non-empty, short enough to be a label value."""
    return frozenset(v for v in values if isinstance(v, str) and 0 < len(v) <= MAX_LABEL_CHARS)


def bound(value: object, allowed: frozenset[str]) -> str:
    """The value itself when allow-listed, else `other` (also for non-strings)."""
    if isinstance(value, str) and value in allowed:
        return value
    return OTHER


def _version() -> str:
    try:
        return metadata.version("replygate")
    except metadata.PackageNotFoundError:
        return "unknown"


def settings_topics(settings: Settings) -> list[str]:
    """Every real topic name the worker reads or writes, prefix included (the label values)."""
    from streams.broker.topology import Topology

    return Topology.of(settings).metric_topics()


class Metrics:
    """All replygate metrics in a private registry; every label value is allow-listed."""

    def __init__(
        self,
        *,
        contracts: Iterable[str],
        platforms: Iterable[str],
        topics: Iterable[str],
        rules: Iterable[str],
        codes: Iterable[str] = DEFAULT_VALIDATION_CODES,
        reasons: Iterable[str] = DEFAULT_NOTICE_REASONS,
        partitions: int = 8,
        version: str | None = None,
    ) -> None:
        self.contracts = _clean(contracts)
        self.platforms = _clean(platforms)
        self.topics = _clean(topics)
        self.rules = _clean(rules)
        self.codes = _clean(codes)
        self.reasons = _clean(reasons)
        self.partitions = max(1, int(partitions))
        # `*_created` samples double every series and no dashboard or alert uses them. The switch
        # is process-wide in prometheus_client; nothing else in the worker exports metrics.
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry(auto_describe=True)
        self._lock = threading.Lock()
        self._lag_series: set[tuple[str, str]] = set()
        reg = self.registry

        self._records_in = Counter(
            "replygate_records_in", "Records consumed, by topic.", ["topic"], registry=reg
        )
        self._records_out = Counter(
            "replygate_records_out", "Records produced, by topic.", ["topic"], registry=reg
        )
        self._outcomes = Counter(
            "replygate_outcomes",
            "Final outcome of each turn or tool call.",
            ["contract", "platform", "outcome"],
            registry=reg,
        )
        self._validation_errors = Counter(
            "replygate_validation_errors",
            "Contract violations found in replies, by stable code.",
            ["contract", "code"],
            registry=reg,
        )
        self._leaks_masked = Counter(
            "replygate_leaks_masked",
            "Secrets masked in outgoing records, by leak rule (never the secret).",
            ["rule"],
            registry=reg,
        )
        self._attachment_notices = Counter(
            "replygate_attachment_notices",
            "Attachments replaced by the unavailable notice, by reason.",
            ["reason"],
            registry=reg,
        )
        self._dead_letters = Counter(
            "replygate_dead_letters",
            "Records sent to the dead-letter topic, by reason (wrong_key: a producer's keys).",
            ["reason"],
            registry=reg,
        )
        self._pending_corrections = Gauge(
            "replygate_pending_corrections",
            "Turns waiting for their correction (attempt 1) in this worker.",
            registry=reg,
        )
        self._correction_roundtrip = Histogram(
            "replygate_correction_roundtrip_seconds",
            "Time from a correction request to the attempt-1 reply arriving.",
            buckets=ROUNDTRIP_BUCKETS,
            registry=reg,
        )
        self._correction_deadline_expired = Counter(
            "replygate_correction_deadline_expired",
            "Pending corrections whose deadline passed (a failure notice was sent).",
            registry=reg,
        )
        self._quoted_keys = Counter(
            "replygate_quoted_keys_accepted",
            "Input records keyed in the 0.1.0 form (JSON-quoted) and judged because "
            "accept_quoted_keys is on: producers still to move to the plain key.",
            registry=reg,
        )
        self._replayed = Counter(
            "replygate_replayed_records",
            "Input records met again after a crash or rebalance (they found their own write).",
            registry=reg,
        )
        self._expired_turns = Counter(
            "replygate_expired_turns",
            "Finished turns forgotten after the state horizon (a tombstone was written).",
            registry=reg,
        )
        self._processing = Histogram(
            "replygate_processing_seconds",
            "Time from a consumed record's batch start until its state and outputs are "
            "acknowledged, by topic.",
            ["topic"],
            buckets=PROCESSING_BUCKETS,
            registry=reg,
        )
        self._batch_records = Histogram(
            "replygate_batch_records",
            "Input records in each batch the worker handled (judged, written, sent together).",
            buckets=BATCH_BUCKETS,
            registry=reg,
        )
        self._batches_off_loop = Counter(
            "replygate_batches_off_loop_total",
            "Batches judged in the worker's judging thread, because they held a large record.",
            registry=reg,
        )
        self._csv_snapshot = Histogram(
            "replygate_csv_snapshot_bytes",
            "Size of CSV snapshots stored in tool results.",
            buckets=CSV_BYTES_BUCKETS,
            registry=reg,
        )
        self._consumer_lag = Gauge(
            "replygate_consumer_lag",
            "Input records not yet committed by the group (end offset - committed offset), "
            "by topic and partition.",
            ["topic", "partition"],
            registry=reg,
        )
        self._build_info = Gauge(
            "replygate_build_info", "Always 1; the version as a label.", ["version"], registry=reg
        )
        self._build_info.labels(version=(version or _version())[:MAX_LABEL_CHARS]).set(1)

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        rules: Iterable[str] = (),
        contracts: Iterable[str] = (),
        codes: Iterable[str] = (),
        reasons: Iterable[str] = (),
        version: str | None = None,
    ) -> Metrics:
        """Allow-lists from settings, plus what the worker knows (leak rule ids, extra codes).

        Contracts: the built-ins + the registered names (`schema_contracts`, `extra_contracts`)
        + `contracts`, never a name a record brings; rules: `rules` + the ids of
        `leak_patterns` (never a literal's value); codes and reasons extend the defaults.
        """
        return cls(
            contracts=[
                *builtin_names(),
                *(entry.name for entry in settings.schema_contracts),
                *settings.extra_contracts,
                *contracts,
            ],
            platforms=settings.platforms,
            topics=settings_topics(settings),
            rules=[*rules, *settings.leak_patterns],
            codes=[*DEFAULT_VALIDATION_CODES, *issue_codes(), *codes],
            reasons=[*DEFAULT_NOTICE_REASONS, *reasons],
            partitions=settings.partitions,
            version=version,
        )

    def exposition(self) -> str:
        """The registry in Prometheus text format (what /metrics serves by default)."""
        return generate_latest(self.registry).decode("utf-8")

    # --- label bounding -------------------------------------------------------------------
    def topic_label(self, topic: object) -> str:
        return bound(topic, self.topics)

    def partition_label(self, partition: object) -> str:
        """`0`..`partitions-1`, else `other`."""
        if isinstance(partition, bool) or not isinstance(partition, int):
            return OTHER
        return str(partition) if 0 <= partition < self.partitions else OTHER

    # --- counters ------------------------------------------------------------------------
    def record_in(self, topic: str, count: int = 1) -> None:
        self._records_in.labels(topic=self.topic_label(topic)).inc(count)

    def record_out(self, topic: str, count: int = 1) -> None:
        self._records_out.labels(topic=self.topic_label(topic)).inc(count)

    def outcome(self, contract: str, platform: str, outcome: str, count: int = 1) -> None:
        """Finished turns or tool calls; `outcome` is one of OUTCOMES."""
        self._outcomes.labels(
            contract=bound(contract, self.contracts),
            platform=bound(platform, self.platforms),
            outcome=bound(outcome, OUTCOMES),
        ).inc(count)

    def validation_error(self, contract: str, code: str, count: int = 1) -> None:
        if count > 0:
            self._validation_errors.labels(
                contract=bound(contract, self.contracts), code=bound(code, self.codes)
            ).inc(count)

    def leak_masked(self, rule: str, count: int = 1) -> None:
        if count > 0:
            self._leaks_masked.labels(rule=bound(rule, self.rules)).inc(count)

    def attachment_notice(self, reason: str, count: int = 1) -> None:
        self._attachment_notices.labels(reason=bound(reason, self.reasons)).inc(count)

    def dead_letter(self, reason: str, count: int = 1) -> None:
        """Dead letters by reason: the closed set of the DeadLetter record, else `other`."""
        if count > 0:
            self._dead_letters.labels(reason=bound(reason, DEAD_REASONS)).inc(count)

    def correction_expired(self, count: int = 1) -> None:
        if count > 0:
            self._correction_deadline_expired.inc(count)

    def quoted_keys(self, count: int) -> None:
        if count:
            self._quoted_keys.inc(count)

    def replayed(self, count: int) -> None:
        if count > 0:
            self._replayed.inc(count)

    def turns_expired(self, count: int) -> None:
        if count > 0:
            self._expired_turns.inc(count)

    # --- gauges and histograms -----------------------------------------------------------
    def set_pending_corrections(self, count: int) -> None:
        self._pending_corrections.set(max(0, count))

    def observe_correction_roundtrip(self, seconds: float) -> None:
        self._correction_roundtrip.observe(max(0.0, seconds))

    def observe_processing(self, topic: str, seconds: float, count: int = 1) -> None:
        """`count` records that took `seconds` each (a batch's records share its time)."""
        child = self._processing.labels(topic=self.topic_label(topic))
        for _ in range(count):
            child.observe(max(0.0, seconds))

    @contextlib.contextmanager
    def time_processing(self, topic: str) -> Iterator[None]:
        """`with metrics.time_processing(topic): ...` observes the block's duration."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.observe_processing(topic, time.perf_counter() - start)

    def observe_batch(self, records: int) -> None:
        self._batch_records.observe(max(0, records))

    def batch_off_loop(self) -> None:
        self._batches_off_loop.inc()

    def observe_csv_snapshot(self, size_bytes: int) -> None:
        self._csv_snapshot.observe(max(0, size_bytes))

    def set_consumer_lag(self, lags: Mapping[TopicPartitionLike, int]) -> None:
        """Replace the lag series with these (e.g. `compute_lag(...)`); revoked ones disappear."""
        totals: dict[tuple[str, str], int] = {}
        for tp, lag in lags.items():
            key = (self.topic_label(tp.topic), self.partition_label(tp.partition))
            totals[key] = totals.get(key, 0) + max(0, int(lag))
        with self._lock:
            for key, value in totals.items():
                self._consumer_lag.labels(*key).set(value)
            for stale in self._lag_series - totals.keys():
                with contextlib.suppress(KeyError):
                    self._consumer_lag.remove(*stale)
            self._lag_series = set(totals)


# --- HTTP ---------------------------------------------------------------------------------


@dataclass
class MetricsServer:
    """A running metrics server: `.port` (the real one when 0 was asked) and `.close()`."""

    host: str
    port: int
    _server: ThreadingHTTPServer = field(repr=False)
    _thread: threading.Thread = field(repr=False)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MetricsServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_ready(ready: Callable[[], bool]) -> bool:
    try:
        return bool(ready())
    except Exception:  # a probe that raises means "not ready", never a crashed server
        return False


def _handler(metrics: Metrics, ready: Callable[[], bool]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 10  # a slow client cannot hold a thread forever
        server_version = "replygate-metrics"
        sys_version = ""

        def do_GET(self) -> None:
            self._respond(head=False)

        def do_HEAD(self) -> None:
            self._respond(head=True)

        def _respond(self, *, head: bool) -> None:
            path = self.path.split("?", 1)[0]
            ctype = "text/plain; charset=utf-8"
            if path == "/metrics":
                encoder, ctype = choose_encoder(self.headers.get("Accept", ""))
                status, body = 200, encoder(metrics.registry)
            elif path == "/livez":
                status, body = 200, b"ok\n"
            elif path == "/readyz":
                ok = _is_ready(ready)
                status, body = (200, b"ready\n") if ok else (503, b"not ready\n")
            else:
                status, body = 404, b"not found\n"
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            """Silent: probes every few seconds would flood the worker's log."""

    return Handler


def serve(
    metrics: Metrics,
    port: int,
    host: str = "0.0.0.0",
    ready: Callable[[], bool] = lambda: True,
) -> MetricsServer:
    """Serve /metrics, /livez and /readyz from a daemon thread; port 0 picks a free port."""
    server = ThreadingHTTPServer((host, port), _handler(metrics, ready))
    server.daemon_threads = True
    thread = threading.Thread(
        target=server.serve_forever, name="replygate-metrics", kwargs={"poll_interval": 0.2}
    )
    thread.daemon = True
    thread.start()
    return MetricsServer(
        host=host, port=int(server.server_address[1]), _server=server, _thread=thread
    )
