"""The process's one writer of each Delta table (:class:`TableWriter`): every commit a process makes to a table goes
through it, whichever query or app id makes it.

Several queries of one process write the same tables: the log and the metric families both append to `quarantine`
and `dq_results`, and two sources of one family (files and a Kafka topic) write all of that family's tables. Each
query keeps its own app id (its exactly-once guard: `Transaction(app_id, batch_id)`) and its own handle on the table
(:class:`TableHandle`, brought up to date with the new commits only: opening the table anew reads its checkpoint,
which grows with its files), but the commits meet here: one lock per table, so the process never races itself (a lost
race costs a retry, a re-read of the log and a new commit attempt). Writers in other processes (the other family's
spark-submit job, the maintenance) still meet as concurrent Delta commits: the loser re-reads and tries again
(:meth:`TableWriter.commit_once`).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import ClassVar

from deltalake import CommitProperties, DeltaTable
from deltalake.exceptions import CommitFailedError

from lake.tables import COMMIT_RETRIES, COMMIT_RETRY_SLEEP_S, batch_commit, table_location

__all__ = ["TableHandle", "TableWriter", "lost_race"]

log = logging.getLogger(__name__)


def lost_race(exc: Exception) -> bool:
    """Whether `exc` is delta-rs telling that another commit came first (a retry may succeed)."""
    return isinstance(exc, CommitFailedError) or "onflict" in str(exc) or "ommit" in type(exc).__name__


class TableHandle:
    """One user's handle on the Delta table at `location`: opened once, then brought up to date incrementally. A
    handle lives as long as its sink, merger or state table (one query's run): a table removed and created again
    under a running query is not followed."""

    def __init__(self, location: str) -> None:
        self.location = location
        self._table: DeltaTable | None = None

    def latest(self) -> DeltaTable:
        """The table at its latest version."""
        if self._table is None:
            self._table = DeltaTable(self.location)
        else:
            self._table.update_incremental()
        return self._table


class TableWriter:
    """The one writer of the Delta table at `location` in this process (:meth:`of`)."""

    # weak: a writer lives as long as a sink, merger or state table of the process holds it
    _writers: ClassVar[weakref.WeakValueDictionary[str, TableWriter]] = weakref.WeakValueDictionary()
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, location: str) -> None:
        self.location = location
        # held for a whole commit (its replay check, the write, the handle's update)
        self.lock = threading.Lock()
        self.commits = 0  # commits made through this writer
        self.retries = 0  # commits tried again after losing a race to another process

    @classmethod
    def of(cls, location: str) -> TableWriter:
        """This process's writer of the table at `location` (a path or a URI: lake.tables.table_location names the
        table one way)."""
        location = table_location(location)
        with cls._guard:
            writer = cls._writers.get(location)
            if writer is None:
                writer = cls(location)
                cls._writers[location] = writer
            return writer

    def committed(self, handle: TableHandle, app_id: str) -> int | None:
        """The last batch id `app_id` committed to the table (read through `handle`), or None."""
        with self.lock:
            v: int | None = handle.latest().transaction_version(app_id)
            return v

    def commit_once(self, handle: TableHandle, app_id: str, batch_id: int, what: str,
                    commit: Callable[[DeltaTable, CommitProperties], None]) -> DeltaTable | None:
        """Run `commit` (a write carrying the given commit properties, on the table as `handle` reads it) as batch
        `batch_id` of `app_id`, exactly once: None, nothing written, when the table's app transaction already shows
        the batch; else the table after the commit. A commit that loses a race to another process is tried again
        (COMMIT_RETRIES), from the table's new version."""
        props = batch_commit(app_id, batch_id)
        with self.lock:
            for attempt in range(COMMIT_RETRIES):
                dt = handle.latest()
                last = dt.transaction_version(app_id)
                if last is not None and batch_id <= last:
                    return None
                try:
                    commit(dt, props)
                except Exception as exc:
                    if not lost_race(exc) or attempt == COMMIT_RETRIES - 1:
                        raise
                    self.retries += 1
                    log.info("%s batch %d: %s into %s lost a commit race (%s); again", app_id, batch_id, what,
                             self.location, exc)
                    time.sleep(COMMIT_RETRY_SLEEP_S * (attempt + 1))
                    continue
                dt.update_incremental()
                self.commits += 1
                return dt
        raise AssertionError("unreachable")
