"""Per tenant: two tenants with different `leak_literals` through one worker. A record's tenant
is its `x-tenant` header (the setting `policy_tenant_header`); a tenant's list replaces the
default's, and a record without the header, or of a tenant without a section, gets the default.

A real worker process on the local broker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.policy.running import DELIVERY, PolicyDeployment, Sent, by_turn
from tests.support.samples import im_text, raw_reply

pytestmark = pytest.mark.kafka

DEFAULT, ACME, GLOBEX = "default-secret-0000", "acme-secret-1111", "globex-secret-2222"
LITERALS = (DEFAULT, ACME, GLOBEX)
BUNDLE = f"""[default]
leak_literals = ["{DEFAULT}"]

[tenant.acme]
leak_literals = ["{ACME}"]

[tenant.globex]
leak_literals = ["{GLOBEX}"]
"""
# tenant header value (None: no header) -> the one literal masked
CASES: dict[str | None, str] = {"acme": ACME, "globex": GLOBEX, None: DEFAULT, "initech": DEFAULT}


def reply(n: int, tenant: str | None) -> Sent:
    text = im_text([{"type": "text", "data": {"text": f"{n}: {' '.join(LITERALS)}"}}])
    headers = [] if tenant is None else [("x-tenant", tenant.encode())]
    record = raw_reply(turn_id=f"t-{tenant}-{n}", conversation_id=f"c-{n}", output={"text": text})
    return Sent(record, headers=headers)


def test_two_tenants_get_their_own_literals_through_one_worker(tmp_path: Path) -> None:
    dep = PolicyDeployment(tmp_path, env={"REPLYGATE_POLICY_TENANT_HEADER": "x-tenant"})
    path = dep.bundle("tenants", BUNDLE)
    version = dep.version(path)
    sent = [reply(n, tenant) for n in range(5) for tenant in CASES]
    wanted = {s.value["turn_id"] for s in sent if isinstance(s.value, dict)}
    try:
        dep.policy("publish", path)
        (worker,) = dep.start_ready()
        dep.wait_active([worker], version)
        dep.send(sent)
        out = dep.read(
            lambda o: (
                wanted <= {r["turn_id"] for r in o[DELIVERY]}
                and wanted <= {r["turn_id"] for r in o["audit"]}
            )
        )
    finally:
        dep.stop()

    deliveries, audit = by_turn(out[DELIVERY]), by_turn(out["audit"])
    for tenant, masked in CASES.items():
        for n in range(5):
            turn = f"t-{tenant}-{n}"
            (delivery,) = deliveries[turn]
            assert delivery["policy_version"] == version
            for literal in LITERALS:
                shown = literal in delivery["preview"]
                assert shown == (literal != masked), (turn, literal, delivery["preview"])
            (record,) = audit[turn]
            assert record["tenant"] == tenant, record
            assert [m["count"] for m in record["masked"]] == [1], record
