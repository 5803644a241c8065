"""The ACL list: derived from the topology, printed by `replygate acls`, the table in the docs.

The broker side (each part running with only these ACLs, and the denials) is
tests/worker/test_kafka_acls.py.
"""

from __future__ import annotations

import io
import shlex

import pytest

from streams.broker.acl_docs import main, rewritten
from streams.broker.acls import Part, Pattern, Resource, acls
from streams.broker.topology import Topology
from streams.cli.main import _build_parser
from streams.settings import Settings


def run(*argv: str) -> tuple[int, str]:
    from streams.cli.acls import COMMAND
    from streams.cli.main import run as run_command

    out = io.BytesIO()
    args = _build_parser().parse_args(["acls", *argv])
    return run_command(COMMAND, args, out), out.getvalue().decode()


def topology(**changes: object) -> Topology:
    return Topology.of(Settings(topic_prefix="p.", app_id="p-gate", **changes))  # type: ignore[arg-type]


def test_the_table_in_the_docs_is_the_generated_one() -> None:
    assert main(["--check"]) == 0, (
        "docs/security.md is out of date: python -m streams.broker.acl_docs"
    )


def test_a_changed_list_makes_the_docs_check_fail() -> None:
    from streams.broker.acl_docs import BEGIN, END

    stale = f"intro\n{BEGIN}\n| old |\n{END}\nafter\n"
    fresh = rewritten(stale, Settings())
    assert fresh != stale and "| old |" not in fresh
    assert fresh.startswith("intro\n") and fresh.endswith("after\n")
    assert "| `worker` | Group | `replygate` | LITERAL | Read |" in fresh


def names(part: Part, top: Topology) -> set[tuple[Resource, str, Pattern]]:
    return {(a.resource, a.name, a.pattern) for a in acls(part, top)}


def test_every_topic_of_the_topology_is_granted_to_a_part_that_uses_it() -> None:
    top = topology()
    worker = acls(Part.WORKER, top)

    def worker_may(operation: str, topic: str) -> bool:
        return any(
            operation in a.operations
            and a.resource is Resource.TOPIC
            and (topic == a.name if a.pattern is Pattern.LITERAL else topic.startswith(a.name))
            for a in worker
        )

    for topic in top.inputs():
        assert worker_may("Read", topic.name), topic.name
    for topic in (*top.outputs(), top.deadlines, top.changelog):
        assert worker_may("Write", topic.name), topic.name
    assert worker_may("Read", top.deadlines.name) and worker_may("Read", top.changelog.name)
    # nothing beyond the deployment's two namespaces, and no write to its own inputs
    topics = [a for a in worker if a.resource is Resource.TOPIC]
    assert all(a.name.startswith(top.namespaces()) for a in topics)
    assert {a.name for a in worker if a.resource is Resource.GROUP} == {"p-gate"}
    assert not any(worker_may("Write", t.name) for t in top.inputs())
    assert set(top.for_creation()) == {a.name for a in acls(Part.TOPICS, top)}


def test_each_part_gets_only_its_own() -> None:
    top = topology()
    assert names(Part.AGENT, top) == {
        (Resource.TOPIC, t.name, Pattern.LITERAL) for t in top.inputs()
    }
    assert all(a.operations == ("Write",) for a in acls(Part.AGENT, top))
    assert names(Part.ENDPOINT, top) == {
        (Resource.TOPIC, "p.delivery.im", Pattern.LITERAL),
        (Resource.GROUP, "replygate-endpoint-im", Pattern.LITERAL),
    }
    assert {a.operations for a in acls(Part.ENDPOINT, top)} == {("Read",)}
    assert names(Part.CORRECTOR, top) == {
        (Resource.TOPIC, "p.corrections.requests", Pattern.LITERAL),
        (Resource.TOPIC, "p.replies.raw", Pattern.LITERAL),
    }


def test_closed_platforms_grant_each_delivery_topic_not_the_prefix() -> None:
    open_ = names(Part.WORKER, topology())
    closed = names(Part.WORKER, topology(closed_platforms=True, platforms=["im", "ide"]))
    assert (Resource.TOPIC, "p.delivery.", Pattern.PREFIXED) in open_
    assert (Resource.TOPIC, "p.delivery.", Pattern.PREFIXED) not in closed
    assert {(Resource.TOPIC, f"p.delivery.{p}", Pattern.LITERAL) for p in ("im", "ide")} <= closed


def test_replygate_acls_prints_kafka_acls_commands_for_the_prefix_and_app_id() -> None:
    code, out = run(
        "worker", "--prefix", "prod.", "--app-id", "prod-gate", "--bootstrap-server", "k:9093",
        "--command-config", "admin props.properties",
    )  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("# worker: ")
    commands = [shlex.split(line) for line in lines[1:]]
    assert commands and all(
        c[:3] == ["kafka-acls.sh", "--bootstrap-server", "k:9093"] for c in commands
    )
    assert all(c[3:5] == ["--command-config", "admin props.properties"] for c in commands)
    assert all(
        "--add" in c and c[c.index("--allow-principal") + 1] == "User:replygate-worker"
        for c in commands
    )
    granted = {
        (
            c[c.index("--resource-pattern-type") + 1],
            tuple(w for i, w in enumerate(c) if c[i - 1] == "--operation"),
            w,
        )
        for c in commands
        for i, w in enumerate(c)
        if c[i - 1] in ("--topic", "--group")
    }
    assert ("literal", ("Read",), "prod.replies.raw") in granted
    assert ("literal", ("Read",), "prod-gate") in granted
    assert ("prefixed", ("Read", "Write", "Create"), "prod-gate-") in granted
    assert ("prefixed", ("Write", "Create"), "prod.delivery.") in granted


def test_the_corrector_is_granted_to_the_workers_principal() -> None:
    code, out = run("corrector", "--prefix", "x.")
    assert code == 0
    assert all("--allow-principal User:replygate-worker " in line for line in out.splitlines()[1:])
    code, out = run("endpoint", "--platform", "ide", "--principal", "User:reader-ide")
    assert code == 0
    assert "--topic delivery.ide" in out and "--group replygate-endpoint-ide" in out
    assert "User:reader-ide" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["worker", "--principal", "gate"], "--principal must look like User:NAME"),
        (["endpoint", "--platform", "Bad Name"], "is not a platform name"),
        (["worker", "--prefix", "p.", "--app-id", ""], "an empty app id"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run(*argv)
    err = capsys.readouterr().err
    assert code == 2 and out == ""
    assert err.startswith("replygate acls: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_the_command_line_offers_every_part() -> None:
    from streams.cli.acls import PARTS

    assert tuple(part.value for part in Part) == PARTS
