"""Partition counts: the topics a turn travels on must agree, and a live count is never changed.

A turn's state lives on one partition number: its reply, its cancel, its correction request, its
deadline event and its changelog record all use that number. Topics with different counts put
one conversation on different numbers (a cancel misses its turn), so a worker refuses to start
on them, and `replygate topics` never changes a count: raising it moves conversations between
partitions, which is only safe once no turn is pending (docs/producers.md, Changing the
partition count).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from streams.broker.topology import Topology

DRAIN_HINT: Final = (
    "a partition count is changed only by the drain procedure: stop the producers, let the "
    "workers finish every pending turn, raise every topic together, restart "
    "(docs/producers.md, Changing the partition count)"
)


class PartitionsDiffer(Exception):
    """Topics of one deployment disagree on their partition count; the message names them."""


def copartitioned(topology: Topology) -> tuple[str, ...]:
    """The topics that must share one partition count: what the gate reads (inputs and
    deadline events), the correction requests (sent to their turn's partition number) and the
    turn table's changelog."""
    return (
        *(t.name for t in topology.gate_inputs()),
        topology.corrections.name,
        topology.changelog.name,
    )


def _listed(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} ({n})" for name, n in sorted(counts.items()))


def mismatch(counts: Mapping[str, int], wanted: int) -> str | None:
    """Why these existing topics cannot serve a deployment of `wanted` partitions (None: they
    can): they differ from one another, or from the setting."""
    if len(set(counts.values())) > 1:
        return f"topics differ in partition count: {_listed(counts)}; they must be equal"
    differ = {name: n for name, n in counts.items() if n != wanted}
    if differ:
        return (
            f"topics have another partition count than partitions = {wanted}: "
            f"{_listed(differ)}; {DRAIN_HINT}"
        )
    return None


async def partition_counts(admin: Any, names: Iterable[str]) -> dict[str, int]:
    """The partition count of each named topic that exists (`AIOKafkaAdminClient`)."""
    wanted = list(names)
    if not wanted:
        return {}
    described = await admin.describe_topics(wanted)
    return {
        t["topic"]: len(t["partitions"])
        for t in described
        if t.get("error_code", 0) == 0 and t.get("partitions")
    }
