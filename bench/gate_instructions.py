"""Run `CheckSession.line` over N records of the benchmark mix, for an instruction counter.

Wall clock on a shared box swings by 30-50%; instructions do not. Under valgrind:
`valgrind --tool=callgrind --callgrind-out-file=/dev/null python -m bench.gate_instructions N`
for N = 100 and 700; (I(700) - I(100)) / 600 is the instructions per record, start-up excluded.
The records are generated GENERATED at a time whatever N is, so their generation (about 336,000
instructions a record) cancels out of the difference too.
"""

from __future__ import annotations

import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench.workload import Workload, write_workspace
from streams.cli.check_session import CheckSession

GENERATED = 1000


def main(argv: list[str]) -> int:
    from streams.core.pipeline import Gate
    from streams.files.stage import DiskFiles
    from streams.settings import Settings
    from streams.settings.contracts import build_registry

    n = int(argv[0]) if argv else 100
    if not 0 < n <= GENERATED:
        raise SystemExit(f"N must be 1..{GENERATED}")
    records = list(Workload(200).records(GENERATED))[:n]
    now = datetime(2026, 1, 1, tzinfo=UTC)
    with tempfile.TemporaryDirectory(prefix="rg-instr-") as tmp:
        settings = Settings(workspaces_root=write_workspace(Path(tmp)))
        gate = Gate(settings, DiskFiles.from_settings(settings), build_registry(settings))
        session = CheckSession(gate)
        for i, rec in enumerate(records):
            session.line(rec.value, i + 1, now)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
