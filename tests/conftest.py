"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from streams.core.pipeline import Gate
from streams.settings import Settings
from tests.support.gates import disk_gate

# The cluster tests need the local Kubernetes cluster (deploy/k8s-local): `make test-k8s` brings
# it up and runs them; `make test` leaves them out.
collect_ignore = [] if os.environ.get("K8S_LOCAL_TESTS") == "1" else ["k8s"]


@pytest.fixture(autouse=True)
def _settings_from_the_test_only(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A unit test sees only the settings it builds: a REPLYGATE_* variable in the shell that
    runs the suite must not change a verdict. Kafka tests keep the broker address."""
    if request.node.get_closest_marker("kafka") is None:
        for name in [n for n in os.environ if n.startswith("REPLYGATE_")]:
            monkeypatch.delenv(name)
    yield


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    """A gate with default settings whose workspaces and media roots are an empty directory."""
    return disk_gate(Settings(workspaces_root=tmp_path, media_root=tmp_path))
