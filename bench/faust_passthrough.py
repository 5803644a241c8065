"""A bare Faust app that copies input records to one output topic: Faust's own cost, for scale.

Run with `python -m faust -A bench.faust_passthrough worker`; topics and group from the same
REPLYGATE_* environment as the worker (prefix, app id, partitions, bootstrap servers), and the
worker's own app options (`streams.worker.app.app_options`: serializers, commit cadence, producer
linger and batch size, session timeout, fetch wait) and its consumer in the app's loop
(`InLoopApp`), so the copy agent differs from the worker only in what its agents do.
"""

from __future__ import annotations

import faust

from bench.kafka import PASSTHROUGH_OUTPUT
from streams.broker.topology import Topic, Topology
from streams.settings import BoundsSettings, KafkaSettings, WorkerSettings, load_settings
from streams.worker.app import app_options
from streams.worker.consumer import InLoopApp

_settings = load_settings()  # the worker's, from the same REPLYGATE_* environment
_settings.data_dir.mkdir(parents=True, exist_ok=True)
_partitions = _settings.partitions
_topology = Topology.of(_settings)
app = InLoopApp(
    _settings.app_id,
    **app_options(
        _settings.group(KafkaSettings),
        _settings.group(WorkerSettings),
        _settings.group(BoundsSettings),
    ),
)
_out = app.topic(_topology.own(PASSTHROUGH_OUTPUT), partitions=_partitions)


def _agent(topic: Topic) -> None:
    source = app.topic(topic.name, partitions=_partitions)

    @app.agent(source, name=f"copy-{_topology.plain_name(topic)}")
    async def copy(stream: faust.StreamT[bytes]) -> None:
        async for event in stream.events():
            await _out.send(key=event.key, value=event.value)


for _topic in (_topology.replies, _topology.toolcalls):
    _agent(_topic)
