"""The one registry of codes (schemas/codes.py): complete, counted by metrics, catalogue current.

Completeness is checked on the source: every place that makes an `Issue` (or a `UriError`,
`CsvProblem`, `AttachmentError`, or adds to an issue sink) is found with `ast`, and the code it
passes must be a registered literal, or a value passed through from one of those places.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args, get_type_hints

import pytest
from replygate_dev.demo import SAMPLES_DIR, read_samples

from schemas import codes as codes_module
from schemas.catalogue import CATALOGUE, catalogue
from schemas.codes import (
    DEAD_LETTER_REASONS,
    NOTICE_REASONS,
    Code,
    unregistered,
)
from schemas.errors import _CODES, _code_for
from schemas.records import DeadLetter, DeadReason
from schemas.registry import contract_codes, issue_codes
from streams.core.decision import Source
from streams.ops.metrics import Metrics, bound
from streams.settings import Settings
from tests.support.gates import disk_gate
from tests.support.kafka import REPO

ISSUE_CODES = issue_codes()
SOURCES = sorted([*REPO.glob("schemas/**/*.py"), *REPO.glob("streams/**/*.py")])
# Call name -> index of the positional argument that is a code (or a notice reason).
ISSUE_MAKERS = {"Issue": 1, "UriError": 0, "_uri_error": 0, "CsvProblem": 0}
NOTICE_MAKERS = {"AttachmentError": 0}
SINK_ADD_ARGS = 3  # `sink.add(path, code, message)`, `walk.issues.add(...)`


def _call_name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level `NAME = "text"` (or `NAME: Final = "text"`) assignments."""
    out: dict[str, str] = {}
    for node in tree.body:
        target: ast.expr | None = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        value = getattr(node, "value", None)
        constant = isinstance(value, ast.Constant) and isinstance(value.value, str)
        if isinstance(target, ast.Name) and constant:
            out[target.id] = value.value  # type: ignore[union-attr]
    return out


def _passed_through(arg: ast.expr) -> bool:
    """A code handed on from another maker: a parameter named `code`, `something.code`, or a
    code's own name as it builds its issue (`self.name` in `Code.issue`)."""
    return (
        (isinstance(arg, ast.Name) and arg.id == "code")
        or (isinstance(arg, ast.Attribute) and arg.attr == "code")
        or (
            isinstance(arg, ast.Attribute)
            and arg.attr == "name"
            and isinstance(arg.value, ast.Name)
            and arg.value.id == "self"
        )
    )


def _code_constants() -> dict[str, str]:
    """Every `Code` constant a module of schemas/ binds (`WRONG_TYPE`, a contract's
    `NOT_FENCED`), by its Python name: one name is one code."""
    found: dict[str, str] = {}
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith("schemas"):
            continue
        for attr, value in vars(module).items():
            if isinstance(value, Code) and attr.isupper():
                assert found.setdefault(attr, value.name) == value.name, attr
    return found


CODE_CONSTANTS = _code_constants()


def _named_code(node: ast.expr) -> str | None:
    """The code a `codes.X` / `X` expression names (a `Code` constant)."""
    name = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
    return CODE_CONSTANTS.get(str(name))


def _built_code(node: ast.Call) -> str | None:
    """The code of `codes.X.issue(...)` / `X.issue(...)`: a code building its own issue."""
    func = node.func
    if not (isinstance(func, ast.Attribute) and func.attr == "issue"):
        return None
    return _named_code(func.value)


def scan(makers: dict[str, int], sink_add: bool) -> Iterator[tuple[str, str | None]]:
    """(site, code) for every maker call in schemas/ and streams/; code None: not a literal."""
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        constants = _constants(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = _call_name(node)
            built = _built_code(node) if "Issue" in makers else None
            if built is not None:
                yield f"{path.relative_to(REPO)}:{node.lineno}", built
                continue
            if name in makers:
                index = makers[name]
            elif sink_add and name == "add" and len(node.args) == SINK_ADD_ARGS:
                index = 1
            else:
                continue
            keyword = [k.value for k in node.keywords if k.arg in ("code", "reason")]
            arg = node.args[index] if len(node.args) > index else (keyword[0] if keyword else None)
            if arg is None:
                continue
            site = f"{path.relative_to(REPO)}:{node.lineno}"
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                yield site, arg.value
            elif _named_code(arg) is not None:
                yield site, _named_code(arg)
            elif isinstance(arg, ast.Name) and arg.id in constants:
                yield site, constants[arg.id]
            elif not _passed_through(arg):
                yield site, None


@pytest.fixture(scope="module")
def emitted() -> dict[str, list[str]]:
    codes: dict[str, list[str]] = {}
    for site, code in scan(ISSUE_MAKERS, sink_add=True):
        codes.setdefault(str(code), []).append(site)
    return codes


def test_every_code_the_code_base_emits_is_registered(emitted: dict[str, list[str]]) -> None:
    assert "None" not in emitted, f"a code that is not a literal: {emitted.get('None')}"
    missing = {code: emitted[code] for code in unregistered(emitted, ISSUE_CODES)}
    assert missing == {}, "add these to schemas/codes.py (and run python -m schemas.catalogue)"


def test_the_scan_sees_the_places_that_emit_codes(emitted: dict[str, list[str]]) -> None:
    """Guards the scan itself: codes from each kind of maker are found."""
    for code in ("unknown_mention_target", "non_canonical_uri", "csv_ragged_row", "not_fenced"):
        assert code in emitted


def test_every_registered_code_is_emitted_somewhere(emitted: dict[str, list[str]]) -> None:
    """No stale entries: a code is emitted by a literal or by pydantic's mapping."""
    from_pydantic = {*_CODES.values(), "wrong_type", "invalid_value"}
    # `schema.<keyword>` is built from the failing keyword; tests/schemas/test_schema_contracts.py
    # makes each registered one happen.
    from_schema = {c for c in ISSUE_CODES if c.startswith("schema.")}
    everything = {*emitted, *from_pydantic, *from_schema}
    assert unregistered(ISSUE_CODES, dict.fromkeys(everything)) == []  # type: ignore[arg-type]


def test_pydantic_errors_map_onto_registered_codes_only() -> None:
    assert unregistered(_CODES.values(), ISSUE_CODES) == []
    assert _code_for("int_type") == "wrong_type"
    assert _code_for("some_future_check") == "invalid_value"
    assert _code_for("invalid_datetime") == "invalid_datetime"


def test_a_code_builds_its_issue_from_its_own_template() -> None:
    issue = codes_module.RECORD_TOO_LARGE.issue("$", size=2000000, limit=1048576)
    assert (issue.path, issue.code) == ("$", "record_too_large")
    assert issue.message == codes_module.RECORD_TOO_LARGE.example


def test_there_is_one_error_cap_with_one_message() -> None:
    cap = codes_module.TOO_MANY_ERRORS
    assert cap.issue("$", listed=codes_module.MAX_ISSUES).message == cap.example


def test_dead_letter_reasons_are_the_records() -> None:
    assert get_type_hints(DeadLetter)["reason"] == DeadReason
    assert set(DEAD_LETTER_REASONS) == set(get_args(DeadReason))


def test_notice_reasons_are_the_ones_media_raises() -> None:
    raised = {code for _, code in scan(NOTICE_MAKERS, sink_add=False)}
    assert raised == set(NOTICE_REASONS)


def test_every_entry_has_a_meaning_and_an_example_on_one_line() -> None:
    for code in ISSUE_CODES.values():
        assert code.meaning and code.example and code.example_path, code.name
        assert "\n" not in code.meaning + code.example, code.name
    for reason in [*DEAD_LETTER_REASONS.values(), *NOTICE_REASONS.values()]:
        assert reason.meaning and "\n" not in reason.meaning, reason.name


def test_metrics_count_every_registered_code_under_its_own_label() -> None:
    metrics = Metrics.from_settings(Settings())
    for name in [*ISSUE_CODES, *NOTICE_REASONS]:
        assert bound(name, metrics.codes | metrics.reasons) == name
    assert bound("made_up_code", metrics.codes) == "other"


def test_the_catalogue_in_docs_is_generated_from_the_registry() -> None:
    assert CATALOGUE.read_text(encoding="utf-8") == catalogue(contract_codes()), (
        "docs/error-codes.md is out of date: run `python -m schemas.catalogue`"
    )
    for name in ISSUE_CODES:
        assert f"| `{name}` |" in catalogue(contract_codes())


def test_the_generator_check_mode_agrees() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "schemas.catalogue", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def test_the_demo_samples_only_produce_registered_codes() -> None:
    """A dynamic spot check beside the static scan: real records through the real gate."""
    gate = disk_gate(
        Settings(workspaces_root=SAMPLES_DIR / "workspaces", media_root=SAMPLES_DIR / "media")
    )
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    seen: set[str] = set()
    for sample in read_samples():
        for part in sample.parts:
            decision: Any
            if part.topic == "toolcalls_raw":
                decision = gate.decide_tool_call(part.value, Source("toolcalls.raw"))
            elif part.topic == "replies_raw":
                decision = gate.decide_reply(part.value, Source("replies.raw"), now)
            else:
                continue
            seen.update(e.code for e in decision.errors)
    assert seen and unregistered(seen, ISSUE_CODES) == []


def test_catalogue_lives_in_the_repository() -> None:
    assert Path(CATALOGUE).is_relative_to(REPO / "docs")


def test_the_pipeline_words_no_message_a_code_owns() -> None:
    """A code with a template builds its issue; the pipeline does not spell its message again."""
    pipeline = ("streams/core/pipeline.py", "streams/core/batch.py", "streams/core/turns.py")
    texts = {path: (REPO / path).read_text(encoding="utf-8") for path in pipeline}
    copied = [
        f"{path}: {code.name}"
        for code in ISSUE_CODES.values()
        for path, text in texts.items()
        if (len(code.example) >= 15 and code.example in text)
        or (code.template and "{" not in code.template and code.template in text)
    ]
    assert copied == []


def test_a_generator_outside_a_checkout_refuses_in_one_line(tmp_path: Path) -> None:
    """An installed copy has no docs/ beside it: `--check` and a write both refuse, exit 2."""
    from schemas.generated_doc import generated_doc_main

    page = tmp_path / "site-packages" / "docs" / "error-codes.md"
    for argv in (["--check"], []):
        assert generated_doc_main(argv, page, lambda: "x", "schemas.catalogue") == 2
    assert not page.exists()
