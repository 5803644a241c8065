"""A worker's start leaves what it made out of later garbage collections: Faust runs full ones
in every rebalance (`GateApp.on_first_start`, docs/scaling.md)."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

from streams.worker.app import GateApp


def test_the_start_freezes_what_it_made(tmp_path: Path) -> None:
    app = GateApp("x-gate", datadir=str(tmp_path), web_enabled=False)
    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        asyncio.run(app.on_first_start())
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
