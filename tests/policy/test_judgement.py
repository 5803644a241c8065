"""Judging under a policy's scopes: a gate per scope, where a shadow disagrees, and the audit
record of an outcome (never the reply's text)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from streams.core.decision import Source
from streams.core.versions import SETTINGS_VERSION
from streams.files.stage import DiskFiles
from streams.policy.bundle import read_bundle
from streams.policy.judgement import (
    AUDIT_OUTCOMES,
    audit_record,
    disagreements,
    shadow_judgement,
)
from streams.policy.load import PolicyGates, load_policy, settings_policy
from streams.settings import FileSettings, GateSettings, Settings
from tests.support.samples import encode, im_text, raw_reply

NOW = datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC)
SOURCE = Source("replies.raw", 0, 7)
SECRET = "tenant-secret-9f2c"

ACTIVE = '[default]\nleak_literals = ["canary-0001"]\n'
# The candidate masks one more literal and accepts only text.plain.v1 for platform web.
SHADOW = (
    '[default]\nleak_literals = ["canary-0001", "tenant-secret-9f2c"]\n'
    '[platform.web]\ncontracts = ["text.plain.v1"]\n'
)
TENANT = '[default]\n[tenant.acme]\nleak_literals = ["tenant-secret-9f2c"]\n'


def gates(tmp_path: Path, text: str, name: str) -> PolicyGates:
    path = tmp_path / f"{name}.toml"
    path.write_text(text, encoding="utf-8")
    files = DiskFiles.from_settings(Settings(workspaces_root=tmp_path).group(FileSettings))
    return PolicyGates(load_policy(read_bundle(path), GateSettings()), files)


def reply(text: str, **changes: object) -> bytes:
    segments = [{"type": "text", "data": {"text": text}}]
    return encode(raw_reply(output={"text": im_text(segments)}, **changes))


def unmasked(text: str) -> str:
    return text


def test_each_tenant_is_judged_with_its_own_literals(tmp_path: Path) -> None:
    policy = gates(tmp_path, TENANT, "tenants")
    raw = reply(f"the key is {SECRET}")
    acme = policy.gate("im", "acme").decide_reply(raw, SOURCE, NOW)
    other = policy.gate("im", "globex").decide_reply(raw, SOURCE, NOW)
    assert SECRET.encode() not in orjson.dumps(acme.line())
    assert SECRET.encode() in orjson.dumps(other.line())
    assert policy.gate("im", None) is policy.gate("web", "globex")
    # each gate masks with its scope's masker, built once at load
    assert policy.gate("im", "acme").masker is policy.policy.scope("im", "acme").masker


def test_a_shadow_that_masks_one_more_literal_disagrees_on_masking_only(tmp_path: Path) -> None:
    active, shadow = gates(tmp_path, ACTIVE, "a"), gates(tmp_path, SHADOW, "s")
    raw = reply(f"the key is {SECRET}")
    a = active.gate("im", None).decide_reply(raw, SOURCE, NOW)
    s = shadow.gate("im", None).decide_reply(raw, SOURCE, NOW)
    assert disagreements(a, s) == ["masking"]
    clean = reply("nothing to hide")
    assert (
        disagreements(
            active.gate("im", None).decide_reply(clean, SOURCE, NOW),
            shadow.gate("im", None).decide_reply(clean, SOURCE, NOW),
        )
        == []
    )


def test_a_shadow_that_refuses_a_contract_disagrees_on_verdict_and_codes(tmp_path: Path) -> None:
    active, shadow = gates(tmp_path, ACTIVE, "a"), gates(tmp_path, SHADOW, "s")
    raw = reply("hello", platform="web")
    a = active.gate("web", None).decide_reply(raw, SOURCE, NOW)
    s = shadow.gate("web", None).decide_reply(raw, SOURCE, NOW)
    assert (a.verdict, s.verdict) == ("accepted", "dead_letter")
    assert disagreements(a, s) == ["verdict", "codes"]
    judged = shadow_judgement(shadow.version, a, s, unmasked)
    assert judged.disagreements == ["verdict", "codes"]
    assert judged.policy_version == shadow.version and judged.action == "dead_letter"


def test_the_audit_record_of_a_delivery_names_rules_and_version_never_text(
    tmp_path: Path,
) -> None:
    active, shadow = gates(tmp_path, ACTIVE, "a"), gates(tmp_path, SHADOW, "s")
    text = "the canary is canary-0001 and the key tenant-secret-9f2c"
    raw = reply(text)
    a = active.gate("im", None).decide_reply(raw, SOURCE, NOW)
    s = shadow.gate("im", None).decide_reply(raw, SOURCE, NOW)
    mask = active.gate("im", None).masker
    record = audit_record(
        "delivered",
        a,
        policy_version=active.version,
        judged_at="2026-11-30T12:00:01.000Z",
        mask=lambda path: mask.mask_text(path)[0],
        tenant="acme",
        shadow=shadow_judgement(shadow.version, a, s, unmasked),
    )
    assert record is not None
    assert (record.turn_id, record.outcome, record.attempt) == ("t-42", "reply", 0)
    assert [(m.rule, m.count) for m in record.masked] == [("literal", 1)]
    assert record.shadow is not None and record.shadow.disagreements == ["masking"]
    assert record.delivered_at is not None and record.produced_at == "2026-11-30T12:00:00Z"
    written = record.model_dump_json()
    for word in ("canary", "secret", "the key", "Hello"):
        assert word not in written


def test_an_invalid_reply_audits_its_codes_with_masked_paths(tmp_path: Path) -> None:
    policy = gates(tmp_path, ACTIVE, "a")
    gate = policy.gate("im", None)
    text = orjson.dumps({"segments": [{"type": "text", "data": {"canary-0001": "x"}}]}).decode()
    decision = gate.decide_reply(encode(raw_reply(output={"text": text})), SOURCE, NOW)
    record = audit_record(
        "failure_notice",
        decision,
        policy_version=policy.version,
        judged_at="2026-11-30T12:00:01.000Z",
        mask=lambda path: gate.masker.mask_text(path)[0],
    )
    assert record is not None
    assert {(e.path, e.code) for e in record.errors} == {
        ("segments[0].data.text", "missing_field"),
        ('segments[0].data["[REDACTED:literal]"]', "unknown_field"),
    }
    assert "canary-0001" not in record.model_dump_json()
    # a path is masked again with the scope's masker: a key the gate let through is not
    leaky = audit_record(
        "failure_notice",
        decision,
        policy_version=policy.version,
        judged_at="2026-11-30T12:00:01.000Z",
        mask=lambda path: path.replace("segments", "[REDACTED:test]"),
    )
    assert leaky is not None and all("segments" not in e.path for e in leaky.errors)


@pytest.mark.parametrize("outcome", ["correction_requested", "buffered", "tool_ok", "ignored"])
def test_steps_that_end_no_turn_have_no_audit_record(tmp_path: Path, outcome: str) -> None:
    decision = gates(tmp_path, ACTIVE, "a").gate(None, None).decide_reply(reply("x"), SOURCE, NOW)
    assert AUDIT_OUTCOMES[outcome] is None
    record = audit_record(
        outcome, decision, policy_version=SETTINGS_VERSION, judged_at="-", mask=unmasked
    )
    assert record is None


def test_every_step_outcome_is_mapped() -> None:
    from typing import get_args

    from streams.core.outcomes import Outcome

    assert set(get_args(Outcome)) <= set(AUDIT_OUTCOMES)


def test_without_a_bundle_the_settings_file_is_the_policy(tmp_path: Path) -> None:
    base = GateSettings(leak_literals=["settings-canary"])  # type: ignore[list-item]
    policy = settings_policy(base)
    assert policy.version == SETTINGS_VERSION and policy.bundle is None
    files = DiskFiles.from_settings(Settings(workspaces_root=tmp_path).group(FileSettings))
    gate = PolicyGates(policy, files).gate("im", "acme")
    decision = gate.decide_reply(reply("x settings-canary"), SOURCE, NOW)
    assert b"settings-canary" not in orjson.dumps(decision.line())
