"""The command line behaves for a newcomer (docs/cli.md): --version, its own help on every
command with no side effect, one error prefix, unknown variables refused, errors to act on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from streams.cli.check import summary_lines
from streams.cli.main import _build_parser, commands, parse
from streams.cli.worker import faust_argv
from tests.support.samples import encode, html_reply, raw_reply

REPO = Path(__file__).resolve().parents[2]
COMMANDS = sorted(commands())


def replygate(
    *args: str, stdin: bytes = b"", cwd: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The command as a subprocess; `env` is added to a clean environment (no REPLYGATE_*)."""
    base = {k: v for k, v in os.environ.items() if not k.upper().startswith("REPLYGATE_")}
    base["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", *args],
        input=stdin,
        capture_output=True,
        cwd=cwd,
        env={**base, **(env or {})},
        timeout=60,  # a worker started by `-h` would run until this kills the test
        check=False,
    )


def test_version_prints_the_installed_version() -> None:
    from importlib.metadata import version

    done = replygate("--version")
    assert done.returncode == 0
    assert done.stdout.decode().strip() == f"replygate {version('replygate')}"


def test_no_command_prints_the_usage_and_exits_2() -> None:
    done = replygate()
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.startswith("usage: replygate") and all(name in err for name in COMMANDS)


@pytest.mark.parametrize("flag", ["-h", "--help"])
@pytest.mark.parametrize("command", COMMANDS)
def test_help_on_every_command_is_replygates_own_and_does_nothing(
    tmp_path: Path, command: str, flag: str
) -> None:
    """`worker -h` used to start a worker (Faust's `-h` is --web-host) and `deliveries`
    created its SQLite file: help exits 0 and leaves the directory as it was."""
    done = replygate(
        command, flag, cwd=tmp_path, env={"REPLYGATE_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    )
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode()
    assert out.startswith(f"usage: replygate {command}")
    for part in ("settings that matter:", "exit status:", "example:"):
        assert part in out, part
    assert "faust" not in out.split("example:")[1].lower() or command == "worker"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command", [["check", "-"], ["schema", "im.segments.v1"], ["topics"], ["deliveries", "im"]]
)
def test_every_error_line_starts_with_the_command(tmp_path: Path, command: list[str]) -> None:
    done = replygate(*command, "--config", str(tmp_path / "missing.toml"), cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith(f"replygate {command[0]}: error: settings: config file ")


def test_a_misspelt_variable_is_refused_with_the_closest_setting(tmp_path: Path) -> None:
    done = replygate("check", "-", env={"REPLYGATE_PARTITONS": "4"})
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "replygate check: error: settings: environment variable REPLYGATE_PARTITONS names no "
        "setting (did you mean REPLYGATE_PARTITIONS?)\n"
    )
    nested = replygate("check", "-", env={"REPLYGATE_CORRECTOR__MODLE": "x"})
    assert "did you mean REPLYGATE_CORRECTOR__MODEL?" in nested.stderr.decode()


def test_a_list_setting_takes_comma_separated_values() -> None:
    lines = b"\n".join(
        encode(raw_reply(turn_id=f"t-{platform}", platform=platform))
        for platform in ("im", "web", "ide")
    )
    env = {"REPLYGATE_PLATFORMS": "im, web", "REPLYGATE_CLOSED_PLATFORMS": "true"}
    done = replygate("check", "-", stdin=lines + b"\n", env=env)
    assert done.returncode == 0, done.stderr.decode()
    verdicts = [orjson.loads(line)["verdict"] for line in done.stdout.splitlines()]
    assert verdicts == ["accepted", "accepted", "dead_letter"]
    as_json = replygate("check", "-", stdin=lines, env={**env, "REPLYGATE_PLATFORMS": '["ide"]'})
    assert [orjson.loads(x)["verdict"] for x in as_json.stdout.splitlines()][-1] == "accepted"


STRICT_CASES = [
    ([raw_reply()], 0),
    ([raw_reply(output={"text": '{"segments": []}'})], 0),  # no_reply passes
    ([raw_reply(), raw_reply(turn_id="t-2", output={"text": "prose"})], 1),
    ([{"neither": True}], 1),
]


@pytest.mark.parametrize(("records", "status"), STRICT_CASES)
def test_strict_fails_a_line_that_is_not_accepted(records: list[object], status: int) -> None:
    lines = b"\n".join(encode(r) for r in records) + b"\n"
    assert replygate("check", "-", stdin=lines).returncode == 0
    assert replygate("check", "--strict", "-", stdin=lines).returncode == status


def test_summary_counts_verdicts_and_codes_on_stderr() -> None:
    records = [raw_reply(), raw_reply(turn_id="t-2", output={"text": "prose"}), {"x": 1}]
    done = replygate("check", "--summary", "-", stdin=b"\n".join(encode(r) for r in records))
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 3
    assert done.stderr.decode().splitlines() == [
        "replygate check: 3 lines: accepted 1, rejected 1, no_reply 0, dead_letter 1",
        "replygate check: codes: not_json 1, unknown_record 1",
    ]


def test_summary_lines_rank_codes_by_count() -> None:
    from collections import Counter

    lines = summary_lines(Counter(accepted=2), Counter(b=1, a=1, c=3))
    assert lines == [
        "2 lines: accepted 2, rejected 0, no_reply 0, dead_letter 0",
        "codes: c 3, a 1, b 1",
    ]


def test_a_turn_control_line_is_checked_as_one() -> None:
    cancel = {"turn_id": "t-42", "conversation_id": "c-7", "action": "cancel"}
    pause = {**cancel, "action": "pause"}
    done = replygate("check", "-", stdin=encode(cancel) + b"\n" + encode(pause) + b"\n")
    first, second = (orjson.loads(line) for line in done.stdout.splitlines())
    assert first == {
        "id": "t-42",
        "verdict": "no_reply",
        "action": "none",
        "errors": [],
        "output": None,
    }
    assert second["verdict"] == "dead_letter"
    assert second["output"]["source_topic"] == "turns.control"
    assert [e["path"] for e in second["errors"]] == ["action"]


def test_a_binary_file_is_said_to_be_not_utf8_text(tmp_path: Path) -> None:
    image = tmp_path / "cat.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    done = replygate("check", str(image))
    assert done.returncode == 2 and done.stdout == b""
    assert done.stderr.decode() == (
        f"replygate check: error: {image} is not UTF-8 text (a binary file?): nothing was checked\n"
    )


def test_a_javascript_href_is_told_its_scheme_is_not_allowed() -> None:
    link = '<a class="http-source" target="_blank" href="javascript:alert(1)">x</a>'
    answer = f"```html\n<p>{link}</p>\n```"
    done = replygate("check", "-", stdin=encode(html_reply(output={"text": answer})))
    (line,) = (orjson.loads(x) for x in done.stdout.splitlines())
    (error,) = line["errors"]
    assert error["code"] == "invalid_uri"
    assert "has the scheme 'javascript', which is not allowed" in error["message"]


def test_an_unknown_contract_lists_the_known_ones() -> None:
    schema = replygate("schema", "im.segmnts.v1")
    assert schema.returncode == 2
    said = schema.stderr.decode()
    assert said.startswith("replygate schema: error: unknown contract 'im.segmnts.v1'; known: ")
    assert "im.segments.v1" in said and "text.plain.v1" in said
    done = replygate("check", "-", stdin=encode(raw_reply(contract="im.segmnts.v1")))
    (error,) = orjson.loads(done.stdout)["errors"]
    assert error["code"] == "unknown_contract" and "known: assistant.html.v1" in error["message"]


def test_the_worker_passes_other_options_on_to_faust() -> None:
    table = commands()
    args = parse(_build_parser(table), table, ["worker", "-l", "debug", "--config", "g.toml"])
    assert (str(args.config), args.passed_on) == ("g.toml", ["-l", "debug"])
    assert faust_argv(args.passed_on, "info") == ["-l", "debug", "--without-web"]
    assert faust_argv(["--with-web"], "warn") == ["--with-web", "--loglevel", "warn"]


def test_another_command_refuses_an_unknown_option() -> None:
    table = commands()
    with pytest.raises(SystemExit) as refused:
        parse(_build_parser(table), table, ["check", "-l", "debug"])
    assert refused.value.code == 2


NO_EXTRAS = """
import sys
from importlib.abc import MetaPathFinder
BLOCKED = ("faust", "mode", "aiokafka", "kafka", "httpx", "prometheus_client", "rocksdict", "rich")
class Block(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"blocked: {name}")
        return None
sys.meta_path.insert(0, Block())
from streams.cli.main import main
status = main(sys.argv[1:])
print(sorted({m.split(".")[0] for m in sys.modules} & set(BLOCKED)), file=sys.stderr)
sys.exit(status)
"""


def without_extras(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """The command with the modules of every extra made unimportable (the fast twin of
    tests/deploy/test_core_install.py, which installs the core distribution for real)."""
    return subprocess.run(
        [sys.executable, "-c", NO_EXTRAS, *args],
        input=stdin,
        capture_output=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )


def test_check_and_schema_need_no_extra() -> None:
    done = without_extras("check", "-", stdin=encode(raw_reply()))
    assert done.returncode == 0, done.stderr.decode()
    assert orjson.loads(done.stdout)["verdict"] == "accepted"
    assert done.stderr.decode().splitlines()[-1] == "[]"
    assert without_extras("schema", "text.plain.v1").returncode == 0


@pytest.mark.parametrize(
    ("command", "extra"),
    [(["worker"], "worker"), (["topics"], "endpoint"), (["deliveries", "im"], "endpoint")],
)
def test_a_command_without_its_extra_names_it(command: list[str], extra: str) -> None:
    done = without_extras(*command)
    assert done.returncode == 2
    first = done.stderr.decode().splitlines()[0]
    # the checkout this copy runs from: no package index serves replygate
    assert first == (
        f"replygate {command[0]}: error: this command needs the {extra} extra: "
        f"pip install '{REPO}[{extra}]'"
    )
