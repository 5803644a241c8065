"""The policy topic against the real broker: publish (checked first), status, promote,
rollback, and a worker's follower taking each new version once and refusing a bundle that
does not load without losing the one it holds."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from streams.broker.topology import Topology, create_topics
from streams.files.stage import DiskFiles
from streams.policy.bundle import PolicyError, read_bundle
from streams.policy.follower import PolicyFollower
from streams.policy.load import Policy, load_policy
from streams.policy.topic import (
    ACTIVE,
    NothingTo,
    PolicyTopicError,
    StatusReport,
    perform,
    read_latest,
    write,
)
from streams.settings import FileSettings, GateSettings, Settings
from tests.support.kafka import bootstrap

pytestmark = pytest.mark.kafka

V1 = '[default]\nleak_literals = ["canary-0001"]\n'
V2 = '[default]\nleak_literals = ["canary-0002"]\n'
V3 = '[default]\nleak_literals = ["canary-0003"]\n[tenant.acme]\nleak_literals = ["acme-0003"]\n'


def deployment() -> Settings:
    prefix = f"p{uuid.uuid4().hex[:10]}."
    return Settings(
        kafka_bootstrap_servers=bootstrap(),
        topic_prefix=prefix,
        app_id=prefix.rstrip(".") + "-gate",
        partitions=1,
    )


def bundle_file(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def until(what: str, check: Callable[[], Any], seconds: float = 30.0) -> Any:
    """Poll `check` without blocking the loop; fail naming what was awaited."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(scenario())


def test_publish_status_promote_rollback(tmp_path: Path) -> None:
    settings = deployment()
    v1, v2, v3 = (bundle_file(tmp_path, n, t) for n, t in (("v1", V1), ("v2", V2), ("v3", V3)))
    version = {p: read_bundle(p).version for p in (v1, v2, v3)}

    async def scenario() -> None:
        await create_topics(Topology.of(settings), settings)
        assert await perform("publish", settings, v1) == [f"active {version[v1]}"]
        stored = await read_latest(settings, Topology.of(settings).policy)
        assert stored == {ACTIVE: read_bundle(v1).canonical, version[v1]: read_bundle(v1).canonical}
        assert (await perform("publish", settings, v1))[0].endswith("(already published)")
        await perform("publish", settings, v2)
        lines = await perform("status", settings)
        assert lines[:3] == [
            f"active   {version[v2]}",
            "shadow   -",
            f"previous {version[v1]}",
        ]
        assert lines[3] == "workers  none reported in the last minute"
        assert await perform("rollback", settings) == [f"active {version[v1]}"]
        status = await perform("status", settings)
        assert status[0] == f"active   {version[v1]}" and status[2] == f"previous {version[v2]}"
        await perform("publish", settings, v3, shadow=True)
        assert (await perform("status", settings))[1] == f"shadow   {version[v3]}"
        stored = await read_latest(settings, Topology.of(settings).policy)
        assert {k for k in stored if k.startswith("sha256:")} == set(version.values())
        assert await perform("promote", settings) == [f"active {version[v3]}"]
        status = await perform("status", settings)
        assert status[:3] == [f"active   {version[v3]}", "shadow   -", f"previous {version[v1]}"]
        with pytest.raises(NothingTo, match="no shadow version to promote"):
            await perform("promote", settings)

    run(scenario)


def test_a_bundle_that_does_not_load_is_never_written(tmp_path: Path) -> None:
    settings = deployment()
    bad = bundle_file(tmp_path, "bad", '[default]\nleak_patterns = { "x-y" = "(" }\n')

    async def scenario() -> None:
        await create_topics(Topology.of(settings), settings)
        with pytest.raises(PolicyError, match="leak rule 'x-y': does not compile under RE2"):
            await perform("publish", settings, bad)
        assert await read_latest(settings, Topology.of(settings).policy) == {}

    run(scenario)


def test_the_follower_takes_each_version_once_and_refuses_a_bad_one_whole(
    tmp_path: Path,
) -> None:
    settings = deployment()
    topology = Topology.of(settings)
    v1, v2, v3 = (bundle_file(tmp_path, n, t) for n, t in (("v1", V1), ("v2", V2), ("v3", V3)))
    loads: list[str] = []

    def counting_load(bundle: Any, base: GateSettings) -> Policy:
        loads.append(bundle.version)
        return load_policy(bundle, base)

    async def scenario() -> None:
        await create_topics(topology, settings)
        # Published before the follower starts: only the latest active is loaded.
        await perform("publish", settings, v1)
        await perform("publish", settings, v2)
        files = DiskFiles.from_settings(settings.group(FileSettings))
        follower = PolicyFollower(
            settings, topology, settings.group(GateSettings), files, "w-1", load=counting_load
        )
        task = asyncio.create_task(follower.run())
        try:
            await asyncio.wait_for(follower.caught_up.wait(), 30)
            held = follower.take()
            assert held is not None and held.active_version == read_bundle(v2).version
            assert held.shadow is None
            assert loads == [read_bundle(v2).version]
            assert follower.take() is None  # once
            # A record no worker can load, written straight to the topic.
            await write(settings, topology.policy, [(ACTIVE, b'{"default":{"nope":1}}')])
            await until("the refusal", lambda: follower.refused == 1)
            assert follower.take() is None
            assert follower.held.active_version == read_bundle(v2).version
            # The follower goes on: the next good version is taken.
            await perform("publish", settings, v3, shadow=True)
            await perform("publish", settings, v1)
            v1_version, v3_version = read_bundle(v1).version, read_bundle(v3).version
            await until(
                "v1 and the shadow v3 loaded",
                lambda: (
                    (follower.take(), follower.held)[1].active_version == v1_version
                    and follower.held.shadow_version == v3_version
                ),
            )
            new = follower.held
            assert new.shadow is not None
            # An older version, for a turn begun under it: loaded from the topic's store.
            older = await follower.gates_for(read_bundle(v2).version)
            assert older is not None and older.version == read_bundle(v2).version
            assert await follower.gates_for(read_bundle(v2).version) is older  # kept
            assert await follower.gates_for("sha256:" + "0" * 64) is None
            assert new.active_version == read_bundle(v1).version
            assert new.shadow_version == read_bundle(v3).version
            masked, _ = new.shadow.gate("im", "acme").masker.mask_text("acme-0003")
            assert "acme-0003" not in masked

            # The worker's report: what it took, and the refusal.
            async def report() -> StatusReport | None:
                values = await read_latest(settings, topology.policy_status)
                raw = values.get("w-1")
                found = None if raw is None else StatusReport.from_bytes(raw)
                return found if found and found.active == new.active_version else None

            deadline = time.monotonic() + 30
            found = None
            while found is None and time.monotonic() < deadline:
                found = await report()
            assert found is not None and found.refused == 1
            assert found.shadow == read_bundle(v3).version
            status = await perform("status", settings)
            assert any(
                line.startswith("worker   w-1 active " + new.active_version) for line in status
            )
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        # A clean stop removes the worker's report. The bad record was not kept as previous
        # (rollback would bring it back): previous is still what v2 replaced.
        assert "w-1" not in await read_latest(settings, topology.policy_status)
        previous = (await read_latest(settings, topology.policy))["previous"]
        assert previous == read_bundle(v1).canonical

    run(scenario)


def test_a_missing_policy_topic_is_said_and_never_created_by_the_command() -> None:
    settings = deployment()
    topology = Topology.of(settings)

    async def scenario() -> None:
        with pytest.raises(PolicyTopicError, match="`replygate topics` creates the policy topics"):
            await perform("status", settings)
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap_servers)
        await admin.start()
        try:
            assert topology.policy.name not in await admin.list_topics()
        finally:
            await admin.close()

    run(scenario)
