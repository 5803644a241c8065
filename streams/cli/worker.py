"""`replygate worker`: Faust's own worker command on `streams.app`, plus `--config`."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def split_config(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Take our `--config FILE` out; every other option is Faust's."""
    rest: list[str] = []
    config: str | None = None
    args = iter(argv)
    for arg in args:
        if arg == "--config":
            config = next(args, None)
            if config is None:
                raise SystemExit("replygate worker: --config needs a file")
        elif arg.startswith("--config="):
            config = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return config, rest


def run_worker(argv: Sequence[str]) -> int:
    config, faust_args = split_config(argv)
    if config is not None:
        os.environ["REPLYGATE_CONFIG_FILE"] = config
    from pydantic import ValidationError

    from streams.cli.main import settings_problem
    from streams.settings import EXACTLY_ONCE_REFUSED, load_settings

    try:
        settings = load_settings()
    except (OSError, ValueError, ValidationError) as exc:
        print(f"replygate worker: settings: {settings_problem(exc)}", file=sys.stderr)
        return 2
    from streams.core.contracts import build_registry

    try:
        build_registry(settings)  # a bad contract stops the worker here, before Faust starts
    except ValueError as exc:
        print(f"replygate worker: settings: {exc}", file=sys.stderr)
        return 2
    if settings.processing_guarantee == "exactly_once":
        print(f"replygate worker: {EXACTLY_ONCE_REFUSED}", file=sys.stderr)
        return 2
    # replygate serves /metrics, /livez and /readyz itself (metrics_port); Faust's own web
    # server would take port 6066 on every worker, so a second worker on a host could not start.
    if not any(a == "--with-web" or a.startswith("--web-port") for a in faust_args):
        faust_args = [*faust_args, "--without-web"]
    if not any(a in ("-l", "--loglevel") or a.startswith("--loglevel=") for a in faust_args):
        faust_args = [*faust_args, "--loglevel", os.environ.get("REPLYGATE_LOGLEVEL", "info")]
    from faust.cli.faust import cli

    cli.main(args=["-A", "streams.app", "worker", *faust_args], prog_name="replygate worker")
    return 0
