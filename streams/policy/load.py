"""A bundle loaded into what the gate judges with: for each platform and tenant, the gate's
settings, the contracts it accepts, its masker and its correction loop.

Loading uses the worker's own code: the settings models and their validators
(`GateSettings`), the contract registry (`build_registry`, `SchemaContract`) and the masker
(`Masker`), so `replygate policy check` refuses exactly what a worker would. Everything is
built at once, for every section and every combination of a platform and a tenant section, so
a bundle either loads whole or not at all; a masker or a registry that two scopes share is
built once.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from schemas.contract import ReplyContract
from schemas.schema_contract import SchemaContract, SchemaError
from streams.core.leak_compile import BUILTIN_RULE_IDS, LeakRuleError
from streams.core.leaks import Masker
from streams.core.pipeline import Gate
from streams.core.ports import FileStage
from streams.core.versions import SETTINGS_VERSION
from streams.policy.bundle import SETTING_KEYS, Bundle, PolicyError
from streams.settings import GateSettings, settings_problem
from streams.settings.contracts import ContractLoadError, build_registry

# The settings keys a scope takes from its sections; `schema_contracts` becomes the registry.
_GATE_KEYS: Final = tuple(k for k in SETTING_KEYS if k != "schema_contracts")
# Where a scope's value comes from when no section sets it.
UNSET: Final = "(unset)"
# A record with no tenant, or one no section names; a platform no section names.
ANY: Final = None


@dataclass(frozen=True, slots=True)
class Correction:
    """The correction loop of a scope: whether an invalid reply gets its one correction, how
    long the turn waits for it, and instructions added to the contract's own."""

    enabled: bool
    deadline_seconds: float
    instructions: str | None


@dataclass(frozen=True, slots=True)
class Scope:
    """What judges the records of one platform and tenant under one version."""

    settings: GateSettings
    contracts: Mapping[str, ReplyContract]
    masker: Masker
    correction: Correction
    leak_rules_disabled: frozenset[str]


@dataclass(frozen=True)
class Policy:
    """A loaded bundle: its version and a scope for every platform and tenant section
    (`bundle` None: the worker's settings file, `settings_policy`)."""

    version: str
    bundle: Bundle | None
    scopes: Mapping[tuple[str | None, str | None], Scope]

    def scope(self, platform: str | None, tenant: str | None) -> Scope:
        return self.scopes[scope_key(self.scopes, platform, tenant)]


def scope_key(
    keys: Mapping[tuple[str | None, str | None], object], platform: str | None, tenant: str | None
) -> tuple[str | None, str | None]:
    """Which scope judges a record: a platform or tenant without a section of its own takes
    the default's keys (and the other section's)."""
    p = platform if (platform, ANY) in keys else ANY
    t = tenant if (ANY, tenant) in keys else ANY
    return (p, t)


def _base_values(base: GateSettings) -> dict[str, Any]:
    """The worker's gate settings; every policy key at its default (a bundle is complete:
    what it does not set is the documented default, not whatever a worker started with)."""
    values = {name: getattr(base, name) for name in GateSettings.model_fields}
    for key in SETTING_KEYS:
        values[key] = GateSettings.model_fields[key].get_default(call_default_factory=True)
    return values


def _check_sections(bundle: Bundle, base: dict[str, Any], reasons: list[str]) -> None:
    """Each section alone against the settings' validators, and its rule ids known."""
    for where, section in bundle.sections.items():
        values = {**base, **{k: v for k, v in section.items() if k in _GATE_KEYS}}
        try:
            GateSettings.model_validate(values)
        except ValidationError as exc:
            reasons.append(f"{where}: {settings_problem(exc)}")
        for rule_id in section.get("leak_rules_disabled", ()):
            if rule_id not in BUILTIN_RULE_IDS:
                close = difflib.get_close_matches(rule_id, BUILTIN_RULE_IDS, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                reasons.append(
                    f"{where}.leak_rules_disabled: {rule_id[:100]!r} names no built-in rule{hint}"
                )


def _registry(
    base: Mapping[str, ReplyContract], where: str, entries: list[dict[str, Any]]
) -> dict[str, ReplyContract]:
    """The built-ins and the worker's own contracts, plus a section's schema contracts."""
    registry = dict(base)
    for entry in entries:
        name = entry["name"]
        if name in registry:
            raise ContractLoadError(
                f"{where}.schema_contracts {name[:100]!r}: the name is a built-in or registered "
                "contract's, or registered twice"
            )
        try:
            registry[name] = SchemaContract(
                name,
                entry["schema"],
                entry.get("instructions"),
                **{k: v for k, v in entry.items() if k not in ("name", "schema", "instructions")},
            )
        except SchemaError as exc:
            raise ContractLoadError(f"{where}.schema_contracts {name[:100]!r}: {exc}") from None
    return registry


class _Builder:
    """Scopes built from a bundle, sharing maskers and registries among scopes whose keys
    come from the same sections."""

    def __init__(self, bundle: Bundle, base: GateSettings, reasons: list[str]) -> None:
        self.bundle = bundle
        self.values = _base_values(base)
        self.reasons = reasons
        self.maskers: dict[tuple[str, ...], Masker | None] = {}
        self.registries: dict[str, dict[str, ReplyContract] | None] = {}
        self.scopes: dict[tuple[str, ...], Scope | None] = {}
        no_schemas = base.model_copy(update={"schema_contracts": []})
        self.builtins = build_registry(no_schemas)

    def masker(self, chosen: dict[str, tuple[str, Any]]) -> Masker | None:
        keys = ("leak_literals", "leak_patterns", "leak_rules_disabled")
        origin = tuple(chosen.get(k, (UNSET, None))[0] for k in keys)
        if origin not in self.maskers:
            literals = [s.get_secret_value() for s in chosen.get(keys[0], ("", []))[1]]
            try:
                self.maskers[origin] = Masker(
                    literals,
                    dict(chosen.get(keys[1], ("", {}))[1]),
                    frozenset(chosen.get(keys[2], ("", []))[1]),
                )
            except LeakRuleError as exc:
                self.reasons.append(f"{'+'.join(sorted(set(origin) - {UNSET}))}: {exc}")
                self.maskers[origin] = None
        return self.maskers[origin]

    def registry(self, chosen: dict[str, tuple[str, Any]]) -> dict[str, ReplyContract] | None:
        where, entries = chosen.get("schema_contracts", (UNSET, []))
        if where not in self.registries:
            try:
                self.registries[where] = _registry(self.builtins, where, entries)
            except ContractLoadError as exc:
                self.reasons.append(str(exc))
                self.registries[where] = None
        return self.registries[where]

    def scope(self, platform: str | None, tenant: str | None) -> Scope | None:
        chosen = self.bundle.effective(platform, tenant)
        origin = tuple(f"{k}={chosen[k][0]}" for k in sorted(chosen))
        if origin in self.scopes:
            return self.scopes[origin]
        masker, registry = self.masker(chosen), self.registry(chosen)
        scope = None
        if masker is not None and registry is not None:
            scope = self._scope(chosen, masker, registry, platform, tenant)
        self.scopes[origin] = scope
        return scope

    def _scope(
        self,
        chosen: dict[str, tuple[str, Any]],
        masker: Masker,
        registry: dict[str, ReplyContract],
        platform: str | None,
        tenant: str | None,
    ) -> Scope | None:
        values = {**self.values, **{k: v for k, (_, v) in chosen.items() if k in _GATE_KEYS}}
        try:
            settings = GateSettings.model_validate(values)
        except ValidationError as exc:  # each section was valid alone: a rare combination
            self.reasons.append(f"{_named(platform, tenant)}: {settings_problem(exc)}")
            return None
        accepted = registry
        if "contracts" in chosen:
            where, names = chosen["contracts"]
            unknown = [n for n in names if n not in registry]
            if unknown:
                self.reasons.append(
                    f"{where}.contracts: {unknown[0][:100]!r} is not a registered contract"
                    f" for {_named(platform, tenant)}{_hint(unknown[0], registry)}"
                )
                return None
            accepted = {n: registry[n] for n in names}
        correction = Correction(
            enabled=chosen.get("correction_enabled", ("", True))[1],
            deadline_seconds=settings.correction_deadline_seconds,
            instructions=chosen.get("correction_instructions", ("", None))[1],
        )
        disabled = frozenset(chosen.get("leak_rules_disabled", ("", []))[1])
        return Scope(settings, accepted, masker, correction, disabled)


def _named(platform: str | None, tenant: str | None) -> str:
    parts = [f"platform {platform!r}" if platform else "any platform"]
    parts.append(f"tenant {tenant!r}" if tenant else "no tenant")
    return " and ".join(parts)


def _hint(name: str, registry: Mapping[str, Any]) -> str:
    close = difflib.get_close_matches(name, sorted(registry), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def load_policy(bundle: Bundle, base: GateSettings, source: str | None = None) -> Policy:
    """The bundle as the gate uses it, on top of the worker's non-policy settings (topic names,
    `extra_contracts`, state horizons). Raises PolicyError with every reason found, naming
    `source` (the bundle's file; its version by default): a bundle is used whole or not at
    all."""
    source = bundle.version if source is None else source
    reasons: list[str] = []
    values = _base_values(base)
    _check_sections(bundle, values, reasons)
    if reasons:
        raise PolicyError(source, reasons)
    try:
        builder = _Builder(bundle, base, reasons)
    except ContractLoadError as exc:  # the worker's own extra_contracts
        raise PolicyError(source, [str(exc)]) from None
    scopes: dict[tuple[str | None, str | None], Scope] = {}
    for platform in (ANY, *bundle.platforms):
        for tenant in (ANY, *bundle.tenants):
            scope = builder.scope(platform, tenant)
            if scope is not None:
                scopes[(platform, tenant)] = scope
    if reasons:
        raise PolicyError(source, sorted(set(reasons), key=reasons.index))
    return Policy(bundle.version, bundle, scopes)


def settings_policy(base: GateSettings) -> Policy:
    """The worker's settings file as the policy, what judges while no bundle is published:
    one scope, built as the gate always built it (`build_registry`, `Masker.from_settings`)."""
    scope = Scope(
        base,
        build_registry(base),
        Masker.from_settings(base),
        Correction(True, base.correction_deadline_seconds, None),
        frozenset(),
    )
    return Policy(SETTINGS_VERSION, None, {(ANY, ANY): scope})


class PolicyGates:
    """A `Gate` for every scope of one policy, built at once (in the loading thread, not on the
    hot path); scopes that are one object share one gate, and each gate masks with its
    scope's masker."""

    def __init__(self, policy: Policy, files: FileStage) -> None:
        self.policy = policy
        built: dict[int, Gate] = {}
        self._gates: dict[tuple[str | None, str | None], Gate] = {}
        for key, scope in policy.scopes.items():
            gate = built.get(id(scope))
            if gate is None:
                gate = Gate(scope.settings, files, dict(scope.contracts), scope.masker)
                built[id(scope)] = gate
            self._gates[key] = gate

    @property
    def version(self) -> str:
        return self.policy.version

    def gate(self, platform: str | None, tenant: str | None) -> Gate:
        """The gate that judges a record of this platform and tenant."""
        return self._gates[scope_key(self._gates, platform, tenant)]
