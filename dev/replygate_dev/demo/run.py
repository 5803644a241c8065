"""`replygate demo`: the run, from the sample file to the exit status."""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from pathlib import Path

from replygate_dev.demo.outcomes import evaluate, expected_outcomes
from replygate_dev.demo.policy import render_policy
from replygate_dev.demo.processes import copy_files
from replygate_dev.demo.report import failures, make_console, render, render_figures
from replygate_dev.demo.samples import SAMPLES_FILE, read_samples
from replygate_dev.demo.story import Demo, DemoFailed
from streams.broker.ready import KafkaNotReady, describe
from streams.broker.topology import TopicsRefused
from streams.settings import Settings


def _execute(demo: Demo) -> str | None:
    """Run the demo; always stop the worker and remove this run's topics. The error, if any."""
    from aiokafka.errors import KafkaError
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("{task.description:<18}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=demo.console,
    )
    try:
        asyncio.run(demo.check_broker())
        copy_files(demo.root)
        with progress:
            asyncio.run(demo.main(progress))
    except DemoFailed as exc:
        return str(exc)
    except (KafkaNotReady, TopicsRefused, KafkaError) as exc:
        return f"Kafka at {demo.settings.kafka_bootstrap_servers}: {describe(exc)}"
    finally:
        demo.stop()
        if demo.created_topics:
            asyncio.run(demo.delete_topics())
    return None


def run_demo(settings: Settings, samples_file: Path = SAMPLES_FILE) -> int:
    """`replygate demo`: 0 only when every sample ended in its expected outcome."""
    console = make_console()
    # aiokafka logs while fresh topics elect leaders (it retries) and when a broker is down
    # (the demo says so itself): keep the screen for the story.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    samples = read_samples(samples_file)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="replygate-demo-") as tmp:
        demo = Demo(settings, samples, Path(tmp), console)
        console.print(
            f"replygate demo on {demo.settings.kafka_bootstrap_servers}: topics "
            f"{demo.settings.topic_prefix}*, app id {demo.settings.app_id}, "
            f"{len(samples)} samples"
        )
        error = _execute(demo)
    if error is not None and not demo.fed:
        console.print(f"[red]replygate demo: error: {error}[/]")
        return 1
    results = {s.id: evaluate(s, demo.tracker.seen[s.id], demo.tracker.display) for s in samples}
    render(console, samples, results)
    figures = demo.figures
    figures.expected_outcomes = expected_outcomes(
        samples, {"cancelled": 1, "delivered": figures.burst}
    )
    figures.total_seconds = time.perf_counter() - started
    render_figures(console, figures)
    failed = failures(console, samples, results, figures) + render_policy(console, demo.policy)
    if error is not None:
        console.print(f"[red]replygate demo: error: {error}[/]")
        failed.append("run")
    if failed:
        console.print(f"[red]FAILED: {', '.join(failed)}[/]")
        return 1
    console.print(f"[green]all {len(samples)} samples ended as expected[/]")
    return 0
