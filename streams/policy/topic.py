"""The policy topic: bundles keyed `active`, `shadow` and `previous`, and the workers' reports.

`<prefix>replygate-policy` is compacted and has one partition, so every reader sees one order
and the latest record of each key is what holds. A record's value is the bundle's canonical
JSON, so its version is the digest of the value itself. Every published bundle is also kept
under its own version as key (`sha256:...`): the store a worker loads an older version from
when a turn or a replayed record must be judged under it (docs/policy.md). Publishing an
active version first keeps the one it replaces under `previous` (what `rollback` brings
back); `promote` moves the shadow to active and removes the shadow (a tombstone).

Workers report what they enforce on `<prefix>replygate-policy-status`, keyed by worker id
(`StatusReport`); `replygate policy status` shows the reports of the last `LIVE_SECONDS`.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

import orjson

from streams.broker.topology import POLICY_RECORD_BYTES, Topic, Topology
from streams.core.versions import SETTINGS_VERSION
from streams.errors import ConfigError, RuntimeFailure
from streams.policy.bundle import Bundle, PolicyError, bundle_from_record, read_bundle, version_of
from streams.policy.load import load_policy
from streams.settings import GateSettings, KafkaSettings, Settings

ACTIVE: Final = "active"
SHADOW: Final = "shadow"
PREVIOUS: Final = "previous"
KEYS: Final = (ACTIVE, SHADOW, PREVIOUS)
# A worker reports every REPORT_SECONDS and on each change; one silent for longer than
# LIVE_SECONDS is not listed as live.
REPORT_SECONDS: Final = 10.0
LIVE_SECONDS: Final = 60.0
# How long a command waits for the broker.
CONNECT_SECONDS: Final = 15.0


class PolicyTopicError(RuntimeFailure):
    """The policy topic could not be read or written; the message says which and why."""


class NothingTo(ConfigError):
    """`promote` without a shadow, `rollback` without a previous version (exit 2)."""


@dataclass(frozen=True, slots=True)
class StatusReport:
    """What one worker enforces: its active version (`settings`: no bundle, its settings file
    judges), its shadow (None: none), how many bundles it refused, and when it last applied
    and reported."""

    worker: str
    active: str | None
    shadow: str | None
    refused: int
    applied_at: float | None
    reported_at: float

    def to_bytes(self) -> bytes:
        return orjson.dumps(
            {
                "worker": self.worker,
                "active": self.active,
                "shadow": self.shadow,
                "refused": self.refused,
                "applied_at": self.applied_at,
                "reported_at": self.reported_at,
            }
        )

    @classmethod
    def from_bytes(cls, value: bytes) -> StatusReport | None:
        """A report, or None for a record that is not one (never trusted further)."""
        try:
            data = orjson.loads(value)
            return cls(
                worker=str(data["worker"])[:200],
                active=_version_or_none(data["active"]),
                shadow=_version_or_none(data["shadow"]),
                refused=int(data["refused"]),
                applied_at=None if data["applied_at"] is None else float(data["applied_at"]),
                reported_at=float(data["reported_at"]),
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None


def _version_or_none(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value)
    if text == SETTINGS_VERSION or (text.startswith("sha256:") and len(text) == 71):
        return text
    return "(not a version)"


def consumer_options(kafka: KafkaSettings) -> dict[str, Any]:
    from streams.broker.options import aiokafka_options

    return {
        **aiokafka_options(kafka),
        "enable_auto_commit": False,
        "group_id": None,
        "max_partition_fetch_bytes": POLICY_RECORD_BYTES,
        "auto_offset_reset": "earliest",
    }


async def read_latest(kafka: KafkaSettings, topic: Topic) -> dict[str, bytes]:
    """The latest value of every key of a one-partition compacted topic (a key whose latest
    record is a tombstone is absent), read from its start to its current end."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(**consumer_options(kafka))
    await asyncio.wait_for(consumer.start(), CONNECT_SECONDS)
    try:
        tp = TopicPartition(topic.name, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        end = (await consumer.end_offsets([tp]))[tp]
        latest: dict[str, bytes] = {}
        while await consumer.position(tp) < end:
            batch = await consumer.getmany(tp, timeout_ms=1000)
            for record in batch.get(tp, []):
                key = record.key.decode("utf-8", "replace") if record.key else ""
                if record.value is None:
                    latest.pop(key, None)
                else:
                    latest[key] = record.value
        return latest
    finally:
        await consumer.stop()


async def existing_topics(kafka: KafkaSettings) -> set[str]:
    """The topics the broker has. Listing them all is the one metadata request that never has
    a broker with `auto.create.topics.enable` create a topic it names (a consumer's, or a
    describe of one missing topic, would)."""
    from aiokafka.admin import AIOKafkaAdminClient

    from streams.broker.options import aiokafka_options

    admin = AIOKafkaAdminClient(**aiokafka_options(kafka))
    await asyncio.wait_for(admin.start(), CONNECT_SECONDS)
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def require_topics(kafka: KafkaSettings, topics: tuple[Topic, ...]) -> None:
    """Refuse to go on when a topic is missing, rather than have the broker create it with
    its defaults (not compacted) where `replygate topics` creates it as the topology says."""
    present = await existing_topics(kafka)
    missing = [t.name for t in topics if t.name not in present]
    if missing:
        raise PolicyTopicError(
            f"no topic {', '.join(missing)}: `replygate topics` creates the policy topics "
            "and the audit topic"
        )


async def write(
    kafka: KafkaSettings, topic: Topic, records: list[tuple[str, bytes | None]]
) -> None:
    """Records in this order, each acknowledged by every in-sync replica before the next."""
    from aiokafka import AIOKafkaProducer

    from streams.broker.options import aiokafka_options

    producer = AIOKafkaProducer(
        **aiokafka_options(kafka),
        acks="all",
        enable_idempotence=True,
        max_request_size=POLICY_RECORD_BYTES,
    )
    await asyncio.wait_for(producer.start(), CONNECT_SECONDS)
    try:
        for key, value in records:
            await producer.send_and_wait(topic.name, value, key=key.encode(), partition=0)
    finally:
        await producer.stop()


def publish_records(
    latest: Mapping[str, bytes], bundle: Bundle, shadow: bool
) -> list[tuple[str, bytes | None]]:
    """What publishing `bundle` writes: the bundle under its own version (kept, so a worker can
    judge a turn under the version that judged its first record), then the shadow, or the
    active one after keeping the one it replaces as `previous`; nothing already there."""
    stored = [] if bundle.version in latest else [(bundle.version, bundle.canonical)]
    if shadow:
        if latest.get(SHADOW) == bundle.canonical:
            return []
        return [*stored, (SHADOW, bundle.canonical)]
    current = latest.get(ACTIVE)
    if current == bundle.canonical:
        return []
    return [*stored, *_kept(current), (ACTIVE, bundle.canonical)]


def _kept(current: bytes | None) -> list[tuple[str, bytes | None]]:
    """The active bundle being replaced, as `previous`: what rollback brings back, so only a
    bundle (one written by another tool that is not one stays replaced)."""
    if current is None:
        return []
    try:
        bundle_from_record(current)
    except PolicyError:
        return []
    return [(PREVIOUS, current)]


def promote_records(latest: Mapping[str, bytes]) -> list[tuple[str, bytes | None]]:
    """The shadow becomes active (the active kept as previous); the shadow key is removed."""
    shadow = latest.get(SHADOW)
    if shadow is None:
        raise NothingTo("there is no shadow version to promote")
    return [*_kept(latest.get(ACTIVE)), (ACTIVE, shadow), (SHADOW, None)]


def rollback_records(latest: Mapping[str, bytes]) -> list[tuple[str, bytes | None]]:
    """The previous active version is active again; the one it replaces becomes previous (a
    second rollback undoes the first)."""
    previous = latest.get(PREVIOUS)
    if previous is None:
        raise NothingTo("there is no previous active version to roll back to")
    return [*_kept(latest.get(ACTIVE)), (ACTIVE, previous)]


def _version(value: bytes | None) -> str:
    return "-" if value is None else version_of(value)


def status_lines(
    latest: Mapping[str, bytes], reports: Mapping[str, bytes], now: float
) -> list[str]:
    """What `policy status` prints: the topic's versions, then each live worker's."""
    lines = [f"{key:<9}{_version(latest.get(key))}" for key in KEYS]
    live = []
    for value in reports.values():
        report = StatusReport.from_bytes(value)
        if report is not None and now - report.reported_at <= LIVE_SECONDS:
            live.append(report)
    enforced = {r.active for r in live}
    for report in sorted(live, key=lambda r: r.worker):
        lines.append(
            f"worker   {report.worker} active {report.active or '-'} shadow "
            f"{report.shadow or '-'} refused {report.refused} "
            f"reported {max(0.0, now - report.reported_at):.0f} s ago"
        )
    if not live:
        lines.append("workers  none reported in the last minute")
    elif len(enforced) > 1:
        lines.append(f"workers  enforce {len(enforced)} different versions")
    return lines


async def perform(
    action: str, settings: Settings, file: Path | None = None, shadow: bool = False
) -> list[str]:
    """One action on the policy topic; the lines it prints. `publish` checks the bundle with
    the worker's loading code first and writes nothing when it does not load."""
    topology = Topology.of(settings)
    if action == "publish":
        assert file is not None
        bundle = read_bundle(file)
        load_policy(bundle, settings.group(GateSettings), str(file))
    await require_topics(settings, (topology.policy, topology.policy_status))
    latest = await read_latest(settings, topology.policy)
    records: list[tuple[str, bytes | None]]
    if action == "status":
        reports = await read_latest(settings, topology.policy_status)
        return status_lines(latest, reports, time.time())
    if action == "publish":
        records = publish_records(latest, bundle, shadow)
        role = SHADOW if shadow else ACTIVE
        out = [f"{role} {bundle.version}" + ("" if records else " (already published)")]
    elif action == "promote":
        records = promote_records(latest)
        out = [f"{ACTIVE} {_version(latest[SHADOW])}"]
    elif action == "rollback":
        records = rollback_records(latest)
        out = [f"{ACTIVE} {_version(latest[PREVIOUS])}"]
    else:
        raise ConfigError(f"no policy action {action[:50]!r}")
    if records:
        await write(settings, topology.policy, records)
    return out


def run_action(args: argparse.Namespace, settings: Settings, stdout: IO[bytes]) -> int:
    """`replygate policy publish|status|promote|rollback` against the policy topic."""
    from aiokafka.errors import KafkaError

    from streams.broker.ready import describe
    from streams.broker.refusals import client_errors

    with client_errors() as seen:
        try:
            out = asyncio.run(
                perform(args.action, settings, getattr(args, "file", None), args.shadow)
            )
        except (KafkaError, OSError, TimeoutError) as exc:
            cause = seen.cause() or describe(exc)
            raise PolicyTopicError(
                f"cannot use the policy topic on {settings.kafka_bootstrap_servers}: {cause}"
            ) from None
    stdout.write("".join(f"{line}\n" for line in out).encode())
    return 0
