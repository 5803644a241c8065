"""`replygate demo`: the bundled samples through a real broker, a real worker and the corrector.

Each run uses a fresh topic prefix and app id (reruns start clean and never touch anyone else's
topics), a scripted OpenAI-compatible endpoint for the corrector, and one worker subprocess.
The expected outcome of every sample lives beside the record in `samples/demo.jsonl` (the
`_demo` mapping), never inside the record itself, since records are closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

import orjson
from pydantic import ValidationError

import streams
from replygate_dev.scripted_llm import Canned, ScriptedLLM
from streams.broker.ready import KafkaNotReady, caught_up, describe, group_offsets, retry
from streams.broker.topology import TopicsRefused, Topology
from streams.client import AgentClient, InputRecord, input_record
from streams.settings import SchemaContractEntry, Settings

SAMPLES_DIR: Final = Path(__file__).resolve().parent / "samples"
# The checkout the demo runs from (it is not shipped): its local broker script lives there.
CHECKOUT: Final = Path(__file__).resolve().parents[2]
SAMPLES_FILE: Final = SAMPLES_DIR / "demo.jsonl"
# The demo's own caller-owned contract, registered beside any the settings bring.
DEMO_SCHEMA_CONTRACT: Final = {
    "name": "acme.ticket.v1",
    "schema": str(SAMPLES_DIR / "contracts" / "ticket.schema.json"),
    "instructions": "Answer with the ticket object only.",
}
PARTITIONS: Final = 2
CORRECTION_DEADLINE_SECONDS: Final = 5.0
CORRECTOR_TIMEOUT_SECONDS: Final = 3.0
BURST: Final = 1000
WORKER_START_SECONDS: Final = 60.0
OUTCOMES_SECONDS: Final = 30.0
STOP_SECONDS: Final = 15.0
INPUT_TOPICS: Final = ("replies_raw", "toolcalls_raw", "turns_control")
_TOPICS_BY_ID: Final = {"replies_raw": "turn_id", "toolcalls_raw": "call_id"}


# ---- the sample file -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Part:
    """One record to produce: its logical topic, key, bytes, how often, and when.

    `record` is the record as the agent-side client sends it; None for a sample that no
    client would send (not JSON, not a valid envelope, a key of its own), sent as its bytes.
    """

    topic: str
    key: bytes | None
    value: bytes
    times: int = 1
    after: str | None = None
    record: InputRecord | None = None


def _client_record(record: Any, meta: Mapping[str, Any]) -> InputRecord | None:
    if not isinstance(record, dict) or "key" in meta:
        return None
    try:
        return input_record(record)
    except ValidationError:
        return None


@dataclass
class Sample:
    """One story of the demo: what it is, the records that tell it, what must come out."""

    id: str
    what: str
    expect: dict[str, Any]
    parts: list[Part] = field(default_factory=list)
    llm: dict[str, Any] | None = None
    ref: str | None = None  # the turn_id or call_id the gate's outputs carry


def _key_of(topic: str, record: Any, meta: Mapping[str, Any]) -> bytes | None:
    if "key" in meta:
        return str(meta["key"]).encode()
    if not isinstance(record, dict):
        return None
    field_name = "task_id" if topic == "toolcalls_raw" else "conversation_id"
    value = record.get(field_name)
    return value.encode() if isinstance(value, str) else None


def load_samples(lines: Iterable[bytes]) -> list[Sample]:
    """Samples in file order; lines sharing an `_demo.id` are parts of one sample."""
    samples: dict[str, Sample] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        entry = orjson.loads(line)
        meta = entry["_demo"]
        topic = meta["topic"]
        if topic not in INPUT_TOPICS:
            raise ValueError(f"line {number}: unknown topic {topic!r}")
        if "record" in entry:
            record = entry["record"]
            value = orjson.dumps(record)
        else:
            record, value = None, str(entry["raw"]).encode()
        part = Part(
            topic,
            _key_of(topic, record, meta),
            value,
            int(meta.get("times", 1)),
            meta.get("after"),
            _client_record(record, meta),
        )
        sample = samples.get(meta["id"])
        if sample is None:
            if "expect" not in meta:
                raise ValueError(f"line {number}: the first line of {meta['id']} needs expect")
            ref_field = _TOPICS_BY_ID.get(topic)
            ref = record.get(ref_field) if ref_field and isinstance(record, dict) else None
            sample = samples[meta["id"]] = Sample(
                meta["id"], meta.get("what", ""), meta["expect"], llm=meta.get("llm"), ref=ref
            )
        sample.parts.append(part)
    return list(samples.values())


def read_samples(path: Path = SAMPLES_FILE) -> list[Sample]:
    with path.open("rb") as handle:
        return load_samples(handle)


def llm_script(samples: Iterable[Sample]) -> list[Canned]:
    """The scripted corrector's answers: one per sample that expects a correction call."""
    script = []
    for sample in samples:
        if sample.llm is None:
            continue
        llm = sample.llm
        script.append(
            Canned(
                match=llm["match"],
                content=llm.get("content", ""),
                status=int(llm.get("status", 200)),
                delay=float(llm.get("delay", 0.0)),
            )
        )
    return script


# ---- what came out, and whether it is what the sample expects ---------------------------------


@dataclass
class Seen:
    """The gate's outputs for one sample."""

    finals: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    corrections: int = 0
    llm_replies: int = 0


@dataclass(frozen=True, slots=True)
class Result:
    ok: bool
    outcome: str
    detail: str
    problems: tuple[str, ...] = ()


def _short(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a space, with an ellipsis when cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"


def _outcome(topic: str, record: Mapping[str, Any]) -> str:
    for name in ("kind", "status", "reason"):
        if name in record:
            return f"{topic} · {record[name]}"
    return topic


def _details(sample: Sample, seen: Seen, record: Mapping[str, Any] | None) -> list[str]:
    """A few words on what happened, from the records themselves."""
    words: list[str] = []
    if record is not None:
        if record.get("corrected"):
            words.append("corrected by the corrector")
        for hit in record.get("masked") or ():
            words.append(f"masked {hit['rule']} at {hit['path']}")
        for notice in record.get("notices") or ():
            words.append(f"notice {notice['reason']} at {notice['path']}")
        message = record.get("message")
        if isinstance(message, dict) and message.get("citations"):
            words.append(f"{len(message['citations'])} citations")
        generic = record.get("metadata", {}).get("normalized", {}).get("generic", {})
        if generic.get("output"):
            charts = generic["output"]["resolved_charts"]
            words.append(f"CSV snapshot: {sum(len(c['labels']) for c in charts)} rows")
        if record.get("status") == "error":
            words.append(_short(str(record.get("text", "")), 60))
        if "source_topic" in record:
            words.append(f"offset {record['offset']} → DLQ")
        if record.get("kind") in ("progress", "reply") and record.get("preview"):
            words.append(f"preview: {_short(str(record['preview']), 48)}")
        if record.get("kind") == "failure_notice":
            words.append(
                "correction invalid too" if seen.llm_replies else "no correction by the deadline"
            )
    if seen.corrections and not (record or {}).get("corrected"):
        words.insert(0, "correction requested")
    if record is None and seen.llm_replies:
        words.append("late correction dropped")
    times = sum(p.times for p in sample.parts if p.topic != "turns_control")
    if times > 1:
        words.append(f"sent {times}×, delivered {len(seen.finals)}×")
    if any(p.topic == "turns_control" for p in sample.parts):
        words.append("cancelled")
    if not words:
        words.append("delivered as sent" if record is not None else "nothing to deliver")
    return words


def evaluate(sample: Sample, seen: Seen, display: Mapping[str, str] | None = None) -> Result:
    """Compare what came out with the sample's `expect`; every mismatch is named.

    `expect.topic` is a logical name (`delivery.im`, `toolresults`, `dlq`, or null for
    nothing); `display` maps it to the name shown in the table.
    """
    shown = display or {}
    expect = sample.expect
    problems: list[str] = []
    want_topic = expect.get("topic")
    record: dict[str, Any] | None = None
    if want_topic is None:
        if seen.finals:
            problems.append(f"expected nothing, got {len(seen.finals)} record(s)")
        outcome = "nothing delivered"
    else:
        if len(seen.finals) != 1:
            problems.append(f"expected one record on {want_topic}, got {len(seen.finals)}")
        if seen.finals:
            topic, record = seen.finals[0]
            if topic != want_topic:
                problems.append(f"went to {topic}, not {want_topic}")
            outcome = _outcome(shown.get(topic, topic), record)
        else:
            outcome = "nothing yet"
    if record is not None:
        problems.extend(_field_problems(expect, record))
    if "correction" in expect and bool(seen.corrections) != expect["correction"]:
        problems.append(f"correction requested: {bool(seen.corrections)}")
    if "llm_reply" in expect and bool(seen.llm_replies) != expect["llm_reply"]:
        problems.append(f"corrector answered: {bool(seen.llm_replies)}")
    detail = "; ".join(_details(sample, seen, record))
    return Result(not problems, outcome, detail, tuple(problems))


def _field_problems(expect: Mapping[str, Any], record: Mapping[str, Any]) -> list[str]:
    problems = []
    for name in ("kind", "corrected", "status", "reason"):
        if name in expect and record.get(name) != expect[name]:
            problems.append(f"{name} is {record.get(name)!r}, not {expect[name]!r}")
    if "masked" in expect:
        rules = sorted({hit["rule"] for hit in record.get("masked") or ()})
        if rules != sorted(expect["masked"]):
            problems.append(f"masked rules {rules}, not {sorted(expect['masked'])}")
    if "notices" in expect:
        reasons = sorted({n["reason"] for n in record.get("notices") or ()})
        if reasons != sorted(expect["notices"]):
            problems.append(f"notices {reasons}, not {sorted(expect['notices'])}")
    if "citations" in expect:
        message = record.get("message")
        count = len(message.get("citations") or ()) if isinstance(message, dict) else 0
        if count != expect["citations"]:
            problems.append(f"{count} citations, not {expect['citations']}")
    if "snapshot" in expect:
        generic = record.get("metadata", {}).get("normalized", {}).get("generic", {})
        if bool(generic.get("output")) != expect["snapshot"]:
            problems.append(f"snapshot present: {bool(generic.get('output'))}")
    return problems


def expected_outcomes(samples: Iterable[Sample], extra: Mapping[str, int]) -> Counter[str]:
    """The worker's outcome counts the samples (plus warm-up and burst) must produce."""
    counts: Counter[str] = Counter(extra)
    for sample in samples:
        counts.update(sample.expect.get("outcomes", ()))
    return counts


class Tracker:
    """Routes every record read from the gate's topics to the sample it belongs to."""

    def __init__(self, settings: Settings, samples: list[Sample]) -> None:
        topology = Topology.of(settings)
        watched = (topology.replies, *topology.outputs())
        self.logical = {t.name: t.logical for t in watched}
        self.display = {t.logical: topology.plain_name(t) for t in watched}
        self.replies_topic = topology.replies.name
        self.samples = samples
        self.seen: dict[str, Seen] = {s.id: Seen() for s in samples}
        self.by_ref = {s.ref: s.id for s in samples if s.ref is not None}
        self.by_offset: dict[tuple[int, int], str] = {}
        self.burst_delivered = 0
        self.last_burst_at = 0.0

    def produced(self, sample: Sample, part: Part, partition: int, offset: int) -> None:
        if part.topic == "replies_raw":
            self.by_offset[(partition, offset)] = sample.id

    def add(self, topic: str, value: bytes) -> None:
        logical = self.logical.get(topic)
        if logical is None:
            return
        try:
            record = orjson.loads(value)
        except orjson.JSONDecodeError:
            return  # our own malformed sample, read back from replies.raw
        if not isinstance(record, dict):
            return
        if logical == "dlq":
            if record.get("source_topic") == self.replies_topic:
                sample_id = self.by_offset.get((record["partition"], record["offset"]))
                if sample_id is not None:
                    self.seen[sample_id].finals.append((logical, record))
            return
        ref = record.get("call_id") if logical == "toolresults" else record.get("turn_id")
        if logical.startswith("delivery.") and str(ref).startswith("burst-"):
            self.burst_delivered += 1
            self.last_burst_at = time.perf_counter()
            return
        sample_id = self.by_ref.get(ref) if isinstance(ref, str) else None
        if sample_id is None:
            return
        seen = self.seen[sample_id]
        if logical == "corrections":
            seen.corrections += 1
        elif logical == "replies_raw":
            provider = record.get("provider") or ""
            if record.get("attempt") == 1 and provider.startswith("corrector"):
                seen.llm_replies += 1
        else:
            seen.finals.append((logical, record))

    def settled(self, sample: Sample) -> bool:
        """Whether everything the sample waits for has come out (nothing-expected: barrier)."""
        seen, expect = self.seen[sample.id], sample.expect
        if expect.get("topic") is not None and not seen.finals:
            return False
        if expect.get("correction") and not seen.corrections:
            return False
        return not (expect.get("llm_reply") and not seen.llm_replies)

    def ready(self, part: Part, sample: Sample) -> bool:
        if part.after is None:
            return True
        if part.after == "correction_requested":
            return self.seen[sample.id].corrections > 0
        raise ValueError(f"{sample.id}: unknown condition {part.after!r}")


# ---- the run --------------------------------------------------------------------------------


def free_port() -> int:
    """A free TCP port on loopback (for the worker's metrics and web ports)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def read_rss(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) of a process in bytes, from /proc; (0, 0) where there is no /proc."""
    values = {"VmRSS": 0, "VmHWM": 0}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                name, _, rest = line.partition(":")
                if name in values:
                    values[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return values["VmRSS"], values["VmHWM"]


def scrape_outcomes(port: int) -> Counter[str]:
    """The worker's `replygate_outcomes` counts, summed over contract and platform."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read(4 * 1024 * 1024).decode()
    counts: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        if family.name != "replygate_outcomes":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                counts[sample.labels["outcome"]] += int(sample.value)
    return counts


def with_demo_contract(settings: Settings) -> Settings:
    """The settings with the demo's JSON Schema contract added (schema paths made absolute)."""
    entries = [
        {**entry.model_dump(by_alias=True), "schema": str(settings.schema_path(entry).resolve())}
        for entry in settings.schema_contracts
    ]
    if all(entry["name"] != DEMO_SCHEMA_CONTRACT["name"] for entry in entries):
        entries.append(dict(DEMO_SCHEMA_CONTRACT))
    return settings.model_copy(
        update={"schema_contracts": [SchemaContractEntry.model_validate(e) for e in entries]}
    )


def copy_files(root: Path) -> tuple[Path, Path]:
    """The bundled workspaces and media, copied where the worker may read them."""
    workspaces, media = root / "workspaces", root / "media"
    shutil.copytree(SAMPLES_DIR / "workspaces", workspaces)
    shutil.copytree(SAMPLES_DIR / "media", media)
    return workspaces, media


def worker_env(settings: Settings, root: Path, base_url: str, metrics_port: int) -> dict[str, str]:
    workspaces, media = root / "workspaces", root / "media"
    package_root = str(Path(streams.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    env = {
        **os.environ,
        "PYTHONPATH": package_root + (os.pathsep + path if path else ""),
        "PYTHONUNBUFFERED": "1",
        "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": settings.kafka_bootstrap_servers,
        "REPLYGATE_TOPIC_PREFIX": settings.topic_prefix,
        "REPLYGATE_APP_ID": settings.app_id,
        "REPLYGATE_PARTITIONS": str(settings.partitions),
        "REPLYGATE_DATA_DIR": str(root / "worker-data"),
        "REPLYGATE_STORE": "memory://",
        "REPLYGATE_WORKSPACES_ROOT": str(workspaces),
        "REPLYGATE_MEDIA_ROOT": str(media),
        "REPLYGATE_CORRECTION_DEADLINE_SECONDS": str(CORRECTION_DEADLINE_SECONDS),
        "REPLYGATE_CORRECTOR__ENABLED": "true",
        "REPLYGATE_CORRECTOR__BASE_URL": base_url,
        "REPLYGATE_CORRECTOR__MODEL": "scripted-demo",
        "REPLYGATE_CORRECTOR__API_KEY": "demo-key-not-a-secret",
        "REPLYGATE_CORRECTOR__TIMEOUT_SECONDS": str(CORRECTOR_TIMEOUT_SECONDS),
        "REPLYGATE_METRICS_PORT": str(metrics_port),
        "REPLYGATE_SCHEMA_CONTRACTS": orjson.dumps(
            [entry.model_dump(mode="json", by_alias=True) for entry in settings.schema_contracts]
        ).decode(),
    }
    if settings.config_file is not None:
        env["REPLYGATE_CONFIG_FILE"] = str(settings.config_file)
    return env


def start_worker(env: dict[str, str], root: Path, log: IO[bytes]) -> subprocess.Popen[bytes]:
    """`replygate worker` (Faust's web server off, so no port of this host is assumed free)."""
    return subprocess.Popen(
        [sys.executable, "-m", "streams.cli", "worker", "--loglevel", "info"],
        cwd=root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_worker(worker: subprocess.Popen[bytes], seconds: float = STOP_SECONDS) -> int | None:
    """SIGTERM, a bounded wait, then SIGKILL; the exit code (None if it would not die)."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(seconds)
        except subprocess.TimeoutExpired:
            worker.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(5)
    return worker.returncode


def log_tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no worker log)"


def start_local_broker(servers: str) -> bool:
    """`deploy/kafka-local/kafka-local.sh up` for a loopback address, when the checkout has it."""
    script = CHECKOUT / "deploy" / "kafka-local" / "kafka-local.sh"
    host, _, port = servers.split(",")[0].strip().rpartition(":")
    if not script.is_file() or host not in ("127.0.0.1", "localhost") or not port.isdigit():
        return False
    print(f"no broker at {servers}: starting the local one (stop it with `make kafka-down`)")
    done = subprocess.run(
        ["bash", str(script), "up"], env={**os.environ, "KAFKA_PORT": port}, check=False
    )
    return done.returncode == 0


@dataclass
class Figures:
    total_seconds: float = 0.0
    startup_seconds: float = 0.0
    samples_seconds: float = 0.0
    burst: int = 0
    burst_seconds: float = 0.0
    rss: int = 0
    rss_peak: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    expected_outcomes: Counter[str] = field(default_factory=Counter)
    worker_exit: int | None = None

    @property
    def records_per_second(self) -> float:
        return self.burst / self.burst_seconds if self.burst_seconds > 0 else 0.0


class DemoFailed(Exception):
    """The demo could not run (broker, worker); the message says what to do."""


class Demo:
    """One run: settings with a fresh prefix, the scripted corrector, one worker, the samples."""

    def __init__(self, settings: Settings, samples: list[Sample], root: Path, console: Any):
        run = uuid.uuid4().hex[:10]
        self.settings = with_demo_contract(settings).model_copy(
            update={
                "topic_prefix": f"demo{run}.",
                "app_id": f"demo{run}-gate",
                "partitions": PARTITIONS,
            }
        )
        self.run = run
        self.samples = samples
        self.root = root
        self.console = console
        self.topology = Topology.of(self.settings)
        self.tracker = Tracker(self.settings, samples)
        self.figures = Figures()
        self.log_path = root / "worker.log"
        self.metrics_port = free_port()
        self.worker: subprocess.Popen[bytes] | None = None
        self.produced = 0
        self.created_topics = False
        self.fed = False

    # -- Kafka helpers

    async def check_broker(self) -> None:
        """Reach the broker; a local one that is down is started from the checkout's script."""
        try:
            await self._reach_broker()
        except DemoFailed:
            if not start_local_broker(self.settings.kafka_bootstrap_servers):
                raise
            await self._reach_broker()

    async def _reach_broker(self) -> None:
        from aiokafka.admin import AIOKafkaAdminClient

        from streams.broker.options import aiokafka_options

        servers = self.settings.kafka_bootstrap_servers
        admin = AIOKafkaAdminClient(**aiokafka_options(self.settings), request_timeout_ms=5000)
        try:
            await asyncio.wait_for(admin.start(), 10)
            await asyncio.wait_for(admin.list_topics(), 10)
        except Exception as exc:
            raise DemoFailed(
                f"cannot reach Kafka at {servers} ({type(exc).__name__}). Start the local "
                "broker with `make kafka-up` (or point REPLYGATE_KAFKA_BOOTSTRAP_SERVERS at one)."
            ) from None
        finally:
            with contextlib.suppress(Exception):
                await admin.close()

    async def delete_topics(self) -> None:
        """Our own topics only: every name starts with this run's unique `demo<hex>`."""
        from aiokafka.admin import AIOKafkaAdminClient

        from streams.broker.options import aiokafka_options

        admin = AIOKafkaAdminClient(**aiokafka_options(self.settings))
        try:
            await asyncio.wait_for(admin.start(), 10)
            mine = [t for t in await admin.list_topics() if t.startswith(f"demo{self.run}")]
            if mine:
                await asyncio.wait_for(admin.delete_topics(mine), 15)
        except Exception as exc:  # tidying up must not fail the demo
            self.console.print(f"[yellow]could not delete the demo topics: {exc!r}[/]")
        finally:
            with contextlib.suppress(Exception):
                await admin.close()

    async def all_processed(self, admin: Any, consumer: Any, seconds: float) -> bool:
        """Whether the worker's group has committed past the end of every input partition.

        A fresh broker has no group coordinator until asked for one: that wait is bounded by
        `seconds` (`KafkaNotReady` past it), as is a new partition's wait for its leader.
        """
        from aiokafka.structs import TopicPartition

        tps = [
            TopicPartition(topic.name, p)
            for topic in self.topology.inputs()
            for p in range(self.settings.partitions)
        ]
        ends = await retry(lambda: consumer.end_offsets(tps), "the input topics' end", seconds)
        committed = await group_offsets(admin, self.settings.app_id, seconds)
        return caught_up(ends, committed)

    def check_worker(self) -> None:
        if self.worker is not None and self.worker.poll() is not None:
            raise DemoFailed(
                f"the worker exited with {self.worker.returncode}:\n{log_tail(self.log_path)}"
            )

    async def wait_processed(self, admin: Any, consumer: Any, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not await self.all_processed(admin, consumer, max(deadline - time.monotonic(), 1)):
            self.check_worker()
            if time.monotonic() > deadline:
                raise DemoFailed(
                    f"the worker did not process its input within {seconds:g} s:\n"
                    + log_tail(self.log_path)
                )
            await asyncio.sleep(0.2)

    async def read(self, consumer: Any) -> None:
        while True:
            batch = await consumer.getmany(timeout_ms=200)
            for tp, messages in batch.items():
                for message in messages:
                    self.tracker.add(tp.topic, message.value)

    # -- the story

    async def main(self, progress: Any) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.admin import AIOKafkaAdminClient

        from streams.broker.options import aiokafka_options
        from streams.broker.topology import Topology, create_topics

        started = time.perf_counter()
        self.created_topics = True
        await create_topics(Topology.of(self.settings), self.settings)
        options = aiokafka_options(self.settings)
        watched = list(self.tracker.logical)
        consumer = AIOKafkaConsumer(
            *watched,
            **options,
            group_id=None,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            metadata_max_age_ms=1000,
        )
        producer = AgentClient(self.settings)  # what an agent service uses
        admin = AIOKafkaAdminClient(**options)
        await consumer.start()
        await producer.start()
        await admin.start()
        reader = asyncio.create_task(self.read(consumer))
        try:
            await self.start(producer, admin, consumer, progress, started)
            await self.feed(producer, admin, consumer, progress)
            await self.burst(producer, admin, consumer, progress)
            assert self.worker is not None
            self.figures.rss, self.figures.rss_peak = read_rss(self.worker.pid)
            try:
                self.figures.outcomes = scrape_outcomes(self.metrics_port)
            except OSError as exc:
                self.console.print(f"[yellow]could not read the worker's metrics: {exc!r}[/]")
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            for stop in (consumer.stop, producer.stop, admin.close):
                with contextlib.suppress(Exception):
                    await stop()

    async def start(
        self, producer: Any, admin: Any, consumer: Any, progress: Any, started: float
    ) -> None:
        """Start the worker and wait until it has processed a harmless warm-up cancel."""
        task = progress.add_task("worker starting", total=1)
        script = llm_script(self.samples)
        self.llm = ScriptedLLM(script).start()
        env = worker_env(self.settings, self.root, self.llm.base_url, self.metrics_port)
        self.log_handle = self.log_path.open("wb")
        self.worker = start_worker(env, self.root, self.log_handle)
        await producer.cancel(f"warmup-{self.run}", "warmup")
        await self.wait_processed(admin, consumer, WORKER_START_SECONDS)
        self.figures.startup_seconds = time.perf_counter() - started
        progress.update(task, completed=1, description="worker ready")

    async def produce(self, producer: Any, sample: Sample, part: Part) -> None:
        for _ in range(part.times):
            if part.record is not None:
                meta = await producer.send(part.record)
            else:  # a hostile sample: its bytes as they are, on the client's own producer
                meta = await producer.producer.send_and_wait(
                    self.topology.named(part.topic).name, part.value, key=part.key
                )
            self.tracker.produced(sample, part, meta.partition, meta.offset)
            self.produced += 1

    async def feed(self, producer: Any, admin: Any, consumer: Any, progress: Any) -> None:
        """Every sample's records, then wait for their outcomes and for the worker to settle."""
        began = time.perf_counter()
        self.fed = True
        total = sum(p.times for s in self.samples for p in s.parts)
        produced = progress.add_task("records produced", total=total)
        seen = progress.add_task("outcomes seen", total=len(self.samples))
        waiting: list[tuple[Sample, Part]] = []
        for sample in self.samples:
            for part in sample.parts:
                if self.tracker.ready(part, sample):
                    await self.produce(producer, sample, part)
                else:
                    waiting.append((sample, part))
        deadline = time.monotonic() + OUTCOMES_SECONDS
        while True:
            for item in list(waiting):
                if self.tracker.ready(item[1], item[0]):
                    await self.produce(producer, *item)
                    waiting.remove(item)
            settled = sum(self.tracker.settled(s) for s in self.samples)
            progress.update(produced, completed=self.produced)
            progress.update(seen, completed=settled)
            if (settled == len(self.samples) and not waiting) or time.monotonic() > deadline:
                break
            self.check_worker()
            await asyncio.sleep(0.1)
        await self.wait_processed(admin, consumer, OUTCOMES_SECONDS)
        await asyncio.sleep(0.5)  # the last outputs of the last records
        progress.update(seen, completed=sum(self.tracker.settled(s) for s in self.samples))
        self.figures.samples_seconds = time.perf_counter() - began

    async def burst(self, producer: Any, admin: Any, consumer: Any, progress: Any) -> None:
        """Throughput: BURST valid replies at once, timed from first send to last delivery."""
        task = progress.add_task("burst deliveries", total=BURST)
        text = orjson.dumps({"segments": [{"type": "text", "data": {"text": "Burst reply."}}]})
        records = [
            input_record(
                {
                    "turn_id": f"burst-{i:05d}",
                    "conversation_id": f"c-burst-{i % 64}",
                    "platform": "im",
                    "contract": "im.segments.v1",
                    "attempt": 0,
                    "output": {"text": text.decode()},
                    "produced_at": "2026-11-30T12:00:00Z",
                }
            )
            for i in range(BURST)
        ]
        began = time.perf_counter()
        futures = [await producer.submit(record) for record in records]
        await asyncio.gather(*futures)
        deadline = time.monotonic() + OUTCOMES_SECONDS
        while self.tracker.burst_delivered < BURST and time.monotonic() < deadline:
            self.check_worker()
            progress.update(task, completed=self.tracker.burst_delivered)
            await asyncio.sleep(0.05)
        progress.update(task, completed=self.tracker.burst_delivered)
        self.figures.burst = self.tracker.burst_delivered
        self.figures.burst_seconds = max(self.tracker.last_burst_at - began, 1e-9)
        await self.wait_processed(admin, consumer, OUTCOMES_SECONDS)

    def stop(self) -> None:
        """Stop the worker and the scripted endpoint (idempotent)."""
        if self.worker is not None and self.figures.worker_exit is None:
            self.figures.worker_exit = stop_worker(self.worker)
        llm = getattr(self, "llm", None)
        if llm is not None:
            llm.stop()
        handle = getattr(self, "log_handle", None)
        if handle is not None:
            handle.close()


# ---- the report -----------------------------------------------------------------------------


def _mib(value: int) -> str:
    return f"{value / (1024 * 1024):.0f} MiB"


def render(console: Any, samples: list[Sample], results: dict[str, Result]) -> None:
    from rich.table import Table

    table = Table(title="replygate demo: what happened to each sample", title_justify="left")
    table.add_column("id", no_wrap=True, style="bold")
    table.add_column("sample")
    table.add_column("outcome", no_wrap=True)
    table.add_column("detail")
    table.add_column("ok", no_wrap=True, justify="center")
    for sample in samples:
        result = results[sample.id]
        detail = result.detail
        if result.problems:
            detail = (
                f"{detail}; [red]{'; '.join(result.problems)}[/]"
                if detail
                else (f"[red]{'; '.join(result.problems)}[/]")
            )
        table.add_row(
            sample.id,
            sample.what,
            result.outcome,
            detail,
            "[green]✓[/]" if result.ok else "[red]✗[/]",
        )
    console.print(table)


def render_figures(console: Any, figures: Figures) -> None:
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(figures.outcomes.items()))
    console.print(f"worker outcomes: {outcomes or 'n/a'}")
    console.print(
        f"measured: total {figures.total_seconds:.1f} s (worker ready after "
        f"{figures.startup_seconds:.1f} s, samples {figures.samples_seconds:.1f} s); "
        f"burst of {figures.burst} replies delivered in {figures.burst_seconds:.2f} s = "
        f"{figures.records_per_second:.0f} records/s; worker RSS {_mib(figures.rss)} "
        f"(peak {_mib(figures.rss_peak)}); worker stopped with exit code {figures.worker_exit}"
    )


def _console() -> Any:
    from rich.console import Console

    # Off a terminal (CI, pipes), a wide fixed width keeps every table row on one line.
    return Console() if sys.stdout.isatty() else Console(width=180, soft_wrap=False)


def _execute(demo: Demo) -> str | None:
    """Run the demo; always stop the worker and remove this run's topics. The error, if any."""
    from aiokafka.errors import KafkaError
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("{task.description:<18}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=demo.console,
    )
    try:
        asyncio.run(demo.check_broker())
        copy_files(demo.root)
        with progress:
            asyncio.run(demo.main(progress))
    except DemoFailed as exc:
        return str(exc)
    except (KafkaNotReady, TopicsRefused, KafkaError) as exc:
        return f"Kafka at {demo.settings.kafka_bootstrap_servers}: {describe(exc)}"
    finally:
        demo.stop()
        if demo.created_topics:
            asyncio.run(demo.delete_topics())
    return None


def _failures(
    console: Any, samples: list[Sample], results: dict[str, Result], figures: Figures
) -> list[str]:
    failed = [s.id for s in samples if not results[s.id].ok]
    if figures.outcomes != figures.expected_outcomes:
        missing = figures.expected_outcomes - figures.outcomes
        extra = figures.outcomes - figures.expected_outcomes
        console.print(
            f"[red]worker outcome counts differ: missing {dict(missing)}, "
            f"unexpected {dict(extra)}[/]"
        )
        failed.append("worker outcomes")
    if figures.burst < BURST:
        console.print(f"[red]only {figures.burst} of {BURST} burst replies were delivered[/]")
        failed.append("burst")
    return failed


def run_demo(settings: Settings, samples_file: Path = SAMPLES_FILE) -> int:
    """`replygate demo`: 0 only when every sample ended in its expected outcome."""
    console = _console()
    # aiokafka logs while fresh topics elect leaders (it retries) and when a broker is down
    # (the demo says so itself): keep the screen for the story.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    samples = read_samples(samples_file)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="replygate-demo-") as tmp:
        demo = Demo(settings, samples, Path(tmp), console)
        console.print(
            f"replygate demo on {demo.settings.kafka_bootstrap_servers}: topics "
            f"{demo.settings.topic_prefix}*, app id {demo.settings.app_id}, "
            f"{len(samples)} samples"
        )
        error = _execute(demo)
    if error is not None and not demo.fed:
        console.print(f"[red]replygate demo: error: {error}[/]")
        return 1
    results = {s.id: evaluate(s, demo.tracker.seen[s.id], demo.tracker.display) for s in samples}
    render(console, samples, results)
    figures = demo.figures
    figures.expected_outcomes = expected_outcomes(
        samples, {"cancelled": 1, "delivered": figures.burst}
    )
    figures.total_seconds = time.perf_counter() - started
    render_figures(console, figures)
    failed = _failures(console, samples, results, figures)
    if error is not None:
        console.print(f"[red]replygate demo: error: {error}[/]")
        failed.append("run")
    if failed:
        console.print(f"[red]FAILED: {', '.join(failed)}[/]")
        return 1
    console.print(f"[green]all {len(samples)} samples ended as expected[/]")
    return 0
