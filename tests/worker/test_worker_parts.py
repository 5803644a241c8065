"""The worker split by concern: Faust patched in one module, one settling test, and each part
typed with its own settings group (read from the source and the signatures: nothing runs)."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from streams.broker.topology import Topology, create_topics
from streams.core.chunks import chunk_limit
from streams.core.leaks import Masker
from streams.core.pipeline import Gate
from streams.settings import GateSettings, KafkaSettings, Settings
from streams.settings.contracts import build_registry
from streams.worker.app import Worker, app_options
from streams.worker.batch_flow import BatchFlow
from streams.worker.corrector import correct, register_corrector
from streams.worker.deadlines import DeadlineScan
from streams.worker.metrics_hooks import WorkerMetrics
from streams.worker.offsets import OffsetWatch
from streams.worker.topics import OutputTopics, create_at_start
from tests.support.kafka import REPO

WORKER = sorted((REPO / "streams" / "worker").glob("*.py"))


def _patched_consumer_attributes(source: str) -> list[str]:
    """`consumer.x = ...` assignments: a patch on Faust's consumer object."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == "consumer"
            ):
                found.append(target.attr)
    return found


def test_faust_is_patched_in_faust_fixes_only() -> None:
    patches = {
        path.name: _patched_consumer_attributes(path.read_text(encoding="utf-8")) for path in WORKER
    }
    assert {name: attrs for name, attrs in patches.items() if attrs} == {
        "faust_fixes.py": patches["faust_fixes.py"]
    }
    assert {"_add_gap", "_new_offset", "on_buffer_full"} <= set(patches["faust_fixes.py"])


def test_the_rebalancing_or_recovery_test_is_spelt_once() -> None:
    spelt = [p.name for p in WORKER if "recovery.completed" in p.read_text(encoding="utf-8")]
    assert spelt == ["settling.py"]


@pytest.mark.parametrize(
    "part",
    [
        Worker.__init__,
        BatchFlow.__init__,
        OffsetWatch.__init__,
        DeadlineScan.__init__,
        OutputTopics.__init__,
        WorkerMetrics.__init__,
        app_options,
        create_at_start,
        register_corrector,
        correct,
        Masker.from_settings,
        Gate.__init__,
        build_registry,
        chunk_limit,
        Topology.of,
        create_topics,
    ],
)
def test_a_part_takes_its_settings_group_never_the_whole(part: Callable[..., Any]) -> None:
    annotations = inspect.get_annotations(part)  # the strings as written
    assert annotations  # typed, so the check below means something
    assert "Settings" not in annotations.values()


def test_the_gate_group_holds_no_connection_credential_or_worker_knob() -> None:
    """The pure core judges records: it never needs to reach the broker or know a password."""
    kept_out = set(Settings.model_fields) - set(GateSettings.model_fields)
    assert {"kafka_bootstrap_servers", "kafka_security", "corrector", "endpoint"} <= kept_out
    assert {"partitions", "store", "data_dir", "workspaces_root", "media_root"} <= kept_out
    assert set(KafkaSettings.model_fields) & set(GateSettings.model_fields) == {
        "app_id",
        "topic_prefix",
        "topics",
        "platforms",
        "closed_platforms",
    }
