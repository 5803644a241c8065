"""Steady turn traffic for the cluster tests: paced producing in a thread, and the deliveries
read back with their broker timestamps (to find the longest pause)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from streams.broker.ready import group_offsets
from streams.client import AgentClient, input_record
from streams.settings import Settings
from tests.support.crash_harness import conversation, delivered_count
from tests.support.kafka import read_from_start
from tests.support.samples import GITHUB_PAT, im_text, raw_reply

OUTPUT_TOPICS = ("delivery.im", "corrections.requests", "replies.dlq")
# The scripted corrector's answers, chosen by what the invalid reply says (its prose).
GOOD = im_text([{"type": "text", "data": {"text": "The corrected answer"}}])
FIXABLE, HOPELESS, CANCELLED = "fixable prose", "hopeless prose", "cancelled prose"


def new_run() -> str:
    """A prefix for one traffic run's turn ids: a turn id the workers finished in an earlier
    run (the same cluster, KEEP_CLUSTER=1, or an earlier test) would be dropped as a repeat."""
    return uuid.uuid4().hex[:8] + "-"


RUN = new_run()  # this session's default run


def turn(i: int, run: str = RUN) -> tuple[str, dict[str, Any]]:
    """Turn i as crash_harness.expected() judges it: i % 10 == 0 ends in a notice (the corrector
    answers prose again), 5 is corrected, 7 is cancelled, 3 carries a secret, the rest are valid.
    `run`: the prefix of its turn id (another for each traffic run of one session)."""
    prose = {0: HOPELESS, 5: FIXABLE, 7: CANCELLED}.get(i % 10)
    if prose is None:
        return plain_turn(i, run=run)
    conv = conversation(i)
    return conv, raw_reply(turn_id=f"{run}t-{i}", conversation_id=conv, output={"text": prose})


def plain_turn(i: int, parts: int = 1, run: str = RUN) -> tuple[str, dict[str, Any]]:
    """Turn i as a valid reply of `parts` text segments (each one more to check, for a few
    bytes), with a secret to mask when i % 10 == 3: no correction."""
    conv = conversation(i)
    secret = f" key {GITHUB_PAT}" if i % 10 == 3 else ""
    segments = [{"type": "text", "data": {"text": f"answer {i}{secret}"}}]
    segments += [{"type": "text", "data": {"text": f"{n}. ok"}} for n in range(1, parts)]
    text = im_text(segments)
    return conv, raw_reply(turn_id=f"{run}t-{i}", conversation_id=conv, output={"text": text})


def cancel(i: int, run: str = RUN) -> dict[str, Any]:
    return {"turn_id": f"{run}t-{i}", "conversation_id": conversation(i), "action": "cancel"}


@dataclass(eq=False)  # a Thread: hashed by identity
class Producer(threading.Thread):
    """Produces `total` turns at `rate` a second (a cancel after each cancelled turn), or
    fewer when `stop` is set first; `plain`: valid replies only (`plain_turn`)."""

    servers: str
    total: int
    rate: float
    produced: int = 0
    sent_ms: list[int] = field(default_factory=list)
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    plain: bool = False
    parts: int = 1  # segments of each plain turn (`plain_turn`)
    prefix: str = RUN  # of the turn ids (`turn`)

    def __post_init__(self) -> None:
        super().__init__(daemon=True)

    def run(self) -> None:
        try:
            asyncio.run(self._produce())
        except BaseException as exc:
            self.error = exc
        finally:
            self.done.set()

    async def _produce(self) -> None:
        """Through `AgentClient`, as an agent service sends: keyed and validated by it."""
        settings = Settings(kafka_bootstrap_servers=self.servers)
        async with AgentClient(settings) as agent:
            t0 = time.monotonic()
            sent = []
            for i in range(self.total):
                if self.stop.is_set():
                    break
                await asyncio.sleep(max(0.0, t0 + i / self.rate - time.monotonic()))
                _conv, record = (
                    plain_turn(i, self.parts, self.prefix) if self.plain else turn(i, self.prefix)
                )
                self.sent_ms.append(int(time.time() * 1000))
                sent.append(await agent.submit(input_record(record)))
                if i % 10 == 7 and not self.plain:
                    sent.append(await agent.submit(input_record(cancel(i, self.prefix))))
                self.produced = i + 1
            await asyncio.gather(*sent)

    def wait_produced(self, count: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.produced < count and not self.done.is_set() and time.monotonic() < deadline:
            time.sleep(0.2)


INPUT_TOPICS = ("replies.raw", "turns.control")  # what `Producer` writes


async def group_lag(servers: str, group: str = "replygate") -> int:
    """How many records the worker group has not committed yet, over `INPUT_TOPICS` and every
    other partition it commits (the deadline events): end offsets minus committed offsets, a
    partition never committed counted whole."""
    admin = AIOKafkaAdminClient(bootstrap_servers=servers, request_timeout_ms=10_000)
    consumer = AIOKafkaConsumer(bootstrap_servers=servers, request_timeout_ms=10_000)
    await admin.start()
    try:
        await consumer.start()
        # only topics that exist: asking the broker about another would create it
        names = [t for t in INPUT_TOPICS if t in set(await admin.list_topics())]
        described = await admin.describe_topics(names) if names else []
        committed = await group_offsets(admin, group)
        tps = {
            TopicPartition(t["topic"], p["partition"]) for t in described for p in t["partitions"]
        }
        ends = await consumer.end_offsets(list(tps | set(committed)))
    finally:
        await consumer.stop()
        await admin.close()
    done = {tp: max(meta.offset, 0) for tp, meta in committed.items()}
    return sum(max(0, end - done.get(tp, 0)) for tp, end in ends.items())


Record = tuple[str, bytes | None, bytes, int]  # topic, key, value, broker timestamp (ms)


async def read_outputs(
    servers: str, until: Callable[[list[Record]], bool], timeout: float, settle: float = 5.0
) -> list[Record]:
    """Every output record from the beginning until `until(records)` (then `settle` seconds)."""
    return await read_from_start(
        OUTPUT_TOPICS,
        until,
        lambda topic, m: (topic, m.key, m.value, m.timestamp),
        timeout,
        settle,
        bootstrap_servers=servers,
    )


def this_run(records: list[Record], run: str = RUN) -> list[Record]:
    """This run's output records, with the run prefix taken off the ids (`t-<i>`, as
    crash_harness.judge reads them); a dead letter is this run's when it quotes the prefix."""
    out: list[Record] = []
    for topic, key, value, ts in records:
        if topic == "replies.dlq":
            if run.encode() in value:
                out.append((topic, key, value, ts))
            continue
        record = orjson.loads(value)
        field_name = "delivery_id" if topic == "delivery.im" else "turn_id"
        ident = str(record.get(field_name, ""))
        if ident.startswith(run):
            record[field_name] = ident.removeprefix(run)
            out.append((topic, key, orjson.dumps(record), ts))
    return out


def all_outcomes(total: int, run: str = RUN) -> Callable[[list[Record]], bool]:
    want = delivered_count(total, corrections=True)
    prefixed = run + "t-"

    def complete(records: list[Record]) -> bool:
        ids = {
            i
            for t, _k, v, _ts in records
            if t == "delivery.im"
            if (i := orjson.loads(v)["delivery_id"]).startswith(prefixed)
        }
        return len(ids) >= want

    return complete


def longest_wait_s(records: list[Record], sent_ms: list[int]) -> float:
    """The longest a plain valid reply waited from its send to its delivery (the delivery
    record's timestamp): the pause a user sees when a rebalance stalls its partition.
    Corrected, noticed and cancelled turns wait for the corrector, so they are left out.
    `records`: this run's (`this_run`)."""
    delivered: dict[int, int] = {}
    for topic, _k, value, ts in records:
        if topic == "delivery.im":
            delivered.setdefault(int(orjson.loads(value)["delivery_id"][2:]), ts)
    waits = [
        delivered[i] - sent
        for i, sent in enumerate(sent_ms)
        if i % 10 not in (0, 5, 7) and i in delivered
    ]
    return max(waits, default=0) / 1000.0
