"""`replygate demo`: the bundled samples through a real broker and a real worker."""

from __future__ import annotations

import argparse
from typing import IO

from streams.cli.command import Command, add_config, help_text
from streams.errors import ConfigError


def run(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    from streams.settings import load_settings

    settings = load_settings(args.config)
    try:
        from replygate_dev.demo import run_demo
    except ImportError:
        raise ConfigError(
            "the demo is a development tool, not shipped with replygate: run `make demo` "
            "in a checkout of the repository"
        ) from None
    return run_demo(settings)


COMMAND = Command(
    name="demo",
    summary="the whole story on a local broker and a real worker",
    description=(
        "Feed the bundled sample records through a real broker and a real worker and show\n"
        "what happened to each. A development tool: run `make demo` in a checkout."
    ),
    help=help_text(
        "  kafka_bootstrap_servers (the local broker of `make kafka-up`).",
        "  0  every sample ended as expected\n  1  one did not, or the broker failed\n"
        "  2  a bad setting, or not run from a checkout",
        "make demo",
    ),
    arguments=add_config,
    run=run,
    extra="worker",
    needs=("faust", "aiokafka", "rich"),
)
