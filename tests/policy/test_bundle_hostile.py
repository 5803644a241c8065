"""Every bundle is someone's attack: whatever a file or a policy record holds, reading and
loading it ends in a bundle or a PolicyError naming the problem, bounded in size and time."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.policy.bundle import (
    MAX_BUNDLE_BYTES,
    PolicyError,
    bundle_from_document,
    bundle_from_record,
    read_bundle,
)
from streams.policy.load import load_policy
from streams.settings import GateSettings

KEYS = st.sampled_from(
    [
        "default",
        "platform",
        "tenant",
        "im",
        "acme",
        "leak_literals",
        "leak_patterns",
        "contracts",
        "schema_contracts",
        "name",
        "schema",
        "platforms",
        "closed_platforms",
        "max_record_bytes",
        "correction_enabled",
        "kafka_security",
        "x",
    ]
)
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS)
def test_any_document_is_a_bundle_or_a_policy_error(document: Any) -> None:
    try:
        bundle = bundle_from_document(document, "fuzz")
    except PolicyError as exc:
        assert exc.reasons and all(isinstance(r, str) and r for r in exc.reasons)
        return
    try:
        load_policy(bundle, GateSettings())
    except PolicyError as exc:
        assert exc.reasons


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_record_is_a_bundle_or_a_policy_error(value: bytes) -> None:
    with contextlib.suppress(PolicyError):
        bundle_from_record(value)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.yaml", "default: " + "[" * 50_000 + "]" * 50_000 + "\n"),
        ("deep.toml", "[default]\nplatforms = " + "[" * 50_000 + "]" * 50_000 + "\n"),
        ("binary.toml", "\udcff"),
        ("tabs.yaml", "default:\n\t- x\n"),
    ],
)
def test_a_file_nested_too_deep_or_not_text_is_refused(
    tmp_path: Path, name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(PolicyError) as caught:
        read_bundle(path)
    assert str(path) in str(caught.value)


def test_a_deep_inline_schema_is_refused_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text(
        '{"properties": {"a": ' * 2000 + "{}" + "}}" * 2000, encoding="utf-8"
    )
    path = tmp_path / "p.toml"
    path.write_text('[[default.schema_contracts]]\nname = "acme.deep.v1"\nschema = "deep.json"\n')
    with pytest.raises(PolicyError):
        load_policy(read_bundle(path), GateSettings())


def test_a_file_too_large_or_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (MAX_BUNDLE_BYTES + 1))
    with pytest.raises(PolicyError, match="larger than"):
        read_bundle(big)
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(PolicyError, match="not a regular file"):
        read_bundle(fifo)
    with pytest.raises(PolicyError, match=r"use a \.toml, \.yaml or \.yml file"):
        read_bundle(tmp_path / "p.json")
    (tmp_path / "schema.toml").write_text(
        '[[default.schema_contracts]]\nname = "a.b.v1"\nschema = "fifo.toml"\n'
    )
    with pytest.raises(PolicyError, match="not a regular file"):
        read_bundle(tmp_path / "schema.toml")
