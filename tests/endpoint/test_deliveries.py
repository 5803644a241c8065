"""`replygate deliveries` without a broker: the id store, re-validation, hand-off and arguments."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from replygate_dev.demo import SAMPLES_DIR, free_port

from schemas.delivered import check_delivery, message_issues
from schemas.registry import CONTRACTS
from streams.cli.check_session import CheckSession
from streams.cli.deliveries import is_webhook_url
from streams.cli.main import main
from streams.endpoint.dedup import PRUNE_BATCH, SeenIds, StateFileError
from streams.endpoint.deliveries import Endpoint, default_group, judge
from streams.settings import Settings
from tests.support.deliveries import SECRET, delivery, invalid_delivery
from tests.support.gates import disk_gate
from tests.support.kafka import REPO


class Clock:
    """A settable clock for the horizon."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Taken:
    """A hand-off that keeps what it is given."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, bytes]] = []

    async def __call__(self, delivery_id: str, line: bytes) -> None:
        self.lines.append((delivery_id, line))


def endpoint(tmp_path: Path, hand_off: Any = None, **settings: Any) -> Endpoint:
    seen = SeenIds(tmp_path / "seen.sqlite", 7 * 86400.0)
    return Endpoint(Settings(**settings), "im", seen, hand_off or Taken(), CONTRACTS)


# ---- the id store ----------------------------------------------------------------------------


def test_an_id_handed_on_is_a_repeat_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "seen.sqlite"
    seen = SeenIds(path, 3600)
    with seen.once("t-1") as new:
        assert new
    with seen.once("t-1") as new:
        assert not new
    seen.close()
    again = SeenIds(path, 3600)
    with again.once("t-1") as new:
        assert not new
    with again.once("t-2") as new:
        assert new
    assert len(again) == 2


def test_a_hand_off_that_fails_records_nothing(tmp_path: Path) -> None:
    """An exception (or a kill) inside the step leaves the id unrecorded: handed on later."""
    seen = SeenIds(tmp_path / "seen.sqlite", 3600)
    with pytest.raises(RuntimeError), seen.once("t-1") as new:
        assert new
        raise RuntimeError("the webhook is down")
    assert "t-1" not in seen
    with seen.once("t-1") as new:
        assert new


def test_ids_past_the_horizon_are_pruned_oldest_first_and_bounded(tmp_path: Path) -> None:
    clock = Clock()
    seen = SeenIds(tmp_path / "seen.sqlite", 100.0, clock)
    for index in range(PRUNE_BATCH + 5):
        with seen.once(f"old-{index}"):
            pass
        clock.now += 0.001
    clock.now += 50
    with seen.once("young"):
        pass
    clock.now += 60  # the old ones are 110 s old, the young one 60 s
    assert seen.prune() == PRUNE_BATCH
    assert seen.prune() == 5
    assert seen.prune() == 0
    assert "young" in seen and "old-0" not in seen and len(seen) == 1
    with seen.once("old-0") as new:
        assert new  # forgotten: past the horizon a repeat is handed on again


def test_a_state_file_that_is_not_a_replygate_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "seen.sqlite"
    path.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(StateFileError, match=str(path)):
        SeenIds(path, 3600)
    for setup, says in (
        ("PRAGMA user_version=99", "schema version 99"),
        ("CREATE TABLE users (name TEXT)", "another application's SQLite database"),
    ):
        other = tmp_path / f"other-{len(says)}.sqlite"
        db = sqlite3.connect(other)
        db.execute(setup)
        db.close()
        with pytest.raises(StateFileError, match=says):
            SeenIds(other, 3600)
        db = sqlite3.connect(other)  # left as it was: no table of ours, no version set
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert "seen" not in tables
        db.close()


# ---- re-validation ---------------------------------------------------------------------------


def test_every_delivery_the_gate_makes_of_the_samples_validates_again() -> None:
    gate = disk_gate(
        Settings(media_root=SAMPLES_DIR / "media", workspaces_root=SAMPLES_DIR / "workspaces")
    )
    contracts = set()
    for number, line in enumerate((SAMPLES_DIR / "demo.jsonl").read_bytes().splitlines()):
        record = orjson.loads(line).get("record")
        if record is None:
            continue
        output = (
            CheckSession(gate)
            .line(orjson.dumps(record), number, datetime.now(UTC))
            .line()["output"]
        )
        if output is not None and "delivery_id" in output:
            assert check_delivery(output, CONTRACTS, output["platform"]).valid, output
            contracts.add(output["contract"])
    assert {"im.segments.v1", "assistant.html.v1"} <= contracts


def test_failure_notices_of_every_contract_validate_again() -> None:
    for contract in CONTRACTS.values():
        assert message_issues(contract, contract.notice_message("Sorry <b>&</b>")) == ()


@pytest.mark.parametrize(
    ("value", "code"),
    [
        (b"not json", "not_json"),
        (None, "not_json"),
        (b'{"n": 123456789012345678901234567890}', "integer_out_of_range"),
        (orjson.dumps(delivery("t-1", extra=1)), "unknown_field"),
        (orjson.dumps(delivery("t-1", platform="ide")), "unknown_platform"),
        (orjson.dumps(delivery("t-1", contract="nope.v1")), "unknown_contract"),
        (orjson.dumps(delivery("t-1", message={"segments": []})), "invalid_value"),
        (
            orjson.dumps(delivery("t-1", message={"segments": [{"type": "x", "data": {}}]})),
            "unknown_segment_type",
        ),
        (orjson.dumps(delivery("t-1", text="x" * 9000)), "record_too_large"),
        (orjson.dumps(delivery("t-1", preview="two\nlines")), "invalid_value"),
        (
            orjson.dumps(delivery("t-1/progress/0", kind="progress", message={"text": " "})),
            "too_short",
        ),
        (
            orjson.dumps(delivery("t-1/progress/0", kind="progress", message={"text": "a\x00"})),
            "control_character",
        ),
        (
            orjson.dumps(delivery("t-1/progress/0", kind="progress", message={"text": "x" * 4001})),
            "too_long",
        ),
        (
            orjson.dumps(
                delivery("t-1/progress/0", kind="progress", message={"text": "a", "b": 1})
            ),
            "unknown_field",
        ),
        (
            orjson.dumps(delivery("t-1", contract="text.plain.v1", message={"text": "a\x07"})),
            "control_character",
        ),
    ],
)
def test_what_is_not_a_valid_delivery_for_this_platform(value: bytes | None, code: str) -> None:
    checked, _ = judge(value, CONTRACTS, "im", max_bytes=8192)
    assert not checked.valid
    assert checked.issues[0].code == code


@pytest.mark.parametrize(
    "record",
    [
        delivery("t-1/progress/3", kind="progress", message={"text": "Searching the docs…"}),
        delivery("t-1", contract="text.plain.v1", message={"text": "a literal @name\tand **x**"}),
        delivery("t-1", kind="failure_notice"),
    ],
)
def test_progress_plain_text_and_notices_are_valid_deliveries(record: dict[str, Any]) -> None:
    checked, decoded = judge(orjson.dumps(record), CONTRACTS, "im", max_bytes=1 << 20)
    assert checked.issues == () and checked.valid and decoded == record


def test_an_html_message_that_is_not_what_the_contract_delivers_is_refused() -> None:
    message = {
        "html": '<p><b class="info-source" id="doc://docid-1">x</b></p>',
        "citations": [],
        "rag_fragments_used": [],
    }
    html = CONTRACTS["assistant.html.v1"]
    assert [i.code for i in message_issues(html, message)] == ["invalid_value"]
    assert message_issues(html, {**message, "citations": ["doc://docid-1"]}) == ()


# ---- the endpoint, one record at a time ------------------------------------------------------


async def test_an_invalid_delivery_is_counted_logged_masked_and_not_handed_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    taken = Taken()
    reader = endpoint(tmp_path, taken)
    caplog.set_level(logging.WARNING, "replygate.deliveries")
    await reader.handle(orjson.dumps(invalid_delivery("t-bad")), "delivery.im[0]@7")
    await reader.handle(orjson.dumps(delivery("t-ok")), "delivery.im[0]@8")
    await reader.handle(orjson.dumps(delivery("t-ok")), "delivery.im[0]@9")
    assert [i for i, _ in taken.lines] == ["t-ok"]
    assert orjson.loads(taken.lines[0][1]) == delivery("t-ok")
    assert (reader.counts.handed_on, reader.counts.repeats, reader.counts.invalid) == (1, 1, 1)
    assert "t-bad" not in reader.seen
    logged = caplog.text
    assert "delivery.im[0]@7" in logged and "invalid_uri" in logged
    assert "[REDACTED:github-pat]" in logged and SECRET not in logged


async def test_a_repeat_is_dropped_even_when_it_differs_after_the_id(tmp_path: Path) -> None:
    taken = Taken()
    reader = endpoint(tmp_path, taken)
    await reader.handle(orjson.dumps(delivery("t-1", text="first")), "p@0")
    await reader.handle(orjson.dumps(delivery("t-1", text="second")), "p@1")
    assert len(taken.lines) == 1 and b"first" in taken.lines[0][1]


def test_the_default_group_names_the_platform() -> None:
    assert default_group("im") == "replygate-endpoint-im"


# ---- the command's arguments and its broker --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["Bad!"], "PLATFORM"),
        (["im", "--webhook", "ftp://example.com/hook"], "--webhook"),
        (["im", "--webhook", "not a url"], "--webhook"),
        (["im", "--webhook", "http://127.0.0.1:99999/hook"], "valid port"),
        (["im", "--config", "{tmp}/broken.toml"], "broken.toml is not valid TOML"),
        (["im", "--config", "{tmp}/broken.yaml"], "broken.yaml is not valid YAML"),
        (["im", "--group", ""], "--group"),
        (["im", "--state", "{tmp}"], "is a directory"),
        (["im", "--state", "{tmp}/missing/seen.sqlite"], "does not exist"),
        (["im", "--state", "{tmp}/junk"], "--state"),
        (["im", "--config", "{tmp}/missing.toml"], "settings"),
        (["im", "--config", "{tmp}/bad.toml"], "endpoint.horizon_seconds"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    (tmp_path / "junk").write_bytes(b"junk" * 1000)
    (tmp_path / "bad.toml").write_text("[endpoint]\nhorizon_seconds = 0\n")
    (tmp_path / "broken.toml").write_text("a = [\n")
    (tmp_path / "broken.yaml").write_text("a: [\n")
    argv = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    code = main(
        ["deliveries", *argv, *([] if "--state" in argv else ["--state", str(tmp_path / "s")])]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and says in err, err


@pytest.mark.parametrize(
    ("url", "taken"),
    [
        ("http://bot_internal:8080/hook", True),  # a compose service name (RFC 3986 allows _)
        ("https://hooks.example.com/x?token=abc", True),
        ("http://[::1]:8080/hook", True),
        ("http://127.0.0.1:99999/hook", False),  # no such port: httpx would fail at the first post
        ("http://127.0.0.1:port/hook", False),
        ("http:///hook", False),
        ("http://host/a b", False),
    ],
)
def test_webhook_urls_are_judged_as_an_http_client_takes_them(url: str, taken: bool) -> None:
    assert is_webhook_url(url) is taken


def test_a_missing_platform_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["deliveries"])
    assert exit_.value.code == 2
    assert "platform" in capsys.readouterr().err


def test_an_unreachable_broker_exits_1_naming_the_broker_and_the_group(tmp_path: Path) -> None:
    broker = f"127.0.0.1:{free_port()}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "streams.cli",
            "deliveries",
            "im",
            "--group",
            "g-endpoint",
            "--state",
            str(tmp_path / "seen.sqlite"),
        ],
        cwd=REPO,
        env={
            "PATH": "/usr/bin:/bin",
            "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": broker,
            "REPLYGATE_ENDPOINT__CONNECT_TIMEOUT_SECONDS": "5",
        },
        capture_output=True,
        timeout=60,
        check=False,
    )
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert done.stdout == b""
    assert broker in err and "'g-endpoint'" in err and "client 'g-endpoint@" in err
    assert err.count("\n") == 1, err


def test_the_contracts_import_without_faust_kafka_or_the_worker() -> None:
    """An endpoint can install and import `schemas` alone."""
    script = """
import sys
from importlib.abc import MetaPathFinder
BLOCKED = ("faust", "aiokafka", "kafka", "mode", "rocksdict", "streams", "prometheus_client",
           "httpx", "pydantic_settings")
class Block(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked: {name}")
        return None
sys.meta_path.insert(0, Block())
import pkgutil, importlib, schemas
for info in pkgutil.iter_modules(schemas.__path__):
    importlib.import_module(f"schemas.{info.name}")
from schemas.delivered import check_delivery
from schemas.registry import CONTRACTS
print(sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.strip() == b"[]"
