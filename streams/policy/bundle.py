"""A policy bundle: one TOML or YAML file with a `default` section and optional sections per
platform (`[platform.im]`) and per tenant (`[tenant.acme]`).

A section holds only what decides a verdict: contracts accepted and the deployment's JSON
Schema contracts, leak masking, the correction loop, platforms and record bounds. A key that is
a connection, a credential or a worker knob is refused by name, so a bundle can never move a
worker to another broker or change how it runs. The keys and their limits are the settings'
own (`streams.settings`), so a value means the same in a bundle and in a settings file.

Its version is `sha256:` + the hex digest of its canonical JSON (sorted keys, no whitespace,
schema files read in), so the same content has the same version whoever publishes it.
"""

from __future__ import annotations

import difflib
import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final

import orjson
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic.fields import FieldInfo

from schemas.records import Platform
from streams.errors import ConfigError
from streams.settings import GateSettings, SchemaContractEntry, Settings, settings_problem
from streams.settings.contracts import ContractLoadError, read_schema

# A bundle is configuration: anything larger is a mistake or an attack. Its canonical form is
# one record on the policy topic, so the topic allows a little more (`MAX_RECORD_BYTES`).
MAX_BUNDLE_BYTES: Final = 4 * 1024 * 1024
MAX_PLATFORMS: Final = 64
MAX_TENANTS: Final = 256
MAX_SECTION_NAME: Final = 200
SECTION_KINDS: Final = ("default", "platform", "tenant")

# The settings a bundle may hold, with the settings' own types and limits.
SETTING_KEYS: Final = (
    "platforms",
    "closed_platforms",
    "max_record_bytes",
    "dead_letter_record_bytes",
    "correction_deadline_seconds",
    "failure_notice_text",
    "leak_literals",
    "leak_patterns",
    "schema_contracts",
)
# Policy keys a settings file does not have (yet): which contracts a section accepts, built-in
# leak rules switched off, and the correction loop's switch and extra instructions.
OWN_KEYS: Final = (
    "contracts",
    "leak_rules_disabled",
    "correction_enabled",
    "correction_instructions",
)
POLICY_KEYS: Final = (*SETTING_KEYS, *OWN_KEYS)
# Which delivery topics exist is one answer for the whole deployment and for a tenant, never a
# platform's own (a platform section is chosen by the very name these keys judge).
NOT_PER_PLATFORM: Final = frozenset({"platforms", "closed_platforms"})
# Keys that reach a broker or an LLM, or hold a secret of the deployment's own.
CONNECTION_KEYS: Final = frozenset(
    {"kafka_bootstrap_servers", "kafka_security", "corrector", "endpoint", "config_file"}
)


class PolicyError(ConfigError):
    """A bundle that cannot be used: every reason, each naming its section and key, never a
    value (a literal or a pattern may be a secret)."""

    def __init__(self, source: str, reasons: list[str]) -> None:
        self.source = source
        self.reasons = reasons
        what = "problem" if len(reasons) == 1 else "problems"
        super().__init__(f"{source}: {len(reasons)} {what}: " + "; ".join(reasons))


def _typed(info: FieldInfo) -> Any:
    """A setting's type with its limits (`ge`, `max_length`, ...)."""
    if not info.metadata:
        return info.annotation
    return Annotated[(info.annotation, *info.metadata)]


def _optional(info: FieldInfo) -> tuple[Any, Any]:
    """A setting's type and limits, unset by default (a section sets only what it changes)."""
    return (_typed(info) | None, None)


def _schema_contract_model() -> type[BaseModel]:
    """`schema_contracts` entries as in a settings file, with the schema read in: a JSON
    object instead of a file name (the entry's other fields are the settings' own)."""
    fields: dict[str, Any] = {
        name: (_typed(info), info.get_default())
        for name, info in SchemaContractEntry.model_fields.items()
        if name != "schema_file"
    }
    fields["schema_"] = (dict[str, Any], Field(alias="schema"))
    config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)
    return create_model("BundleSchemaContract", __config__=config, **fields)


BundleSchemaContract = _schema_contract_model()


def _section_model() -> type[BaseModel]:
    fields: dict[str, Any] = {
        key: _optional(GateSettings.model_fields[key]) for key in SETTING_KEYS
    }
    fields["schema_contracts"] = (
        list[BundleSchemaContract] | None,  # type: ignore[valid-type]
        Field(default=None, max_length=100),
    )
    fields["contracts"] = (list[str] | None, Field(default=None, min_length=1, max_length=100))
    fields["leak_rules_disabled"] = (list[str] | None, Field(default=None, max_length=1000))
    fields["correction_enabled"] = (bool | None, None)
    fields["correction_instructions"] = (str | None, Field(default=None, max_length=4000))
    config = ConfigDict(extra="forbid", strict=True)
    return create_model("PolicySection", __config__=config, **fields)


Section = _section_model()


def _close(word: str, known: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def key_problem(where: str, key: str, kind: str) -> str | None:
    """Why a section may not hold `key` (None: it may): a connection or credential, a worker
    knob, a deployment-wide key in a platform section, or no key at all."""
    shown = f"{where}.{key[:100]}"
    if key in CONNECTION_KEYS:
        return f"{shown}: a connection or credential is never part of a policy bundle"
    if key in POLICY_KEYS:
        if kind == "platform" and key in NOT_PER_PLATFORM:
            return f"{shown}: set it in the default or a tenant section, not per platform"
        return None
    if key in Settings.model_fields:
        return f"{shown}: a worker setting, not policy: it stays in the worker's settings file"
    return f"{shown} names no policy key{_close(key, POLICY_KEYS)}"


@dataclass(frozen=True)
class Bundle:
    """A validated bundle: each section's keys as set (normalized), its canonical JSON and
    version. `sections` maps `default`, `platform.<name>`, `tenant.<name>` to their values."""

    sections: Mapping[str, Mapping[str, Any]]
    canonical: bytes
    version: str

    @property
    def platforms(self) -> tuple[str, ...]:
        return tuple(s.split(".", 1)[1] for s in self.sections if s.startswith("platform."))

    @property
    def tenants(self) -> tuple[str, ...]:
        return tuple(s.split(".", 1)[1] for s in self.sections if s.startswith("tenant."))

    def effective(self, platform: str | None, tenant: str | None) -> dict[str, tuple[str, Any]]:
        """Each key set for a record of this platform and tenant, with the section it comes
        from: tenant over platform over default, key by key."""
        chosen: dict[str, tuple[str, Any]] = {}
        names = ["default"]
        if platform is not None and f"platform.{platform}" in self.sections:
            names.append(f"platform.{platform}")
        if tenant is not None and f"tenant.{tenant}" in self.sections:
            names.append(f"tenant.{tenant}")
        for name in names:
            for key, value in self.sections[name].items():
                chosen[key] = (name, value)
        return chosen


def version_of(canonical: bytes) -> str:
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def canonical_json(document: Mapping[str, Any]) -> bytes:
    """Sorted keys, no whitespace: one spelling for one content."""
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS)


def _plain(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    raise TypeError(type(value).__name__)


def _read_schemas(where: str, raw: Any, folder: Path | None, reasons: list[str]) -> Any:
    """`schema_contracts` with each `schema` file name replaced by the file's JSON (read beside
    the bundle file, bounded). A bundle read from the topic must carry its schemas inline: a
    worker never opens a file a record names."""
    if not isinstance(raw, list):
        return raw
    out: list[Any] = []
    for n, entry in enumerate(raw):
        if isinstance(entry, dict) and isinstance(entry.get("schema"), str):
            at = f"{where}.schema_contracts[{n}].schema"
            if folder is None:
                reasons.append(f"{at}: a published bundle holds the schema itself, not a file name")
                continue
            try:
                entry = {**entry, "schema": read_schema(folder / entry["schema"])}
            except ContractLoadError as exc:
                reasons.append(f"{at} ({entry['schema'][:200]}): {exc}")
                continue
        out.append(entry)
    return out


def _section(where: str, kind: str, raw: Any, folder: Path | None, reasons: list[str]) -> Any:
    """One section's keys checked and its values validated; None when anything is wrong."""
    if not isinstance(raw, dict):
        reasons.append(f"{where}: a section is a table of keys")
        return None
    bad = [p for p in (key_problem(where, str(k), kind) for k in raw) if p is not None]
    if bad:
        reasons.extend(bad)
        return None
    data = {k: v for k, v in raw.items() if v is not None}
    if "schema_contracts" in data:
        data["schema_contracts"] = _read_schemas(where, data["schema_contracts"], folder, reasons)
    try:
        section = Section.model_validate(data)
    except ValidationError as exc:
        reasons.append(f"{where}: {settings_problem(exc)}")
        return None
    full = section.model_dump(by_alias=True)
    return {key: full[key] for key in sorted(section.model_fields_set)}


def _named_sections(kind: str, raw: Any, limit: int, reasons: list[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        reasons.append(f"{kind}: a table of named sections ([{kind}.NAME])")
        return {}
    if len(raw) > limit:
        reasons.append(f"{kind}: at most {limit} sections, found {len(raw)}")
        return {}
    named: dict[str, Any] = {}
    for name, section in raw.items():
        text = str(name)
        if kind == "platform" and not _is_platform(text):
            reasons.append(
                f"platform.{text[:100]}: not a platform name (a-z, 0-9, '_' and '-', at most 64)"
            )
            continue
        # A tenant is a header value as `streams.policy.apply.tenant_of` reads it.
        if not 0 < len(text) <= MAX_SECTION_NAME or not text.isprintable() or text != text.strip():
            reasons.append(
                f"{kind}: a section name is 1-{MAX_SECTION_NAME} printable characters, "
                "without spaces at its ends"
            )
            continue
        named[f"{kind}.{text}"] = section
    return named


_PLATFORM: Final = TypeAdapter(Platform)


def _is_platform(name: str) -> bool:
    """A name a record's `platform` can hold (the records' own rule)."""
    try:
        _PLATFORM.validate_python(name)
    except ValidationError:
        return False
    return True


def bundle_from_document(document: Any, source: str, folder: Path | None = None) -> Bundle:
    """A bundle from its parsed form (a file's tables, or a record of the policy topic).

    `folder` is where schema file names are read (a file's own folder); without it, schemas
    must be inline. Raises PolicyError with every reason found.
    """
    reasons: list[str] = []
    if not isinstance(document, dict):
        raise PolicyError(source, ["a bundle is a table with a default section"])
    for key in document:
        if key not in SECTION_KINDS:
            reasons.append(
                f"{str(key)[:100]}: not a section (default, platform.NAME, tenant.NAME)"
                f"{_close(str(key), SECTION_KINDS)}"
            )
    if "default" not in document:
        reasons.append("default: the section is missing (it may be empty)")
    raw: dict[str, Any] = {"default": document.get("default", {})}
    raw |= _named_sections("platform", document.get("platform", {}), MAX_PLATFORMS, reasons)
    raw |= _named_sections("tenant", document.get("tenant", {}), MAX_TENANTS, reasons)
    sections: dict[str, Any] = {}
    for where, section in raw.items():
        checked = _section(where, where.split(".", 1)[0], section, folder, reasons)
        if checked is not None:
            sections[where] = checked
    if reasons:
        raise PolicyError(source, reasons)
    canonical_doc: dict[str, Any] = {
        "default": sections["default"],
        "platform": {
            w.split(".", 1)[1]: s for w, s in sections.items() if w.startswith("platform.")
        },
        "tenant": {w.split(".", 1)[1]: s for w, s in sections.items() if w.startswith("tenant.")},
    }
    try:
        canonical = orjson.dumps(canonical_doc, option=orjson.OPT_SORT_KEYS, default=_plain)
    except (orjson.JSONEncodeError, RecursionError) as exc:  # nested deeper than JSON allows
        raise PolicyError(source, [f"cannot be written as JSON: {exc}"]) from None
    if len(canonical) > MAX_BUNDLE_BYTES:
        raise PolicyError(source, [f"its JSON form is larger than {MAX_BUNDLE_BYTES} bytes"])
    return Bundle(sections, canonical, version_of(canonical))


class _NoAliases(yaml.SafeLoader):
    """YAML without anchors and aliases: an alias bomb is a few lines that expand to gigabytes
    once the bundle is written as JSON."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "aliases are not allowed in a policy bundle", event.start_mark
            )
        return super().compose_node(parent, index)


def parse_bundle_text(data: bytes, kind: str) -> Any:
    """The tables of a TOML or YAML bundle; ValueError in the parser's words."""
    text = data.decode("utf-8")
    if kind == "TOML":
        return tomllib.loads(text)
    return yaml.load(text, Loader=_NoAliases)  # a SafeLoader without aliases


def read_bundle(path: Path) -> Bundle:
    """A bundle file: TOML (`.toml`) or YAML (`.yaml`, `.yml`), at most MAX_BUNDLE_BYTES;
    its schema file names are read beside it."""
    source = str(path)
    suffix = path.suffix.lower()
    kind = "YAML" if suffix in (".yaml", ".yml") else "TOML" if suffix == ".toml" else None
    if kind is None:
        raise PolicyError(source, ["use a .toml, .yaml or .yml file"])
    if not path.is_file():  # also keeps a FIFO from blocking
        raise PolicyError(source, ["the file does not exist or is not a regular file"])
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BUNDLE_BYTES + 1)
    except OSError as exc:
        raise PolicyError(
            source, [f"cannot read it: {exc.strerror or type(exc).__name__}"]
        ) from None
    if len(data) > MAX_BUNDLE_BYTES:
        raise PolicyError(source, [f"the file is larger than {MAX_BUNDLE_BYTES} bytes"])
    try:
        document = parse_bundle_text(data, kind)
    except (UnicodeDecodeError, ValueError, yaml.YAMLError, RecursionError) as exc:
        problem = " ".join(str(exc).split())[:300]
        raise PolicyError(source, [f"not valid {kind}: {problem}"]) from None
    read = bundle_from_document(document, source, path.resolve().parent)
    # Judged as a worker will judge it: its canonical JSON read back, so a value JSON cannot
    # hold as written (a YAML date, a TOML NaN in a schema) is checked as the worker sees it.
    return bundle_from_record(read.canonical, source)


def bundle_from_record(value: bytes, source: str = "the policy topic") -> Bundle:
    """A bundle as the policy topic holds it: its canonical JSON, schemas inline. The record
    must be exactly the canonical form, so its version is the one its publisher printed."""
    if len(value) > MAX_BUNDLE_BYTES:
        raise PolicyError(source, [f"the record is larger than {MAX_BUNDLE_BYTES} bytes"])
    try:
        document = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise PolicyError(source, [f"not JSON: {exc}"]) from None
    bundle = bundle_from_document(document, source)
    if bundle.canonical != value:
        raise PolicyError(
            source, ["the record is not in canonical form (sorted keys, no whitespace)"]
        )
    return bundle
