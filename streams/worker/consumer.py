"""Faust's aiokafka consumer, run in the app's own event loop instead of a thread of its own.

faust-streaming's aiokafka driver is a `ThreadDelegateConsumer`: the aiokafka consumer runs its
own loop in `AIOKafkaConsumerThread`, and every fetch, commit and seek crosses to that thread and
back through two method queues, and the GIL passing between the threads costs CPU on every
record (bench/README.md, "Why the worker's latency is far from the passthrough's").

`InLoopConsumerThread` keeps Faust's whole consumer (its rebalance callbacks, fetch contexts,
commit bookkeeping and this worker's fixes to them) and changes only where it runs: its service
starts and stops as an ordinary service in the app's loop, and `call_thread` awaits the call
itself. Nothing of aiokafka's client runs concurrently with the app any more, which is also what
the passthrough does. It also sets the fetch wait (`fetch_min_bytes`, `fetch_max_wait_ms`),
which Faust has no setting for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from typing import Any

import faust
from faust.transport import consumer as faust_consumer
from faust.transport.drivers import aiokafka as faust_aiokafka
from mode import Service
from mode.utils.futures import maybe_async

from streams.broker.refusals import denied, is_denied
from streams.worker.sender import fail_stop


class InLoopConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    """Faust's consumer "thread" as a service of the app's loop: same methods, no thread."""

    def __init__(self, consumer: Any, *, loop: Any, **kwargs: Any) -> None:
        super().__init__(consumer, loop=loop, thread_loop=loop, **kwargs)

    def _create_consumer(self, loop: Any) -> Any:
        """Faust's aiokafka consumer with the app's fetch wait (`InLoopApp.fetch`), which Faust
        has no setting for: set where `AIOKafkaConsumer.start` reads it into its fetcher."""
        consumer = super()._create_consumer(loop=loop)
        fetch: Mapping[str, int] = self.app.fetch  # type: ignore[attr-defined]  # an InLoopApp
        for name, value in fetch.items():  # fetch_min_bytes, fetch_max_wait_ms
            setattr(consumer, f"_{name}", value)
        return consumer

    async def start(self) -> None:
        """Start the aiokafka consumer here, where `ServiceThread.start` would start a thread
        that does it (`ServiceThread._serve`)."""
        self._thread_started.set()
        await self._default_start()

    async def stop(self) -> None:
        """Stop it here too; `_shutdown_thread` is what the thread would run on its way out."""
        if self._started.is_set() and not self._stopped.is_set():
            self._stopped.set()
            await self._shutdown_thread()

    async def call_thread(self, fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """The call itself (awaited when it is a coroutine, as the method queue does): the
        consumer is already in this loop."""
        return await maybe_async(fun(*args, **kwargs))

    async def getmany(self, active_partitions: set[Any] | None, timeout: float) -> Any:
        """Faust's fetch; a topic the ACLs do not let us read stops the worker with one line
        naming it (Faust's fetcher would crash with a traceback)."""
        try:
            return await super().getmany(active_partitions, timeout)
        except Exception as exc:
            if is_denied(exc):
                topic = str(exc.args[0]) if exc.args else "?"
                fail_stop(denied("read", "topic", topic, "worker"))
            raise

    async def on_partitions_revoked(self, revoked: Set[Any]) -> None:
        """Faust's revoke callback, called directly (the thread goes through a method queue)."""
        await self.consumer.on_partitions_revoked(revoked)

    async def on_partitions_assigned(self, assigned: Set[Any], generation_id: int = 0) -> None:
        """Faust's assign callback, called directly."""
        await self.consumer.on_partitions_assigned(assigned, generation_id)


class InLoopConsumer(faust_aiokafka.Consumer):
    """Faust's aiokafka consumer with its client in the app's loop, which commits what it
    handled before it gives partitions up."""

    def _new_consumer_thread(self) -> InLoopConsumerThread:
        return InLoopConsumerThread(self, loop=self.loop, beacon=self.beacon)

    @Service.transitions_to(faust_consumer.CONSUMER_PARTITIONS_REVOKED)
    async def on_partitions_revoked(self, revoked: set[Any]) -> None:
        """Faust's revoke (faust/transport/consumer.py:641-664), with its bookkeeping of the
        revoked partitions (acknowledged and committed offsets) forgotten after the app's
        handler rather than before it.

        That handler stops the flow, waits for the batches in flight and commits what was
        acknowledged (`stream_wait_empty`). Faust forgot the revoked partitions' offsets first:
        what was handled since the last periodic commit was never committed, and the in-flight
        batch's acknowledgements had no committed offset to follow (`GateApp._new_consumer`
        commits only from a known start), so the next owner handled all of it again.
        """
        if self._active_partitions is not None:
            self._active_partitions.difference_update(revoked)
        self._paused_partitions.difference_update(revoked)
        try:
            await self._on_partitions_revoked(revoked)
        finally:
            for tp in revoked:
                self._gap.pop(tp, None)
                self._acked.pop(tp, None)
                self._acked_index.pop(tp, None)
                self._read_offset.pop(tp, None)
                self._committed_offset.pop(tp, None)


class InLoopTransport(faust_aiokafka.Transport):
    """Faust's aiokafka transport whose consumers are `InLoopConsumer`s."""

    Consumer = InLoopConsumer


class InLoopApp(faust.App):
    """A Faust app whose consumer is an `InLoopConsumer` (the producer is Faust's own);
    `fetch`: `fetch_min_bytes` and `fetch_max_wait_ms` for it (`streams.broker.options`)."""

    def __init__(self, *args: Any, fetch: Mapping[str, int] | None = None, **options: Any) -> None:
        self.fetch: Mapping[str, int] = dict(fetch or {})
        super().__init__(*args, **options)

    def _new_transport(self) -> Any:
        return InLoopTransport(self.conf.broker_consumer, self)
