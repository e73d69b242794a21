"""Table maintenance of the lake: retention, small-file compaction, Delta log cleanup and vacuum of one table
(`maintain_table`), run every `maintenance.interval_s` beside the streaming queries by jobs.run.maintenance.Maintainer.

Why: every trigger commits one small Parquet file per table and partition and one log entry per table (measured: about
1,200 files an hour per silver table, 28,000 a day). Readers (the metric rules' history, the API's snapshots) pay
per file, and a directory of a million files pays at every listing. A pass over a table:

1. **Retention** (`maintenance.retention_days.<table>`): the partitions of `date` older than the table's retention
   are deleted. The predicate names partition columns only, so delta-rs removes whole files and rewrites none.
   `alerts` and `dq_results` have no date partition: their rows older than the retention (a resolved alert's
   `resolved_at`, a result's `run_ts`) are deleted by predicate, which rewrites the files holding them.
2. **Compaction**: a (cluster, date) partition (of a table without partitions: the table) holding at least
   `compact_min_files` files smaller than the target is compacted by delta-rs (`optimize.compact`, one task) into
   files of up to `target_file_mb`, in row groups of `COMPACTED_ROW_GROUP_ROWS` (readers of a time range skip the
   others). A file at the target is never rewritten again, so a growing partition costs at most one target's worth
   of rewriting per pass.
3. **Log cleanup**: the log's commit files (and older checkpoints) behind the newest checkpoint and older than
   `log_retention_h` are deleted (delta-rs writes a checkpoint every 100 commits; a reader starts from the newest
   one; no query of the pipeline streams from a Delta table). This is what delta-rs' `cleanup_metadata` does,
   with planewatch's retention instead of the table's `delta.logRetentionDuration` (30 days by default): setting
   that property is a metadata change, which fails every append that commits at the same moment
   ("Metadata changed since last commit"). The retention is short because every commit lists the log directory:
   an append costs 18 ms beside 76 log files and 53 ms beside 4,200 (two hours at a 2 s trigger), so a day's
   43,000 would add about 0.4 s to each commit of each table.
4. **Vacuum**: data files removed (by compaction, retention, a MERGE) more than `vacuum_retention_h` ago are
   deleted from disk.

None of this blocks a writer or a reader. A maintenance commit carries no app transaction and changes no data
(compaction: dataChange=false), so the sinks' exactly-once versions are untouched and a blind append never conflicts
with it. A MERGE that loses a race with it retries (lake.merge.DeltaMerger); a
maintenance step that loses one is logged and done again at the next pass. The retention of removed files is far
longer than a replay (a crashed batch's committed files are read back within the next trigger) or an API read (a
snapshot's files are read within seconds of its version).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.fs as pafs
from deltalake import DeltaTable, WriterProperties
from deltalake.exceptions import CommitFailedError

from lake.storage import filesystem
from lake.writer import TableWriter
from schemas.tables import ALERTS, DQ_RESULTS, INCIDENTS, Table

__all__ = ["FAILURES_BEFORE_ERROR", "MaintenancePolicy", "TableReport", "cleanup_log", "compactable_partitions",
           "expired_predicate", "maintain_table"]


class MaintenancePolicy(Protocol):
    """What a pass needs of the pipeline's `maintenance` settings (jobs.run.settings.MaintenanceSettings)."""

    @property
    def retention_days(self) -> Mapping[str, int]: ...
    @property
    def target_file_mb(self) -> int: ...
    @property
    def compact_min_files(self) -> int: ...
    @property
    def log_retention_h(self) -> float: ...
    @property
    def vacuum_retention_h(self) -> float: ...


log = logging.getLogger(__name__)

# The rows of the tables without a date partition that retention judges, by this column.
_AGE_COLUMN = {ALERTS.name: "resolved_at", INCIDENTS.name: "resolved_at", DQ_RESULTS.name: "run_ts"}
# Files of the Delta log: a commit (`<version>.json`), its checksum (`.crc`), a checkpoint (`<version>.checkpoint
# .parquet`, or multi-part `<version>.checkpoint.<part>.<parts>.parquet`); `_last_checkpoint` names the newest.
_LOG_FILE = re.compile(r"^(?P<version>\d{20})\.(?:json|crc|checkpoint(?:\.\d+\.\d+)?\.parquet)$")
# Rows per row group of a compacted file. Readers of a time range (the metric rules' history, the pairing's
# fetcher lines, the API's window) skip row groups by their `ts` statistics, and a compacted partition is a day of
# rows in time order; with the writer's default (1 Mi rows) a day's first hours were one row group, read whole by
# every batch. 65,536 rows are a few minutes of a 30-broker cluster's state changes or samples.
COMPACTED_ROW_GROUP_ROWS = 65_536
# delta-rs' own compression of compacted files, kept when the row groups are set.
COMPACTED_WRITER = WriterProperties(max_row_group_size=COMPACTED_ROW_GROUP_ROWS, compression="ZSTD")
# A maintenance pass that failed is retried at the next pass; a pass in a row that fails this many times is logged
# as an error (one lost race is routine, a table that never gets maintained is not).
FAILURES_BEFORE_ERROR = 3


@dataclass
class TableReport:
    """What one pass did to one table."""

    table: str
    deleted_partitions: int = 0
    deleted_rows: int = 0
    compacted_partitions: int = 0
    files_removed: int = 0
    files_added: int = 0
    vacuumed_files: int = 0
    log_files_deleted: int = 0
    seconds: float = 0.0
    lost_races: int = 0
    errors: list[str] = field(default_factory=list)


def expired_predicate(table: Table, days: int, today: dt.date) -> str | None:
    """The delete predicate of the rows of `table` older than `days` on `today` (None: nothing can be expired)."""
    cutoff = today - dt.timedelta(days=days)
    if "date" in table.partition_by:
        return f"date < '{cutoff.isoformat()}'"
    column = _AGE_COLUMN.get(table.name)
    if column is None:
        return None
    return f"{column} < '{cutoff.isoformat()}T00:00:00Z'"


def compactable_partitions(adds: pa.Table, partition_by: tuple[str, ...], min_files: int, target_bytes: int
                           ) -> list[dict[str, str | None]]:
    """The partitions (their values) holding at least `min_files` files smaller than `target_bytes`, from the
    snapshot's add actions (`path`, `size_bytes`, `partition.<column>`)."""
    if adds.num_rows == 0:
        return []
    small: Counter[tuple[str | None, ...]] = Counter()
    columns = [f"partition.{c}" for c in partition_by]
    for row in adds.select(["size_bytes", *columns]).to_pylist():
        if row["size_bytes"] < target_bytes:
            key = tuple(None if row[c] is None else str(row[c]) for c in columns)
            small[key] += 1
    return [dict(zip(partition_by, key, strict=True)) for key, n in sorted(small.items(), key=lambda kv: str(kv[0]))
            if n >= min_files]


def _retried(what: str, report: TableReport, step: Callable[[], Any]) -> Any:
    """`step()`, or None when it lost a commit race (done again at the next pass)."""
    try:
        return step()
    except CommitFailedError as exc:
        report.lost_races += 1
        log.info("maintenance of %s: %s lost a commit race (%s); next pass", report.table, what, exc)
        return None


def cleanup_log(path: str, retention_h: float, now: dt.datetime) -> int:
    """Delete the log files of the table at `path` (a directory or an object store URI) that lie behind its newest
    checkpoint and were written more than `retention_h` before `now`; returns how many. The newest checkpoint and
    everything after it stay."""
    fs, root = filesystem(path)
    log_dir = f"{root}/_delta_log"
    try:
        with fs.open_input_stream(f"{log_dir}/_last_checkpoint") as f:
            checkpoint = int(json.loads(f.read())["version"])
    except (OSError, ValueError, KeyError):
        return 0  # no checkpoint yet: every commit is needed
    cutoff = now.timestamp() - retention_h * 3600
    deleted = 0
    for entry in fs.get_file_info(pafs.FileSelector(log_dir)):
        m = _LOG_FILE.match(entry.base_name)
        if m is None or int(m["version"]) >= checkpoint or entry.mtime is None:
            continue
        if entry.mtime.timestamp() < cutoff:
            fs.delete_file(entry.path)
            deleted += 1
    return deleted


def maintain_table(path: str, table: Table, cfg: MaintenancePolicy, now: dt.datetime) -> TableReport:
    """One pass over the Delta table at `path` (see the module docstring), as of `now`."""
    report = TableReport(table.name)
    t0 = time.perf_counter()
    # each step that commits holds the process's writer of the table (lake.writer): an ingest query's commit waits
    # for it (a compaction holds it for one partition) instead of racing it
    lock = TableWriter.of(path).lock
    dt_ = DeltaTable(path)
    days = cfg.retention_days.get(table.name)
    if days:
        predicate = expired_predicate(table, days, now.date())
        if predicate is not None:
            with lock:
                dt_.update_incremental()
                metrics = _retried("retention", report, lambda: dt_.delete(predicate))
            if metrics:
                report.deleted_rows = int(metrics.get("num_deleted_rows") or 0)
                report.deleted_partitions = int(metrics.get("num_removed_files") or 0)
    target = cfg.target_file_mb * 1024 * 1024
    dt_.update_incremental()
    adds = pa.table(dt_.get_add_actions(flatten=True))
    for partition in compactable_partitions(adds, table.partition_by, cfg.compact_min_files, target):
        # a table without partitions (alerts, dq_results) is one partition: compacted whole
        filters = [(c, "=", v) for c, v in partition.items() if v is not None] or None
        with lock:
            dt_.update_incremental()
            metrics = _retried("compaction", report, lambda f=filters: dt_.optimize.compact(  # type: ignore[misc]
                partition_filters=f, target_size=target, max_concurrent_tasks=1, writer_properties=COMPACTED_WRITER))
        if metrics:
            report.compacted_partitions += 1
            report.files_removed += int(metrics.get("numFilesRemoved") or 0)
            report.files_added += int(metrics.get("numFilesAdded") or 0)
        dt_.update_incremental()
    report.log_files_deleted = cleanup_log(path, cfg.log_retention_h, now)
    with lock:
        dt_.update_incremental()
        vacuumed = _retried("vacuum", report, lambda: dt_.vacuum(
            retention_hours=int(cfg.vacuum_retention_h), dry_run=False, enforce_retention_duration=False))
    report.vacuumed_files = len(vacuumed or [])
    report.seconds = time.perf_counter() - t0
    return report
