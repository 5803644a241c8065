"""`replygate topics`: create the topics with their configured partitions (idempotent)."""

from __future__ import annotations

import argparse
from typing import IO

from streams.cli.command import Command, add_config, help_text


def run(args: argparse.Namespace, stdout: IO[bytes]) -> int:
    from streams.broker.topology import run_topics
    from streams.settings import load_settings

    return run_topics(load_settings(args.config))


COMMAND = Command(
    name="topics",
    summary="create the topics (idempotent)",
    description="Create every topic replygate reads and writes, with the configured partitions.",
    help=help_text(
        "  kafka_bootstrap_servers, kafka_security.*; topic_prefix, topics.*; platforms;\n"
        "  partitions, replication_factor (docs/settings.md).",
        "  0  every topic exists\n  1  the broker refused or could not be reached\n"
        "  2  a bad setting, or the endpoint extra is not installed",
        "REPLYGATE_KAFKA_BOOTSTRAP_SERVERS=kafka:9092 replygate topics",
    ),
    arguments=add_config,
    run=run,
    extra="endpoint",  # a Kafka admin client is all it needs
    needs=("aiokafka",),
)
