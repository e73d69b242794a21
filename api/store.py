"""The only module that reads Delta: table handles, snapshots and DataFusion queries over the lake.

Theory of operation
-------------------
Other processes write the tables concurrently (appends and MERGEs through delta-rs), so every read is against
one table *version*. Per table the store keeps one `DeltaTable` handle and checks whether its version moved at
most every ``refresh_interval_s`` (``update_incremental`` reads only the new log entries). What it keeps:

* **Small gold tables** (``alerts``, ``control_request_latency``) are held whole in memory as a pyarrow Table,
  pre-sorted for their endpoints and reloaded only when the version moves. Requests filter them with pyarrow
  compute (vectorised masks, then ``take`` of the page only), which measured about 7x faster than scanning
  Parquet per request (SPARK-RECIPES.md section 9).
* **Big tables** (``metric_samples``, up to ~10 million rows; ``metric_rollups_1m``) are never loaded whole:
  queries go to DataFusion (delta-rs ``QueryBuilder``) with predicates on the partition columns
  (``cluster``, ``date``) and on ``ts`` (file statistics prune the rest), and aggregate/downsample there, so
  only a bounded number of rows comes back. Results are cached per (query, table version).
* **Answers** built from a snapshot or a result (the routes' JSON) are remembered while those stay the same
  objects (`memo`, `derive`); every cache here computes a key once however many requests ask at the same time
  (api.memo), so a commit does not set every request in flight recomputing the same thing.

Failure model: a missing table, a log being written, a file vacuumed under our feet -> `TableUnavailable`
(the API answers 503 for that resource). A snapshot table serves the last version it read: a reload that fails
keeps serving the previous one, and a table not created yet in a lake directory that exists is empty (no alert
was ever written: the pipeline creates its tables before their first rows), so its endpoints answer 503 only when
no version was ever readable (a corrupt first commit, a lake directory that does not exist, a remote lake whose
table is missing). A query slower than ``query_timeout_s`` is abandoned -> `TableUnavailable` as well.
"""

# Over 500 lines: one object owns the lake's handles, their per-version snapshots and the query slots under one lock.
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from api.memo import Memo
from api.snapshots import SNAPSHOTS, read_added_files
from lake.read import TableNotFoundError, open_table, query_builder, read_table, to_plain
from lake.storage import file_location, is_remote
from schemas.tables import ALERTS, CONTROL_REQUEST_LATENCY, METRIC_ROLLUPS_1M, METRIC_SAMPLES, TABLES

__all__ = [
    "QUERY_TABLES",
    "LakeStore",
    "StoreError",
    "TableInfo",
    "TableMissing",
    "TableUnavailable",
]

log = logging.getLogger(__name__)
T = TypeVar("T")

# Tables the service (and `planewatch sql`) may read.
QUERY_TABLES: tuple[str, ...] = tuple(TABLES)
# Tables held whole in memory. Gold tables stay small (one row per alert / per control request); above this
# many rows the snapshot is refused (503) rather than letting one table take the process's memory.
SNAPSHOT_TABLES: tuple[str, ...] = (ALERTS.name, CONTROL_REQUEST_LATENCY.name)
SNAPSHOT_MAX_ROWS = 5_000_000
# DataFusion queries running at once: the machine has 2 cores; more would only queue inside DataFusion.
MAX_CONCURRENT_QUERIES = 2
# Query results remembered per (sql, table versions): enough for a dashboard's panels of a few brokers.
RESULT_CACHE_ENTRIES = 256
# Answers remembered per snapshot (see `memo`): distinct filter/page combinations a busy service sees at once.
MEMO_ENTRIES = 1024
# /health facts remembered per (table, version): a few versions of each of the four tables it reports.
INFO_ENTRIES = 64
# Rows one DataFusion query may return to Python; larger results are cut (callers aggregate, so they never hit it).
MAX_QUERY_ROWS = 100_000


class StoreError(Exception):
    """Base of the store's errors."""


class TableUnavailable(StoreError):
    """A table is missing, being written, or too slow to answer: the API turns this into a 503."""

    def __init__(self, table: str, reason: str) -> None:
        super().__init__(f"table {table} unavailable: {reason}")
        self.table = table
        self.reason = reason


class TableMissing(TableUnavailable):
    """The table has no commit yet (its directory or log is absent): nothing was ever written to it."""


@dataclass
class _Handle:
    """One table's open DeltaTable and what is cached for its current version."""

    table: Any  # deltalake.DeltaTable
    version: int
    checked_at: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    snapshot: pa.Table | None = None
    snapshot_version: int = -1
    add_actions: pa.Table | None = None
    add_actions_version: int = -1
    load_lock: threading.Lock = field(default_factory=threading.Lock)
    reloading: bool = False
    refreshing: bool = False
    snapshot_paths: frozenset[str] = frozenset()


@dataclass(frozen=True)
class TableInfo:
    """What /health reports about one table."""

    name: str
    available: bool
    version: int | None = None
    last_commit: datetime | None = None
    newest_data: datetime | None = None
    rows: int | None = None
    error: str | None = None


class LakeStore:
    """Reads the lake's Delta tables for the API. Thread-safe; one instance per process.

    Args:
        lake: the lake directory (or object-store URI); table ``T`` lives at ``<lake>/T``.
        refresh_interval_s: how often a table's version may be checked.
        query_timeout_s: wall-clock cap of one DataFusion query.
        background_reload: check versions and reload moved snapshots off the request path (see `snapshot`).
        clock: monotonic clock (injected in tests).
    """

    def __init__(
        self,
        lake: str | Path,
        *,
        refresh_interval_s: float = 0.5,
        query_timeout_s: float = 10.0,
        background_reload: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lake = str(lake).rstrip("/")
        self.refresh_interval_s = refresh_interval_s
        self.query_timeout_s = query_timeout_s
        self.background_reload = background_reload
        self._clock = clock
        self._loader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="snapshot-loader")
        self._refresher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="version-refresher")
        self._handles: dict[str, _Handle] = {}
        self._handles_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=MAX_CONCURRENT_QUERIES, thread_name_prefix="datafusion")
        self._slots = threading.BoundedSemaphore(MAX_CONCURRENT_QUERIES)
        self._closed = False
        # Query results per (sql, table versions); answers derived from snapshots/results; /health's per-version
        # facts. Each computes once per key however many requests ask at the same time (api.memo).
        self._results = Memo(RESULT_CACHE_ENTRIES)
        self._answers = Memo(MEMO_ENTRIES)
        self._infos = Memo(INFO_ENTRIES)
        # Per snapshot table, the empty snapshot served while the table does not exist yet (one object per table,
        # so answers memoised on it stay valid until the table appears).
        self._empty: dict[str, pa.Table] = {}

    def close(self) -> None:
        """Stop the query pool (running queries are abandoned) and the background refreshes and reloads."""
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._loader.shutdown(wait=False, cancel_futures=True)
        self._refresher.shutdown(wait=False, cancel_futures=True)

    def path(self, name: str) -> str:
        """Where table `name` lives."""
        return f"{self.lake}/{name}"

    # -- handles ---------------------------------------------------------------------------------------------

    def _handle(self, name: str) -> _Handle:
        """The table's handle, its version refreshed if the refresh interval passed."""
        if name not in TABLES:
            raise TableUnavailable(name, "unknown table")
        now = self._clock()
        with self._handles_lock:
            h = self._handles.get(name)
        if h is None:
            try:
                dt = open_table(self.path(name))
                h = _Handle(dt, dt.version(), now)
            except TableNotFoundError as e:  # no directory, or no commit in its log yet
                raise TableMissing(name, _reason(e)) from e
            except Exception as e:  # a log mid-write, a bad path: "not now"
                raise TableUnavailable(name, _reason(e)) from e
            with self._handles_lock:
                h = self._handles.setdefault(name, h)
            return h
        if now - h.checked_at >= self.refresh_interval_s:
            if self.background_reload:
                # Off the request path: the refresher thread reads the new log entries; this request (and those
                # arriving meanwhile) use the version known so far.
                with h.lock:
                    start = not h.refreshing
                    h.refreshing = True
                if start and not self._background(self._refresher, self._refresh, name, h):
                    with h.lock:
                        h.refreshing = False
            else:
                self._refresh(name, h)
        return h

    def _refresh(self, name: str, h: _Handle) -> None:
        with h.lock:
            try:
                if self._clock() - h.checked_at >= self.refresh_interval_s:
                    h.table.update_incremental()
                    h.version = h.table.version()
                    h.checked_at = self._clock()
            except Exception as e:  # a commit being written: keep the version we have, retry next time
                log.warning("refresh of %s failed, serving version %s: %s", name, h.version, _reason(e))
                h.checked_at = self._clock()
            finally:
                h.refreshing = False
        # a loaded snapshot behind the new version is reloaded now, not at the next request: a poller (a pager, the
        # dashboard) sees a new alert one request sooner
        if self.background_reload and h.snapshot is not None:
            self._start_reload(name, h)

    def version(self, name: str) -> int:
        """The current version of table `name` (raises TableUnavailable)."""
        return self._handle(name).version

    def exists(self, name: str) -> bool:
        """Whether table `name` can be opened now."""
        try:
            self._handle(name)
        except TableUnavailable:
            return False
        return True

    # -- snapshots -------------------------------------------------------------------------------------------

    def snapshot(self, name: str) -> pa.Table:
        """The whole (prepared) table, from memory.

        The first load is synchronous. After that, when the version moves, the reload runs on the loader thread
        (with ``background_reload``) while requests keep getting the previous snapshot, so no request pays the
        reload (stale by at most one load time, ~0.1-0.5 s for 100k alerts); without it, the request reloads.
        A table not created yet in an existing lake is empty (`_missing`).
        """
        if name not in SNAPSHOT_TABLES:
            raise TableUnavailable(name, "not a snapshot table")
        try:
            h = self._handle(name)
        except TableMissing:
            empty = self._missing(name)
            if empty is None:
                raise
            return empty
        snap = h.snapshot
        if snap is not None and h.snapshot_version == h.version:
            return snap
        if snap is not None and self.background_reload:
            self._start_reload(name, h)
            return snap
        with h.load_lock:
            if h.snapshot is None or h.snapshot_version != h.version:
                try:
                    self._load(name, h, h.version)
                except TableUnavailable as e:
                    if h.snapshot is None:
                        if name not in self._empty:
                            raise
                        # the table's first version did not read: serve what was served before it existed
                        log.warning("first load of %s v%s failed, serving it empty: %s", name, h.version, e)
                        return self._empty[name]
                    log.warning("reload of %s v%s failed, serving v%s: %s", name, h.version, h.snapshot_version, e)
            assert h.snapshot is not None
            return h.snapshot

    def _missing(self, name: str) -> pa.Table | None:
        """The empty snapshot of a table that has no commit yet, when the lake directory exists (the pipeline
        creates each table before its first row, so no row was ever written); None when the lake directory does
        not exist (a wrong ``--lake``) or the lake is remote (no directory to look at): that stays a 503."""
        if is_remote(self.lake) or not Path(self.lake).is_dir():
            return None
        empty = self._empty.get(name)
        if empty is None:
            empty = self._empty.setdefault(name, SNAPSHOTS[name].prepare(TABLES[name].to_arrow().empty_table()))
        return empty

    def memo(self, name: str, key: Hashable, compute: Callable[[pa.Table], T]) -> T:
        """`compute(snapshot)` remembered per (table, key) for as long as the table's snapshot stays the same.

        The routes keep their serialized answers here: while the table does not move, a repeated request costs
        a dictionary lookup (the pipeline commits every few seconds; dashboards and pagers ask far more often).
        """
        snap = self.snapshot(name)
        return self._answers.get((name, key), (snap,), lambda: compute(snap))

    def derive(self, key: Hashable, inputs: Sequence[pa.Table | None], compute: Callable[[], T]) -> T:
        """`compute()` remembered per key while `inputs` (snapshots and query results this store handed out, or
        None) stay the same objects, i.e. while no table the answer depends on has moved."""
        return self._answers.get(("derived", key), inputs, compute)

    def _background(self, pool: ThreadPoolExecutor, fn: Callable[..., None], *args: Any) -> bool:
        """Run ``fn(*args)`` on ``pool``; False once the store is closed (nothing is scheduled then)."""
        if self._closed:
            return False
        try:
            pool.submit(fn, *args)
        except RuntimeError:  # closed between the check and the submit
            return False
        return True

    def _start_reload(self, name: str, h: _Handle) -> None:
        """Reload the snapshot on the loader thread if it is behind the table's version and no reload runs."""
        with h.lock:
            start = h.snapshot_version < h.version and not h.reloading
            h.reloading = h.reloading or start
            version = h.version
        if start and not self._background(self._loader, self._reload_in_background, name, h, version):
            with h.lock:
                h.reloading = False

    def _reload_in_background(self, name: str, h: _Handle, version: int) -> None:
        failed = False
        try:
            with h.load_lock:
                self._load(name, h, version)
        except TableUnavailable as e:
            failed = True  # the next request or refresh tries again
            log.warning("background reload of %s v%s failed, serving v%s: %s", name, version, h.snapshot_version, e)
        finally:
            with h.lock:
                h.reloading = False
        if not failed:
            self._start_reload(name, h)  # the version moved while this reload ran: load the newer one now

    def _load(self, name: str, h: _Handle, version: int) -> None:
        """Read version `version` of a snapshot table through its own DeltaTable (no state shared with readers)."""
        if h.snapshot is not None and h.snapshot_version >= version:
            return
        try:
            dt = open_table(self.path(name), version=version)
            actions = pa.table(dt.get_add_actions(flatten=True))
            spec = SNAPSHOTS[name]
            read = spec.files(actions) if spec.files is not None else actions
            rows = sum(int(n) for n in read["num_records"].to_pylist() if n is not None)
            if rows > SNAPSHOT_MAX_ROWS:
                raise TableUnavailable(name, f"{rows} rows is above the snapshot cap of {SNAPSHOT_MAX_ROWS}")
            paths = frozenset(actions["path"].to_pylist())
            root = file_location(dt.table_uri).rstrip("/")
            old = h.snapshot
            plain = not dt.protocol().reader_features
            if old is not None and plain and h.snapshot_paths <= paths:
                added = actions.filter(
                    pc.invert(pc.is_in(actions["path"], value_set=pa.array(list(h.snapshot_paths), pa.string())))
                )
                fresh = read_added_files(str(root), added, name)
                if set(fresh.column_names) <= set(old.column_names):
                    prepared = spec.merge(old, fresh)
                else:  # the table grew a column: read it whole
                    prepared = spec.prepare(read_table(dt, TABLES[name].to_arrow()))
            elif plain and spec.files is not None:  # a windowed snapshot reads only the files of its window
                prepared = spec.prepare(read_added_files(str(root), spec.files(actions), name))
            else:
                prepared = spec.prepare(read_table(dt, TABLES[name].to_arrow()))
        except TableUnavailable:
            raise
        except Exception as e:  # a file vacuumed mid-read, a schema being changed
            raise TableUnavailable(name, _reason(e)) from e
        h.snapshot, h.snapshot_version, h.snapshot_paths = prepared, version, paths
        # A load allocates several copies of the snapshot (decode, concat, sort); Arrow's allocator keeps freed pages
        # for reuse unless asked: without this the process holds its peak (measured: 635 MB after loading the
        # soak's 76 MB hour of control requests, 300 MB with it).
        del old
        pa.default_memory_pool().release_unused()

    def _add_actions_locked(self, h: _Handle) -> pa.Table:
        if h.add_actions is None or h.add_actions_version != h.version:
            h.add_actions = pa.table(h.table.get_add_actions(flatten=True))
            h.add_actions_version = h.version
        return h.add_actions

    def add_actions(self, name: str) -> pa.Table:
        """The table's live files with their statistics (flattened: ``max.ts``, ``partition.date``, ...)."""
        h = self._handle(name)
        with h.lock:
            try:
                return self._add_actions_locked(h)
            except Exception as e:
                raise TableUnavailable(name, _reason(e)) from e

    def info(self, name: str, time_column: str | None) -> TableInfo:
        """Version, last commit time, newest event time (from file statistics) and row count of a table.

        A snapshot table is available only when its snapshot can be served, as its endpoints need: a readable log
        whose data files are missing or corrupt is unavailable here exactly when those endpoints answer 503.
        """
        try:
            h = self._handle(name)
            if name in SNAPSHOT_TABLES:
                self.snapshot(name)
            # Per version: the commit history and file statistics of a version never change (reading the history
            # costs a log read under the table's lock, with the GIL held).
            return self._infos.get((name, h.version, time_column), (), lambda: self._info(name, h, time_column))
        except TableUnavailable as e:
            return TableInfo(name, False, error=e.reason)
        except Exception as e:
            return TableInfo(name, False, error=_reason(e))

    def _info(self, name: str, h: _Handle, time_column: str | None) -> TableInfo:
        actions = self.add_actions(name)
        with h.lock:
            hist = h.table.history(1)
            version = h.version
        last_commit = None
        if hist and hist[0].get("timestamp") is not None:
            last_commit = datetime.fromtimestamp(int(hist[0]["timestamp"]) / 1000, tz=UTC)
        newest = None
        col = f"max.{time_column}" if time_column else None
        if col and col in actions.column_names and actions.num_rows:
            m = pc.max(actions[col]).as_py()
            if isinstance(m, datetime):
                newest = m if m.tzinfo else m.replace(tzinfo=UTC)
        rows = sum(int(n) for n in actions["num_records"].to_pylist() if n is not None) if actions.num_rows else 0
        return TableInfo(name, True, version, last_commit, newest, rows)

    def newest(self, name: str, column: str) -> datetime | None:
        """The largest value of timestamp `column` over the table's files (statistics only, no data read)."""
        actions = self.add_actions(name)
        col = f"max.{column}"
        if col not in actions.column_names or actions.num_rows == 0:
            return None
        m = pc.max(actions[col]).as_py()
        if not isinstance(m, datetime):
            return None
        return m if m.tzinfo else m.replace(tzinfo=UTC)

    def partition_dates(self, name: str, cluster: str | None = None) -> list[str]:
        """The distinct `date` partition values (ISO strings) of a table, optionally for one cluster."""
        actions = self.add_actions(name)
        if "partition.date" not in actions.column_names or actions.num_rows == 0:
            return []
        t = actions
        if cluster is not None and "partition.cluster" in t.column_names:
            t = t.filter(pc.equal(t["partition.cluster"], cluster))
        return sorted({str(d) for d in t["partition.date"].to_pylist() if d is not None})

    # -- DataFusion ------------------------------------------------------------------------------------------

    def query(self, sql: str, tables: Sequence[str], *, cache: bool = True) -> pa.Table:
        """Run `sql` (built by the service, never user text) over `tables` registered by name.

        At most MAX_QUERY_ROWS rows come back; results are cached per (sql, versions of `tables`).

        Raises:
            TableUnavailable: a table is missing/unreadable, or the query ran past the timeout.
        """
        handles = [self._handle(n) for n in tables]
        if not cache:
            return self._query(sql, tables, handles)
        key = (sql, tuple(h.version for h in handles))
        return self._results.get(key, (), lambda: self._query(sql, tables, handles))

    def _query(self, sql: str, tables: Sequence[str], handles: Sequence[_Handle]) -> pa.Table:
        label = ",".join(tables)
        if not self._slots.acquire(timeout=self.query_timeout_s):
            raise TableUnavailable(label, "too many queries running; try again")
        try:
            fut: Future[pa.Table] = self._pool.submit(_run_query, sql, dict(zip(tables, handles, strict=True)))
            try:
                result = fut.result(timeout=self.query_timeout_s)
            except FutureTimeout:
                fut.cancel()
                raise TableUnavailable(label, f"query took longer than {self.query_timeout_s:g}s") from None
            except TableUnavailable:
                raise
            except Exception as e:
                raise TableUnavailable(label, _reason(e)) from e
        finally:
            self._slots.release()
        return result


def _run_query(sql: str, handles: Mapping[str, _Handle]) -> pa.Table:
    qb = query_builder()
    for name, h in handles.items():
        with h.lock:  # registration takes the table's current snapshot; the refresher updates it under this lock
            qb.register(name, h.table)
    # arro3 RecordBatchReader -> pyarrow through the Arrow PyCapsule interface; stop reading at the row cap.
    reader = pa.RecordBatchReader.from_stream(qb.execute(sql))
    batches: list[pa.RecordBatch] = []
    rows = 0
    for b in reader:
        batches.append(b)
        rows += b.num_rows
        if rows >= MAX_QUERY_ROWS:
            break
    return to_plain(pa.Table.from_batches(batches, reader.schema).slice(0, MAX_QUERY_ROWS))


def _reason(e: BaseException) -> str:
    """A one-line reason for an error (no stack traces leave the store; a missing table says just that)."""
    if type(e).__name__ == "TableNotFoundError":
        return "the table does not exist (yet)"
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return f"{type(e).__name__}: {text[:300]}"


# Tables the metrics endpoints read, preferred first.
METRIC_TABLES = (METRIC_ROLLUPS_1M.name, METRIC_SAMPLES.name)
