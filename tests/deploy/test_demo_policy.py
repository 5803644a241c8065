"""The demo's policy part (replygate_dev.demo.policy): what it says, and that a failed check
fails the demo. A real run is `replygate demo` in tests/deploy/test_demo.py (exit 0 needs it)."""

from __future__ import annotations

import io
from pathlib import Path

from replygate_dev.demo.policy import CANARY, CANDIDATE, PolicyStory, render_policy
from rich.console import Console

from streams.policy.bundle import read_bundle
from streams.policy.load import load_policy
from streams.settings import GateSettings


def console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, width=200), out


def test_a_story_that_passed_is_said_and_fails_nothing() -> None:
    screen, out = console()
    story = PolicyStory(lines=["policy: promoted sha256:abc…"])
    assert render_policy(screen, story) == []
    assert "policy: promoted sha256:abc…" in out.getvalue()


def test_a_failed_check_or_a_part_that_never_ran_fails_the_demo() -> None:
    screen, out = console()
    story = PolicyStory()
    assert story.check(True, "fine") and not story.check(False, "the shadow changed a delivery")
    assert render_policy(screen, story) == ["policy"]
    assert "policy: the shadow changed a delivery" in out.getvalue()
    assert render_policy(screen, None) == ["policy"]


def test_the_candidate_loads_with_the_workers_code_and_names_the_canary(tmp_path: Path) -> None:
    path = tmp_path / "candidate.toml"
    path.write_text(CANDIDATE, encoding="utf-8")
    bundle = read_bundle(path)
    load_policy(bundle, GateSettings(), str(path))  # raises PolicyError when it does not load
    literals = bundle.sections["default"]["leak_literals"]
    assert [s.get_secret_value() for s in literals] == [CANARY]
