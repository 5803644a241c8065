"""Settings read in the shell: REPLYGATE_* environment variables and an optional TOML/YAML file.

The one place replygate reads its environment and config file (the command line and
`faust -A streams.app` call `load_settings` once per process and hand the result on); the
core only ever sees the models of `streams.settings.model`.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from streams.errors import ConfigError
from streams.settings.model import Settings, model_of, settings_problem

ENV_PREFIX = "REPLYGATE_"


class _Sources(Settings, BaseSettings):
    """`Settings` as pydantic-settings fills it: the environment, then the config file."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, _EnvSource(settings_cls), *_config_sources(_config_file.get()))


def _config_sources(path: Path | None) -> tuple[PydanticBaseSettingsSource, ...]:
    """The config file as a settings source, chosen by its suffix."""
    if path is None:
        return ()
    if not path.is_file():
        raise FileNotFoundError(f"config file {path} does not exist or is not a file")
    import yaml

    suffix = path.suffix.lower()
    kind = "YAML" if suffix in (".yaml", ".yml") else "TOML" if suffix == ".toml" else None
    if kind is None:
        raise ValueError(f"config file {path}: use a .toml, .yaml or .yml file")
    try:
        if kind == "YAML":
            return (_BesideFile(YamlConfigSettingsSource(_Sources, yaml_file=path), path),)
        return (_BesideFile(TomlConfigSettingsSource(_Sources, toml_file=path), path),)
    except (ValueError, yaml.YAMLError) as exc:  # the parser's words, on one line
        problem = " ".join(str(exc).split())
        raise ValueError(f"config file {path} is not valid {kind}: {problem}") from None


def _path_field(annotation: Any) -> bool:
    """`Path` or `Path | None`: a setting whose value names a file or folder."""
    return annotation is Path or (
        getattr(annotation, "__args__", None) is not None
        and Path in annotation.__args__
        and set(annotation.__args__) <= {Path, type(None)}
    )


def beside(data: Any, model: type[BaseModel], folder: Path) -> Any:
    """A config file's values with every relative path put beside the file: one rule for
    `workspaces_root`, `media_root`, `data_dir`, TLS files and `schema_contracts` alike."""
    if not isinstance(data, dict):
        return data
    out = dict(data)
    for name, info in model.model_fields.items():
        key = info.alias if info.alias is not None and info.alias in out else name
        if key not in out:
            continue
        value = out[key]
        if _path_field(info.annotation):
            if isinstance(value, str) and value and not Path(value).is_absolute():
                out[key] = str(folder / value)
            continue
        inner = model_of(info.annotation)
        if inner is None:
            continue
        if isinstance(value, list):
            out[key] = [beside(item, inner, folder) for item in value]
        else:
            out[key] = beside(value, inner, folder)
    return out


class _BesideFile(PydanticBaseSettingsSource):
    """A config file source whose relative paths are read beside the file, wherever the
    command runs from (a path from the environment or an option stays as given)."""

    def __init__(self, inner: PydanticBaseSettingsSource, path: Path) -> None:
        super().__init__(inner.settings_cls)
        self.inner = inner
        self.folder = path.resolve().parent

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return self.inner.get_field_value(field, field_name)

    def __call__(self) -> dict[str, Any]:
        return dict(beside(self.inner(), self.settings_cls, self.folder))


_config_file: ContextVar[Path | None] = ContextVar("replygate_config_file", default=None)

# REPLYGATE_* variables that are not settings: the worker's log level, the crash tests'
# failpoint, the image name of the Compose file.
OTHER_VARIABLES = frozenset({"REPLYGATE_LOGLEVEL", "REPLYGATE_FAILPOINT", "REPLYGATE_IMAGE"})
# What Kubernetes injects for a Service named replygate-* in a pod whose service links are on
# (the default): for a Service `replygate-metrics` with port 9108,
# `REPLYGATE_METRICS_SERVICE_HOST`, `_SERVICE_PORT`, `_SERVICE_PORT_<PORT NAME>`,
# `REPLYGATE_METRICS_PORT_9108_TCP` and its `_ADDR`, `_PORT`, `_PROTO`, and the bare
# `REPLYGATE_METRICS_PORT=tcp://10.96.0.5:9108`. None is a setting or a typo, whatever the
# Service is called; the bare form is known by its value (it can share a setting's name).
_SERVICE_LINK_NAME = re.compile(
    r"[A-Z0-9_]+_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT_[0-9]+_(TCP|UDP|SCTP)(_PROTO|_PORT|_ADDR)?)"
)
_SERVICE_LINK_URL = re.compile(r"(tcp|udp|sctp)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):[0-9]{1,5}")


def is_service_link(name: str, value: str | None) -> bool:
    """Whether a variable is one Kubernetes injects for a Service, not a setting."""
    upper = name.upper()
    if _SERVICE_LINK_NAME.fullmatch(upper):
        return True
    return (
        upper.endswith("_PORT")
        and value is not None
        and _SERVICE_LINK_URL.fullmatch(value.strip()) is not None
    )


def _is_scalar_list(annotation: Any) -> bool:
    """`list[str]`, `list[SecretStr]`: a list whose items a comma-separated value can spell."""
    args = getattr(annotation, "__args__", ())
    return getattr(annotation, "__origin__", None) is list and args in ((str,), (SecretStr,))


class _EnvSource(EnvSettingsSource):
    """The environment as pydantic-settings reads it, plus `a,b` for a list of words: a value
    that is not a JSON array is split at its commas (`REPLYGATE_PLATFORMS=im,web`)."""

    def decode_complex_value(self, field_name: str, field: FieldInfo, value: Any) -> Any:
        if (
            isinstance(value, str)
            and _is_scalar_list(field.annotation)
            and not value.lstrip().startswith("[")
        ):
            return [part.strip() for part in value.split(",") if part.strip()]
        return super().decode_complex_value(field_name, field, value)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        """The environment without Kubernetes' service-link variables: a Service named
        `replygate-metrics` sets `REPLYGATE_METRICS_PORT=tcp://...`, which is no port number."""
        return {
            name: value
            for name, value in super()._load_env_vars().items()
            if not is_service_link(name, value)
        }


def setting_variables(model: type[BaseModel] = Settings, prefix: str = ENV_PREFIX) -> set[str]:
    """Every environment variable that names a setting: `REPLYGATE_PARTITIONS`, and for a
    group both `REPLYGATE_CORRECTOR` (JSON) and `REPLYGATE_CORRECTOR__MODEL`."""
    names: set[str] = set()
    for name, info in model.model_fields.items():
        variable = prefix + name.upper()
        names.add(variable)
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names |= setting_variables(annotation, variable + "__")
    return names


def unknown_variable(environ: Mapping[str, str]) -> str | None:
    """The first REPLYGATE_* variable that names no setting, said with the closest one."""
    known = setting_variables() | OTHER_VARIABLES
    for variable in sorted(environ):
        upper = variable.upper()
        if not upper.startswith(ENV_PREFIX) or is_service_link(upper, environ[variable]):
            continue
        if upper in known:
            continue
        close = difflib.get_close_matches(upper, sorted(known), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"environment variable {variable[:100]} names no setting{hint}"
    return None


def _not_json(message: str) -> str:
    """pydantic-settings' parse error, naming the variable instead of its own source class."""
    field = re.search(r'field "([^"]+)"', message)
    if field is None:
        return " ".join(message.split())
    return f"{ENV_PREFIX}{field.group(1).upper()}: the value is not valid JSON"


def load_settings(config_file: Path | str | None = None, **overrides: Any) -> Settings:
    """Settings from defaults < config file (TOML/YAML) < REPLYGATE_* environment < overrides.

    Raises ConfigError with one line: an unknown REPLYGATE_* variable is refused like an
    unknown key in the file, since a misspelt one would otherwise be ignored without a word.
    """
    problem = unknown_variable(os.environ)
    if problem is not None:
        raise ConfigError(f"settings: {problem}")
    raw = config_file or os.environ.get("REPLYGATE_CONFIG_FILE") or None
    path = Path(raw) if raw else None
    try:
        _config_sources(path)  # fail early, with the file's name, before pydantic-settings
    except (OSError, ValueError) as exc:
        raise ConfigError(f"settings: {exc}") from None
    token = _config_file.set(path)
    try:
        loaded = _Sources(**overrides, config_file=path)
    except ValidationError as exc:
        raise ConfigError(f"settings: {settings_problem(exc)}") from None
    except SettingsError as exc:  # a variable whose value is not JSON
        raise ConfigError(f"settings: {_not_json(str(exc))}") from None
    finally:
        _config_file.reset(token)
    # The plain model, already validated: nothing downstream can read the environment again.
    values = {name: getattr(loaded, name) for name in Settings.model_fields}
    return Settings.model_construct(loaded.model_fields_set, **values)
