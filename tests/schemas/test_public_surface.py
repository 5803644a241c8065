"""`schemas` exports what an endpoint needs, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import schemas
from schemas.delivered import check_delivery
from schemas.registry import CONTRACTS
from tests.support.kafka import REPO


def test_every_exported_name_resolves_to_its_module_object() -> None:
    assert sorted(schemas.__all__) == sorted(set(schemas.__all__))
    for name in schemas.__all__:
        assert getattr(schemas, name) is not None, name
    assert schemas.check_delivery is check_delivery and schemas.CONTRACTS is CONTRACTS


def test_an_endpoint_checks_a_delivery_from_the_package_alone() -> None:
    checked = schemas.check_delivery({"delivery_id": "x"}, schemas.CONTRACTS)
    assert not checked.valid and checked.issues


def test_importing_the_package_loads_no_contract_until_asked() -> None:
    code = "import sys, schemas; assert 'schemas.registry' not in sys.modules; schemas.CONTRACTS"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
