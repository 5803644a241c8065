"""The Kafka ACLs each part of a deployment needs, derived from its topology.

One list, `acls(part, topology)`, is the source of `replygate acls PART` (printed as
`kafka-acls` commands) and of the table in docs/security.md (`python -m streams.broker.acl_docs`
rewrites it; a test compares). Names come from `Topology`: the prefix's named topics, and the
`<app_id>-` namespace where Faust keeps the worker's internal topics (the deadline events, the
turn table's changelog and its assignor's leader topic).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from streams.broker.topology import Topology


class Resource(StrEnum):
    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"


class Pattern(StrEnum):
    LITERAL = "LITERAL"
    PREFIXED = "PREFIXED"


class Part(StrEnum):
    """A principal of its own: each runs with only its own ACLs."""

    TOPICS = "topics"
    WORKER = "worker"
    CORRECTOR = "corrector"
    ENDPOINT = "endpoint"
    AGENT = "agent"


PART_ROLES: Final = {
    Part.TOPICS: "the topic-creating admin job (`replygate topics`)",
    Part.WORKER: "the worker (`replygate worker`)",
    Part.CORRECTOR: "the built-in corrector: added to the worker's principal when "
    "`corrector.enabled` (it runs inside the worker)",
    Part.ENDPOINT: "an endpoint reader (`replygate deliveries PLATFORM`), one per platform",
    Part.AGENT: "an agent service that produces replies, turn controls and tool calls",
}


@dataclass(frozen=True, slots=True)
class Acl:
    """Allow `operations` on one resource name (or every name starting with it)."""

    resource: Resource
    name: str
    pattern: Pattern
    operations: tuple[str, ...]
    why: str


def endpoint_group(platform: str) -> str:
    """`replygate deliveries`' default consumer group (its --group overrides it)."""
    return f"replygate-endpoint-{platform}"


def _literal(names: Sequence[str], operations: tuple[str, ...], why: str) -> list[Acl]:
    return [Acl(Resource.TOPIC, n, Pattern.LITERAL, operations, why) for n in names]


def _deliveries(topology: Topology, operations: tuple[str, ...], why: str) -> list[Acl]:
    """Every platform's delivery topic: one prefix, or only the configured ones when closed."""
    settings = topology.settings
    if settings.closed_platforms:
        return _literal([t.name for t in topology.deliveries()], operations, why)
    prefix = topology.delivery_namespace()
    return [Acl(Resource.TOPIC, prefix, Pattern.PREFIXED, operations, why)]


def _topics(topology: Topology) -> list[Acl]:
    names = list(topology.for_creation())
    return _literal(names, ("Create", "Describe"), "creates it when missing, waits for its leader")


def _worker(topology: Topology) -> list[Acl]:
    settings = topology.settings
    _prefix, internal = topology.namespaces()
    named_outputs = [t.name for t in (topology.corrections, topology.toolresults, topology.dlq)]
    return [
        *_literal([t.name for t in topology.inputs()], ("Read",), "reads the inputs"),
        *_literal(named_outputs, ("Write",), "writes its outputs"),
        *_literal([topology.policy.name], ("Read",), "follows the policy bundles"),
        *_literal([topology.policy_status.name], ("Write",), "reports the version it enforces"),
        *_literal([topology.audit.name], ("Write",), "writes an audit record per outcome"),
        *_deliveries(
            topology, ("Write", "Create"), "delivers; a new platform's topic is made on first use"
        ),
        Acl(
            Resource.TOPIC,
            internal,
            Pattern.PREFIXED,
            ("Read", "Write", "Create"),
            "internal topics: deadline events, the turn changelog, Faust's assignor topic",
        ),
        Acl(
            Resource.GROUP,
            settings.app_id,
            Pattern.LITERAL,
            ("Read",),
            "its consumer group (the app id): join, commit, read committed offsets",
        ),
    ]


def _corrector(topology: Topology) -> list[Acl]:
    return [
        *_literal([topology.corrections.name], ("Read",), "reads the correction requests"),
        *_literal([topology.replies.name], ("Write",), "publishes attempt 1 as a reply"),
    ]


def _endpoint(topology: Topology, platform: str, group: str | None) -> list[Acl]:
    return [
        *_literal([topology.delivery(platform).name], ("Read",), "reads its platform's deliveries"),
        Acl(
            Resource.GROUP,
            group or endpoint_group(platform),
            Pattern.LITERAL,
            ("Read",),
            "its consumer group: join and commit",
        ),
    ]


def _agent(topology: Topology) -> list[Acl]:
    return _literal([t.name for t in topology.inputs()], ("Write",), "produces the inputs")


def acls(
    part: Part, topology: Topology, platform: str = "im", group: str | None = None
) -> list[Acl]:
    """The ACLs `part` needs in this deployment, and nothing more."""
    if part is Part.TOPICS:
        return _topics(topology)
    if part is Part.WORKER:
        return _worker(topology)
    if part is Part.CORRECTOR:
        return _corrector(topology)
    if part is Part.ENDPOINT:
        return _endpoint(topology, platform, group)
    return _agent(topology)


def _resource_option(acl: Acl) -> str:
    if acl.resource is Resource.CLUSTER:
        return "--cluster"
    return f"--{acl.resource.value.lower()} {_quote(acl.name)}"


def _quote(value: str) -> str:
    """A shell word: names made of topic characters need no quotes; anything else is quoted."""
    import shlex

    return shlex.quote(value)


def kafka_acls_commands(
    entries: Sequence[Acl], principal: str, bootstrap: str, command_config: str | None
) -> list[str]:
    """`kafka-acls --add` commands for `principal`: one per pattern type and operation set,
    naming every resource that takes them (the tool allows each operation on each)."""
    head = f"kafka-acls.sh --bootstrap-server {_quote(bootstrap)}"
    if command_config:
        head += f" --command-config {_quote(command_config)}"
    groups: dict[tuple[Pattern, tuple[str, ...]], list[Acl]] = {}
    for acl in entries:
        groups.setdefault((acl.pattern, acl.operations), []).append(acl)
    lines = []
    for (pattern, operations), members in groups.items():
        ops = " ".join(f"--operation {op}" for op in operations)
        resources = " ".join(_resource_option(a) for a in members)
        lines.append(
            f"{head} --add --allow-principal {_quote(principal)} {ops} {resources} "
            f"--resource-pattern-type {pattern.value.lower()}"
        )
    return lines


if __name__ == "__main__":
    raise SystemExit("the ACL table is written by `python -m streams.broker.acl_docs` now")
