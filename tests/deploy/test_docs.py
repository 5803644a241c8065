"""docs/ is the project's own documentation: complete against the code, linked, self-contained.

The code is the reference here: every setting, subcommand, topic and code the code knows must be
in the docs, and the docs must not send a reader outside the repository.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from schemas.codes import RECORD
from schemas.registry import issue_codes
from streams.cli.main import _build_parser
from streams.settings import Settings, TopicNames
from tests.support.kafka import REPO

DOCS = REPO / "docs"
DOCUMENTS = (
    "README.md",
    "contracts.md",
    "records.md",
    "cli.md",
    "settings.md",
    "error-codes.md",
    "delivery.md",
)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")  # `[text](url)` shown as an example is not a link
_HEADING = re.compile(r"^#+ (.+)$", re.MULTILINE)


def text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def setting_names(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every setting as it is written in a config file: `partitions`, `corrector.base_url`."""
    names: list[str] = []
    for name, info in model.model_fields.items():
        annotation: Any = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names += setting_names(annotation, f"{prefix}{name}.")
        else:
            names.append(prefix + name)
    return names


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    plain = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return plain.replace(" ", "-")


def test_every_document_exists_and_the_index_lists_it() -> None:
    index = text("README.md")
    for name in DOCUMENTS:
        assert (DOCS / name).is_file(), name
    for path in DOCS.glob("*.md"):
        if path.name != "README.md":
            assert f"]({path.name})" in index, f"docs/README.md does not list {path.name}"


def test_nothing_points_outside_the_repository() -> None:
    outside = "\\.\\./" + "shared"  # spelled so that this file does not match itself
    found = subprocess.run(
        ["git", "grep", "-n", "--untracked", "-E", outside, "--", ".", ":!.venv"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.stdout == "", found.stdout


def test_relative_links_in_the_docs_and_readme_resolve() -> None:
    broken = []
    for doc in [REPO / "README.md", *DOCS.glob("*.md")]:
        prose = _CODE_SPAN.sub("", doc.read_text(encoding="utf-8"))
        for target in _LINK.findall(prose):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, fragment = target.partition("#")
            path = (doc.parent / file_part).resolve() if file_part else doc
            if not path.exists():
                broken.append(f"{doc.name}: {target}")
            elif fragment and path.suffix == ".md":
                anchors = {anchor(h) for h in _HEADING.findall(path.read_text(encoding="utf-8"))}
                if fragment not in anchors:
                    broken.append(f"{doc.name}: {target} (no such heading)")
    assert broken == []


def test_every_setting_is_documented_and_every_documented_one_exists() -> None:
    documented = set(re.findall(r"`([a-z_]+(?:\.[a-z_]+)?)`", text("settings.md")))
    names = setting_names(Settings)
    assert len(names) > 40
    missing = [n for n in names if n not in documented]
    assert missing == [], "add these to docs/settings.md"
    rows = re.findall(r"^\| `([a-z_.]+)`", text("settings.md"), re.MULTILINE)
    assert set(rows) <= set(names), "docs/settings.md names a setting that does not exist"


def test_every_subcommand_is_documented() -> None:
    parser = _build_parser()
    commands = next(
        a
        for a in parser._actions
        if a.dest == "command"  # argparse keeps subparsers here
    )
    names = list(commands.choices)  # type: ignore[arg-type]
    assert "check" in names and "topics" in names
    for name in names:
        assert f"## `replygate {name}" in text("cli.md"), name


def test_the_default_topic_names_are_the_documented_ones() -> None:
    records = text("records.md")
    for name, value in TopicNames().model_dump().items():
        shown = f"`{value}<platform>`" if name == "delivery_prefix" else f"`{value}`"
        assert shown in records, name


@pytest.mark.parametrize(
    ("document", "chosen"),
    [
        ("contracts.md", lambda where: where != (RECORD,)),
        ("records.md", lambda where: RECORD in where),
    ],
)
def test_every_code_is_explained_where_its_rule_is(document: str, chosen: Any) -> None:
    body = text(document)
    codes = [c.name for c in issue_codes().values() if chosen(c.where)]
    assert codes
    assert [c for c in codes if f"`{c}`" not in body] == []


def test_the_docs_are_plain_utf8_markdown_of_their_own() -> None:
    for path in DOCS.glob("*.md"):
        body = path.read_text(encoding="utf-8")
        assert body.startswith("# ") and body.endswith("\n"), path.name
        assert "spec/" not in body, path.name


def test_anchor_follows_githubs_rule() -> None:
    assert anchor("Dead-letter reasons") == "dead-letter-reasons"
    assert anchor("The record around the reply") == "the-record-around-the-reply"
    assert anchor("`im.segments.v1`") == "imsegmentsv1"
    assert Path("docs/x.md").name == "x.md"
