"""Settings in groups: each part takes only its own group, while every REPLYGATE_* variable
and config key keeps its name; unknown variables are refused and lists take commas."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, SecretStr

from streams.errors import ConfigError, ReplygateError
from streams.settings import (
    BoundsSettings,
    ContractSettings,
    FileSettings,
    KafkaSettings,
    Settings,
    TurnSettings,
    WorkerSettings,
    load_settings,
)
from streams.settings.load import setting_variables, unknown_variable

GROUPS: list[type[BaseModel]] = [
    KafkaSettings,
    BoundsSettings,
    FileSettings,
    TurnSettings,
    WorkerSettings,
    ContractSettings,
]
# Nested groups of their own, and the file the others came from.
OWN_FIELDS = {"corrector", "endpoint", "config_file"}


def test_every_setting_is_in_exactly_one_group() -> None:
    owners: dict[str, list[str]] = {}
    for group in GROUPS:
        for name in group.model_fields:
            owners.setdefault(name, []).append(group.__name__)
    assert {n: o for n, o in owners.items() if len(o) > 1} == {}
    assert set(Settings.model_fields) == set(owners) | OWN_FIELDS


def test_a_group_hands_a_part_nothing_else(tmp_path: Path) -> None:
    settings = Settings(batch_max_records=7, partitions=3, workspaces_root=tmp_path)
    knobs = settings.group(WorkerSettings)
    assert type(knobs) is WorkerSettings and knobs.batch_max_records == 7
    assert not hasattr(knobs, "partitions") and not hasattr(knobs, "workspaces_root")
    files = settings.group(FileSettings)
    assert files.workspaces_root == tmp_path and not hasattr(files, "batch_max_records")
    assert settings.group(KafkaSettings).topic("replies_raw") == settings.topic("replies_raw")


def test_the_variable_names_are_unchanged() -> None:
    names = setting_variables()
    for name in (
        "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS",
        "REPLYGATE_BATCH_MAX_RECORDS",
        "REPLYGATE_WORKSPACES_ROOT",
        "REPLYGATE_CORRECTOR__BASE_URL",
        "REPLYGATE_KAFKA_SECURITY__SASL_PASSWORD",
        "REPLYGATE_ENDPOINT__HORIZON_SECONDS",
        "REPLYGATE_TOPICS__REPLIES_RAW",
        "REPLYGATE_CONFIG_FILE",
    ):
        assert name in names, name


def test_a_config_file_keeps_its_flat_keys(tmp_path: Path) -> None:
    config = tmp_path / "gate.toml"
    config.write_text('batch_max_records = 9\nplatforms = ["im"]\n[corrector]\nmodel = "m"\n')
    settings = load_settings(config)
    assert (settings.batch_max_records, settings.platforms) == (9, ["im"])
    assert settings.corrector.model == "m"


@pytest.mark.parametrize(
    ("variable", "closest"),
    [
        ("REPLYGATE_PARTITONS", "REPLYGATE_PARTITIONS"),
        ("REPLYGATE_CORRECTOR__MODLE", "REPLYGATE_CORRECTOR__MODEL"),
        ("replygate_platfroms", "REPLYGATE_PLATFORMS"),
    ],
)
def test_an_unknown_variable_names_the_closest_setting(variable: str, closest: str) -> None:
    said = unknown_variable({variable: "4", "REPLYGATE_PARTITIONS": "2", "HOME": "/root"})
    assert said == f"environment variable {variable} names no setting (did you mean {closest}?)"


def test_known_variables_and_others_pass() -> None:
    environ = {"REPLYGATE_LOGLEVEL": "debug", "REPLYGATE_PARTITIONS": "2", "PATH": "/bin"}
    assert unknown_variable(environ) is None
    assert unknown_variable({"REPLYGATE_ZZZZZZZZZZZZZZZZ": "1"}) == (
        "environment variable REPLYGATE_ZZZZZZZZZZZZZZZZ names no setting"
    )


def test_load_settings_refuses_an_unknown_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLYGATE_PARTITONS", "4")
    with pytest.raises(ConfigError, match="did you mean REPLYGATE_PARTITIONS") as refused:
        load_settings()
    assert isinstance(refused.value, ReplygateError) and refused.value.exit_status == 2


@pytest.mark.parametrize(
    ("value", "platforms"),
    [("im,web", ["im", "web"]), (" im , web ,", ["im", "web"]), ('["im", "web"]', ["im", "web"])],
)
def test_a_list_setting_takes_json_or_commas(
    monkeypatch: pytest.MonkeyPatch, value: str, platforms: list[str]
) -> None:
    monkeypatch.setenv("REPLYGATE_PLATFORMS", value)
    monkeypatch.setenv("REPLYGATE_LEAK_LITERALS", "canary-1111,canary-2222")
    settings = load_settings()
    assert settings.platforms == platforms
    assert settings.leak_literals == [SecretStr("canary-1111"), SecretStr("canary-2222")]


def test_a_variable_that_is_not_json_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLYGATE_CORRECTOR", "{nope")
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert str(refused.value) == "settings: REPLYGATE_CORRECTOR: the value is not valid JSON"


def test_kubernetes_service_links_are_not_typos() -> None:
    """A Service named replygate-metrics injects these into every pod of its namespace."""
    links = {
        "REPLYGATE_METRICS_SERVICE_HOST": "10.96.0.7",
        "REPLYGATE_METRICS_SERVICE_PORT": "9108",
        "REPLYGATE_METRICS_SERVICE_PORT_METRICS": "9108",
        "REPLYGATE_METRICS_PORT_9108_TCP": "tcp://10.96.0.7:9108",
        "REPLYGATE_METRICS_PORT_9108_TCP_ADDR": "10.96.0.7",
        "REPLYGATE_METRICS_PORT_9108_TCP_PROTO": "tcp",
        "REPLYGATE_METRICS_PORT_9108_TCP_PORT": "9108",
    }
    assert unknown_variable(links) is None
    said = unknown_variable({**links, "REPLYGATE_PARTITONS": "4"})
    assert said is not None and "REPLYGATE_PARTITONS" in said
