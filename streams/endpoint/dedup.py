"""The delivery ids an endpoint has handed on, in an embedded SQLite file, kept until a horizon.

Kafka delivers at least once, so a delivery can come again: after a worker's crash (the gate
sends the same record again), or after the endpoint's own crash (its offsets were not committed).
An id is recorded in the same SQLite transaction that hands the delivery on (`once`), so a
repeat is dropped across restarts and crashes. The ids are forgotten after the horizon, a
bounded number at a time (`prune`), so the file does not grow without end.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from streams.errors import ConfigError

SCHEMA_VERSION: Final = 1
PRUNE_BATCH: Final = 1_000
# How long a second process on the same file waits for the write lock before giving up.
BUSY_TIMEOUT_SECONDS: Final = 30.0

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS seen (delivery_id TEXT PRIMARY KEY, seen_at REAL NOT NULL)
    WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seen_by_time ON seen (seen_at);
"""


class StateFileError(ConfigError):
    """The state file cannot be opened as a deliveries database; the message names it."""


class SeenIds:
    """Delivery ids handed on, with the time each was recorded."""

    def __init__(
        self,
        path: Path,
        horizon_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self.horizon_seconds = horizon_seconds
        self._clock = clock
        self._db = _open(path)

    def close(self) -> None:
        self._db.close()

    def __contains__(self, delivery_id: object) -> bool:
        row = self._db.execute("SELECT 1 FROM seen WHERE delivery_id = ?", (delivery_id,))
        return row.fetchone() is not None

    def __len__(self) -> int:
        count: int = self._db.execute("SELECT count(*) FROM seen").fetchone()[0]
        return count

    @contextmanager
    def once(self, delivery_id: str) -> Iterator[bool]:
        """Yield whether `delivery_id` is new; if it is, the block hands it on.

        The id is written in a transaction that is open while the block runs and committed when
        it ends: no other writer can claim the id meanwhile, and an exception (or a kill) in the
        block leaves no record, so the delivery is handed on again later, never lost.
        """
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            new = delivery_id not in self
            if new:
                db.execute(
                    "INSERT INTO seen (delivery_id, seen_at) VALUES (?, ?)",
                    (delivery_id, self._clock()),
                )
            yield new
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def prune(self, limit: int = PRUNE_BATCH) -> int:
        """Forget at most `limit` ids older than the horizon, oldest first; return how many."""
        cutoff = self._clock() - self.horizon_seconds
        cursor = self._db.execute(
            "DELETE FROM seen WHERE delivery_id IN "
            "(SELECT delivery_id FROM seen WHERE seen_at < ? ORDER BY seen_at LIMIT ?)",
            (cutoff, limit),
        )
        return cursor.rowcount


def _open(path: Path) -> sqlite3.Connection:
    """The database at `path` (created when missing), durable at each commit."""
    try:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
    except sqlite3.Error as exc:
        raise StateFileError(f"cannot open state file {path}: {exc}") from exc
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, SCHEMA_VERSION):
            raise StateFileError(
                f"state file {path} has schema version {version}; this replygate knows "
                f"{SCHEMA_VERSION}"
            )
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == 0 and tables - {"seen"}:  # another application's database: not ours to change
            raise StateFileError(
                f"state file {path} is another application's SQLite database "
                f"({len(tables)} tables); name a new file"
            )
        db.execute("PRAGMA journal_mode=WAL")
        # FULL: a commit is on disk before the hand-off is taken as done (power loss included).
        db.execute("PRAGMA synchronous=FULL")
        db.executescript(_SCHEMA)
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
    except sqlite3.Error as exc:
        db.close()
        raise StateFileError(f"cannot use state file {path}: {exc}") from exc
    except StateFileError:
        db.close()
        raise
    return db
