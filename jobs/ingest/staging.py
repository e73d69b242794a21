"""Staging one ingest micro-batch: its bronze rows through the engine into every table's Parquet files.

Theory of operation (delta-rs sink mode; the driver commits, as for every delta-rs write):

1. The driver opens a pending directory per table that has not committed the batch yet
   (:meth:`lake.sink.DeltaSink.open_pending`: bronze, each silver table, quarantine; the tables at once).
2. The batch's bronze rows are staged where the job says, by the same code (:func:`_task`):
   :func:`stage_on_executors` runs it in ONE Spark job (``mapInArrow``, a task per core) over the rows Spark handed
   the batch (:func:`stage_pieces_on_executors`: a file batch, each task reading its share of the batch's pieces);
   :func:`stage_on_driver` runs it here over rows the driver read (no Spark job). Either way the rows are
   gathered into chunks of at most :data:`ENGINE_ROWS` records / :data:`ENGINE_BYTES` bytes; each chunk is written
   to bronze, run through the engine the job gave (:data:`Process`: the job binds
   pipelines.parsing.engine.run_engine; this module imports no pipelines code), and its silver and quarantine rows
   written, all with pyarrow into Hive-style partition directories under the pending directories (one file per
   table and partition per task, a row group per chunk). Unused records are counted, not written: bronze holds them.
3. The staging yields only descriptors (:data:`OUTPUT_DDL`): each file it wrote with its rows, the rows per parser
   route and per failed hard rule, the newest event time per cluster of its silver rows (the pipeline's input lag,
   jobs.run.observability). :func:`write_batch` sums them and commits each table's files (the tables at once) with
   :meth:`~lake.sink.DeltaSink.commit_pending`, which takes only the files the collected (successful)
   task attempts reported: a failed attempt's files are never committed.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from jobs.ingest.bronze import arrow_to_raw
from jobs.sources.file_tail import Piece, read_piece
from lake.failpoints import hold
from lake.read import HIVE_NULL, committed_rows
from lake.sink import SinkResult
from lake.storage import delete_tree, filesystem, is_remote, join
from schemas.dq import SOURCE_REASON_CHARS
from schemas.routes import RAW_TABLES, ROUTE_TABLES, SOURCE_STAGE
from schemas.tables import QUARANTINE, Table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from lake.sink import DeltaSink

__all__ = ["ENGINE_BYTES", "ENGINE_ROWS", "OUTPUT_DDL", "FilesOutcome", "PartitionFiles", "Process", "Processed",
           "each_table", "partition_dir", "read_pieces", "sample_rows", "shares", "stage_on_driver",
           "stage_on_executors", "stage_pieces_on_executors", "write_batch"]

T = TypeVar("T")
log = logging.getLogger(__name__)

# Records per engine run: the engine's fixed cost per call (a few dozen polars operations) is noise at this size,
# and one chunk of the benchmark's ~200-byte lines is ~20 MB of text in memory.
ENGINE_ROWS = 100_000
# ... and at most this many bytes of records (a chunk of multi-megabyte lines stays bounded).
ENGINE_BYTES = 64 * 1024 * 1024
# polars threads in an executor's Python worker (read by polars when the worker first imports it).
POLARS_THREADS_PER_TASK = 1
# Files of one table a task uploads at once when it closes them on an object store: closing one is a PUT (~20 ms on
# an idle machine, mostly waiting), and a batch of a fleet writes one per table and cluster (30 clusters: 30).
UPLOADS = 8
# kind: file (name = table, path, rows) | route (name = parser route, rows) | rule (name = `<table>|<expectation>`)
# | newest (name = cluster, rows = the newest `ts` of its silver rows in unix microseconds) | source (name = a source
# failure's kind, schemas.dq.SOURCE_SUITE; rows = its quarantined records)
OUTPUT_DDL = "kind string, name string, path string, rows long"
# The characters Spark escapes in a partition directory's value (ExternalCatalogUtils.charToEscape), as %XX.
_ESCAPE = frozenset('"#%\'*/:=?\\\x7f{[]^') | frozenset(chr(c) for c in range(1, 32))


class Processed(Protocol):
    """What the engine made of a chunk of bronze rows (pipelines.parsing.engine.EngineResult has this shape)."""

    @property
    def silver(self) -> Mapping[str, pa.Table]: ...  # silver table name -> its valid rows
    @property
    def quarantine(self) -> pa.Table | None: ...
    @property
    def counts(self) -> Mapping[str, int]: ...  # route (schemas.routes) -> records
    @property
    def failed_rules(self) -> Mapping[str, Mapping[str, int]]: ...  # table -> {hard rule: rows that failed it}


# The engine, given to this module by its caller (the job binds the family, the quality suites, the cluster's zone):
# bronze rows of one chunk -> every table's rows. Pure; pickled by reference into the executors' Python workers.
Process = Callable[["pa.Table"], Processed]


def partition_dir(table: Table, values: tuple[Any, ...]) -> str:
    """The Hive-style relative directory of one partition of `table` (values in `partition_by` order), spelt as
    Spark spells it (the sink reads it back with `urllib.parse.unquote`)."""
    parts = []
    for name, value in zip(table.partition_by, values, strict=True):
        text = HIVE_NULL if value is None else "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in str(value))
        parts.append(f"{name}={text}")
    return "/".join(parts)


class PartitionFiles:
    """One open Parquet file per partition of one table, in one task."""

    def __init__(self, table: Table, pending: str) -> None:
        self.table = table
        self.pending = pending
        self.schema = table.to_arrow()
        self.file_schema = pa.schema([f for f in self.schema if f.name not in table.partition_by])
        self.writers: dict[tuple[Any, ...], Any] = {}
        self.rows: dict[tuple[Any, ...], int] = {}
        self.paths: dict[tuple[Any, ...], str] = {}

    def write(self, tbl: pa.Table) -> None:
        if tbl.num_rows == 0:
            return
        tbl = tbl.select(self.table.names).cast(self.schema)
        keys = list(self.table.partition_by)
        groups = [tuple(r.values()) for r in tbl.select(keys).group_by(keys).aggregate([]).to_pylist()] \
            if keys else [()]
        for values in groups:
            part = tbl
            if len(groups) > 1:
                mask = None
                for name, value in zip(keys, values, strict=True):
                    col = tbl.column(name)
                    m = pa.compute.is_null(col) if value is None else pa.compute.equal(col, value)
                    mask = m if mask is None else pa.compute.and_(mask, m)
                part = tbl.filter(mask)
            part = part.drop_columns(keys)
            writer = self.writers.get(values)
            if writer is None:
                rel = partition_dir(self.table, values)
                directory = join(self.pending, rel) if rel else self.pending
                path = join(directory, f"part-{uuid.uuid4().hex}.parquet")
                if is_remote(path):  # an object store: written where the commit will name it (lake.sink)
                    fs, key = filesystem(path)
                    writer = pq.ParquetWriter(key, self.file_schema, compression="snappy", filesystem=fs)
                else:
                    os.makedirs(directory, exist_ok=True)
                    writer = pq.ParquetWriter(path, self.file_schema, compression="snappy")
                self.writers[values], self.paths[values], self.rows[values] = writer, path, 0
            writer.write_table(part.cast(self.file_schema))
            self.rows[values] += part.num_rows

    def close(self) -> list[tuple[str, int]]:
        """Each file closed (on an object store: uploaded), a few at once; (path, rows) of each."""
        remote = any(is_remote(path) for path in self.paths.values())
        with ThreadPoolExecutor(UPLOADS if remote else 1) as pool:
            list(pool.map(lambda writer: writer.close(), self.writers.values()))
        return [(self.paths[k], self.rows[k]) for k in self.writers]


@dataclass
class FilesOutcome:
    """What the job wrote: files per table, rows per parser route and per failed hard rule."""

    files: dict[str, list[str]] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)  # table -> rows written
    routes: dict[str, int] = field(default_factory=dict)
    rules: dict[str, int] = field(default_factory=dict)  # `<table>|<expectation>` -> rows
    newest: dict[str, float] = field(default_factory=dict)  # cluster -> the newest `ts` of its silver rows (unix s)
    sources: dict[str, int] = field(default_factory=dict)  # a source failure's kind (schemas.dq.SOURCE_SUITE) -> rows


def _task(batches: Iterator[pa.RecordBatch], family: str, process: Process, pending: Mapping[str, str]
          ) -> Iterator[pa.RecordBatch]:
    """The staging of one task (or of the driver): bronze batches -> each table's files under its pending directory
    (only the tables in `pending`: a table that already committed the batch gets none), and the descriptors."""
    raw_table = RAW_TABLES[family]
    tables = [raw_table, *ROUTE_TABLES[family].values(), QUARANTINE]
    outputs = {t.name: PartitionFiles(t, pending[t.name]) for t in tables if t.name in pending}
    routes: dict[str, int] = {}
    rules: dict[str, int] = {}
    newest: dict[str, int] = {}  # cluster -> microseconds
    sources: dict[str, int] = {}  # kind of source failure -> quarantined records

    def write(name: str, tbl: pa.Table) -> None:
        files = outputs.get(name)
        if files is not None:
            files.write(tbl)

    def flush(chunk: list[pa.RecordBatch]) -> None:
        raw = pa.Table.from_batches(chunk)
        write(raw_table.name, raw)
        result = process(raw)
        for name, tbl in result.silver.items():
            write(name, tbl)
            _newest_ts(tbl, newest)
        if result.quarantine is not None:
            write(QUARANTINE.name, result.quarantine)
            _source_failures(result.quarantine, sources)
        for route, n in result.counts.items():
            routes[route] = routes.get(route, 0) + n
        for table, failed in result.failed_rules.items():
            for rule, n in failed.items():
                rules[f"{table}|{rule}"] = rules.get(f"{table}|{rule}", 0) + n

    chunk: list[pa.RecordBatch] = []
    rows = size = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        chunk.append(batch)
        rows += batch.num_rows
        size += batch.nbytes
        if rows >= ENGINE_ROWS or size >= ENGINE_BYTES:
            flush(chunk)
            chunk, rows, size = [], 0, 0
    if chunk:
        flush(chunk)
    out: list[tuple[str, str, str | None, int]] = []
    for name, files in outputs.items():
        out += [("file", name, path, n) for path, n in files.close()]
    out += [("route", k, None, v) for k, v in routes.items()]
    out += [("rule", k, None, v) for k, v in rules.items()]
    out += [("newest", k, None, v) for k, v in newest.items()]
    out += [("source", k, None, v) for k, v in sources.items()]
    if out:
        kinds, names, paths, counts = zip(*out, strict=True)
        yield pa.RecordBatch.from_arrays(
            [pa.array(kinds, pa.string()), pa.array(names, pa.string()), pa.array(paths, pa.string()),
             pa.array(counts, pa.int64())], names=["kind", "name", "path", "rows"])


def _source_failures(quarantine: pa.Table, sources: dict[str, int]) -> None:
    """Count the quarantined records of stage `source` per kind of failure (schemas.dq.SOURCE_SUITE, vectorized)
    into `sources`."""
    failed = quarantine.filter(pc.equal(quarantine.column("stage"), SOURCE_STAGE)).column("reason")
    if not len(failed):
        return
    head = pc.list_element(pc.split_pattern(pc.fill_null(failed, ""), ": ", max_splits=1), 0)
    for kind in pc.value_counts(pc.utf8_slice_codeunits(head, 0, SOURCE_REASON_CHARS)).to_pylist():
        sources[kind["values"]] = sources.get(kind["values"], 0) + kind["counts"]


def _newest_ts(rows: pa.Table, newest: dict[str, int]) -> None:
    """Fold the newest `ts` per cluster of silver `rows` into `newest` (cluster -> unix microseconds)."""
    if not rows.num_rows:
        return
    micros = pc.cast(pc.cast(rows.column("ts"), pa.timestamp("us", "UTC"), safe=False), pa.int64())
    per = pa.table({"cluster": rows.column("cluster"), "us": micros}).group_by("cluster").aggregate([("us", "max")])
    for cluster, top in zip(per["cluster"].to_pylist(), per["us_max"].to_pylist(), strict=True):
        if cluster is not None and top is not None:
            newest[cluster] = max(newest.get(cluster, top), top)


def _outcome(rows: Sequence[Any]) -> FilesOutcome:
    """The tasks' descriptor rows (OUTPUT_DDL), summed."""
    outcome = FilesOutcome()
    for row in rows:
        kind, name, rows_ = row["kind"], row["name"], int(row["rows"])
        if kind == "file":
            outcome.files.setdefault(name, []).append(row["path"])
            outcome.rows[name] = outcome.rows.get(name, 0) + rows_
        elif kind == "route":
            outcome.routes[name] = outcome.routes.get(name, 0) + rows_
        elif kind == "newest":
            outcome.newest[name] = max(outcome.newest.get(name, 0.0), rows_ / 1e6)
        elif kind == "source":
            outcome.sources[name] = outcome.sources.get(name, 0) + rows_
        else:
            outcome.rules[name] = outcome.rules.get(name, 0) + rows_
    return outcome


def stage_on_executors(bronze: DataFrame, family: str, process: Process, pending: Mapping[str, str]
                       ) -> FilesOutcome:
    """The batch's bronze rows staged by the executors: ONE job (``mapInArrow``), a task per core, each running
    `process` over its rows and writing its files under `pending` (table name -> its pending directory); the
    outcome the tasks reported."""
    targets = dict(pending)

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # One polars thread per task: Spark already runs a task per core, more threads only add contention.
        os.environ.setdefault("POLARS_MAX_THREADS", str(POLARS_THREADS_PER_TASK))
        return _task(batches, family, process, targets)

    # One task per core: a batch of many small source partitions (a scrape each) otherwise pays a task's fixed cost
    # (scheduling, Python worker hand-over, open Parquet files, an engine run) per partition, and writes as many
    # small files per table.
    tasks = bronze.sparkSession.sparkContext.defaultParallelism
    return _outcome(bronze.coalesce(tasks).mapInArrow(run, OUTPUT_DDL).collect())


def stage_on_driver(bronze: pa.Table, family: str, process: Process, pending: Mapping[str, str]) -> FilesOutcome:
    """The same staging done by this process over the batch's bronze rows it holds: what one task of
    :func:`stage_on_executors` does, without a Spark job."""
    out = list(_task(iter(bronze.to_batches(max_chunksize=ENGINE_ROWS)), family, process, dict(pending)))
    return _outcome(pa.Table.from_batches(out).to_pylist() if out else [])


def shares(pieces: Sequence[Piece], tasks: int) -> list[list[Piece]]:
    """The pieces dealt to at most `tasks` tasks, largest first to the least loaded (balanced bytes); each share in
    file order. Deterministic for a given piece list."""
    loads = [0] * max(1, min(tasks, len(pieces)))
    dealt: list[list[Piece]] = [[] for _ in loads]
    for piece in sorted(pieces, key=lambda p: (p.start - p.end, p.path, p.start)):
        i = loads.index(min(loads))
        dealt[i].append(piece)
        loads[i] += piece.end - piece.start
    return [sorted(share, key=lambda p: (p.path, p.start)) for share in dealt if share]


def read_pieces(pieces: Sequence[Piece], family: str, batch_id: int) -> Iterator[pa.RecordBatch]:
    """The bronze rows of a file batch's pieces, read where this runs: the file source's reader
    (jobs.sources.file_tail.read_piece, what its stream's `read` runs) as bronze (jobs.ingest.bronze.arrow_to_raw)."""
    now = dt.datetime.now(dt.UTC)
    for piece in pieces:
        for batch in read_piece(piece, now):
            yield arrow_to_raw(batch, family, batch_id)


def stage_pieces_on_executors(spark: SparkSession, pieces: Sequence[Piece], family: str, process: Process,
                              batch_id: int, pending: Mapping[str, str]) -> FilesOutcome:
    """:func:`stage_on_executors` for a file batch: each task reads its share of the batch's pieces itself
    (:func:`read_pieces`), so no record passes through the JVM (one conversion of every line to Spark's rows and
    one back to Arrow saved); the job's input is one row per task."""
    targets = dict(pending)
    dealt = shares(pieces, spark.sparkContext.defaultParallelism)
    if not dealt:
        return FilesOutcome()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        os.environ.setdefault("POLARS_MAX_THREADS", str(POLARS_THREADS_PER_TASK))
        for batch in batches:
            for task in batch.column("id").to_pylist():
                yield from _task(read_pieces(dealt[task], family, batch_id), family, process, targets)

    return _outcome(spark.range(0, len(dealt), 1, len(dealt)).mapInArrow(run, OUTPUT_DDL).collect())


def write_batch(run: Callable[[Mapping[str, str]], FilesOutcome], batch_id: int, sinks: Sequence[DeltaSink],
                lap: Callable[[str], None] = lambda stage: None) -> tuple[FilesOutcome, dict[str, SinkResult]]:
    """One micro-batch staged (`run`, given the pending directory of each table that has not committed the batch)
    and committed per table (`sinks`: bronze, silver, quarantine). A table that already committed the batch (a
    replay after a crash between commits) is staged nothing and its result is `skipped`; `run` still runs, for the
    batch's counts. The tables are opened at once and committed at once (:func:`each_table`). `lap` is told when
    each step ended: `open` (every table), `stage` (`run`: the batch read, through the engine, its files written),
    `commit` (every table)."""
    opened = each_table(sinks, lambda sink: sink.open_pending(batch_id))
    pending = {sink.table.name: directory for sink, directory in zip(sinks, opened, strict=True)
               if directory is not None}
    lap("open")
    try:
        outcome = run(pending)
    except BaseException:
        for directory in pending.values():
            delete_tree(directory)  # an object store's marker goes with the next write's cleanup
        raise
    lap("stage")

    def commit(sink: DeltaSink) -> SinkResult:
        if sink.table.name not in pending:
            return SinkResult(sink.table.name, batch_id, True)
        hold("commit", sink.table.name)
        return sink.commit_pending(pending[sink.table.name], batch_id, outcome.files.get(sink.table.name, []))

    results = each_table(sinks, commit)
    lap("commit")
    return outcome, {sink.table.name: result for sink, result in zip(sinks, results, strict=True)}


def each_table(sinks: Sequence[DeltaSink], step: Callable[[DeltaSink], T]) -> list[T]:
    """`step` of every sink, a thread each when every sink commits with delta-rs (the tables are independent: each
    its own app transaction and writer lock, and a replay finds per table what was committed, in any order; on an
    object store an open or a commit is mostly waiting on a few round trips); one after the other with delta-spark,
    whose commits are Spark jobs. The first exception of a step is raised once every step has ended (the others'
    logged)."""
    if len(sinks) < 2 or any(sink.mode != "delta-rs" for sink in sinks):
        return [step(sink) for sink in sinks]
    with ThreadPoolExecutor(len(sinks)) as pool:
        futures = [pool.submit(step, sink) for sink in sinks]
    failed = [(sink, e) for sink, f in zip(sinks, futures, strict=True) if (e := f.exception()) is not None]
    for sink, e in failed[1:]:
        log.error("%s: %s", sink.table.name, e, exc_info=e)
    if failed:
        raise failed[0][1]
    return [f.result() for f in futures]


def sample_rows(paths: Sequence[str], table: Table, limit: int) -> Any:
    """The first `limit` rows of committed files of `table` as pandas, without the labels map (a GE sample)."""
    rows = committed_rows(paths, table, limit=limit)
    return rows.drop_columns([c for c in ("labels",) if c in rows.column_names]).to_pandas()
