"""Settings as a deployment meets them: a Kubernetes Service's link variables in every form,
a misspelt key in a config file, relative paths read beside their file, the 0.1.0 key form."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from schemas.records import DeadLetter
from streams.errors import ConfigError
from streams.settings import load_settings
from streams.settings.load import is_service_link, unknown_variable
from tests.core.test_batch import Harness
from tests.support.samples import raw_reply

# Exactly what a Service named `replygate-metrics` (port 9108, named `metrics`) injects into
# every pod of its namespace while service links are on (the Kubernetes default).
METRICS_SERVICE_LINKS = {
    "REPLYGATE_METRICS_SERVICE_HOST": "10.96.0.5",
    "REPLYGATE_METRICS_SERVICE_PORT": "9108",
    "REPLYGATE_METRICS_SERVICE_PORT_METRICS": "9108",
    "REPLYGATE_METRICS_PORT": "tcp://10.96.0.5:9108",
    "REPLYGATE_METRICS_PORT_9108_TCP": "tcp://10.96.0.5:9108",
    "REPLYGATE_METRICS_PORT_9108_TCP_PROTO": "tcp",
    "REPLYGATE_METRICS_PORT_9108_TCP_PORT": "9108",
    "REPLYGATE_METRICS_PORT_9108_TCP_ADDR": "10.96.0.5",
}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.upper().startswith("REPLYGATE_"):
            monkeypatch.delenv(name)
    return monkeypatch


def test_the_metrics_services_links_leave_the_settings_as_they_were(
    clean_env: pytest.MonkeyPatch,
) -> None:
    for name, value in METRICS_SERVICE_LINKS.items():
        clean_env.setenv(name, value)
    assert load_settings().metrics_port == 9108  # the default, not `tcp://...`
    clean_env.setenv("REPLYGATE_METRICS_PORT", "9200")  # a real setting is still read
    assert load_settings().metrics_port == 9200


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("REPLYGATE_PORT", "tcp://10.96.0.9:80"),  # a Service named `replygate`
        ("REPLYGATE_WORKER_PORT", "udp://10.0.0.1:53"),
        ("REPLYGATE_EDGE_PORT", "tcp://[fd00::5]:9092"),
        ("REPLYGATE_EDGE_SERVICE_PORT_HTTPS", "443"),
        ("REPLYGATE_EDGE_PORT_443_SCTP_ADDR", "10.0.0.1"),
    ],
)
def test_every_form_of_a_service_link_is_not_a_typo(name: str, value: str) -> None:
    assert is_service_link(name, value)
    assert unknown_variable({name: value}) is None


def test_a_port_variable_that_is_no_service_link_is_still_a_typo() -> None:
    said = unknown_variable({"REPLYGATE_METRIC_PORT": "9108"})
    assert said is not None and "did you mean REPLYGATE_METRICS_PORT?" in said


def test_a_misspelt_key_in_a_config_file_gets_the_closest_setting(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gate.toml"
    config.write_text('partitons = 4\n[corrector]\nmodle = "m"\n')
    with pytest.raises(ConfigError) as refused:
        load_settings(config)
    said = str(refused.value)
    assert "partitons names no setting (did you mean partitions?)" in said
    assert "corrector.modle names no setting (did you mean model?)" in said
    assert "Extra inputs" not in said


def test_every_relative_path_in_a_config_file_is_read_beside_it(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    config = folder / "gate.yaml"
    config.write_text(
        "workspaces_root: ws\nmedia_root: /srv/media\ndata_dir: data\n"
        "kafka_security: {ssl_cafile: tls/ca.pem}\n"
        "schema_contracts: [{name: acme.t.v1, schema: t.json}]\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    clean_env.chdir(elsewhere)
    settings = load_settings(config)
    here = folder.resolve()
    assert settings.workspaces_root == here / "ws"
    assert settings.media_root == Path("/srv/media")
    assert settings.data_dir == here / "data"
    assert settings.kafka_security.ssl_cafile == here / "tls/ca.pem"
    assert settings.schema_contracts[0].schema_file == here / "t.json"
    # from the environment a path stays as given (the working directory's)
    clean_env.setenv("REPLYGATE_WORKSPACES_ROOT", "ws2")
    assert load_settings(config).workspaces_root == Path("ws2")


def test_the_010_key_form_is_judged_and_counted_only_when_accepted(tmp_path: Path) -> None:
    quoted = b'"c-7"'
    refused = Harness(tmp_path)
    (send,) = refused.run([(refused.source("replies_raw", 1, key=quoted), raw_reply())]).sends
    assert isinstance(send.decision.output, DeadLetter)
    assert send.decision.output.reason == "wrong_key"
    accepted = Harness(tmp_path, accept_quoted_keys=True)
    result = accepted.run([(accepted.source("replies_raw", 1, key=quoted), raw_reply())])
    assert [s.decision.action for s in result.sends] == ["deliver"]
    assert result.quoted_keys == 1
    # any other wrong key is still a dead letter
    other = accepted.run([(accepted.source("replies_raw", 2, key=b"t-42"), raw_reply())])
    assert other.sends[0].decision.output.reason == "wrong_key"  # type: ignore[union-attr]
    assert other.quoted_keys == 0


def test_format_is_asserted_only_where_the_entry_turns_it_on(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    from schemas.contract import ReplyInput
    from schemas.schema_contract import SchemaContract
    from streams.settings.contracts import build_registry

    schema = '{"type": "object", "properties": {"to": {"type": "string", "format": "email"}}}'
    (tmp_path / "mail.json").write_text(schema)
    config = tmp_path / "gate.toml"
    config.write_text(
        '[[schema_contracts]]\nname = "acme.loose.v1"\nschema = "mail.json"\n'
        '[[schema_contracts]]\nname = "acme.strict.v1"\nschema = "mail.json"\n'
        "assert_formats = true\n"
    )
    registry = build_registry(load_settings(config))
    reply = ReplyInput("tool", arguments={"to": "not an address"})
    loose, strict = registry["acme.loose.v1"], registry["acme.strict.v1"]
    assert isinstance(loose, SchemaContract) and isinstance(strict, SchemaContract)
    assert loose.validate(reply).issues == ()
    (issue,) = strict.validate(reply).issues
    assert (issue.path, issue.code) == ("to", "schema.format")


def test_records_judged_in_the_010_key_form_are_counted_in_a_metric() -> None:
    from streams.ops.metrics import Metrics
    from streams.settings import Settings

    metrics = Metrics.from_settings(Settings())
    metrics.quoted_keys(2)
    assert "replygate_quoted_keys_accepted_total 2.0" in metrics.exposition()
