"""The one topology: every topic replygate names, with its role, key and config; and
`replygate topics`, which creates them.

Everything outside the decision core asks a `Topology` for topics, so a topic's name, key and
config are written down once. The core cannot import this layer: it takes the configured names
from `Settings.topic` / `Settings.delivery_topic` / `Settings.deadline_topic`, the same
functions this module builds the topics with.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from streams.broker.options import aiokafka_options
from streams.broker.ready import KafkaNotReady, create_errors, describe, retry, wait_for_leaders
from streams.errors import RuntimeFailure, error_line
from streams.settings import GateSettings, KafkaSettings, Settings

# The worker's turn table; Faust names its changelog `<app_id>-<table>-changelog`.
TURNS_TABLE = "turns"
# The policy bundles (keyed active, shadow, previous), the workers' reports of the version
# each enforces (keyed by worker), and one audit record per outcome (docs/policy.md).
POLICY_TOPIC = "replygate-policy"
POLICY_STATUS_TOPIC = "replygate-policy-status"
AUDIT_TOPIC = "replygate-audit"
# A bundle is at most 4 MiB (streams.policy.bundle); its record needs a little more room.
POLICY_RECORD_BYTES = 5 * 1024 * 1024


class Role(StrEnum):
    """What a topic is for (docs/records.md, Topics)."""

    INPUT = "input"
    DEADLINE = "deadline"
    DELIVERY = "delivery"
    CORRECTION_REQUEST = "correction request"
    TOOL_RESULT = "tool result"
    DEAD_LETTER = "dead letter"
    CHANGELOG = "changelog"
    POLICY = "policy"
    POLICY_STATUS = "policy status"
    AUDIT = "audit"


class Key(StrEnum):
    """What a topic's record key holds."""

    CONVERSATION = "conversation_id"
    TASK = "task_id"
    ORIGINAL = "the original record's key"
    TURN = "turn_id"
    POLICY_ROLE = "active, shadow or previous"
    WORKER = "the worker's id"


@dataclass(frozen=True, slots=True)
class Topic:
    """One topic: `logical` is the name `Settings.topic` takes (`replies_raw`, `delivery.im`)."""

    logical: str
    name: str
    role: Role
    key: Key
    config: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # `replygate topics` creates it (Faust creates the changelog itself, with `config`)
    created: bool = True
    # Its own partition count (the policy topics: one, so every reader sees one order);
    # None: the deployment's `partitions`.
    partitions: int | None = None


def _frozen(config: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(config))


# Input topics use the broker's clock: a replay sees the same timestamps, and a producer
# cannot move a correction before its deadline.
INPUT_CONFIG: Mapping[str, str] = _frozen({"message.timestamp.type": "LogAppendTime"})


def changelog_config(settings: GateSettings) -> dict[str, str]:
    """The turn table's changelog: compacted, and nothing kept much past the state horizon.

    Expired turns are tombstoned; compaction drops them and, after `delete.retention.ms`, their
    tombstones, so a worker's time to ready does not grow with turns finished long ago.
    """
    horizon_ms = int(settings.state_keep.total_seconds() * 1000)
    return {
        "cleanup.policy": "compact,delete",
        "retention.ms": str(2 * horizon_ms),
        "segment.ms": str(max(1000, horizon_ms // 7)),
        "min.cleanable.dirty.ratio": "0.1",
        "delete.retention.ms": str(min(86_400_000, horizon_ms)),
        "max.message.bytes": str(settings.max_output_bytes),
    }


@dataclass(frozen=True)
class Topology:
    """Every topic of one deployment, built from its settings (`Topology.of`)."""

    settings: GateSettings = field(repr=False)
    replies: Topic
    control: Topic
    toolcalls: Topic
    deadlines: Topic
    corrections: Topic
    toolresults: Topic
    dlq: Topic
    changelog: Topic
    policy: Topic
    policy_status: Topic
    audit: Topic
    # every output topic's config, also a new platform's delivery topic's
    output_config: Mapping[str, str]

    @classmethod
    def of(cls, settings: GateSettings) -> Topology:
        def topic(logical: str, role: Role, key: Key, config: Mapping[str, str]) -> Topic:
            return Topic(logical, settings.topic(logical), role, key, config)

        output = _frozen({"max.message.bytes": str(settings.max_output_bytes)})
        return cls(
            settings=settings,
            replies=topic("replies_raw", Role.INPUT, Key.CONVERSATION, INPUT_CONFIG),
            control=topic("turns_control", Role.INPUT, Key.CONVERSATION, INPUT_CONFIG),
            toolcalls=topic("toolcalls_raw", Role.INPUT, Key.TASK, INPUT_CONFIG),
            # Deadline events: internal, read with the inputs, timed by the broker like them.
            deadlines=Topic(
                "deadlines",
                settings.deadline_topic(),
                Role.DEADLINE,
                Key.CONVERSATION,
                INPUT_CONFIG,
            ),
            corrections=topic("corrections", Role.CORRECTION_REQUEST, Key.CONVERSATION, output),
            toolresults=topic("toolresults", Role.TOOL_RESULT, Key.TASK, output),
            dlq=topic("dlq", Role.DEAD_LETTER, Key.ORIGINAL, output),
            changelog=Topic(
                "changelog",
                f"{settings.app_id}-{TURNS_TABLE}-changelog",
                Role.CHANGELOG,
                Key.TURN,
                _frozen(changelog_config(settings)),
                created=False,
            ),
            policy=Topic(
                "policy",
                settings.topic_prefix + POLICY_TOPIC,
                Role.POLICY,
                Key.POLICY_ROLE,
                _frozen(
                    {"cleanup.policy": "compact", "max.message.bytes": str(POLICY_RECORD_BYTES)}
                ),
                partitions=1,
            ),
            policy_status=Topic(
                "policy_status",
                settings.topic_prefix + POLICY_STATUS_TOPIC,
                Role.POLICY_STATUS,
                Key.WORKER,
                _frozen({"cleanup.policy": "compact"}),
                partitions=1,
            ),
            audit=Topic(
                "audit", settings.topic_prefix + AUDIT_TOPIC, Role.AUDIT, Key.CONVERSATION, output
            ),
            output_config=output,
        )

    def inputs(self) -> tuple[Topic, ...]:
        """What agents and hosts produce: replies, turn controls, tool calls."""
        return (self.replies, self.control, self.toolcalls)

    def gate_inputs(self) -> tuple[Topic, ...]:
        """What the gate's one agent reads: the inputs and the deadline events, in this order."""
        return (*self.inputs(), self.deadlines)

    def delivery(self, platform: str) -> Topic:
        """A platform's delivery topic, also for a platform not configured ahead."""
        return Topic(
            f"delivery.{platform}",
            self.settings.delivery_topic(platform),
            Role.DELIVERY,
            Key.CONVERSATION,
            self.output_config,
        )

    def delivery_namespace(self) -> str:
        """What every platform's delivery topic starts with (one prefixed ACL grants them all)."""
        return self.settings.delivery_topic("")

    def deliveries(self) -> tuple[Topic, ...]:
        """The delivery topics of the configured platforms."""
        return tuple(self.delivery(p) for p in self.settings.platforms)

    def outputs(self) -> tuple[Topic, ...]:
        """Every topic the gate writes records to (not its state)."""
        return (self.corrections, self.toolresults, self.dlq, *self.deliveries())

    def policy_topics(self) -> tuple[Topic, ...]:
        """The policy bundles, the workers' reports of what they enforce, the audit records."""
        return (self.policy, self.policy_status, self.audit)

    def all(self) -> tuple[Topic, ...]:
        return (*self.gate_inputs(), *self.outputs(), self.changelog, *self.policy_topics())

    def named(self, logical: str) -> Topic:
        """A topic by its logical name (`replies_raw`, `dlq`, `delivery.im`, `deadlines`, ...)."""
        if logical.startswith("delivery."):
            return self.delivery(logical.split(".", 1)[1])
        for topic in self.all():
            if topic.logical == logical:
                return topic
        raise KeyError(logical)

    def output(self, name: str) -> Topic:
        """An output topic by its real name; one not configured is a new platform's delivery
        topic (the gate sends to any platform unless `closed_platforms`)."""
        for topic in self.outputs():
            if topic.name == name:
                return topic
        return Topic(name, name, Role.DELIVERY, Key.CONVERSATION, self.output_config)

    def for_creation(self) -> dict[str, Mapping[str, str]]:
        """What `replygate topics` makes: every topic but Faust's own, with its config."""
        return {t.name: t.config for t in self.all() if t.created}

    def metric_topics(self) -> list[str]:
        """The topic label values metrics allow: the inputs and the outputs."""
        return [t.name for t in (*self.inputs(), *self.outputs())]

    def plain_name(self, topic: Topic) -> str:
        """A topic's name without this deployment's prefix, as docs/records.md writes it."""
        return topic.name.removeprefix(self.settings.topic_prefix)

    def namespaces(self) -> tuple[str, str]:
        """Every topic of this deployment starts with one of these: the topic prefix (its
        named topics) or the app id and a dash (its internal ones)."""
        return (self.settings.topic_prefix, f"{self.settings.app_id}-")

    def own(self, name: str) -> str:
        """A tool's own topic in this deployment's namespace (a benchmark's copy target), never
        one replygate reads or writes."""
        return self.settings.topic_prefix + name


class TopicsRefused(RuntimeFailure):
    """The broker refused to create some topics (a policy, a bad config); the message names them."""


async def create_topics(topology: Topology, kafka: KafkaSettings) -> list[str]:
    """Create the missing topics and wait for their leaders; return the names created.

    An existing topic is left as it is, also one that another worker created a moment ago; its
    partition count is never changed: when the turn's topics differ from one another or from
    `partitions`, nothing is created (`PartitionsDiffer`). On a fresh broker the answers that
    mean "not yet" are retried within a bound (`KafkaNotReady`).
    """
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    from streams.broker.partitions import (
        PartitionsDiffer,
        copartitioned,
        mismatch,
        partition_counts,
    )

    admin = AIOKafkaAdminClient(**aiokafka_options(kafka))
    await admin.start()
    try:
        existing = set(await retry(admin.list_topics, "the topic list"))
        shared = [name for name in copartitioned(topology) if name in existing]
        counts = await retry(lambda: partition_counts(admin, shared), "topic metadata")
        problem = mismatch(counts, kafka.partitions)
        if problem is not None:
            raise PartitionsDiffer(problem)
        wanted = topology.for_creation()
        own = {t.name: t.partitions for t in topology.all() if t.partitions is not None}
        new = [
            NewTopic(
                name,
                num_partitions=own.get(name, kafka.partitions),
                replication_factor=kafka.replication_factor,
                topic_configs=dict(config),
            )
            for name, config in wanted.items()
            if name not in existing
        ]
        if not new:
            return []
        response = await retry(lambda: admin.create_topics(new), "creating topics")
        refused = create_errors(response.topic_errors)
        if refused:
            raise TopicsRefused(
                "the broker refused to create "
                + "; ".join(f"{name} ({why})" for name, why in sorted(refused.items()))
            )
        await wait_for_leaders(admin, [t.name for t in new])
        return [t.name for t in new]
    finally:
        await admin.close()


def run_topics(settings: Settings) -> int:
    """`replygate topics`: 0 when every topic exists, 1 with one line saying why not."""
    from aiokafka.errors import KafkaError

    from streams.broker.partitions import PartitionsDiffer
    from streams.broker.refusals import client_errors

    with client_errors() as seen:
        try:
            created = asyncio.run(create_topics(Topology.of(settings), settings))
        except PartitionsDiffer as exc:
            print(error_line("topics", str(exc)), file=sys.stderr)
            return 1
        except (KafkaError, KafkaNotReady, TopicsRefused, OSError) as exc:
            servers = settings.kafka_bootstrap_servers
            cause = seen.cause() or describe(exc)
            line = error_line("topics", f"cannot create the topics on {servers}: {cause}")
            print(line, file=sys.stderr)
            return 1
    for name in sorted(Topology.of(settings).for_creation()):
        print(f"{'created' if name in created else 'exists '} {name}")
    return 0
