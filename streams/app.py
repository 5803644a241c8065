"""`faust -A streams.app worker` (what `replygate worker` runs): the worker's Faust app.

The app is built from the settings when Faust asks for `app`, not whenever this module is
imported; `streams.worker.app.create_app` is the factory.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from streams.settings import load_settings
    from streams.worker.app import create_app

    built = create_app(load_settings())
    globals()["app"] = built
    return built
