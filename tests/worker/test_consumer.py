"""`streams.worker.consumer`: Faust's aiokafka consumer, in the app's own loop, on a real broker."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path
from typing import Any

import faust
import pytest
from pydantic import ValidationError

from streams.settings import Settings
from streams.settings.contracts import build_registry
from streams.worker.app import create_app
from streams.worker.consumer import InLoopApp, InLoopConsumerThread
from tests.support.kafka import bootstrap, produce

RECORDS = 30
FETCH = {"fetch_min_bytes": 4096, "fetch_max_wait_ms": 20}  # neither is aiokafka's default


def test_the_worker_uses_the_in_loop_consumer_with_its_fetch_settings(tmp_path: Path) -> None:
    """Built offline: nothing connects."""
    settings = Settings(
        data_dir=tmp_path / "data",
        topic_prefix="p.",
        metrics_port=0,
        fetch_min_bytes=2048,
        fetch_max_wait_ms=7,
    )
    app = create_app(settings, build_registry(settings))
    assert isinstance(app, InLoopApp)
    assert app.fetch == {"fetch_min_bytes": 2048, "fetch_max_wait_ms": 7}
    assert isinstance(app.consumer._thread, InLoopConsumerThread)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("field", "value"),
    [("fetch_min_bytes", 0), ("fetch_min_bytes", 65 * 1024 * 1024), ("fetch_max_wait_ms", 1501)],
)
def test_a_fetch_setting_out_of_bounds_is_refused_by_name(
    tmp_path: Path, field: str, value: int
) -> None:
    with pytest.raises(ValidationError) as refused:
        Settings(data_dir=tmp_path, **{field: value})  # type: ignore[arg-type]
    assert [e["loc"] for e in refused.value.errors()] == [(field,)]


@pytest.mark.kafka
def test_a_copy_app_reads_every_record_with_no_consumer_thread(tmp_path: Path) -> None:
    """Every record is handed on in order, the aiokafka client runs on the app's loop with the
    app's fetch wait, no thread is started for it, and a stop leaves no task behind."""
    name = f"t{uuid.uuid4().hex[:10]}.in"
    values = [f"v{i}".encode() for i in range(RECORDS)]
    asyncio.run(produce(name, [("k", v) for v in values]))
    got, seen = asyncio.run(_copy(name, tmp_path))
    assert got == values
    assert seen["client_loop_is_the_apps"] is True
    assert seen["fetch"] == (FETCH["fetch_min_bytes"], FETCH["fetch_max_wait_ms"])
    assert seen["threads_started"] == []
    assert seen["left_over_tasks"] == []


async def _copy(name: str, tmp_path: Path) -> tuple[list[bytes], dict[str, Any]]:
    app = InLoopApp(
        f"{name}-group",
        broker=f"kafka://{bootstrap()}",
        value_serializer="raw",
        key_serializer="raw",
        web_enabled=False,
        datadir=str(tmp_path),
        consumer_auto_offset_reset="earliest",
        topic_partitions=1,
        fetch=FETCH,
    )
    got: list[bytes] = []
    done = asyncio.Event()

    @app.agent(app.topic(name, partitions=1))
    async def collect(stream: faust.StreamT[bytes]) -> None:
        async for value in stream:
            got.append(value)
            if len(got) == RECORDS:
                done.set()

    before = set(threading.enumerate())
    await app.start()
    try:
        await asyncio.wait_for(done.wait(), 60)
        consumer = app.consumer._thread._consumer  # type: ignore[attr-defined]
        fetcher = consumer._fetcher
        seen: dict[str, Any] = {
            "client_loop_is_the_apps": consumer._client._loop is asyncio.get_running_loop(),
            "fetch": (fetcher._fetch_min_bytes, fetcher._fetch_max_wait_ms),
            "threads_started": [t.name for t in set(threading.enumerate()) - before],
        }
    finally:
        await app.stop()
    current = asyncio.current_task()
    seen["left_over_tasks"] = [
        t.get_coro() for t in asyncio.all_tasks() if t is not current and not t.done()
    ]
    return got, seen
