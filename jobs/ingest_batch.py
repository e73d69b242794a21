"""One micro-batch of an ingest query (`IngestBatch`, the query's foreachBatch function).

A batch of source records (jobs.io.sources.RAW_RECORD_DDL):

1. is written to bronze (`raw_logs` / `raw_metrics`), every record with its source and offset;
2. runs through the one parse-and-validate engine (pipelines.parsing.engine): each record is routed to a silver
   table, to `quarantine` (parser rejects, stage `parse`/`source`; rows failing a hard quality rule, stage
   `validate`) or to recognised-but-unused (kept in bronze only, counted);
3. each silver table and `quarantine` is written;
4. its dq_results rows are written (jobs.ingest_quality, schemas.dq): per hard rule, Great Expectations on a sample,
   the reconciliation raw = silver + quarantine + unused, and a file query's byte reconciliation and skipped input
   entries (jobs.io.file_accounting).

Steps 1-3 take one of three paths, by the batch's size and the sink mode; each writes the same rows:

* driver (delta-rs, at most `sink.driver_batch_max_rows` records): one Spark job collects the batch, the driver runs
  the engine and commits every table without another Spark job;
* executors writing the files (delta-rs, a larger batch): ONE Spark job in which the executors run the engine and
  write every table's Parquet files themselves, then the driver commits them (jobs.io.engine_files);
* executors through Spark's writer (delta-spark, and a replayed batch): bronze first, then the engine over the bronze
  rows read back (`mapInArrow`), one Spark write per table.

Every table is written through the exactly-once sink (jobs.io.delta_sink) under its own app id
(`<query>.<run id>:<table>`, the run id kept in the query's checkpoint: jobs.io.checkpoints) and the batch id as
version: a replayed batch writes nothing twice.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.ingest_quality import IngestQuality
from jobs.io.bronze import to_raw
from jobs.io.delta_sink import DeltaSink, SinkResult, ensure_table
from jobs.io.settings import Settings
from schemas.dq import RECONCILIATION_SUITE, RECORDS_EXPECTATION, DqResult
from schemas.routes import RAW_TABLES, ROUTE_TABLES
from schemas.tables import DQ_RESULTS, QUARANTINE

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import Column, DataFrame

    from jobs.batch_detect import BatchDetect, SilverLoad
    from jobs.io.file_tail import Piece
    from pipelines.quality.rules import Suite

__all__ = ["BatchReport", "IngestBatch"]

log = logging.getLogger(__name__)

# A micro-batch above this many bytes goes to the executors without being read for the driver path first: a
# larger one holds more records than the path takes (one source piece, jobs.io.file_tail.SPLIT_BYTES, holds ~40,000
# Kafka log lines, twice the default row limit), and reading it here would be wasted.
DRIVER_PATH_MAX_BYTES = 8 * 1024 * 1024


class Counts:
    """Rows per value of a column, counted while a job runs (`DataFrame.observe`): no pass of its own.

    The observed node is also a barrier the optimizer pushes no filter through: a route filter pushed below the
    parser's projections would inline their expressions into the filter (the whole parse evaluated twice per line,
    and plans so large that a union of three of them ran the driver out of memory).
    """

    def __init__(self, name: str) -> None:
        self.name = name  # unique per query and batch: concurrent queries share the session
        self._observation: Any = None
        self._keys: tuple[str, ...] = ()

    def on(self, df: DataFrame, col: Column, keys: Sequence[str]) -> DataFrame:
        """`df`, counting its rows per value of `col` among `keys` in the first action run on it."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        self._keys = tuple(keys)
        self._observation = Observation(self.name)
        return df.observe(self._observation, *[F.count_if(col == F.lit(k)).alias(f"k{i}") for i, k in
                                               enumerate(self._keys)])

    def get(self) -> dict[str, int]:
        """The counts (blocks until the first action on the observed frame finished: call after it)."""
        if self._observation is None:
            return {}
        got = self._observation.get
        return {k: int(got.get(f"k{i}") or 0) for i, k in enumerate(self._keys)}


def _rows_of(result: SinkResult, frame: DataFrame) -> int:
    """Rows written, from the Parquet footers the sink read; a skipped (replayed) batch is counted by Spark."""
    if not result.rows_known:
        return int(frame.count())
    return result.rows


@dataclass
class BatchReport:
    """Counts of one micro-batch (logged, and the reconciliation row)."""

    batch_id: int
    raw: int = 0
    silver: dict[str, int] = field(default_factory=dict)
    quarantine: int = 0
    unused: int = 0
    seconds: float = 0.0
    path: str = ""  # driver (a small batch, IngestBatch._driver_batch) | executors
    # seconds per stage (read or collect, raw, parse or engine+files, <table>, quarantine, ge:<table>, dq): where a slow
    # batch spends its time
    stages: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter, init=False, repr=False)
    _mark: float = field(init=False, repr=False)  # when the last stage ended

    def __post_init__(self) -> None:
        self._mark = self.started

    def lap(self, stage: str) -> None:
        """Add the time since the last stage ended (or the batch started) to ``stage``."""
        now = time.perf_counter()
        self.stages[stage] = round(self.stages.get(stage, 0.0) + now - self._mark, 3)
        self._mark = now

    @property
    def balanced(self) -> bool:
        return self.raw == sum(self.silver.values()) + self.quarantine + self.unused

    def reconciliation(self, raw_table: str) -> DqResult:
        """The batch's record reconciliation: raw == silver + quarantine + unused."""
        import datetime as dt

        accounted = sum(self.silver.values()) + self.quarantine + self.unused
        return DqResult(raw_table, self.batch_id, RECONCILIATION_SUITE, RECORDS_EXPECTATION, self.balanced,
                        abs(self.raw - accounted), self.raw, dt.datetime.now(dt.UTC))


@dataclass
class TablesWritten:
    """What a batch's path wrote, for its dq rows (the counts are in its BatchReport)."""

    # silver table -> {hard rule: rows that failed it}, rules without failures left out
    failed_rules: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    # silver table with rows -> its rows of the batch as pandas, at most the given number (a GE sample)
    samples: Mapping[str, Callable[[int], Any]] = field(default_factory=dict)
    # silver table with rows -> a loader of its rows of the batch as Arrow (in-batch detection: jobs.batch_detect)
    rows: Mapping[str, SilverLoad] = field(default_factory=dict)
    empty: bool = False  # the batch held no record: no table rows to judge or reconcile


def _failed_rules(counts: Mapping[str, int], suites: Mapping[str, Suite]) -> dict[str, dict[str, int]]:
    """Counts per `<table>|<expectation>` (the engine's rule keys) -> per table and hard rule, failures only."""
    return {table: {e.name: n for e in suite.hard if (n := counts.get(f"{table}|{e.name}", 0))}
            for table, suite in suites.items()}


def _spark_sample(frame: DataFrame, limit: int) -> Any:
    return frame.drop("labels").limit(limit).toPandas()


def _arrow_rows(table: pa.Table, columns: list[str] | None, where: pc.Expression | None) -> pa.Table:
    """The rows of an Arrow table that `where` keeps, with `columns` (None: all)."""
    kept = table if where is None else table.filter(where)
    return kept if columns is None else kept.select(columns)


def _spark_rows(frame: DataFrame, sink: DeltaSink) -> SilverLoad:
    """A loader of a silver frame's rows (the executor path through Spark's writer only: delta-spark, a replayed
    batch): the first call collects the frame in its table's types (one more Spark job), every call filters that."""
    import pyarrow as pa

    from jobs.io.delta_sink import conform

    @functools.cache
    def collected() -> pa.Table:
        return pa.table(conform(frame, sink.table).toArrow()).cast(sink.table.to_arrow())

    return lambda columns, where: _arrow_rows(collected(), columns, where)


def _arrow_sample(table: pa.Table, limit: int) -> Any:
    return table.drop_columns([c for c in ("labels",) if c in table.column_names]).slice(0, limit).to_pandas()


class IngestBatch:
    """The foreachBatch function of one ingest query (callable(df, batch_id))."""

    def __init__(self, settings: Settings, family: str, query: str, run_id: str, checkpoint: str | None = None,
                 scrape_checkpoint: str | None = None, detect: BatchDetect | None = None) -> None:
        self.settings = settings
        # the rules run on the batch's committed silver rows (jobs.batch_detect), before its dq rows are written
        self.detect = detect
        # the query's checkpoint, when its source is planewatch_files: the offset log tells each batch's bytes
        self.files_checkpoint = checkpoint
        # the query's checkpoint, when its source is planewatch_prometheus: the offset log and the spool hold each
        # batch's scrapes
        self.scrape_checkpoint = scrape_checkpoint
        self.family = family
        self.query = query
        prefix = f"{query}.{run_id}"
        mode = settings.sink_mode
        self.raw_table = RAW_TABLES[family]
        self.raw_sink = DeltaSink(settings.table_path(self.raw_table.name), self.raw_table, f"{prefix}:raw", mode)
        # parser route -> its silver table's sink; the first is the family's main table (most of the lines)
        self.silver_sinks = {
            route: DeltaSink(settings.table_path(t.name), t, f"{prefix}:{t.name}", mode)
            for route, t in ROUTE_TABLES[family].items()
        }
        self.quarantine_sink = DeltaSink(settings.table_path(QUARANTINE.name), QUARANTINE, f"{prefix}:quarantine", mode)
        self.dq_sink = DeltaSink(settings.table_path(DQ_RESULTS.name), DQ_RESULTS, f"{prefix}:dq_results", mode)
        self.quality = IngestQuality(settings.quality, [s.table.name for s in self.silver_sinks.values()])
        self.reports: list[BatchReport] = []

    def ensure_tables(self) -> None:
        """Create every table this query writes (empty), so readers find them before the first row."""
        for sink in (self.raw_sink, *self.silver_sinks.values(), self.quarantine_sink, self.dq_sink):
            ensure_table(sink.path, sink.table)

    @property
    def driver_max_rows(self) -> int:
        """Batches of at most this many records take the driver path (0: never; delta-spark: never)."""
        return self.settings.driver_batch_max_rows if self.settings.sink_mode == "delta-rs" else 0

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        report = BatchReport(batch_id)
        cached: list[DataFrame] = []
        try:
            suites = self.quality.suites()
            # write bronze, run the engine, write each table (one of the three paths)
            written = self._write_tables(to_raw(df, self.family, batch_id), suites, report, cached)
            if self.detect is not None and not written.empty:
                self.detect(written.rows, batch_id)
                report.lap("detect")
            # write the dq rows
            self._write_dq(self._dq_results(written, suites, report), report)
        except BaseException:
            log.exception("batch %d failed", batch_id)
            raise
        finally:
            for frame in cached:
                frame.unpersist()
            report.seconds = time.perf_counter() - report.started
            self.reports.append(report)
            log.info("%s batch %d: %s", self.query, batch_id, report)

    def _write_tables(self, raw: DataFrame, suites: dict[str, Suite], report: BatchReport, cached: list[DataFrame]
                      ) -> TablesWritten:
        """Bronze, the engine and every other table of the batch, on the path its size and the sink mode choose."""
        pieces = self._file_pieces(report.batch_id)
        if self._driver_path_possible(pieces):
            # a file batch, or a scrape batch whose answers the spool holds, is read here, without Spark; another
            # source's by ONE Spark job. At most driver_max_rows records come back whole; a larger batch (a Spark
            # source's stops at one record more) goes to the executors
            head = self._read_here(pieces, report.batch_id) if pieces is not None else \
                self._scrapes_here(report.batch_id)
            if head is not None:
                report.lap("read")
            else:
                head = raw.limit(self.driver_max_rows + 1).toArrow()
                report.lap("collect")
            if head.num_rows <= self.driver_max_rows:
                return self._driver_batch(head, suites, report)
        if self.settings.sink_mode == "delta-rs":
            written = self._files_batch(raw, pieces, suites, report)
            if written is not None:
                return written
        return self._executor_batch(raw, suites, report, cached)

    def _driver_path_possible(self, pieces: list[Piece] | None) -> bool:
        """Whether the batch may be small enough for the driver path: a file batch (its `pieces`) of more than
        DRIVER_PATH_MAX_BYTES is not; another source's is counted by reading it."""
        if not self.driver_max_rows:
            return False
        return pieces is None or sum(p.end - p.start for p in pieces) <= DRIVER_PATH_MAX_BYTES

    def _file_pieces(self, batch_id: int) -> list[Piece] | None:
        """The pieces of a file batch as its offset log planned them (None for another source, or an offset the log
        does not hold)."""
        if self.files_checkpoint is None:
            return None
        from jobs.io.sources import logged_file_pieces

        return logged_file_pieces(self.files_checkpoint, batch_id, self.family)

    def _scrapes_here(self, batch_id: int) -> pa.Table | None:
        """A scrape batch's bronze rows read by this process (None: not a scrape batch, or its answers are not all in
        the spool any more), at most one record more than the driver path takes."""
        from jobs.io.bronze import arrow_to_raw
        from jobs.io.prometheus_source import logged_scrape_records

        if self.scrape_checkpoint is None:
            return None
        records = logged_scrape_records(self.scrape_checkpoint, batch_id)
        if records is None:
            return None
        return self._head(arrow_to_raw(b, self.family, batch_id) for b in records)

    def _read_here(self, pieces: list[Piece], batch_id: int) -> pa.Table:
        """A file batch's bronze rows read by this process, at most one record more than the driver path takes."""
        from jobs.io.engine_files import read_pieces

        return self._head(read_pieces(pieces, self.family, batch_id))

    def _head(self, batches: Iterator[pa.RecordBatch]) -> pa.Table:
        """Bronze batches read until they hold more records than the driver path takes (then it is not taken)."""
        import pyarrow as pa

        taken: list[pa.RecordBatch] = []
        rows = 0
        for batch in batches:
            taken.append(batch)
            rows += batch.num_rows
            if rows > self.driver_max_rows:
                break
        return pa.Table.from_batches(taken, self.raw_table.to_arrow())

    def _files_batch(self, raw: DataFrame, pieces: list[Piece] | None, suites: dict[str, Suite], report: BatchReport
                     ) -> TablesWritten | None:
        """The executor path of a new batch (delta-rs): ONE job in which the executors run the engine and write every
        table's Parquet files themselves (jobs.io.engine_files; a file batch's tasks read its pieces themselves),
        then the driver commits them. None (nothing written) for a replayed batch, which :meth:`_executor_batch`
        re-derives from the bronze rows it committed."""
        from jobs.io.engine_files import (
            FilesOutcome,
            committed_rows,
            engine_files,
            engine_pieces,
            sample_rows,
            write_batch,
        )
        from pipelines.parsing.engine import run_engine

        report.path = "executors"
        sinks = [self.raw_sink, *self.silver_sinks.values(), self.quarantine_sink]
        batch_id, family = report.batch_id, self.family

        process = functools.partial(run_engine, family=family, suites=suites or None)

        def job(pending: Mapping[str, str]) -> FilesOutcome:
            if pieces is None:
                return engine_files(raw, family, process, pending)
            return engine_pieces(raw.sparkSession, pieces, family, process, batch_id, pending)

        written = write_batch(job, batch_id, sinks)
        if written is None:
            return None
        outcome, results = written
        report.lap("engine+files")
        report.raw = results[self.raw_table.name].rows
        report.silver = {s.table.name: results[s.table.name].rows for s in self.silver_sinks.values()}
        report.quarantine = results[QUARANTINE.name].rows
        report.unused = outcome.routes.get("unused", 0)
        samples = {s.table.name: functools.partial(sample_rows, results[s.table.name].paths, s.table)
                   for s in self.silver_sinks.values() if results[s.table.name].paths}
        rows = {s.table.name: functools.partial(committed_rows, results[s.table.name].paths, s.table)
                for s in self.silver_sinks.values() if results[s.table.name].paths}
        return TablesWritten(_failed_rules(outcome.rules, suites), samples, rows)

    def _executor_batch(self, raw: DataFrame, suites: dict[str, Suite], report: BatchReport,
                        cached: list[DataFrame]) -> TablesWritten:
        """The executor path through Spark's writer (delta-spark, and a replayed batch): no Spark cache, and in the
        common case one parse of each line.

        1. The executors write the batch to bronze; the silver jobs then read the batch back from those Parquet
           files (a columnar scan), not from the source (a Python reader) nor from a Spark cache (building one cost
           more than the parse).
        2. One job parses every line and writes the family's main table (state-change events, metric samples),
           counting on the way (`DataFrame.observe`) the rows of every route and of every failed hard rule.
        3. Only when those counts say so, a later job writes the other silver table (parsing only the lines that can
           belong to it) and one the quarantine (parsing again: bad input is rare, and costs one more pass).
        """
        from pyspark.sql import functions as F

        batch_id = report.batch_id
        report.path = "executors"
        result = self.raw_sink.write(raw, batch_id)
        bronze = self._bronze(raw, result, cached)
        report.raw = result.rows if result.rows_known else int(bronze.count())
        report.lap("raw")
        if report.raw == 0:
            return TablesWritten(empty=True)
        from pipelines.parsing.engine_spark import engine_frame, route_frame, routes

        wide = engine_frame(bronze, self.family, suites or None, batch_id)
        observed = Counts(f"routes:{self.query}:{batch_id}")
        rule_keys = [f"{t}|{e.name}" for t, suite in suites.items() for e in suite.hard]
        rules = Counts(f"rules:{self.query}:{batch_id}")
        wide = observed.on(wide, F.col("_route"), routes(self.family))
        if rule_keys:  # quality off: no rule to count (an observation needs at least one metric)
            wide = rules.on(wide, F.col("_rule"), rule_keys)
        counts: dict[str, int] = {}
        for i, (route, sink) in enumerate(self.silver_sinks.items()):
            if i and not counts.get(route):
                report.silver[sink.table.name] = 0
            else:
                # the first table's job runs the engine over every line and counts every route on the way; a later
                # table's job (only when it has rows) runs it again
                frame = route_frame(wide, self.family, route)
                written = sink.write(frame, batch_id)
                if written.skipped:  # a replayed batch wrote nothing: run the plan once for its counts
                    frame.write.format("noop").mode("overwrite").save()
                if i == 0:
                    counts = observed.get()
                report.silver[sink.table.name] = counts.get(route, 0)
            report.lap(sink.table.name)
        failed = _failed_rules(rules.get() if rule_keys else {}, suites)
        report.unused = counts.get("unused", 0)
        if counts.get("rejected", 0) + counts.get("invalid", 0):
            quarantine = route_frame(wide, self.family, "quarantine")
            report.quarantine = _rows_of(self.quarantine_sink.write(quarantine, batch_id), quarantine)
        report.lap("quarantine")
        samples = {sink.table.name: functools.partial(_spark_sample, route_frame(wide, self.family, route))
                   for route, sink in self.silver_sinks.items() if report.silver[sink.table.name]}
        rows = {sink.table.name: _spark_rows(route_frame(wide, self.family, route), sink)
                for route, sink in self.silver_sinks.items() if report.silver[sink.table.name]}
        return TablesWritten(failed, samples, rows)

    def _bronze(self, raw: DataFrame, result: SinkResult, cached: list[DataFrame]) -> DataFrame:
        """The batch's bronze rows for the silver jobs: read back from the files the batch committed (delta-rs, and
        delta-spark on a local table), else the source rows, cached: a re-read of the source would stamp a new
        ingest_ts."""
        from jobs.io.delta_read import read_files

        if result.mode == "delta-rs" or result.paths:
            # a replayed batch committed its files in an earlier run: found by name in the table's snapshot
            files = self.raw_sink.batch_files(result.batch_id) if result.skipped else list(result.paths)
            if files or not result.skipped:
                return read_files(raw.sparkSession, self.raw_sink.path, self.raw_table.to_spark(),
                                  self.raw_table.partition_by, files)
        frame = raw.persist()
        cached.append(frame)
        return frame

    def _driver_batch(self, raw: pa.Table, suites: dict[str, Suite], report: BatchReport) -> TablesWritten:
        """The driver path: a small batch collected once, run through the engine here, committed without Spark jobs.

        A micro-batch of a few lines costs the executor path a Spark job per output table (seconds of fixed cost on
        a busy 2-core machine, most of a quiet cluster's detection delay); the engine is the same on both paths."""
        import pyarrow as pa

        from pipelines.parsing.engine import run_engine

        batch_id = report.batch_id
        report.path = "driver"
        report.raw = raw.num_rows
        self.raw_sink.write_arrow(raw, batch_id)
        report.lap("raw")
        if report.raw == 0:
            return TablesWritten(empty=True)
        routed = run_engine(raw, self.family, suites=suites or None, batch_id=batch_id)
        report.lap("parse")
        for sink in self.silver_sinks.values():
            good = routed.silver.get(sink.table.name)
            if good is None:
                continue
            sink.write_arrow(good, batch_id)
            report.silver[sink.table.name] = good.num_rows
            report.lap(sink.table.name)
        quarantine = routed.quarantine if routed.quarantine is not None else pa.table({})
        self.quarantine_sink.write_arrow(quarantine, batch_id)
        report.quarantine = quarantine.num_rows
        report.unused = routed.unused.num_rows if routed.unused is not None else 0
        report.lap("quarantine")
        written = {s.table.name: good for s in self.silver_sinks.values()
                   if (good := routed.silver.get(s.table.name)) is not None and good.num_rows}
        samples = {name: functools.partial(_arrow_sample, good) for name, good in written.items()}
        rows = {name: functools.partial(_arrow_rows, good) for name, good in written.items()}
        return TablesWritten(routed.failed_rules, samples, rows)

    def _dq_results(self, written: TablesWritten, suites: dict[str, Suite], report: BatchReport) -> list[DqResult]:
        """The batch's dq_results rows: per hard rule, Great Expectations on samples (after every table is
        committed: detection reads the silver rows meanwhile), the record reconciliation, a file query's rows; a
        batch without records has only the last."""
        batch_id = report.batch_id
        if written.empty:
            return self._file_results(batch_id)
        results: list[DqResult] = []
        for table, suite in suites.items():
            results += self.quality.rule_results(table, suite, written.failed_rules.get(table, {}),
                                                 report.silver.get(table, 0), batch_id)
        for table, sample in written.samples.items():
            if table in suites and self.quality.ge_due(table):
                results += self.quality.sample_results(table, suites[table], sample, batch_id)
                report.lap(f"ge:{table}")
        results.append(report.reconciliation(self.raw_table.name))
        return results + self._file_results(batch_id)

    def _file_results(self, batch_id: int) -> list[DqResult]:
        """A file query's rows about its input (jobs.io.file_accounting): the byte reconciliation, and the entries
        skipped as not regular files (each reported once); none for other sources."""
        if self.files_checkpoint is None:
            return []
        from jobs.io.file_accounting import file_batch_rows

        return file_batch_rows(self.files_checkpoint, batch_id, self.raw_table.name)

    def _write_dq(self, results: list[DqResult], report: BatchReport) -> None:
        """Write the batch's dq rows (a batch without records and without file rows writes none)."""
        import pyarrow as pa

        if not results:
            return
        rows = pa.Table.from_pylist([r.to_row() for r in results], DQ_RESULTS.to_arrow())
        self.dq_sink.write_arrow(rows, report.batch_id)
        report.lap("dq")
