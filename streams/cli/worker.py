"""`replygate worker`: Faust's own worker command on `streams.app`, plus `--config`.

`-h` is replygate's help here, never Faust's `--web-host`: asking for help starts nothing.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import IO

from streams.cli.command import Command, add_config, help_text


def arguments(parser: argparse.ArgumentParser) -> None:
    add_config(parser)


def faust_argv(faust_args: Sequence[str], loglevel: str) -> list[str]:
    """Faust's worker options with replygate's defaults: no Faust web server (replygate serves
    /metrics, /livez and /readyz itself on metrics_port; Faust's would take port 6066 on every
    worker, so a second worker on a host could not start) and a log level."""
    args = list(faust_args)
    if not any(a == "--with-web" or a.startswith("--web-port") for a in args):
        args.append("--without-web")
    if not any(a in ("-l", "--loglevel") or a.startswith("--loglevel=") for a in args):
        args += ["--loglevel", loglevel]
    return args


def run(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    """Settings loaded and the registry built once, the app built from them (a bad setting or
    contract stops the worker here, before Faust starts), then Faust's worker command."""
    from faust.cli.faust import cli

    from streams.app import build
    from streams.settings import load_settings
    from streams.settings.contracts import build_registry

    settings = load_settings(args.config)
    build(settings, build_registry(settings))

    argv = faust_argv(args.passed_on, os.environ.get("REPLYGATE_LOGLEVEL", "info"))
    cli.main(args=["-A", "streams.app", "worker", *argv], prog_name="replygate worker")
    return 0


def run_worker(argv: Sequence[str]) -> int:
    """`replygate worker ARGS`, as the command line runs it."""
    from streams.cli.main import main

    return main(["worker", *argv])


COMMAND = Command(
    name="worker",
    summary="run the stream processor (a Faust worker); Faust's worker options pass through",
    description=(
        "Run the stream processor: the same as `faust -A streams.app worker`. Options other\n"
        "than --config go to Faust's worker (--loglevel, --with-web, ...); -h is this help."
    ),
    help=help_text(
        "  kafka_bootstrap_servers, kafka_security.*; app_id; topic_prefix; partitions;\n"
        "  workspaces_root, media_root; correction_deadline_seconds; corrector.*;\n"
        "  metrics_port; store, data_dir; batch_*, fetch_*, producer_* (docs/settings.md).\n"
        "  REPLYGATE_LOGLEVEL sets the log level (info).",
        "  0  stopped by SIGINT or SIGTERM\n"
        "  1  a send or the broker failed while running (the next owner replays the input)\n"
        "  2  a bad setting or contract, or the worker extra is not installed",
        "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS=kafka:9092 replygate worker --config gate.toml",
    ),
    arguments=arguments,
    run=run,
    extra="worker",
    needs=("faust", "aiokafka", "prometheus_client"),
    passes_options_on=True,
)
