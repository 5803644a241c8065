"""deploy/k8s applied for real (the local overlay): the topics Job completes, the workers pass
their probes, the PDB and ServiceAccount are the ones in use, and a turn goes through a pod."""

from __future__ import annotations

import asyncio

import orjson
from aiokafka.admin import AIOKafkaAdminClient

from tests.k8s.kube import get, kubectl, worker_pods
from tests.support.crash_harness import turn_records
from tests.support.kafka import collect, produce

PARTITIONS = 4  # REPLYGATE_PARTITIONS of the local overlay


async def _partitions(servers: str, topic: str) -> int:
    admin = AIOKafkaAdminClient(bootstrap_servers=servers)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return len(described["partitions"])


def test_topics_job_made_the_topics(workers: str) -> None:
    job = get("job", "replygate-topics")
    assert job["status"].get("succeeded") == 1
    assert asyncio.run(_partitions(workers, "replies.raw")) == PARTITIONS


def test_workers_ready_with_probes_pdb_and_service_account(workers: str) -> None:
    pods = worker_pods()
    assert len(pods) == 2
    for pod in pods:
        spec = pod["spec"]
        assert spec["serviceAccountName"] == "replygate"
        container = spec["containers"][0]
        assert container["image"] == "replygate:local"
        assert container["imagePullPolicy"] == "Never"
        assert {"startupProbe", "livenessProbe", "readinessProbe"} <= set(container)
        statuses = pod["status"]["containerStatuses"]
        assert all(s["ready"] and s["restartCount"] == 0 for s in statuses), statuses
    pdb = get("pdb", "replygate")
    assert pdb["status"]["currentHealthy"] == 2
    assert pdb["status"]["disruptionsAllowed"] == 1


def test_a_turn_goes_through_a_worker_pod(workers: str) -> None:
    records = turn_records(1, 3)  # t-1 (a plain reply) and t-2
    asyncio.run(produce("replies.raw", records, servers=workers))

    def both(out: list[tuple[str, bytes | None, bytes]]) -> bool:
        return {orjson.loads(v)["delivery_id"] for _t, _k, v in out} >= {"t-1", "t-2"}

    out = asyncio.run(collect(["delivery.im"], both, timeout=90, settle=2, servers=workers))
    deliveries = [orjson.loads(v) for _t, _k, v in out]
    assert sorted(d["delivery_id"] for d in deliveries) == ["t-1", "t-2"]
    assert {d["kind"] for d in deliveries} == {"reply"}
    logs = kubectl(
        "-n", "replygate", "logs", "-l", "app.kubernetes.io/component=worker", "--tail=200"
    )
    assert "Traceback" not in logs
