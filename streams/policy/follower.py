"""A worker's policy follower: reads the policy topic from its start for as long as the worker
runs, loads each new bundle and builds its gates off the event loop, and holds the newest
loaded versions until the worker takes them at a batch boundary (`take`).

A bundle that does not load is refused whole: the worker keeps what it holds, the refusal is
counted and said in one log line, and the follower goes on reading. The follower also reports
what the worker enforces on the policy status topic, keyed by the worker's id, so
`replygate policy status` can show every live worker's version.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from streams.broker.topology import Topology
from streams.core.ports import FileStage
from streams.core.versions import SETTINGS_VERSION
from streams.policy.bundle import PolicyError, bundle_from_record, version_of
from streams.policy.load import Policy, PolicyGates, load_policy
from streams.policy.metrics import PolicyMetrics
from streams.policy.topic import ACTIVE, REPORT_SECONDS, SHADOW, StatusReport, consumer_options
from streams.settings import GateSettings, KafkaSettings

log = logging.getLogger("replygate.policy")

# How long one fetch waits: a published bundle is seen within this (plus its load time).
POLL_MS: Final = 250
# After a broker error, the follower waits this long and reads on from where it was.
RETRY_SECONDS: Final = 1.0
# Published bundles kept in memory (the newest), and older versions kept loaded.
MAX_STORED: Final = 32
MAX_RECENT: Final = 4


@dataclass(frozen=True, slots=True)
class Held:
    """What judges: the active policy's gates (None: no bundle published, the settings file
    judges) and the shadow's (None: no shadow)."""

    active: PolicyGates | None
    shadow: PolicyGates | None

    @property
    def active_version(self) -> str | None:
        return None if self.active is None else self.active.version

    @property
    def shadow_version(self) -> str | None:
        return None if self.shadow is None else self.shadow.version


NOTHING: Final = Held(None, None)


class PolicyFollower:
    """Follows `<prefix>replygate-policy`; `take()` hands the worker each new `Held` once."""

    def __init__(
        self,
        kafka: KafkaSettings,
        topology: Topology,
        base: GateSettings,
        files: FileStage,
        worker_id: str,
        metrics: PolicyMetrics | None = None,
        load: Callable[[Any, GateSettings], Policy] = load_policy,
    ) -> None:
        self.kafka = kafka
        self.files = files
        self.topology = topology
        self.base = base
        self.worker_id = worker_id
        self.metrics = metrics
        self._load_policy = load
        self.refused = 0
        # Set once the topic has been read to the end it had when the follower started: a
        # worker that waits for it never judges under a version already replaced.
        self.caught_up = asyncio.Event()
        self._loaded: dict[str, PolicyGates | None] = {ACTIVE: None, SHADOW: None}
        # Every published version's bundle (the topic's `sha256:...` keys), and the versions
        # loaded lately, for turns and replays judged under a version no longer active.
        self._stored: OrderedDict[str, bytes] = OrderedDict()
        self._recent: OrderedDict[str, PolicyGates] = OrderedDict()
        self._taken = NOTHING
        self._applied_at: float | None = None
        self._changed = asyncio.Event()
        if metrics is not None:  # until a bundle is taken, the settings file is enforced
            metrics.held(ACTIVE, SETTINGS_VERSION)

    # ---- the worker's side -------------------------------------------------------------

    @property
    def held(self) -> Held:
        """What the worker enforces now (the last `take`)."""
        return self._taken

    def take(self) -> Held | None:
        """The newest loaded versions when they differ from what the worker holds (the worker
        applies them before its next batch), else None."""
        newest = Held(self._loaded[ACTIVE], self._loaded[SHADOW])
        if (newest.active_version, newest.shadow_version) == (
            self._taken.active_version,
            self._taken.shadow_version,
        ):
            return None
        self._taken = newest
        self._applied_at = time.time()
        if self.metrics is not None:
            self.metrics.held(ACTIVE, newest.active_version or SETTINGS_VERSION)
            self.metrics.held(SHADOW, newest.shadow_version)
            self.metrics.applied(self._applied_at)
        self._changed.set()
        return newest

    # ---- reading the topic -------------------------------------------------------------

    async def run(self) -> None:
        """Follow the topic and report, until cancelled."""
        report = asyncio.create_task(self._report_loop())
        try:
            await self._follow()
        finally:
            report.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await report

    async def _follow(self) -> None:
        from aiokafka import AIOKafkaConsumer, TopicPartition
        from aiokafka.errors import KafkaError

        tp = TopicPartition(self.topology.policy.name, 0)
        position: int | None = None
        while True:
            consumer = AIOKafkaConsumer(**consumer_options(self.kafka))
            try:
                await consumer.start()
                consumer.assign([tp])
                if position is None:
                    await consumer.seek_to_beginning(tp)
                else:
                    consumer.seek(tp, position)
                end = (await consumer.end_offsets([tp]))[tp]
                pending: dict[str, bytes | None] = {}
                while True:
                    batch = await consumer.getmany(tp, timeout_ms=POLL_MS)
                    for record in batch.get(tp, []):
                        key = record.key.decode("utf-8", "replace") if record.key else ""
                        if key in (ACTIVE, SHADOW):
                            pending[key] = record.value
                        elif key.startswith("sha256:"):
                            self._store(key, record.value)
                    position = await consumer.position(tp)
                    if not self.caught_up.is_set() and position < end:
                        continue  # the start: only the latest record of each key counts
                    if pending:
                        await self._load_all(pending)
                        pending = {}
                    self.caught_up.set()
            except KafkaError as exc:
                log.warning("policy topic %s: %s; reading on", tp.topic, str(exc)[:300])
                await asyncio.sleep(RETRY_SECONDS)
            finally:
                await consumer.stop()

    async def _load_all(self, pending: dict[str, bytes | None]) -> None:
        for key, value in pending.items():
            current = self._loaded[key]
            if value is None:
                self._loaded[key] = None
                continue
            version = version_of(value)
            if current is not None and current.version == version:
                continue
            try:
                bundle = bundle_from_record(value, f"{key} {version}")
                gates = await asyncio.to_thread(self._gates, bundle)
            except PolicyError as exc:
                self.refused += 1
                if self.metrics is not None:
                    self.metrics.refused()
                kept = "none" if current is None else current.version
                log.error("policy %s refused, keeping %s: %s", key, kept, exc)
                continue
            self._loaded[key] = gates
            self._remember(gates)

    # ---- older versions ----------------------------------------------------------------

    def _store(self, version: str, value: bytes | None) -> None:
        self._stored.pop(version, None)
        if value is not None:
            self._stored[version] = value
            while len(self._stored) > MAX_STORED:
                self._stored.popitem(last=False)

    def _remember(self, gates: PolicyGates) -> None:
        self._recent[gates.version] = gates
        self._recent.move_to_end(gates.version)
        while len(self._recent) > MAX_RECENT:
            self._recent.popitem(last=False)

    async def gates_for(self, version: str) -> PolicyGates | None:
        """The gates of a version a turn or a replayed record was judged under: one held or
        loaded lately, else loaded from the topic's store (off the event loop); None when the
        topic does not hold it or it does not load (counted as a refusal)."""
        for held in (self._taken.active, self._taken.shadow, self._recent.get(version)):
            if held is not None and held.version == version:
                return held
        value = self._stored.get(version)
        if value is None or version_of(value) != version:
            return None
        try:
            gates = await asyncio.to_thread(self._gates, bundle_from_record(value, version))
        except PolicyError as exc:
            self.refused += 1
            if self.metrics is not None:
                self.metrics.refused()
            log.error("policy %s refused: %s", version, exc)
            return None
        self._remember(gates)
        return gates

    def _gates(self, bundle: Any) -> PolicyGates:
        """A bundle loaded and its gates built: all of it, in the loading thread."""
        return PolicyGates(self._load_policy(bundle, self.base), self.files)

    # ---- reporting ---------------------------------------------------------------------

    def report(self) -> StatusReport:
        return StatusReport(
            worker=self.worker_id,
            active=self._taken.active_version or SETTINGS_VERSION,
            shadow=self._taken.shadow_version,
            refused=self.refused,
            applied_at=self._applied_at,
            reported_at=time.time(),
        )

    async def _report_loop(self) -> None:
        """A report on each change and every REPORT_SECONDS; its key removed on a clean stop."""
        from aiokafka import AIOKafkaProducer
        from aiokafka.errors import KafkaError

        from streams.broker.options import aiokafka_options

        topic = self.topology.policy_status.name
        key = self.worker_id.encode()
        producer = AIOKafkaProducer(**aiokafka_options(self.kafka), acks="all")
        await producer.start()
        try:
            while True:
                with contextlib.suppress(KafkaError):
                    await producer.send_and_wait(topic, self.report().to_bytes(), key=key)
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), REPORT_SECONDS)
        finally:
            with contextlib.suppress(KafkaError, Exception):
                await asyncio.shield(producer.send_and_wait(topic, None, key=key))
            await producer.stop()
