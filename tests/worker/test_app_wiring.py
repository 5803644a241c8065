"""`create_app` wires the worker as the topology says (built offline: nothing connects)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streams.broker.topology import Topology
from streams.errors import ConfigError
from streams.settings import Settings
from streams.settings.contracts import build_registry
from streams.worker.app import GateApp
from streams.worker.app import create_app as create


def create_app(settings: Settings) -> GateApp:
    """The app as `replygate worker` builds it: the registry built once from the settings."""
    return create(settings, build_registry(settings))


def _settings(tmp_path: Path, **changes: Any) -> Settings:
    return Settings(
        data_dir=tmp_path / "data", topic_prefix="p.", app_id="x-gate", metrics_port=0, **changes
    )


def test_the_agent_reads_the_gate_inputs_and_the_table_writes_the_topologys_changelog(
    tmp_path: Path,
) -> None:
    settings = _settings(tmp_path)
    topology = Topology.of(settings)
    app = create_app(settings)
    agent = app.agents["replygate-gate"]
    assert agent.channel.topics == tuple(t.name for t in topology.gate_inputs())  # type: ignore[attr-defined]
    changelog = app.tables["turns"].changelog_topic
    assert changelog.get_topic_name() == topology.changelog.name
    assert changelog.config == dict(topology.changelog.config)


def test_the_corrector_reads_correction_requests_when_enabled(tmp_path: Path) -> None:
    settings = _settings(tmp_path, corrector={"enabled": True})
    app = create_app(settings)
    corrector = app.agents["replygate-corrector"]
    assert corrector.channel.topics == (Topology.of(settings).corrections.name,)  # type: ignore[attr-defined]


def test_exactly_once_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        create_app(_settings(tmp_path, processing_guarantee="exactly_once"))
    assert not (tmp_path / "data").exists()


def test_a_rocksdb_store_gets_bounded_memory_options(tmp_path: Path) -> None:
    """Faust's RocksDB defaults (a 2 GiB block cache, three 64 MiB write buffers per partition)
    would let a worker's memory grow with its state."""
    from streams.worker.app import ROCKSDB_OPTIONS

    store = create_app(_settings(tmp_path, store="rocksdb://")).tables["turns"].data  # type: ignore[attr-defined]
    options = store.rocksdb_options  # type: ignore[attr-defined]
    assert options.write_buffer_size == ROCKSDB_OPTIONS["write_buffer_size"] <= 8 * 1024 * 1024
    assert options.block_cache_size == ROCKSDB_OPTIONS["block_cache_size"] <= 16 * 1024 * 1024
    assert options.max_write_buffer_number == 2
    memory = create_app(_settings(tmp_path / "m")).tables["turns"]
    assert memory.options is None


def test_faust_finds_the_app_replygate_worker_built_without_loading_settings_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`replygate worker` loads the settings and builds the registry once, then Faust's own
    command line looks the app up (`-A streams.app`): it must get that app, not a second one."""
    from faust.cli.base import find_app

    import streams.app as entry

    def no_second_load(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("settings loaded a second time")

    monkeypatch.setattr(entry, "load_settings", no_second_load)
    settings = _settings(tmp_path)
    built = entry.build(settings, build_registry(settings))
    try:
        assert find_app("streams.app") is built
    finally:
        del entry.app  # type: ignore[attr-defined]
    with pytest.raises(AssertionError, match="a second time"):
        find_app("streams.app")  # with no app built, the entry point loads the settings itself
