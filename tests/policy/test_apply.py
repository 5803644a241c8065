"""A worker's policy: the settings file's gates until a bundle is taken, switched whole at a
batch boundary; a record's tenant from its header."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from streams.broker.topology import Topology
from streams.core.versions import SETTINGS_VERSION
from streams.files.stage import DiskFiles
from streams.policy.apply import WorkerPolicy, tenant_of, wait_ready
from streams.policy.bundle import read_bundle
from streams.policy.follower import PolicyFollower
from streams.policy.load import (
    PolicyGates,
    load_policy,
    settings_policy,
)
from streams.settings import FileSettings, GateSettings, Settings


@pytest.mark.parametrize(
    ("headers", "name", "tenant"),
    [
        ([("x-tenant", b"acme")], "x-tenant", "acme"),
        ([("X-Tenant", b"acme")], "x-tenant", "acme"),
        ([("traceparent", b"00-x"), ("x-tenant", b"acme"), ("x-tenant", b"b")], "x-tenant", "acme"),
        ([("x-tenant", b"acme")], None, None),
        ([("x-tenant", b"")], "x-tenant", None),
        ([("x-tenant", b"\xff\xfe")], "x-tenant", None),
        ([("x-tenant", b"a\nb")], "x-tenant", None),
        ([("x-tenant", b" acme")], "x-tenant", None),
        ([("x-tenant", b"a" * 201)], "x-tenant", None),
        ([], "x-tenant", None),
    ],
)
def test_the_tenant_is_the_configured_header_as_printable_text(
    headers: list[tuple[str, bytes]], name: str | None, tenant: str | None
) -> None:
    assert tenant_of(headers, name) == tenant


def files(tmp_path: Path) -> DiskFiles:
    return DiskFiles.from_settings(Settings(workspaces_root=tmp_path).group(FileSettings))


class Follower(PolicyFollower):
    """The real follower with its topic left out (a test of what the worker does with what it
    takes; tests/policy/test_policy_topic.py follows the real topic)."""

    def hold(self, active: PolicyGates | None) -> None:
        self._loaded["active"] = active
        self.caught_up.set()


def test_the_settings_file_judges_until_a_version_is_taken_at_a_boundary(
    tmp_path: Path,
) -> None:
    base = GateSettings()
    settings_gates = PolicyGates(settings_policy(base), files(tmp_path))
    bundle_file = tmp_path / "p.toml"
    bundle_file.write_text('[default]\n[tenant.acme]\nleak_literals = ["acme-1234"]\n')
    bundle = read_bundle(bundle_file)
    gates = PolicyGates(load_policy(bundle, base), files(tmp_path))
    settings = Settings()
    follower = Follower(settings, Topology.of(settings), base, files(tmp_path), "w")
    policy = WorkerPolicy(settings_gates, follower)
    assert policy.version == SETTINGS_VERSION
    assert not asyncio.run(wait_ready(policy, 0.01))  # nothing read yet: not ready
    follower.hold(gates)
    assert policy.version == SETTINGS_VERSION  # loaded, not yet taken
    assert policy.at_batch_boundary()
    assert policy.version == bundle.version
    assert policy.active_gate("im", "acme") is gates.gate(None, "acme")
    assert policy.gate(bundle.version, "im", "acme") is gates.gate(None, "acme")
    assert policy.shadow_gate() is None
    assert not policy.at_batch_boundary()  # nothing new
    follower.hold(None)  # the active key removed: back to the settings file
    assert policy.at_batch_boundary() and policy.version == SETTINGS_VERSION
