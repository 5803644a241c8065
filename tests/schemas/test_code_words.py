"""A code's words live in its entry (pydantic-core's model): no module spells an issue's message,
every wording renders, its example is one of its renderings, and a name means one thing across
the error codes and the dead-letter reasons."""

from __future__ import annotations

import ast
import re
import string
from collections.abc import Iterator
from pathlib import Path

import pytest

from schemas import codes
from schemas.codes import DEAD_LETTER_REASONS, NOTICE_REASONS, Code
from schemas.errors import _CODES
from schemas.registry import issue_codes
from tests.schemas.test_codes import CODE_CONSTANTS

REPO = Path(__file__).resolve().parents[2]
SOURCES = sorted([*REPO.glob("schemas/**/*.py"), *REPO.glob("streams/**/*.py")])
# The one module that may put words into an Issue: a code building its own.
WORDS_LIVE_IN = REPO / "schemas" / "codes.py"
# Call name -> index of its message argument.
MESSAGE_TAKERS = {"Issue": 2, "PydanticCustomError": 1}
# Codes pydantic also reports in its own words (its message, not a template of ours).
PYDANTIC_WORDED = {*_CODES.values(), "wrong_type", "invalid_value"}
ISSUE_CODES = issue_codes()


def _name(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else None


def _text_constants(tree: ast.Module) -> set[str]:
    """Module-level names bound to a string literal (`_NULL = "is null ..."`)."""
    names = set()
    for node in tree.body:
        value = getattr(node, "value", None)
        if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _worded(message: ast.expr, constants: set[str]) -> bool:
    """Whether a message argument holds words: a string or f-string anywhere in it, or a
    module's text constant. Passing another issue's message on (`issue.message`, pydantic's
    `err["msg"]`) is not."""
    keys = {
        id(n)
        for sub in ast.walk(message)
        if isinstance(sub, ast.Subscript)
        for n in ast.walk(sub.slice)
    }
    for node in ast.walk(message):
        if id(node) in keys:
            continue
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return True
        if isinstance(node, ast.Name) and node.id in constants:
            return True
    return False


def worded_issues(source: str) -> Iterator[int]:
    """The lines of a module that make an Issue (or a pydantic custom error) with words."""
    tree = ast.parse(source)
    constants = _text_constants(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or _name(node) not in MESSAGE_TAKERS:
            continue
        index = MESSAGE_TAKERS[str(_name(node))]
        given = [k.value for k in node.keywords if k.arg in ("message", "message_template")]
        message = node.args[index] if len(node.args) > index else (given[0] if given else None)
        if message is not None and _worded(message, constants):
            yield node.lineno


def test_no_module_but_the_codes_words_an_issue() -> None:
    found = [
        f"{path.relative_to(REPO)}:{line}"
        for path in SOURCES
        if path != WORDS_LIVE_IN
        for line in worded_issues(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "build these with codes.X.issue(path, form, **ctx)"


def test_the_scan_finds_words_in_every_shape() -> None:
    """Guards the scan: a literal, an f-string, a joined text and a text constant are words;
    an issue's own message handed on is not."""
    source = (
        'WORDS = "is required"\n'
        'a = Issue("$", "x", "is required")\n'
        'b = Issue(path, code, f"has {n} items")\n'
        'c = Issue(path, code, "one " + two)\n'
        "d = Issue(path, code, WORDS)\n"
        'e = PydanticCustomError("invalid_datetime", "no zone")\n'
        "f = Issue(path, issue.code, issue.message)\n"
        "g = Issue(path, code, err['msg'])\n"
    )
    assert list(worded_issues(source)) == [2, 3, 4, 5, 6]


def _placeholders(template: str) -> list[str]:
    return [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]


def _pattern(template: str) -> re.Pattern[str]:
    """The template as a pattern: its text exact, each placeholder any text."""
    parts = [
        re.escape(text) + ("(.+?)" if field is not None else "")
        for text, field, _, _ in string.Formatter().parse(template)
    ]
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


@pytest.mark.parametrize("code", list(ISSUE_CODES.values()), ids=lambda c: c.name)
def test_every_wording_renders_with_its_context(code: Code) -> None:
    for form, template in code.templates().items():
        context = dict.fromkeys(_placeholders(template), 7)  # 7 fits `{x}`, `{x!r}`, `{x:04X}`
        message = code.issue("a.b", form, **context).message
        assert message and "{" not in message.replace("{{", ""), (code.name, form)
        assert _pattern(template).match(message), (code.name, form)


@pytest.mark.parametrize("code", list(ISSUE_CODES.values()), ids=lambda c: c.name)
def test_every_example_is_one_rendering_of_its_code(code: Code) -> None:
    """The catalogue's example is what the code says (with its documented context), or, for
    a code pydantic also reports, pydantic's words."""
    wordings = code.templates().values()
    if any(_pattern(t).match(code.example) for t in wordings):
        return
    assert code.name in PYDANTIC_WORDED, f"{code.name}: {code.example!r} matches no wording"
    assert re.match(r"(Input|String) should ", code.example), code.name


def test_every_code_but_pydantic_alone_has_its_own_words() -> None:
    wordless = {name for name, code in ISSUE_CODES.items() if not code.templates()}
    assert wordless <= PYDANTIC_WORDED


def test_a_form_a_code_does_not_have_is_refused() -> None:
    with pytest.raises(KeyError):
        codes.WRONG_TYPE.issue("$", "no_such_form")


def _functions() -> Iterator[tuple[Path, ast.FunctionDef | ast.AsyncFunctionDef]]:
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield path, node


def _calls(func: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(func) if isinstance(n, ast.Call)]


def _built_here(func: ast.AST) -> set[str]:
    """The codes whose issues a function builds itself (`X.issue(...)`)."""
    return {
        CODE_CONSTANTS[owner]
        for call in _calls(func)
        if isinstance(call.func, ast.Attribute) and call.func.attr == "issue"
        for owner in [getattr(call.func.value, "attr", getattr(call.func.value, "id", ""))]
        if owner in CODE_CONSTANTS
    }


def _codes_of(value: ast.expr, by_name: dict[str, set[str]]) -> set[str]:
    """The codes an expression's issues have: `X.issue(...)`, or a function that builds them."""
    if not isinstance(value, ast.Call):
        return set()
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr == "issue":
        owner = getattr(func.value, "attr", getattr(func.value, "id", ""))
        return {CODE_CONSTANTS[owner]} if owner in CODE_CONSTANTS else set()
    return by_name.get(str(_name(value)), set())


def _reason_sites() -> Iterator[tuple[str, str, set[str]]]:
    """(site, reason, the codes of the issues it is made from) for each dead letter made with a
    literal reason; an issue is followed to its latest assignment in the function."""
    functions = list(_functions())
    by_name: dict[str, set[str]] = {}
    for _, func in functions:
        by_name.setdefault(func.name, set()).update(_built_here(func))
    for path, func in functions:
        assigned = [
            (node.lineno, target.id, node.value)
            for node in ast.walk(func)
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        ]
        for call in _calls(func):
            if _name(call) != "dead_letter" or len(call.args) < 4:
                continue
            reason, given = call.args[2], call.args[3]
            if not (isinstance(reason, ast.Constant) and isinstance(reason.value, str)):
                continue
            names = [n.id for n in ast.walk(given) if isinstance(n, ast.Name)]
            found: set[str] = set()
            for name in names:
                latest = [v for line, n, v in sorted(assigned) if n == name and line <= call.lineno]
                found |= _codes_of(latest[-1], by_name) if latest else set()
            yield f"{path.relative_to(REPO)}:{call.lineno}", reason.value, found


def test_a_reason_named_like_a_code_is_that_code_found_on_the_record() -> None:
    """One meaning per word: a dead letter whose reason is also an error code is made from an
    issue of that very code, and no dead letter carries an issue named like another reason."""
    sites = list(_reason_sites())
    assert {site[1] for site in sites} >= {"not_json", "turn_expired", "wrong_key"}
    for site, reason, found in sites:
        assert reason in DEAD_LETTER_REASONS, site
        if reason in ISSUE_CODES:
            assert reason in found, f"{site}: a {reason} dead letter without a {reason} issue"
        assert not (found & set(DEAD_LETTER_REASONS)) - {reason}, site


def test_the_three_vocabularies_share_no_name_with_another_meaning() -> None:
    """A notice is not an error: no notice reason is a code or a dead-letter reason. A
    dead-letter reason that is also a code is a finding on the record (`record` in its places)."""
    assert not set(NOTICE_REASONS) & (set(ISSUE_CODES) | set(DEAD_LETTER_REASONS))
    for name in set(DEAD_LETTER_REASONS) & set(ISSUE_CODES):
        assert codes.RECORD in ISSUE_CODES[name].where, name


@pytest.mark.parametrize("code", list(ISSUE_CODES.values()), ids=lambda c: c.name)
def test_every_example_is_rendered_from_its_own_wording(code: Code) -> None:
    """No example is copied by hand: it is the code's template (or a form) rendered with its
    example context, the template itself when it has no placeholder, or pydantic's words."""
    if code.example_context:
        context = dict(code.example_context)
        form = str(context.pop("form", ""))
        assert code.example == code.message(form, **context)
    elif code.name in PYDANTIC_WORDED and re.match(r"(Input|String) should ", code.example):
        return
    else:
        assert code.example == code.template and not _placeholders(code.template), code.name
