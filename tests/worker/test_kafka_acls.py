"""Least privilege on a broker with the StandardAuthorizer: each part gets only the ACLs that
`replygate acls PART` prints, applied with Kafka's own kafka-acls tool, and runs as a SCRAM user
of its own (made through the admin API by the super user).

Through those ACLs the topics job creates the topics, the worker (with the corrector) delivers,
corrects and dead-letters, and the endpoint reader hands the deliveries on. Where the ACLs say
no, the broker refuses: the worker's principal cannot write to another deployment's topic, the
endpoint reader cannot read another platform's topic (one line, exit 1), the agent producer
cannot read the deliveries; a worker missing a permission stops with one line naming the topic
or group and the operation instead of waiting for ever.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from tests.support.kafka import REPO, Deployment, produce
from tests.support.tls import TlsBroker, flow_records, run_flow

ADMIN_PASSWORD = "rg-admin." + secrets.token_hex(8)
PARTS = ("topics", "worker", "corrector", "endpoint", "agent")
USERS = ("topics", "worker", "endpoint", "agent")  # the corrector runs as the worker
READER_GROUP = "rg-acl-im"


@dataclass
class Granted:
    """A deployment whose parts each have their own user, password file and ACLs."""

    broker: TlsBroker
    deployment: Deployment
    passwords: dict[str, str]
    password_files: dict[str, Path]
    commands: dict[str, list[str]]
    topics_run: subprocess.CompletedProcess[str]

    def env(self, part: str) -> dict[str, str]:
        user = f"replygate-{part}"
        env = self.broker.scram_env(user, self.password_files[part])
        del env["REPLYGATE_KAFKA_BOOTSTRAP_SERVERS"]
        return env

    def client(self, part: str) -> dict[str, Any]:
        """aiokafka options of a part's own user."""
        return {
            **self.broker.admin_client(),
            "sasl_plain_username": f"replygate-{part}",
            "sasl_plain_password": self.passwords[part],
        }


def printed(part: str, deployment: Deployment, *extra: str) -> list[str]:
    """`replygate acls PART` for this deployment: its kafka-acls lines."""
    done = subprocess.run(
        [sys.executable, "-m", "streams.cli", "acls", part, "--prefix", deployment.prefix,
         "--app-id", deployment.app_id, *extra],
        cwd=REPO, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return [line for line in done.stdout.splitlines() if line.startswith("kafka-acls")]


@pytest.fixture(scope="module")
def granted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Granted]:
    home = tmp_path_factory.mktemp("acl-broker")
    broker = TlsBroker(home, authorizer=True, sasl_password=ADMIN_PASSWORD)
    broker.up()
    try:
        deployment = Deployment(partitions=2, bootstrap_servers=broker.scram_bootstrap)
        passwords = {u: f"rg-{u}." + secrets.token_hex(8) for u in USERS}
        files = {}
        for user, password in passwords.items():
            broker.add_scram_user(f"replygate-{user}", password)
            files[user] = home / f"{user}.password"
            files[user].write_text(password)
        commands = {part: printed(part, deployment, "--group", READER_GROUP) for part in PARTS}
        for lines in commands.values():
            for line in lines:
                broker.kafka_acls(line)
        grant = Granted(broker, deployment, passwords, files, commands, None)  # type: ignore[arg-type]
        grant.topics_run = subprocess.run(
            [sys.executable, "-m", "streams.cli", "topics"],
            cwd=REPO,
            env={**deployment.worker_env(home), **grant.env("topics")},
            capture_output=True,
            text=True,
            timeout=120,
        )
        yield grant
    finally:
        broker.down(purge=True)


@pytest.mark.kafka
def test_each_part_runs_the_flow_with_only_its_printed_acls(
    granted: Granted, tmp_path: Path
) -> None:
    assert granted.topics_run.returncode == 0, granted.topics_run.stderr
    assert "created " + granted.deployment.topic("replies.raw") in granted.topics_run.stdout
    # the corrector's ACLs go to the worker's principal, the others to each part's own
    assert all("User:replygate-worker" in line for line in granted.commands["corrector"])
    deployment = granted.deployment
    deployment.env = granted.env("worker")
    result = run_flow(
        deployment,
        tmp_path,
        granted.broker.scram_bootstrap,
        agent_client=granted.client("agent"),
        reader_client=granted.broker.admin_client(),  # the dead letters, read by an operator
        worker_env={},
        reader_env=granted.env("endpoint"),
        tag="acl",
    )
    _records, turns = flow_records("acl")
    by_turn = {line["turn_id"]: line for line in result.handed_on}
    assert set(by_turn) == {turns["valid"], turns["corrected"]}, result.logs[-4000:]
    assert by_turn[turns["corrected"]]["corrected"] is True
    assert [letter["reason"] for letter in result.dead_letters] == ["not_json"]
    assert "not authorized" not in result.logs and "AuthorizationFailed" not in result.logs
    for password in granted.passwords.values():
        assert password not in result.logs and password not in result.metrics


async def _produce(client: dict[str, Any], servers: str, topic: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=servers, request_timeout_ms=10_000, **client)
    await producer.start()
    try:
        await producer.send_and_wait(topic, b"{}")
    finally:
        await producer.stop()


async def _consume(client: dict[str, Any], servers: str, topic: str, group: str | None) -> None:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=servers, group_id=group, auto_offset_reset="earliest", **client
    )
    await consumer.start()
    try:
        await consumer.getmany(timeout_ms=5000)
        await consumer.getmany(timeout_ms=5000)
    finally:
        await consumer.stop()


async def _create(admin_client: dict[str, Any], servers: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=servers, **admin_client)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        await admin.close()


@pytest.mark.kafka
def test_the_worker_cannot_write_outside_its_topology(granted: Granted) -> None:
    servers = granted.broker.scram_bootstrap
    foreign = f"other{uuid.uuid4().hex[:6]}.delivery.im"  # another deployment's topic
    asyncio.run(_create(granted.broker.admin_client(), servers, foreign))
    with pytest.raises(TopicAuthorizationFailedError):
        asyncio.run(_produce(granted.client("worker"), servers, foreign))
    # its own delivery topic is fine: the refusal is the ACLs', not the connection's
    asyncio.run(
        _produce(granted.client("worker"), servers, granted.deployment.topic("delivery.im"))
    )


@pytest.mark.kafka
def test_the_agent_producer_cannot_read_the_deliveries(granted: Granted) -> None:
    servers = granted.broker.scram_bootstrap
    topic = granted.deployment.topic("delivery.im")
    with pytest.raises((TopicAuthorizationFailedError, GroupAuthorizationFailedError)):
        asyncio.run(_consume(granted.client("agent"), servers, topic, "agent-peek"))
    with pytest.raises(TopicAuthorizationFailedError):
        asyncio.run(_consume(granted.client("agent"), servers, topic, None))


@pytest.mark.kafka
def test_the_endpoint_reader_cannot_read_another_platforms_topic(
    granted: Granted, tmp_path: Path
) -> None:
    deployment = granted.deployment
    deployment.env = granted.env("endpoint")
    proc = subprocess.run(
        [sys.executable, "-m", "streams.cli", "deliveries", "ide", "--group", READER_GROUP,
         "--state", str(tmp_path / "ide.sqlite"), "--from-beginning"],
        cwd=REPO, env=deployment.worker_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if "replygate deliveries:" in line]
    assert lines == [
        f"replygate deliveries: error: not authorized to read topic "
        f"'{deployment.topic('delivery.ide')}': the broker's ACLs do not allow it for this "
        "principal (`replygate acls endpoint` prints what it needs)"
    ], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.kafka
@pytest.mark.parametrize("missing", ["group", "input", "corrector", "write"])
def test_a_worker_missing_a_permission_stops_with_one_line(
    granted: Granted, tmp_path: Path, missing: str
) -> None:
    """One line naming what was refused, exit 1, not a stuck worker: another app id (its group
    not granted), an input topic outside the ACLs (it cannot see it, so it tries to create
    it), the corrector switched on for a principal without the corrector's ACLs, a dead letter
    for a principal that may see the dead-letter topic but not write to it."""
    deployment = granted.deployment
    deployment.env = granted.env("worker")
    servers = granted.broker.scram_bootstrap
    extra: dict[str, str] = {}
    if missing == "group":
        app_id = f"{deployment.app_id}-x"
        extra = {"REPLYGATE_APP_ID": app_id}
        expected = f"not authorized to use consumer group '{app_id}'"
    elif missing == "input":
        name = f"control.{uuid.uuid4().hex[:6]}"
        asyncio.run(_create(granted.broker.admin_client(), servers, deployment.topic(name)))
        extra = {"REPLYGATE_TOPICS__TURNS_CONTROL": name}
        expected = f"the broker refused to create {deployment.topic(name)} (TopicAuthorization"
    else:
        bare = f"replygate-{missing}"
        password = f"rg-{missing}." + secrets.token_hex(8)
        granted.broker.add_scram_user(bare, password)
        dlq = deployment.topic("replies.dlq")
        for line in printed("worker", deployment, "--principal", f"User:{bare}"):
            if missing == "write" and f"--topic {dlq} " in line:
                line = line.replace(f" --topic {dlq} ", " ")
                granted.broker.kafka_acls(
                    f"kafka-acls.sh --add --allow-principal User:{bare} --operation Describe "
                    f"--topic {dlq} --resource-pattern-type literal"
                )
            granted.broker.kafka_acls(line)
        (tmp_path / "bare.password").write_text(password)
        extra = {
            **granted.broker.scram_env(bare, tmp_path / "bare.password"),
            "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": servers,
        }
        if missing == "corrector":
            extra["REPLYGATE_CORRECTOR__ENABLED"] = "true"
            expected = f"not authorized to read topic '{deployment.topic('corrections.requests')}'"
        else:
            extra["REPLYGATE_APP_ID"] = deployment.app_id  # its group: granted
            expected = f"not authorized to write to topic '{dlq}'"
    worker = deployment.start_worker(tmp_path, **extra)
    if missing == "write":
        asyncio.run(
            produce(deployment.topic("replies.raw"), [("c-w", b"{broken")], servers,
                    granted.broker.admin_client())
        )  # fmt: skip
    code = worker.wait(120)
    log = deployment.logs[-1].read_text(errors="replace")
    assert code == 1, log[-3000:]
    (stop,) = [line for line in log.splitlines() if "stopping the worker" in line]
    assert expected in stop, stop
    (error,) = [line for line in log.splitlines() if line.startswith("replygate worker: error:")]
    assert expected in error, error
    assert "Traceback" not in log
    print(f"missing {missing}: {stop.split('stopping the worker: ', 1)[1]}")
