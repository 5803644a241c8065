"""The one topology (streams/broker/topology.py): names, roles, keys and configs of every topic,
and that nothing outside it builds a topic name."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from streams.broker.topology import INPUT_CONFIG, Key, Role, Topology, changelog_config
from streams.settings import Settings, TopicNames

REPO = Path(__file__).resolve().parents[2]


def test_default_names_are_those_of_docs_records_md() -> None:
    topology = Topology.of(Settings())
    names = {t.logical: t.name for t in topology.all()}
    assert names == {
        "replies_raw": "replies.raw",
        "turns_control": "turns.control",
        "toolcalls_raw": "toolcalls.raw",
        "deadlines": "replygate-deadlines",
        "corrections": "corrections.requests",
        "toolresults": "toolresults.kandev",
        "dlq": "replies.dlq",
        "delivery.im": "delivery.im",
        "delivery.ide": "delivery.ide",
        "delivery.assistant": "delivery.assistant",
        "changelog": "replygate-turns-changelog",
        "policy": "replygate-policy",
        "policy_status": "replygate-policy-status",
        "audit": "replygate-audit",
    }


def test_the_prefix_goes_before_named_topics_and_the_app_id_names_internal_ones() -> None:
    settings = Settings(topic_prefix="prod.", app_id="gate-a", platforms=["im"])
    topology = Topology.of(settings)
    assert topology.replies.name == "prod.replies.raw"
    assert topology.delivery("im").name == "prod.delivery.im"
    assert topology.deadlines.name == "gate-a-deadlines"
    assert topology.changelog.name == "gate-a-turns-changelog"
    assert topology.namespaces() == ("prod.", "gate-a-")
    assert all(t.name.startswith(topology.namespaces()) for t in topology.all())
    assert topology.plain_name(topology.dlq) == "replies.dlq"
    assert topology.policy.name == "prod.replygate-policy"
    assert topology.audit.name == "prod.replygate-audit"


def test_renamed_topics_are_followed_everywhere() -> None:
    settings = Settings(topics=TopicNames(replies_raw="in.replies", delivery_prefix="out."))
    topology = Topology.of(settings)
    assert topology.named("replies_raw").name == "in.replies"
    assert topology.named("delivery.im").name == "out.im"
    assert "in.replies" in topology.for_creation()


def test_roles_and_keys() -> None:
    topology = Topology.of(Settings())
    assert [t.role for t in topology.inputs()] == [Role.INPUT] * 3
    assert topology.gate_inputs() == (*topology.inputs(), topology.deadlines)
    assert topology.toolcalls.key is Key.TASK and topology.toolresults.key is Key.TASK
    assert topology.replies.key is Key.CONVERSATION
    assert topology.dlq.role is Role.DEAD_LETTER and topology.dlq.key is Key.ORIGINAL
    assert topology.corrections.role is Role.CORRECTION_REQUEST
    assert {t.role for t in topology.deliveries()} == {Role.DELIVERY}


def test_configs_inputs_on_broker_time_outputs_bounded_changelog_compacted() -> None:
    settings = Settings(max_output_bytes=2 * 1024 * 1024)
    topology = Topology.of(settings)
    for topic in topology.gate_inputs():
        assert topic.config == INPUT_CONFIG
    for topic in topology.outputs():
        assert topic.config == {"max.message.bytes": str(2 * 1024 * 1024)}
    assert topology.changelog.config == changelog_config(settings)
    assert topology.changelog.config["cleanup.policy"] == "compact,delete"


def test_the_policy_topics_are_compacted_on_one_partition_the_audit_is_an_output() -> None:
    topology = Topology.of(Settings(partitions=6))
    for topic in (topology.policy, topology.policy_status):
        assert topic.partitions == 1
        assert topic.config["cleanup.policy"] == "compact"
    assert int(topology.policy.config["max.message.bytes"]) > 4 * 1024 * 1024
    assert topology.audit.partitions is None  # the deployment's count
    assert topology.audit.config == topology.output_config
    assert topology.audit.key is Key.CONVERSATION
    assert {t.name for t in topology.policy_topics()} <= {t.name for t in topology.all()}


def test_for_creation_is_everything_but_fausts_changelog() -> None:
    topology = Topology.of(Settings(platforms=["im", "web"]))
    created = topology.for_creation()
    assert topology.changelog.name not in created
    assert set(created) == {t.name for t in topology.all()} - {topology.changelog.name}
    assert created["delivery.web"] == topology.output_config


def test_a_platform_not_configured_ahead_is_an_output_with_the_output_config() -> None:
    topology = Topology.of(Settings(platforms=["im"]))
    assert topology.output("delivery.new").config == topology.output_config
    assert topology.output("delivery.new").role is Role.DELIVERY
    assert topology.output("replies.dlq") == topology.dlq
    assert topology.delivery("new").name == "delivery.new"


def test_metric_topics_are_the_inputs_and_outputs() -> None:
    topology = Topology.of(Settings())
    assert set(topology.metric_topics()) == {
        t.name for t in (*topology.inputs(), *topology.outputs())
    }
    assert topology.deadlines.name not in topology.metric_topics()


def test_an_unknown_logical_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        Topology.of(Settings()).named("nope")


# ---- nothing else builds topic names ---------------------------------------------------------

# Where a topic name may be built: the settings' configured names, the core's deadline topic
# name (the core cannot import the topology) and the topology itself.
NAME_BUILDERS = {"streams/settings/model.py", "streams/broker/topology.py"}
# The core and the settings take names from `Settings`; the core may not import the broker.
MAY_ASK_SETTINGS = ("streams/core/", "streams/settings/model.py", "streams/broker/topology.py")
PREFIXES = {"topic_prefix", "delivery_prefix"}
DEFAULT_NAMES = set(TopicNames().model_dump().values()) - {"delivery."}


def _name_of(node: ast.expr) -> str:
    """The last name of `a.b.c`, `a.b()`, `a`: what a value is called."""
    while isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _docstrings(tree: ast.AST) -> set[int]:
    nodes = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, nodes)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }


def _builds_a_name(parts: list[ast.expr]) -> bool:
    """A prefix joined to a name, or an app id joined to `-<name>`."""
    for before, after in itertools.pairwise(parts):
        value = before.value if isinstance(before, ast.FormattedValue) else before
        text = after.value if isinstance(after, ast.Constant) else None
        if not isinstance(text, str):
            continue
        if _name_of(value) in PREFIXES and text[:1].isalnum():
            return True
        if _name_of(value) == "app_id" and text.startswith("-"):
            return True
    return False


def _built(node: ast.AST, docs: set[int]) -> str | None:
    """How `node` builds or writes out a topic name, if it does."""
    if isinstance(node, ast.JoinedStr) and _builds_a_name(node.values):
        return "builds a topic name in an f-string"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        pair = [node.left, node.right]
        return (
            "joins a topic prefix"
            if _builds_a_name(pair) or _name_of(node.left) in PREFIXES
            else None
        )
    if isinstance(node, ast.Constant) and node.value in DEFAULT_NAMES and id(node) not in docs:
        return f"writes the topic name {node.value!r}"
    return None


def _asked(node: ast.AST) -> str | None:
    """How `node` takes a topic name from the settings or the core, if it does."""
    func = node.func if isinstance(node, ast.Call) else None
    if (
        isinstance(func, ast.Attribute)
        and func.attr in ("topic", "delivery_topic", "deadline_topic")
        and "settings" in _name_of(func.value)
    ):
        return "asks the settings for a topic name"
    return None


def topic_naming(path: Path, relative: str) -> list[str]:
    """Every place in one file that builds a topic name or asks the settings for one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        built = _built(node, docs) if relative not in NAME_BUILDERS else None
        asked = _asked(node) if not relative.startswith(MAY_ASK_SETTINGS) else None
        found += [f"{relative}:{getattr(node, 'lineno', 0)} {w}" for w in (built, asked) if w]
    return found


def test_the_topology_is_the_only_place_that_builds_topic_names() -> None:
    found = []
    for top in ("streams", "dev", "bench"):
        for path in sorted((REPO / top).rglob("*.py")):
            found += topic_naming(path, path.relative_to(REPO).as_posix())
    assert found == []


def test_the_check_finds_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "a = settings.topic_prefix + 'replies.raw'\n"
        "b = f'{settings.app_id}-turns-changelog'\n"
        "c = self.settings.delivery_topic('im')\n"
        "d = settings.deadline_topic()\n"
        "e = f'{s.topic_prefix}out'\n"
        "f = settings.topic('dlq')\n"
        "g = {'REPLYGATE_TOPIC_PREFIX': settings.topic_prefix}\n",
        encoding="utf-8",
    )
    lines = [f.split(":")[1].split(" ")[0] for f in topic_naming(sample, "bench/sample.py")]
    assert sorted(set(lines)) == ["1", "2", "3", "4", "5", "6"]
