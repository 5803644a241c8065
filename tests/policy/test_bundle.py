"""Policy bundles (docs/policy.md): sections, refusals by name, the content version, and
loading with the worker's own code (`replygate policy check`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from streams.policy.bundle import (
    MAX_TENANTS,
    PolicyError,
    bundle_from_record,
    read_bundle,
)
from streams.policy.load import load_policy
from streams.settings import GateSettings, Settings

REPO = Path(__file__).resolve().parents[2]
SCHEMA = {
    "type": "object",
    "required": ["title"],
    "properties": {"title": {"type": "string"}},
    "additionalProperties": False,
}
TOML = """
[default]
leak_literals = ["canary-0001"]
platforms = ["im", "web"]
closed_platforms = true
correction_deadline_seconds = 20

[[default.schema_contracts]]
name = "acme.ticket.v1"
schema = "ticket.schema.json"

[platform.im]
contracts = ["im.segments.v1", "acme.ticket.v1"]
correction_deadline_seconds = 10

[tenant.acme]
leak_literals = ["acme-secret-1"]
correction_deadline_seconds = 5
"""
# The same content, keys in another order, as YAML.
YAML = """
tenant:
  acme: {correction_deadline_seconds: 5, leak_literals: [acme-secret-1]}
platform:
  im:
    correction_deadline_seconds: 10
    contracts: [im.segments.v1, acme.ticket.v1]
default:
  schema_contracts:
    - {schema: ticket.schema.json, name: acme.ticket.v1}
  correction_deadline_seconds: 20.0
  closed_platforms: true
  platforms: [im, web]
  leak_literals: [canary-0001]
"""


def write(folder: Path, name: str, text: str) -> Path:
    (folder / "ticket.schema.json").write_bytes(orjson.dumps(SCHEMA))
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def problems(folder: Path, text: str, name: str = "p.toml") -> str:
    with pytest.raises(PolicyError) as caught:
        bundle = read_bundle(write(folder, name, text))
        load_policy(bundle, Settings().group(GateSettings))
    return str(caught.value)


def test_the_version_is_the_content_whatever_the_format_and_order(tmp_path: Path) -> None:
    toml = read_bundle(write(tmp_path, "p.toml", TOML))
    yaml = read_bundle(write(tmp_path, "p.yaml", YAML))
    assert toml.version == yaml.version
    assert toml.version.startswith("sha256:") and len(toml.version) == 71
    assert toml.canonical == yaml.canonical
    assert b" " not in toml.canonical.replace(b"acme-secret-1", b"")  # no whitespace
    changed = read_bundle(write(tmp_path, "q.toml", TOML.replace("acme-secret-1", "acme-secret-2")))
    assert changed.version != toml.version


def test_the_schema_file_is_part_of_the_content(tmp_path: Path) -> None:
    before = read_bundle(write(tmp_path, "p.toml", TOML))
    looser = {**SCHEMA, "additionalProperties": True}
    (tmp_path / "ticket.schema.json").write_bytes(orjson.dumps(looser))
    after = read_bundle(tmp_path / "p.toml")
    assert after.version != before.version
    assert orjson.loads(after.canonical)["default"]["schema_contracts"][0]["schema"] == looser


def test_tenant_over_platform_over_default_key_by_key(tmp_path: Path) -> None:
    policy = load_policy(read_bundle(write(tmp_path, "p.toml", TOML)), GateSettings())
    assert policy.scope(None, None).correction.deadline_seconds == 20
    assert policy.scope("im", None).correction.deadline_seconds == 10
    assert policy.scope("im", "acme").correction.deadline_seconds == 5
    assert policy.scope("web", "other").correction.deadline_seconds == 20
    # contracts come from the platform section, literals from the tenant's
    im_acme = policy.scope("im", "acme")
    assert sorted(im_acme.contracts) == ["acme.ticket.v1", "im.segments.v1"]
    assert "text.plain.v1" in policy.scope("web", "acme").contracts
    assert [s.get_secret_value() for s in im_acme.settings.leak_literals] == ["acme-secret-1"]
    masked, _ = im_acme.masker.mask_text("x acme-secret-1 canary-0001")
    assert "acme-secret-1" not in masked and "canary-0001" in masked
    masked, _ = policy.scope("im", None).masker.mask_text("x acme-secret-1 canary-0001")
    assert "acme-secret-1" in masked and "canary-0001" not in masked
    # a key no section sets is the documented default, not the worker's settings file
    worker = GateSettings(failure_notice_text="the worker's own notice")
    assert policy.bundle is not None
    assert load_policy(policy.bundle, worker).scope(None, None).settings.failure_notice_text == (
        GateSettings().failure_notice_text
    )


def test_scopes_that_share_their_leak_keys_share_one_masker(tmp_path: Path) -> None:
    policy = load_policy(read_bundle(write(tmp_path, "p.toml", TOML)), GateSettings())
    assert policy.scope("im", None).masker is policy.scope("web", None).masker
    assert policy.scope("im", "acme").masker is policy.scope(None, "acme").masker
    assert policy.scope("im", "acme").masker is not policy.scope("im", None).masker


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '[default]\nkafka_security = {protocol = "SSL"}\n',
            "default.kafka_security: a connection",
        ),
        ("[tenant.a]\n[tenant.a.corrector]\nenabled = true\n", "tenant.a.corrector: a connection"),
        ("[default]\nbatch_max_records = 5\n", "default.batch_max_records: a worker setting"),
        ("[tenant.a]\naudit = false\n", "tenant.a.audit: a worker setting"),
        ('[default]\npolicy_tenant_header = "x"\n', "policy_tenant_header: a worker setting"),
        ("[default]\nleak_literal = []\n", "names no policy key (did you mean leak_literals?)"),
        ('[platform.im]\nplatforms = ["im"]\n', "platform.im.platforms: set it in the default"),
        ("[defualt]\n", "defualt: not a section (default, platform.NAME, tenant.NAME) (did you"),
        ("[platform.im]\n", "default: the section is missing"),
        ('[default]\ncorrection_deadline_seconds = "30"\n', "correction_deadline_seconds"),
        ("[default]\ncorrection_deadline_seconds = 7200\n", "correction_deadline_seconds"),
        ('[default]\nleak_literals = ["abc"]\n', "at least 4 characters"),
    ],
)
def test_a_key_that_is_not_policy_is_refused_by_name(tmp_path: Path, text: str, said: str) -> None:
    assert said in problems(tmp_path, text)


def test_every_reason_is_said_at_once_and_no_value(tmp_path: Path) -> None:
    said = problems(
        tmp_path,
        "[default]\n"
        'leak_patterns = { "acme-token" = "s3cr3t(" }\n'
        'contracts = ["im.segmnets.v1"]\n'
        'leak_rules_disabled = ["github-pt"]\n'
        "[[default.schema_contracts]]\n"
        'name = "acme.bad.v1"\n'
        'schema = { type = "no-such-type" }\n',
    )
    assert "s3cr3t" not in said
    assert (
        "leak_rules_disabled: 'github-pt' names no built-in rule (did you mean github-pat?)" in said
    )
    said = problems(tmp_path, '[default]\nleak_patterns = { "acme-token" = "s3cr3t(" }\n')
    assert "leak rule 'acme-token': does not compile under RE2" in said and "s3cr3t" not in said
    said = problems(tmp_path, '[default]\ncontracts = ["im.segmnets.v1"]\n')
    assert "'im.segmnets.v1' is not a registered contract" in said
    assert "(did you mean im.segments.v1?)" in said
    said = problems(
        tmp_path, '[[default.schema_contracts]]\nname = "acme.bad.v1"\nschema = { type = 5 }\n'
    )
    assert "default.schema_contracts 'acme.bad.v1'" in said


def test_a_contract_accepted_must_exist_in_every_scope_it_reaches(tmp_path: Path) -> None:
    text = (
        "[default]\n[platform.im]\n"
        '[[platform.im.schema_contracts]]\nname = "acme.ticket.v1"\nschema = "ticket.schema.json"\n'
        '[tenant.acme]\ncontracts = ["acme.ticket.v1"]\n'
    )
    said = problems(tmp_path, text)
    assert (
        "tenant.acme.contracts: 'acme.ticket.v1' is not a registered contract for any platform"
        in said
    )


def test_yaml_aliases_and_too_many_sections_are_refused(tmp_path: Path) -> None:
    bomb = "default:\n  platforms: &a [im, im]\ntenant:\n  x: {platforms: *a}\n"
    assert "aliases are not allowed" in problems(tmp_path, bomb, "p.yaml")
    many = "[default]\n" + "".join(f"[tenant.t{n}]\n" for n in range(MAX_TENANTS + 1))
    assert f"at most {MAX_TENANTS} sections" in problems(tmp_path, many)


def test_a_record_from_the_topic_is_canonical_with_its_schemas_inline(tmp_path: Path) -> None:
    bundle = read_bundle(write(tmp_path, "p.toml", TOML))
    assert bundle_from_record(bundle.canonical).version == bundle.version
    spaced = orjson.dumps(orjson.loads(bundle.canonical), option=orjson.OPT_INDENT_2)
    with pytest.raises(PolicyError, match="not in canonical form"):
        bundle_from_record(spaced)
    by_name = b'{"default":{"schema_contracts":[{"name":"a.b.v1","schema":"/etc/passwd"}]}}'
    with pytest.raises(PolicyError, match="holds the schema itself, not a file name"):
        bundle_from_record(by_name)


def policy_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPLYGATE_")}
    return subprocess.run(
        [sys.executable, "-m", "streams.cli", "policy", *args],
        capture_output=True,
        cwd=cwd,
        env={**env, "PYTHONPATH": str(REPO)},
        timeout=60,
        check=False,
    )


def test_policy_check_prints_the_version_or_exits_2_with_the_reasons(tmp_path: Path) -> None:
    path = write(tmp_path, "p.toml", TOML)
    done = policy_cli("check", str(path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == read_bundle(path).version + "\n"
    bad = write(tmp_path, "bad.toml", '[default]\nleak_literals = ["abc"]\nbatch_max_records = 1\n')
    done = policy_cli("check", str(bad), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == b""
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith(f"replygate policy: error: {bad}: 1 problem: default.batch_max_records")


def test_the_tenant_header_setting_is_a_header_name() -> None:
    assert Settings(policy_tenant_header="x-tenant").policy_tenant_header == "x-tenant"
    assert Settings().policy_tenant_header is None and Settings().audit is True
    for bad in ("x tenant", "", "x\ntenant"):
        with pytest.raises(ValueError):
            Settings(policy_tenant_header=bad)


def test_section_names_are_names_a_record_can_carry(tmp_path: Path) -> None:
    said = problems(tmp_path, "[default]\n[platform.IM]\n")
    assert "platform.IM: not a platform name" in said
    said = problems(tmp_path, '[default]\n[tenant." acme"]\n')
    assert "without spaces at its ends" in said


def test_a_bundle_is_checked_as_the_worker_reads_it(tmp_path: Path) -> None:
    """A YAML date inside a schema is text once the bundle is JSON: check sees the text."""
    text = (
        "default:\n  schema_contracts:\n    - name: acme.day.v1\n"
        "      schema: {type: string, const: 2020-01-01}\n"
    )
    path = tmp_path / "p.yaml"
    path.write_text(text, encoding="utf-8")
    bundle = read_bundle(path)
    entry = bundle.sections["default"]["schema_contracts"][0]
    assert entry["schema"]["const"] == "2020-01-01"
    assert bundle_from_record(bundle.canonical).sections == bundle.sections


def test_a_load_problem_names_the_file(tmp_path: Path) -> None:
    bad = write(tmp_path, "rules.toml", '[default]\nleak_rules_disabled = ["nope-rule"]\n')
    done = policy_cli("check", str(bad), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.decode().startswith(f"replygate policy: error: {bad}: 1 problem: ")


def test_the_example_of_docs_policy_md_loads(tmp_path: Path) -> None:
    text = (REPO / "docs" / "policy.md").read_text(encoding="utf-8")
    example = text.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "contracts").mkdir()
    (tmp_path / "contracts" / "ticket.schema.json").write_bytes(orjson.dumps(SCHEMA))
    path = tmp_path / "policy.toml"
    path.write_text(example, encoding="utf-8")
    policy = load_policy(read_bundle(path), GateSettings())
    assert sorted(policy.scope("im", "acme").contracts) == ["acme.ticket.v1", "im.segments.v1"]
    assert policy.scope("im", "acme").correction.enabled is False
