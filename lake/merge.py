"""`DeltaMerger`: the exactly-once upsert of the small gold tables (alerts, incidents, control_request_latency,
metric_rollups_1m). The batch is on the driver (gold batches are aggregates, not raw lines) and is merged by key
with delta-rs `DeltaTable.merge`, the commit carrying the batch's app transaction, so a replayed batch is skipped
exactly like an append (lake.sink); one that loses a commit race (another writer, the maintenance) is merged again.
Every commit goes through the process's one writer of the table (lake.writer).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, write_deltalake

from lake import LakeError
from lake.sink import SinkResult, conform
from lake.tables import ensure_table, sql_string, table_location
from lake.writer import TableHandle, TableWriter

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from schemas.tables import Table

__all__ = ["DeltaMerger"]


def _dedupe_last(tbl: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Keep the last row per key (a merge source must not match a target row twice)."""
    cols = [tbl.column(k).to_pylist() for k in keys]
    last: dict[tuple[Any, ...], int] = {}
    for i, key in enumerate(zip(*cols, strict=True)):
        last[key] = i
    if len(last) == tbl.num_rows:
        return tbl
    return tbl.take(sorted(last.values()))


# A merge into a (cluster, date)-partitioned table reads the partitions of the source's clusters and of its dates
# and this many days around them only: a key's row changes its date at most across one midnight (a request's date is
# its first known time: its send, else its handling, the pairing's 120 s apart). Keys alone read every file of the
# table (30 days of control requests); a test table of 30 days: 144 -> 47 ms a merge.
MERGE_DAYS_AROUND = 1


def _partitions_near(source: pa.Table, partition_by: Sequence[str]) -> list[str]:
    """Conditions on the target's partition columns that keep the partitions the source's rows may match: its
    clusters, and its dates with MERGE_DAYS_AROUND on each side (none when the table is not partitioned so, or the
    source has nulls there)."""
    if tuple(partition_by) != ("cluster", "date") or source.num_rows == 0:
        return []
    if source["cluster"].null_count or source["date"].null_count:
        return []
    clusters = ", ".join(sql_string(str(c)) for c in sorted(set(source["cluster"].to_pylist())))
    dates = source["date"].to_pylist()
    around = dt.timedelta(days=MERGE_DAYS_AROUND)
    return [f"t.`cluster` IN ({clusters})", f"t.`date` >= '{(min(dates) - around).isoformat()}'",
            f"t.`date` <= '{(max(dates) + around).isoformat()}'"]


class DeltaMerger:
    """Idempotent upsert of micro-batches into a small (gold) Delta table, keyed by `keys`.

    Matched rows are updated in place (all columns), others inserted; the commit carries
    `Transaction(app_id, batch_id)`, so a replayed batch changes nothing. Null keys compare equal
    (`IS NOT DISTINCT FROM`).
    """

    def __init__(self, path: str, table: Table, app_id: str, keys: Sequence[str]) -> None:
        unknown = [k for k in keys if k not in table.names]
        if not keys or unknown:
            raise LakeError(f"merge keys {list(keys)} invalid for {table.name} (unknown: {unknown})")
        self.path = path
        self.table = table
        self.app_id = app_id
        self.keys = tuple(keys)
        self._ensured = False
        self.writer = TableWriter.of(table_location(path))  # the process's one writer of the table
        self.handle = TableHandle(self.writer.location)

    def _ensure(self) -> None:
        if not self._ensured:
            ensure_table(self.writer.location, self.table)
            self._ensured = True

    def _commit_once(self, app_id: str, batch_id: int, rows: int, what: str,
                     commit: Callable[[DeltaTable, CommitProperties], None], files: int = 0) -> SinkResult:
        """Run `commit` (a write of `rows` rows carrying the given properties) as batch `batch_id` of `app_id`,
        exactly once, through the process's writer of the table (lake.writer: skipped when the table's app
        transaction shows the batch, done again when it loses a commit race). `files`: the files it adds, when
        known."""
        t0 = time.perf_counter()
        self._ensure()
        if rows == 0:  # nothing to write, replay or not: the table is not even opened
            return SinkResult(self.table.name, batch_id, False)
        dt = self.writer.commit_once(self.handle, app_id, batch_id, what, commit)
        if dt is None:
            return SinkResult(self.table.name, batch_id, True)
        return SinkResult(self.table.name, batch_id, False, files, rows, dt.version(), (time.perf_counter() - t0) * 1e3)

    def delete(self, predicate: str) -> None:
        """Delete the rows matching `predicate` (a SQL condition), through the process's writer of the table."""
        self._ensure()
        with self.writer.lock:
            self.handle.latest().delete(predicate)

    def insert_arrow(self, source: pa.Table, batch_id: int, app_id: str | None = None) -> SinkResult:
        """Append rows the caller knows are new (no row of their keys is in the table) as batch `batch_id`, exactly
        once, under the app id `<app_id>+insert` (the batch's MERGE, if it has one, commits under `app_id`;
        `app_id`: the merger's own unless given). An append reads no file of the table; a MERGE reads every file
        its keys may be in."""
        data = source.select(self.table.names).cast(self.table.to_arrow())

        def append(dt: DeltaTable, props: CommitProperties) -> None:
            write_deltalake(dt, data, mode="append", partition_by=list(self.table.partition_by) or None,
                            commit_properties=props)

        return self._commit_once(f"{app_id or self.app_id}+insert", batch_id, data.num_rows, "append", append,
                                 files=1)

    def write(self, df: DataFrame, batch_id: int) -> SinkResult:
        """Merge the batch's rows into the table, exactly once per batch id."""
        return self.write_arrow(pa.table(conform(df, self.table).toArrow()), batch_id)

    def write_arrow(self, source: pa.Table, batch_id: int, app_id: str | None = None) -> SinkResult:
        """Merge an Arrow table (already in the table's columns) as batch `batch_id` of `app_id` (the merger's own
        unless given: one merger serves every query of a process that writes the table, each under its own app)."""
        if source.num_rows:
            source = _dedupe_last(source.select(self.table.names).cast(self.table.to_arrow()), self.keys)
        # parenthesised: DataFusion binds IS NOT DISTINCT FROM looser than AND (multi-key merges failed to plan)
        predicate = " AND ".join([*(f"(t.`{k}` IS NOT DISTINCT FROM s.`{k}`)" for k in self.keys),
                                  *_partitions_near(source, self.table.partition_by)])

        def merge(dt: DeltaTable, props: CommitProperties) -> None:
            (dt.merge(source, predicate, source_alias="s", target_alias="t", commit_properties=props)
             .when_matched_update_all().when_not_matched_insert_all().execute())

        return self._commit_once(app_id or self.app_id, batch_id, source.num_rows, "merge", merge)
