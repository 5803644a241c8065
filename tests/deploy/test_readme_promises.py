"""The README and the upgrade docs say what the machinery does: what `make test` installs and
starts (read from the scripts themselves), how to run the Python-only tests without it, and the
key rule's upgrade note in both the changelog and the versioning policy."""

from __future__ import annotations

import re
import subprocess

from tests.support.kafka import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def _array(script: str, name: str) -> list[str]:
    found = re.search(rf"^{name}=\(([^)]*)\)", script, re.M)
    assert found is not None, name
    return found.group(1).split()


def test_the_readme_names_every_package_and_engine_make_test_installs() -> None:
    tools = (REPO / "scripts" / "install-tools.sh").read_text(encoding="utf-8")
    docker = (REPO / "scripts" / "with-docker.sh").read_text(encoding="utf-8")
    packages = _array(tools, "APT_PACKAGES")
    assert "docker.io" in docker
    for package in [*packages, "docker.io"]:
        assert f"`{package}`" in README, package
    for thing in ("kustomize", "docker compose", "dockerd", "root", "KEEP_DOCKER", "KEEP_KAFKA"):
        assert thing in README, thing
    for image in re.findall(
        r"^\w+_IMAGE=([\w./-]+):",
        (REPO / "deploy/images/build.sh").read_text(encoding="utf-8"),
        re.M,
    ):
        assert image.split("/")[0] in README, image


def test_make_test_unit_runs_without_root_docker_or_a_broker() -> None:
    """The target exists, depends on the venv only, and leaves the broker's tests out."""
    dry = subprocess.run(
        ["make", "-n", "test-unit"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert dry.returncode == 0, dry.stderr
    commands = dry.stdout
    assert '-m "not kafka"' in commands and "--ignore=tests/deploy" in commands
    for heavy in ("with-docker", "with-kafka", "install-tools", "apt-get", "sudo"):
        assert heavy not in commands, heavy
    assert "make test-unit" in README


def test_the_key_rule_has_one_upgrade_note_in_the_changelog_and_the_policy() -> None:
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    policy = (REPO / "docs" / "versioning.md").read_text(encoding="utf-8")
    notes = changelog.split("### Upgrade notes", 1)[1].split("\n### ", 1)[0]
    for said in (notes, policy):
        assert "wrong_key" in said and "accept_quoted_keys" in said
        assert "replygate_quoted_keys_accepted_total" in said
