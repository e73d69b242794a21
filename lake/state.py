"""`StateTable`: a stream's keyed state kept in a Delta table, committed with the micro-batch that made it.

A batch reads the state as its predecessor left it, and replaces the rows of the clusters it changed in ONE
commit carrying the batch's app transaction (lake.tables.batch_commit), like every other table the batch writes:
a replayed batch commits nothing twice. A replay must also read what its first attempt read: when the table's app
transaction already shows the batch (its first attempt committed the state, then failed before the end), `load`
reads the version before that commit (Delta time travel; the maintenance vacuums removed files only hours later).
So the state, and what is derived from it (rows, alerts), are the same whichever attempt commits them.

The table is partitioned by cluster: a commit rewrites the files of the clusters whose state changed, not the
rest of the fleet's. Commits go through the process's one writer of the table (lake.writer).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake

from lake import LakeError
from lake.read import read_table
from lake.tables import HISTORY_SCAN, ensure_table, sql_string, table_location
from lake.writer import TableHandle, TableWriter

if TYPE_CHECKING:
    from schemas.tables import Table

__all__ = ["StateTable"]

log = logging.getLogger(__name__)


class StateTable:
    """The state rows of one app (`app_id`: one query of one run) in the Delta table at `path`."""

    def __init__(self, path: str, table: Table, app_id: str) -> None:
        if table.partition_by != ("cluster",):
            raise LakeError(f"{table.name}: a state table is partitioned by cluster, not {table.partition_by}")
        self.path = table_location(path)
        self.table = table
        self.app_id = app_id
        self.writer = TableWriter.of(self.path)  # the process's one writer of the table
        self.handle = TableHandle(self.path)
        self._ensured = False

    def _ensure(self) -> None:
        if not self._ensured:
            ensure_table(self.path, self.table)
            self._ensured = True

    def load(self, batch_id: int) -> pa.Table:
        """The state as of before batch `batch_id`: the latest snapshot, or for a replay of a batch this app already
        committed, the snapshot just before that commit."""
        self._ensure()
        with self.writer.lock:  # no commit of this process moves the table while its state is read
            dt = self.handle.latest()
            last = dt.transaction_version(self.app_id)
            if last is not None and last >= batch_id:
                version = self._version_before(dt, batch_id)
                dt = DeltaTable(self.path, version=version)
                log.info("%s: batch %d is a replay; state read at version %d", self.table.name, batch_id, version)
            return read_table(dt, self.table.to_arrow())

    def _version_before(self, dt: DeltaTable, batch_id: int) -> int:
        for entry in dt.history(HISTORY_SCAN):
            if entry.get("planewatch.app_id") == self.app_id and entry.get("planewatch.batch_id") == str(batch_id):
                return int(entry["version"]) - 1
        raise LakeError(f"{self.table.name}: batch {batch_id} of {self.app_id} is committed but its commit is not "
                        f"among the last {HISTORY_SCAN}: its state before it cannot be read")

    def commit(self, rows: pa.Table, clusters: Sequence[str], batch_id: int) -> bool:
        """Replace the rows of `clusters` by `rows` (of those clusters) as batch `batch_id`, exactly once; False for
        a replay (nothing written) or nothing to replace."""
        if not clusters:
            return False
        data = rows.select(self.table.names).cast(self.table.to_arrow())
        predicate = f"cluster IN ({', '.join(sql_string(c) for c in sorted(set(clusters)))})"

        def replace(dt: DeltaTable, props: CommitProperties) -> None:
            write_deltalake(dt, data, mode="overwrite", predicate=predicate, partition_by=["cluster"],
                            commit_properties=props)

        self._ensure()
        return self.writer.commit_once(self.handle, self.app_id, batch_id, "state", replace) is not None
