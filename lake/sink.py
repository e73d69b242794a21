"""The exactly-once Delta sinks used inside `foreachBatch`: append (bronze/silver/quarantine) and merge (gold).

Theory of operation (append, `mode="delta-rs"`, the default; no delta-spark jar needed):

1. The app transaction guards the batch: `DeltaTable.transaction_version(app_id)` is the last batch id this app
   committed; a batch whose id is not above it is a replay and writes nothing.
2. The batch's rows are staged as Parquet files under `<table>/_pending/<app>-b<batch>-<attempt>/` (partitioned
   Hive-style by the table's `partition_by`; no `key=value` in the pending directory's own name, or Spark's reader
   would take it for a partition): by the executors or the driver with pyarrow (:mod:`jobs.ingest.staging`:
   `open_pending`, then `commit_pending` with the files the successful task attempts reported). A small Arrow table
   on the driver (dq_results) is appended directly (`write_arrow`).
3. The driver lists the files, reads numRecords/min/max/nullCount from each Parquet footer, writes a manifest of
   the final file names into the pending directory, moves each file into its partition directory under the table,
   and commits ONE Delta transaction with delta-rs carrying the add actions and `Transaction(app_id, batch_id)`.
4. Crash anywhere: a pending directory of a batch above the committed version is an orphan; before the next write
   of the same app its manifest tells which moved files to delete, then the directory goes. A pending directory of
   a committed batch is only leftover scaffolding and is removed too. So a table never holds a file twice, and
   never keeps a file no commit references (besides what `vacuum` would remove anyway).

On an object store (`s3://`, lake.storage) nothing can be moved: a batch's files are written once, where they stay,
under `<table>/staged/<app>-b<batch>-<attempt>/` (Hive-style partition directories below it; a directory name without
a leading underscore, so that a full vacuum sees an orphan), and the commit's add actions name them there. An open
batch is marked by an empty object `<table>/_pending/<app>-b<batch>-<attempt>` from its opening until its commit;
before the next write of the same app a marker of an uncommitted batch has its staged files deleted, and every
marker of the app goes. Listing `_pending/` lists the batches in flight, never the table's history.

`mode="delta-spark"` (the session needs delta-spark: jobs.run.jars) commits with delta-spark's own writer: staged
files (`open_pending` / `commit_pending`, the same staging as delta-rs, only the committer differs) are read by Spark
and appended by it. The executors write the files into the table and the driver's Delta commit carries
`SetTransaction(app_id, batch_id)` through the `txnAppId`/`txnVersion` writer options, so delta-spark itself skips
a replayed batch; the sink asks the table first (delta-rs `transaction_version`) and runs no Spark job for a replay
at all. A remote table's batches are staged on this
machine (STAGING_ENV, else the temp directory: enough for local executors; a cluster needs a shared directory). A
crash between the files and the commit leaves files no commit references (`vacuum` removes them); readers never see
them. Each commit also carries `userMetadata` `{"planewatch.app_id", "planewatch.batch_id"}`, by which the sink finds
its own commit in the history and takes the rows and files it wrote from the commit's operation metrics (no second
pass over the batch), and a replay finds the files its batch added.
The upsert of the gold tables is lake.merge; creating tables and the app transaction, lake.tables.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Schema, write_deltalake
from deltalake.transaction import AddAction
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lake import LakeError
from lake.log import added_files
from lake.read import parse_partition_dir
from lake.spark_read import read_files
from lake.staged import (
    BATCH_DIR,
    PENDING_DIR,
    STAGED_DIR,
    cleanup_staged,
    close_staged,
    open_staged,
    staged_adds,
)
from lake.stats import footer_stats
from lake.storage import is_remote, join
from lake.tables import HISTORY_SCAN, app_slug, ensure_table, table_location
from lake.writer import TableHandle, TableWriter

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from schemas.tables import Table

__all__ = [
    "PENDING_DIR",
    "SINK_MODES",
    "STAGED_DIR",
    "DeltaSink",
    "SinkResult",
    "cleanup_pending",
    "conform",
]

log = logging.getLogger(__name__)

SINK_MODES = ("delta-rs", "delta-spark")
# delta-spark on a remote table stages a batch's files under <$PLANEWATCH_STAGING_DIR or the temp dir>/STAGING_DIR.
STAGING_ENV = "PLANEWATCH_STAGING_DIR"
STAGING_DIR = "planewatch-staging"


@dataclass(frozen=True)
class SinkResult:
    """What one `write` did: `skipped` for a replayed batch, else the files and rows committed."""

    table: str
    batch_id: int
    skipped: bool
    files: int = 0
    rows: int = 0
    version: int | None = None
    duration_ms: float = 0.0
    mode: str = "delta-rs"
    paths: tuple[str, ...] = ()  # the committed files (not skipped; delta-spark: local tables only): absolute paths

    @property
    def rows_known(self) -> bool:
        """Whether `rows` is what this write committed (else a caller counts the batch itself): not a replay, and
        for delta-spark its commit was found."""
        return not self.skipped and (self.mode == "delta-rs" or self.version is not None)


def conform(df: DataFrame, table: Table) -> DataFrame:
    """Select the table's columns in order, cast to its types; a missing column is a clear error."""
    missing = [c for c in table.names if c not in df.columns]
    if missing:
        raise LakeError(f"batch for {table.name} lacks columns {missing}")
    schema = table.to_spark()
    return df.select([F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields])


def cleanup_pending(table_path: str, app_id: str, committed: int | None, keep: str | None = None) -> int:
    """Remove the pending directories of `app_id` (and the moved files of uncommitted batches). Returns the count.

    Args:
        table_path: local table directory.
        app_id: only this app's directories are touched (other writers of the table have their own).
        committed: `transaction_version(app_id)`; batches above it never committed.
        keep: a pending directory name to leave alone (the one being written).
    """
    if is_remote(table_path):
        return cleanup_staged(table_path, app_id, committed, keep)
    root = Path(table_path) / PENDING_DIR
    if not root.is_dir():
        return 0
    slug = app_slug(app_id)
    removed = 0
    for entry in root.iterdir():
        m = BATCH_DIR.match(entry.name)
        if not m or m.group("slug") != slug or entry.name == keep:
            continue
        batch = int(m.group("batch"))
        manifest = entry / "_manifest.json"
        if (committed is None or batch > committed) and manifest.is_file():
            for rel in json.loads(manifest.read_text())["files"]:
                try:
                    (Path(table_path) / rel).unlink()
                except FileNotFoundError:
                    pass
        shutil.rmtree(entry, ignore_errors=True)
        removed += 1
        log.info("removed pending dir %s of %s (batch %d, committed %s)", entry.name, app_id, batch, committed)
    return removed


class DeltaSink:
    """Idempotent append of micro-batches to one Delta table (one app id = one query x table).

    A batch is staged as Parquet files (`open_pending`, the files written under it, `commit_pending`: the ingest
    job's path, jobs.ingest.staging) or, when small and on the driver, appended from Arrow (`write_arrow`).
    """

    def __init__(self, path: str, table: Table, app_id: str, mode: str = "delta-rs") -> None:
        if mode not in SINK_MODES:
            raise LakeError(f"sink.mode must be one of {SINK_MODES}, got {mode!r}")
        self.path = path
        self.table = table
        self.app_id = app_id
        self.mode = mode
        self._ensured = False
        # the process's one writer of the table: every query's commits to it go through it (lake.writer)
        self.writer = TableWriter.of(table_location(path))
        self.handle = TableHandle(self.writer.location)  # this sink's, brought up to date batch after batch

    def last_committed(self) -> int | None:
        """The last batch id this app committed to the table, or None."""
        if not DeltaTable.is_deltatable(self.path):
            return None
        return self.writer.committed(self.handle, self.app_id)

    def batch_files(self, batch_id: int) -> list[str]:
        """The file URIs batch `batch_id` of this app added to the table, in the current snapshot (delta-rs: by the
        files' name prefix, which the sink gives every file it commits; delta-spark: the files its commit added,
        found by the commit's userMetadata; local tables only)."""
        if self.mode == "delta-spark":
            if "://" in self.path:
                return []
            version, _files, _rows = self._own_commit(self._marker(batch_id))
            if version is None:
                return []
            return [p for p, _ in added_files(os.path.abspath(self.path), version - 1, version)]
        local = table_location(self.path)
        if not DeltaTable.is_deltatable(local):
            return []
        if is_remote(local):
            staged = f"/{STAGED_DIR}/{app_slug(self.app_id)}-b{batch_id:020d}-"
            return [u for u in DeltaTable(local).file_uris() if staged in u]
        prefix = f"{app_slug(self.app_id)}-b{batch_id}-"
        return [u for u in DeltaTable(local).file_uris() if unquote(u.rsplit("/", 1)[-1]).startswith(prefix)]

    def write_arrow(self, data: pa.Table, batch_id: int) -> SinkResult:
        """Driver-side append of a small Arrow table (dq_results, tiny batches), same exactly-once guard."""
        t0 = time.perf_counter()
        if self.mode == "delta-spark":
            return self._write_arrow_delta_spark(data, batch_id)
        if not self._ensured:
            ensure_table(self.writer.location, self.table)
            self._ensured = True
        if data.num_rows == 0:
            last = self.writer.committed(self.handle, self.app_id)
            return SinkResult(self.table.name, batch_id, last is not None and batch_id <= last)
        rows = data.select(self.table.names).cast(self.table.to_arrow())

        def append(dt: DeltaTable, props: CommitProperties) -> None:
            write_deltalake(dt, rows, mode="append", partition_by=list(self.table.partition_by) or None,
                            commit_properties=props)

        dt = self.writer.commit_once(self.handle, self.app_id, batch_id, "append", append)
        if dt is None:
            return SinkResult(self.table.name, batch_id, True)
        return SinkResult(
            self.table.name, batch_id, False, 1, data.num_rows, dt.version(), (time.perf_counter() - t0) * 1e3
        )

    def _write_arrow_delta_spark(self, data: pa.Table, batch_id: int) -> SinkResult:
        if self.last_committed_at_least(batch_id):
            return SinkResult(self.table.name, batch_id, True, mode="delta-spark")
        if data.num_rows == 0:
            return SinkResult(self.table.name, batch_id, False, mode="delta-spark")
        spark = SparkSession.getActiveSession()
        if spark is None:
            raise LakeError(f"{self.table.name}: sink.mode delta-spark writes through Spark: no active session")
        frame = spark.createDataFrame(data.select(self.table.names).cast(self.table.to_arrow()))
        return self._write_delta_spark(frame, batch_id, checked=True)

    def last_committed_at_least(self, batch_id: int) -> bool:
        """Whether this app already committed batch `batch_id` (or a later one) to the table: a replay."""
        last = self.last_committed()
        return last is not None and batch_id <= last

    def _write_delta_spark(self, df: DataFrame, batch_id: int, checked: bool = False) -> SinkResult:
        t0 = time.perf_counter()
        if not self._ensured:
            ensure_table(self.path, self.table)
            self._ensured = True
        if not checked and self.last_committed_at_least(batch_id):
            log.info("%s: batch %d already committed, skipped", self.table.name, batch_id)
            return SinkResult(self.table.name, batch_id, True, mode="delta-spark")
        marker = self._marker(batch_id)
        writer = conform(df, self.table).write.format("delta").mode("append")
        writer = writer.option("txnAppId", self.app_id).option("txnVersion", batch_id).option("userMetadata", marker)
        if self.table.partition_by:
            writer = writer.partitionBy(*self.table.partition_by)
        with self.writer.lock:
            writer.save(self.path)
        version, files, rows = self._own_commit(marker)
        paths: tuple[str, ...] = ()
        if version is not None and "://" not in self.path:
            paths = tuple(p for p, _ in added_files(os.path.abspath(self.path), version - 1, version))
        dt_ms = (time.perf_counter() - t0) * 1e3
        return SinkResult(self.table.name, batch_id, False, files, rows, version, dt_ms, "delta-spark", paths)

    def _marker(self, batch_id: int) -> str:
        """The userMetadata of this app's delta-spark commit of batch `batch_id`."""
        return json.dumps({"planewatch.app_id": self.app_id, "planewatch.batch_id": str(batch_id)}, sort_keys=True)

    def _own_commit(self, marker: str) -> tuple[int | None, int, int]:
        """(version, files, rows) of the commit carrying `marker`; (None, 0, 0) when the batch committed nothing
        (an empty batch: delta-spark still commits, so this is only a commit beyond HISTORY_SCAN)."""
        for entry in DeltaTable(self.path).history(HISTORY_SCAN):
            if entry.get("userMetadata") == marker:
                metrics = entry.get("operationMetrics") or {}
                return int(entry["version"]), int(metrics.get("numFiles", 0)), int(metrics.get("numOutputRows", 0))
        log.warning("%s: own commit %s not among the last %d commits", self.table.name, marker, HISTORY_SCAN)
        return None, 0, 0

    def _staging_root(self) -> str:
        """The directory whose `_pending/` holds this table's staged batches: the table's own (delta-rs moves the
        files from there into the table); for delta-spark on a remote table, a local directory of this machine
        (STAGING_DIR: the driver and local executors share it; a cluster needs it on a shared file system)."""
        if self.mode == "delta-spark" and "://" in self.path:
            return os.path.join(os.environ.get(STAGING_ENV) or tempfile.gettempdir(), STAGING_DIR,
                                app_slug(self.path))
        return table_location(self.path)

    def open_pending(self, batch_id: int) -> str | None:
        """A new pending directory for batch `batch_id` of this app, or None for a replay.

        Files written under it (Hive-style partition directories of the table's `partition_by`) are committed by
        :meth:`commit_pending`; leftovers of this app's earlier, uncommitted attempts are removed first."""
        root = self._staging_root()
        if not self._ensured:
            ensure_table(self.path if self.mode == "delta-spark" else root, self.table)
            self._ensured = True
        last = self.writer.committed(self.handle, self.app_id)
        cleanup_pending(root, self.app_id, last)
        if last is not None and batch_id <= last:
            log.info("%s: batch %d already committed (txn %d), skipped", self.table.name, batch_id, last)
            return None
        pending_name = f"{app_slug(self.app_id)}-b{batch_id:020d}-{uuid.uuid4().hex[:8]}"
        if is_remote(root):
            return open_staged(root, pending_name)
        pending = os.path.join(root, PENDING_DIR, pending_name)
        os.makedirs(pending, exist_ok=True)
        return pending

    def commit_pending(self, pending: str, batch_id: int, files: Sequence[str] | None = None,
                       t0: float | None = None) -> SinkResult:
        """Commit the Parquet files under `pending` (from :meth:`open_pending`) as batch `batch_id`, exactly once.

        Args:
            pending: the batch's pending directory.
            batch_id: the micro-batch.
            files: only these files (absolute paths under `pending`: the outputs of the task attempts that
                succeeded; a failed attempt's files are left out and removed with the directory); None: all of them.
            t0: when the write began (for the result's duration).
        """
        t0 = time.perf_counter() if t0 is None else t0
        if self.mode == "delta-spark":
            return self._commit_pending_delta_spark(pending, batch_id, files)
        local = table_location(self.path)
        if is_remote(local):
            return self._commit_staged(local, pending, batch_id, files, t0)
        slug = app_slug(self.app_id)
        adds, moves, rows = self._collect_adds(pending, slug, batch_id, None if files is None else set(files))
        if not adds:
            shutil.rmtree(pending, ignore_errors=True)
            return SinkResult(self.table.name, batch_id, False, duration_ms=(time.perf_counter() - t0) * 1e3)
        with open(os.path.join(pending, "_manifest.json"), "w") as fh:
            json.dump({"app_id": self.app_id, "batch_id": batch_id, "files": [dst for _, dst in moves]}, fh)
        for src, dst in moves:
            target = os.path.join(local, dst)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            os.replace(src, target)

        schema = Schema.from_arrow(self.table.to_arrow())
        version = self._commit(adds, schema, batch_id)
        shutil.rmtree(pending, ignore_errors=True)
        dt_ms = (time.perf_counter() - t0) * 1e3
        paths = tuple(os.path.join(local, dst) for _, dst in moves)
        return SinkResult(self.table.name, batch_id, False, len(adds), rows, version, dt_ms, paths=paths)

    def _commit_staged(self, table_uri: str, staged: str, batch_id: int, files: Sequence[str] | None,
                       t0: float) -> SinkResult:
        """:meth:`commit_pending` on an object store (lake.staged): the files under `staged` (those of `files`)
        committed where they are, then the batch is closed."""
        adds, rows = staged_adds(table_uri, staged, files, self.table.partition_by)
        version = None
        if adds:
            schema = Schema.from_arrow(self.table.to_arrow())
            version = self._commit(adds, schema, batch_id)
        close_staged(table_uri, staged, committed=bool(adds))
        dt_ms = (time.perf_counter() - t0) * 1e3
        paths = tuple(join(table_uri, a.path) for a in adds)
        return SinkResult(self.table.name, batch_id, False, len(adds), rows, version, dt_ms, paths=paths)

    def _commit_pending_delta_spark(self, pending: str, batch_id: int, files: Sequence[str] | None) -> SinkResult:
        """delta-spark as the committer of staged files: Spark reads them (the partition values from their
        directories) and delta-spark's writer appends them under txnAppId/txnVersion (:meth:`_write_delta_spark`)."""
        chosen = sorted(files) if files is not None else sorted(
            os.path.join(d, f) for d, _dirs, names in os.walk(pending) for f in names
            if f.endswith(".parquet") and not f.startswith((".", "_")))
        try:
            if not chosen:  # nothing staged: no commit, as delta-rs
                return SinkResult(self.table.name, batch_id, False, mode="delta-spark")
            spark = SparkSession.getActiveSession()
            if spark is None:
                raise LakeError(f"{self.table.name}: sink.mode delta-spark commits through Spark: no session")
            frame = read_files(spark, pending, self.table.to_spark(), self.table.partition_by, chosen)
            return self._write_delta_spark(frame, batch_id, checked=True)
        finally:
            shutil.rmtree(pending, ignore_errors=True)

    def _commit(self, adds: list[Any], schema: Any, batch_id: int) -> int:
        """Commit `adds` as batch `batch_id` of this app through the table's writer; the version it made."""
        def add(dt: DeltaTable, props: CommitProperties) -> None:
            dt.create_write_transaction(adds, mode="append", schema=schema,
                                        partition_by=list(self.table.partition_by) or None, commit_properties=props)

        dt = self.writer.commit_once(self.handle, self.app_id, batch_id, "append", add)
        if dt is None:
            raise LakeError(f"{self.table.name}: batch {batch_id} was committed by another writer of {self.app_id}")
        v: int = dt.version()
        return v

    def _collect_adds(self, pending: str, slug: str, batch_id: int, only: set[str] | None = None
                      ) -> tuple[list[Any], list[tuple[str, str]], int]:
        adds: list[Any] = []
        moves: list[tuple[str, str]] = []
        rows = 0
        for dirpath, _dirs, files in os.walk(pending):
            rel_dir = os.path.relpath(dirpath, pending)
            rel_dir = "" if rel_dir == "." else rel_dir
            for name in sorted(files):
                if not name.endswith(".parquet") or name.startswith((".", "_")):
                    continue  # _SUCCESS, .crc checksums
                src = os.path.join(dirpath, name)
                if only is not None and src not in only:
                    continue  # a failed task attempt's file
                values = parse_partition_dir(rel_dir, self.table.partition_by)
                n, stats = footer_stats(pq.read_metadata(src), self.table.partition_by)
                if n == 0:
                    continue
                dst = os.path.join(rel_dir, f"{slug}-b{batch_id}-{name}") if rel_dir else f"{slug}-b{batch_id}-{name}"
                st = os.stat(src)
                adds.append(
                    AddAction(
                        path=dst,  # delta-rs percent-encodes the physical path itself
                        size=st.st_size,
                        partition_values=values,
                        modification_time=int(st.st_mtime * 1000),
                        data_change=True,
                        stats=stats,
                    )
                )
                moves.append((src, dst))
                rows += n
        return adds, moves, rows


