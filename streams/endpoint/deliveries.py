"""The endpoint side: read `delivery.<platform>`, drop repeats, re-validate, hand on once.

`Endpoint` is what `replygate deliveries` runs and what an endpoint written in Python can
import instead. Per delivery, in order:

1. `judge` the record: its size, JSON, the closed Delivery, its platform and its message (again,
   with the contract code the gate used, `schemas.delivered`). An invalid one is logged (masked)
   and counted, never handed on.
2. In one SQLite transaction (`SeenIds.once`): a repeat of an id already recorded is dropped;
   a new one is handed on (`HandOff`) and its id recorded when the hand-off returns.
3. Once every delivery of a batch is handed on or dropped, the batch's offsets are committed.

The guarantee (docs/endpoints.md): no delivery is lost, and none is handed on twice, except
when the process dies after a hand-off is taken and before its id is committed in SQLite (one
local commit). Then that one delivery is handed on once more after the restart, with the same
delivery id (and `Idempotency-Key`). A kill anywhere else, for instance after the id is recorded
and before the offsets are committed, repeats nothing: the id drops the re-read record.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from schemas.codes import NOT_JSON, RECORD_TOO_LARGE
from schemas.contract import ReplyContract
from schemas.delivered import Checked, check_delivery
from schemas.issue import Issue
from schemas.json_numbers import wide_integer
from schemas.json_read import duplicate_key_issues, duplicate_keys
from streams.broker.options import aiokafka_options
from streams.broker.refusals import client_errors, denied, is_denied, preflight
from streams.broker.topology import Topology
from streams.core.leaks import Masker
from streams.core.pipeline import outbound_issue
from streams.endpoint.dedup import SeenIds
from streams.endpoint.handoff import HandOff, Stopped, delivery_line
from streams.errors import RuntimeFailure
from streams.ops import failpoints
from streams.settings import ContractSettings, Settings

log = logging.getLogger("replygate.deliveries")
# Between two tries to reach the broker, within `endpoint.connect_timeout_seconds`.
RETRY_SECONDS: Final = 0.5

LOGGED_ISSUES: Final = 5
LOGGED_CHARS: Final = 300
POLL_MS: Final = 500
# Above a delivery's own bound: the broker hands out whole batches of records.
FETCH_SLACK_BYTES: Final = 1024 * 1024


class CannotConnect(RuntimeFailure):
    """The broker did not answer within the bound; the message names it and who asked."""


class NotAuthorized(RuntimeFailure):
    """The broker's ACLs refuse this reader its topic or its group; the message names which."""


def default_group(platform: str) -> str:
    return f"replygate-endpoint-{platform}"


def client_id(group: str) -> str:
    """The client id the broker sees: the group and this host."""
    return f"{group}@{socket.gethostname()}"[:200]


def judge(
    value: bytes | None,
    contracts: Mapping[str, ReplyContract],
    platform: str,
    max_bytes: int,
) -> tuple[Checked, Any]:
    """Whether a record is a valid delivery for `platform`, and the decoded record."""
    if value is None:
        return Checked(None, (NOT_JSON.issue("$", "no_value"),)), None
    if len(value) > max_bytes:
        issue = RECORD_TOO_LARGE.issue("$", size=len(value), limit=max_bytes)
        return Checked(None, (issue,)), None
    try:
        decoded = orjson.loads(value)
    except orjson.JSONDecodeError:
        return Checked(None, (NOT_JSON.issue("$", "bare"),)), None
    wide = wide_integer(value)
    if wide is not None:
        return Checked(None, (wide,)), None
    twice = duplicate_key_issues(duplicate_keys(value, decoded))
    if twice:  # two readers would see two deliveries
        return Checked(None, tuple(twice)), None
    return check_delivery(decoded, contracts, platform), decoded


def masked_issues(masker: Masker, issues: Sequence[Issue]) -> str:
    """The first issues on one line, masked and cut: a log line never carries a secret."""
    parts = []
    for issue in issues[:LOGGED_ISSUES]:
        shown = outbound_issue(masker, issue)
        text, _ = masker.mask_text(f"{shown.path}: {shown.code}: {shown.message}")
        parts.append(text[:LOGGED_CHARS])
    more = len(issues) - LOGGED_ISSUES
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


async def commit(consumer: Any, offsets: Mapping[Any, int]) -> None:
    """Commit `offsets` (if any); a rebalance that moved the partitions is no error."""
    from aiokafka.errors import CommitFailedError, IllegalStateError

    if not offsets:
        return
    try:
        await consumer.commit(dict(offsets))
    except (CommitFailedError, IllegalStateError) as exc:
        # Their next reader re-reads these records, and the ids recorded here drop them.
        log.warning("offsets not committed: %s", type(exc).__name__)


@dataclass
class Counts:
    """What became of the records read (the summary logged when the reader stops)."""

    handed_on: int = 0
    repeats: int = 0
    invalid: int = 0

    def line(self) -> str:
        return f"handed on {self.handed_on}, repeats dropped {self.repeats}, invalid {self.invalid}"


@dataclass
class Endpoint:
    """One platform's reader: judge, drop repeats, hand on, then commit (see the module doc)."""

    settings: Settings
    platform: str
    seen: SeenIds
    hand_off: HandOff
    contracts: Mapping[str, ReplyContract]
    group: str = ""
    from_beginning: bool = False
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    counts: Counts = field(default_factory=Counts)
    masker: Masker = field(init=False)

    def __post_init__(self) -> None:
        self.group = self.group or default_group(self.platform)
        self.masker = Masker.from_settings(self.settings.group(ContractSettings))

    @property
    def topic(self) -> str:
        return Topology.of(self.settings).delivery(self.platform).name

    def consumer_options(self) -> dict[str, Any]:
        """aiokafka options: read_committed, no auto-commit, every size and wait bounded."""

        record = self.settings.max_output_bytes + FETCH_SLACK_BYTES
        timeout_ms = int(self.settings.endpoint.connect_timeout_seconds * 1000)
        # A reader that died (SIGKILL) holds its partitions until this passes: a restart waits.
        session_ms = int(self.settings.session_timeout_seconds * 1000)
        return {
            **aiokafka_options(self.settings),
            "group_id": self.group,
            "client_id": client_id(self.group),
            "isolation_level": "read_committed",
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest" if self.from_beginning else "latest",
            "max_partition_fetch_bytes": record,
            "fetch_max_bytes": 2 * record,
            "request_timeout_ms": max(timeout_ms, session_ms + 5000),
            "session_timeout_ms": session_ms,
            "heartbeat_interval_ms": max(100, session_ms // 3),
            "metadata_max_age_ms": 30_000,
        }

    async def handle(self, value: bytes | None, where: str) -> None:
        """One record: dropped as invalid or as a repeat, or handed on and its id recorded."""
        checked, decoded = judge(
            value, self.contracts, self.platform, self.settings.max_output_bytes
        )
        if not checked.valid or checked.delivery is None:
            self.counts.invalid += 1
            why = masked_issues(self.masker, checked.issues)
            log.warning("delivery at %s not handed on: %s", where, why)
            return
        delivery_id = checked.delivery.delivery_id
        with self.seen.once(delivery_id) as new:
            if new:
                await self.hand_off(delivery_id, delivery_line(decoded))
                failpoints.hit("endpoint_handed_on")
        if new:
            self.counts.handed_on += 1
            failpoints.hit("endpoint_recorded")
        else:
            self.counts.repeats += 1

    async def connect(self) -> Any:
        """A started consumer, or `CannotConnect` naming the broker, group and client."""
        from aiokafka import AIOKafkaConsumer
        from aiokafka.errors import KafkaError

        options = self.consumer_options()
        bound = self.settings.endpoint.connect_timeout_seconds
        loop = asyncio.get_running_loop()
        deadline = loop.time() + bound
        # aiokafka logs each failed try at ERROR; the one message below says it all (and the
        # last such error, masked, is its cause: a TLS or SASL refusal).
        with client_errors() as seen:
            while True:  # a refused connection is tried again until the bound: a broker that
                # starts a moment after its endpoint (compose, Kubernetes) is no failure
                # subscribed once started: a start that waits for the topic's metadata would
                # wait out the bound on a topic the ACLs hide, instead of saying so
                consumer = AIOKafkaConsumer(**options)
                try:
                    await asyncio.wait_for(consumer.start(), max(deadline - loop.time(), 0.1))
                    refused = await preflight(
                        aiokafka_options(self.settings), "endpoint", self.group, self.topic
                    )
                    if refused is not None:
                        await consumer.stop()
                        raise NotAuthorized(refused)
                    consumer.subscribe([self.topic])
                    return consumer
                except (KafkaError, OSError, TimeoutError) as exc:
                    await consumer.stop()
                    if isinstance(exc, TimeoutError) or loop.time() + RETRY_SECONDS >= deadline:
                        why = "no answer" if isinstance(exc, TimeoutError) else type(exc).__name__
                        raise CannotConnect(
                            f"cannot connect to the broker at "
                            f"{self.settings.kafka_bootstrap_servers} as consumer group "
                            f"{self.group!r} (client {options['client_id']!r}) within "
                            f"{bound:g} s: {seen.cause() or why}"
                        ) from exc
                await asyncio.sleep(RETRY_SECONDS)

    def refused(self, exc: BaseException) -> NotAuthorized:
        """The one line for an ACL refusal: the group's or the topic's."""
        if type(exc).__name__ == "GroupAuthorizationFailedError":
            return NotAuthorized(denied("read as", "consumer group", self.group, "endpoint"))
        return NotAuthorized(denied("read", "topic", self.topic, "endpoint"))

    async def run(self) -> Counts:
        """Read until `stop` is set; every batch's offsets committed after its hand-offs."""
        consumer = await self.connect()
        assigned: set[Any] = set()
        try:
            while not self.stop.is_set():
                try:
                    batch = await consumer.getmany(
                        timeout_ms=POLL_MS, max_records=self.settings.endpoint.batch_max_records
                    )
                    assigned = await self._commit_start(consumer, batch, assigned)
                    await commit(consumer, await self._hand_on(batch))
                except Exception as exc:
                    if is_denied(exc):  # retrying cannot help: the ACLs say no
                        raise self.refused(exc) from None
                    raise
                self.seen.prune()
        finally:
            await consumer.stop()
        return self.counts

    async def _commit_start(
        self, consumer: Any, batch: Mapping[Any, Sequence[Any]], known: set[Any]
    ) -> set[Any]:
        """Commit where a group starts on a partition it never committed on, before reading.

        Otherwise a reader stopped before its first commit would start again at the newest
        delivery (`latest`), past those that came meanwhile. Returns the current assignment.
        """
        assignment = set(consumer.assignment())
        start = {}
        for tp in assignment - known:
            if await consumer.committed(tp) is None:
                records = batch.get(tp)
                start[tp] = records[0].offset if records else await consumer.position(tp)
        await commit(consumer, start)
        return assignment

    async def _hand_on(self, batch: Mapping[Any, Sequence[Any]]) -> dict[Any, int]:
        """Each record of a batch in turn; the offsets to commit for those that are done."""
        done: dict[Any, int] = {}
        for tp, messages in batch.items():
            for message in messages:
                if self.stop.is_set():
                    return done
                try:
                    await self.handle(message.value, f"{tp.topic}[{tp.partition}]@{message.offset}")
                except Stopped:
                    return done
                done[tp] = message.offset + 1
        return done
