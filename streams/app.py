"""`faust -A streams.app worker` (what `replygate worker` runs): the worker's Faust app.

One app a process, from settings loaded once and a contract registry built once: `replygate
worker` loads both and calls `build` before Faust's command line asks for `app`; under `faust -A
streams.app` alone they are loaded here when Faust first asks. Importing the module builds
nothing; `streams.worker.app.create_app` is the factory.
"""

from __future__ import annotations

from typing import Any

from schemas.contract import ReplyContract
from streams.settings import Settings, load_settings
from streams.settings.contracts import build_registry
from streams.worker.app import GateApp, create_app


def build(settings: Settings, contracts: dict[str, ReplyContract]) -> GateApp:
    """The process's app, from the settings and registry its caller made (`app` from now on)."""
    built = create_app(settings, contracts)
    globals()["app"] = built
    return built


def __getattr__(name: str) -> Any:
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    settings = load_settings()
    return build(settings, build_registry(settings))
