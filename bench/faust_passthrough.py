"""A bare Faust app that copies input records to one output topic: Faust's own cost, for scale.

Run with `python -m faust -A bench.faust_passthrough worker`; topics and group from the same
REPLYGATE_* environment as the worker (prefix, app id, partitions, bootstrap servers), the same
app options as streams/app.py where they matter (raw serializers, commit interval, memory store).
"""

from __future__ import annotations

import os

import faust

_prefix = os.environ["REPLYGATE_TOPIC_PREFIX"]
_partitions = int(os.environ.get("REPLYGATE_PARTITIONS", "4"))
app = faust.App(
    os.environ["REPLYGATE_APP_ID"],
    broker=f"kafka://{os.environ['REPLYGATE_KAFKA_BOOTSTRAP_SERVERS']}",
    store="memory://",
    key_serializer="raw",
    value_serializer="raw",
    web_enabled=False,
    topic_partitions=_partitions,
    datadir=os.environ.get("REPLYGATE_DATA_DIR", ".run/faust-passthrough"),
    consumer_auto_offset_reset="earliest",
    broker_commit_every=1000,
    broker_commit_interval=0.5,
    stream_wait_empty=False,
)
_out = app.topic(_prefix + "passthrough.out", partitions=_partitions)


def _agent(name: str) -> None:
    @app.agent(app.topic(_prefix + name, partitions=_partitions), name=f"copy-{name}")
    async def copy(stream: faust.StreamT[bytes]) -> None:
        async for event in stream.events():
            await _out.send(key=event.key, value=event.value)


for _name in ("replies.raw", "toolcalls.raw"):
    _agent(_name)
