"""`replygate deliveries` on the real broker: each delivery once on stdout, across a SIGKILL.

The reader runs as a subprocess, as an endpoint runs it. A failpoint (`REPLYGATE_FAILPOINT`)
kills it at a chosen point; a test checks that it died there (SIGKILL, and its log line), then
restarts it and reads what it hands on. The last test reads the worker's crash harness
(`tests/support/crash_harness.py`) with the worker and the reader each killed at a chosen point.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.endpoint.test_deliveries_webhook import Receiver
from tests.support.crash_harness import CrashRun, expected
from tests.support.deliveries import SECRET, Reader, delivery, invalid_delivery
from tests.support.kafka import Deployment, free_port, produce

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(120)]

GROUP = "endpoint-test"


def one_partition() -> tuple[Deployment, str]:
    """A deployment whose delivery topic has one partition (its order is the order written).

    A killed reader holds its partition until its session times out: 6 s, the broker's least.
    """
    deployment = Deployment(partitions=1)
    deployment.env.update(REPLYGATE_PLATFORMS='["im"]', REPLYGATE_SESSION_TIMEOUT_SECONDS="6")
    deployment.create_topics()
    return deployment, deployment.topic("delivery.im")


def test_each_delivery_is_handed_on_once_and_a_new_group_keeps_its_place(tmp_path: Path) -> None:
    """Repeats and invalid records written by hand; three runs of the reader in one group.

    Without --from-beginning a new group starts at the newest delivery; its start is committed
    before it reads, so what comes while it is stopped is read at its next start.
    """
    deployment, topic = one_partition()
    asyncio.run(produce(topic, [("c-1", delivery("t-old"))]))
    first = Reader(deployment, tmp_path, "first.log", GROUP, from_beginning=False)
    first.wait_for_commit(topic)
    assert first.end() == 0, first.stderr()
    assert first.ids() == []  # what came before the group is not its business

    ids = [f"t-{n}" for n in range(1, 6)]
    records: list[tuple[str, Any]] = [
        ("c-1", delivery("t-1")),
        ("c-1", delivery("t-2")),
        ("c-1", invalid_delivery("t-bad")),  # closed, but its message breaks the contract
        ("c-1", b'{"delivery_id": "t-x", "not": "a delivery"'),  # written by hand: not JSON
        ("c-1", delivery("t-2")),  # a repeat, as a worker's crash sends it
        ("c-1", delivery("t-3")),
        ("c-1", delivery("t-4")),
        ("c-1", delivery("t-4")),
        ("c-1", delivery("t-5")),
    ]
    asyncio.run(produce(topic, records))
    second = Reader(deployment, tmp_path, "second.log", GROUP, from_beginning=False)
    second.wait_for_lines(len(ids))
    second.wait_for_commit(topic)
    assert second.end() == 0, second.stderr()
    assert second.lines == [delivery(i) for i in ids]  # each once, in order, as written
    log = second.stderr()
    assert "handed on 5, repeats dropped 2, invalid 2" in log, log
    assert "not_json" in log and "invalid_uri" in log

    # After a restart, a repeat that comes late (a gate replaying) is dropped by its id.
    asyncio.run(produce(topic, [("c-1", delivery("t-1")), ("c-1", delivery("t-6"))]))
    third = Reader(deployment, tmp_path, "third.log", GROUP, from_beginning=False)
    third.wait_for_lines(1)
    third.wait_for_commit(topic)
    assert third.end() == 0, third.stderr()
    assert third.ids() == ["t-6"]
    assert "handed on 1, repeats dropped 1, invalid 0" in third.stderr()


def test_a_kill_between_hand_off_and_record_repeats_that_one_delivery_once(
    tmp_path: Path,
) -> None:
    """The documented window: the line is out, its id not yet committed in SQLite."""
    deployment, topic = one_partition()
    ids = ["t-1", "t-2", "t-3"]
    asyncio.run(produce(topic, [("c-1", delivery(i)) for i in ids]))

    first = Reader(
        deployment, tmp_path, "first.log", GROUP, REPLYGATE_FAILPOINT="endpoint_handed_on@2"
    )
    assert first.end(sig=0) == -signal.SIGKILL, first.stderr()
    assert "failpoint endpoint_handed_on: SIGKILL" in first.stderr()
    second = Reader(deployment, tmp_path, "second.log", GROUP)
    second.wait_for_lines(2)
    second.wait_for_commit(topic)
    assert second.end() == 0, second.stderr()
    # t-2 again, identical, with its delivery id: never lost, repeated at most this once.
    assert first.ids() == ["t-1", "t-2"] and second.ids() == ["t-2", "t-3"]
    assert first.lines[1] == second.lines[0]


@pytest.mark.timeout(300)
def test_every_turn_reaches_stdout_once_across_a_worker_kill_and_a_reader_kill(
    tmp_path: Path,
) -> None:
    """The worker's crash harness, read by `replygate deliveries`, each killed at a chosen point.

    The worker dies after its outputs are acknowledged and before its input is (its successor
    replays the batch: repeats on the delivery topic); the reader, reading meanwhile, dies after
    its 40th id is recorded and before that batch's offsets are committed.
    """
    run = CrashRun(tmp_path, "after_outputs@2", total=120, corrections=False, deadline_seconds=6)
    deployment, topic = run.deployment, run.deployment.topic("delivery.im")
    deployment.create_topics()  # the reader subscribes before the gate writes
    first = Reader(
        deployment, tmp_path, "reader-1.log", GROUP, REPLYGATE_FAILPOINT="endpoint_recorded@40"
    )
    report = run.run()
    assert report.sound, report.line()
    assert first.end(sig=0) == -signal.SIGKILL, first.stderr()
    assert "failpoint endpoint_recorded: SIGKILL" in first.stderr()
    turns = sorted(f"t-{i}" for i in range(run.total) if expected(i, run.corrections))
    second = Reader(deployment, tmp_path, "reader-2.log", GROUP)
    second.wait_for_lines(len(turns) - len(first.lines))
    second.wait_for_commit(topic)
    assert second.end() == 0, second.stderr()
    assert len(first.lines) == 40
    assert sorted(first.ids() + second.ids()) == turns  # every turn, each exactly once


def test_a_webhook_url_with_a_credential_never_reaches_the_log(tmp_path: Path) -> None:
    """httpx logs each request's URL at INFO; the reader keeps it quiet (the URL may carry a
    token, which the reader never prints either)."""
    deployment, topic = one_partition()
    receiver = Receiver()
    serving = threading.Thread(target=receiver.serve_forever, daemon=True)
    serving.start()
    try:
        asyncio.run(produce(topic, [("c-1", delivery("t-hook"))]))
        url = f"{receiver.url}?token={SECRET}"
        reader = Reader(deployment, tmp_path, "hook.log", GROUP, args=["--webhook", url])
        reader.wait_for(lambda: any(status == 204 for _k, status, _b in receiver.tries))
        assert reader.end() == 0, reader.stderr()
    finally:
        receiver.shutdown()
        receiver.server_close()
    assert [(k, s) for k, s, _b in receiver.tries] == [
        ("t-hook", 503),
        ("t-hook", 500),
        ("t-hook", 204),
    ]
    log = reader.stderr()
    assert "handed on 1" in log and SECRET not in log and "token=" not in log, log


def _late_proxy(port: int, target: tuple[str, int], after: threading.Event) -> None:
    """A TCP proxy to the broker on `port` that starts listening only once `after` is set: until
    then a connection there is refused, as a broker that is still starting refuses it."""
    after.wait()
    with socket.create_server(("127.0.0.1", port)) as server:
        while True:
            client, _ = server.accept()
            upstream = socket.create_connection(target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def test_a_broker_that_comes_up_after_its_reader_is_reached_within_the_bound(
    tmp_path: Path,
) -> None:
    """The reader's first tries are refused (nothing listens yet); it keeps trying within
    `endpoint.connect_timeout_seconds` and reads once the broker answers."""
    deployment, topic = one_partition()
    asyncio.run(produce(topic, [("c-1", delivery("t-late"))]))
    host, port = deployment.bootstrap_servers.split(",")[0].rsplit(":", 1)
    late = free_port()
    opened = threading.Event()
    threading.Thread(
        target=_late_proxy, args=(late, (host, int(port)), opened), daemon=True
    ).start()
    reader = Reader(
        deployment,
        tmp_path,
        "late.log",
        GROUP,
        REPLYGATE_KAFKA_BOOTSTRAP_SERVERS=f"127.0.0.1:{late}",
        REPLYGATE_ENDPOINT__CONNECT_TIMEOUT_SECONDS="60",
    )
    time.sleep(2)  # its first tries are refused (a reader that gave up at once exited by now)
    opened.set()
    reader.wait_for_lines(1)
    assert reader.end() == 0, reader.stderr()
    assert reader.ids() == ["t-late"]
