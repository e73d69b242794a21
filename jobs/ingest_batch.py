"""One micro-batch of an ingest query (`IngestBatch`, the query's foreachBatch function): ONE path.

A batch of source records (jobs.io.sources.RAW_RECORD_DDL):

1. is read ONCE, by its source's one reader (files, scrapes, Kafka: the stream Spark hands the batch, made bronze by
   jobs.io.bronze.to_raw); a replayed batch whose bronze rows were committed by the crashed attempt is read from
   those committed files instead (so its silver rows carry the same `ingest_ts` as its bronze rows);
2. is handed to one pure `process()` (the engine, pipelines.parsing.engine.run_engine, with the family and the
   quality suites bound): each record is routed to a silver table, to `quarantine` (parser rejects, stage
   `parse`/`source`; rows failing a hard quality rule, stage `validate`) or to recognised-but-unused (kept in bronze
   only, counted); the route and stage vocabulary is schemas.routes;
3. is staged as Parquet files per table (bronze, each silver table, quarantine) and committed per table
   (jobs.io.engine_files.write_batch, jobs.io.delta_sink.DeltaSink.commit_pending);
4. its rules run on the committed silver rows (jobs.batch_detect), then its dq_results rows are written
   (jobs.ingest_quality, schemas.dq): per hard rule, Great Expectations on a sample, the reconciliation
   raw = silver + quarantine + unused, and a file query's byte reconciliation and skipped input entries
   (jobs.io.file_accounting).

Where `process()` runs is a parameter of that one path, not another path (`IngestBatch.where`, by default chosen
per batch before it is read): `driver` collects the batch (one Spark job, or none for a replay read from bronze)
and stages it here; `executors` stages it in one Spark job, a task per core. `auto` takes the driver for a file or
scrape batch whose offsets (the query's offset log: metadata, not the input) say it holds at most about
`sink.driver_batch_max_rows` records (DRIVER_RECORD_BYTES each), the executors otherwise (a Kafka batch: its size
is not read to find out). Both write the same rows.

Every table is written through the exactly-once sink (jobs.io.delta_sink) under its own app id
(`<query>.<run id>:<table>`, the run id kept in the query's checkpoint: jobs.io.checkpoints) and the batch id as
version: a replayed batch writes nothing twice (a table that committed it is staged nothing).

`sink.mode: delta-spark` still writes through Spark's writer (`IngestBatch._executor_batch`: bronze, then the engine
over the bronze rows read back, one Spark write per table).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.ingest_quality import IngestQuality
from jobs.io.bronze import to_raw
from jobs.io.delta_sink import DeltaSink, SinkResult, ensure_table
from jobs.io.settings import Settings
from schemas.dq import RECONCILIATION_SUITE, RECORDS_EXPECTATION, DqResult
from schemas.routes import RAW_TABLES, REJECTED, ROUTE_TABLES, UNUSED, VALIDATE
from schemas.tables import DQ_RESULTS, QUARANTINE

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import Column, DataFrame

    from jobs.batch_detect import BatchDetect, SilverLoad
    from pipelines.quality.rules import Suite

__all__ = ["BatchReport", "IngestBatch"]

log = logging.getLogger(__name__)

# Bytes of file input counted as one record when `auto` sizes a file batch from its offsets (not from its records:
# the batch is not read to decide where it is processed): about a Kafka log line (the benchmark's lines average
# 200 bytes), so the default sink.driver_batch_max_rows (20,000) takes file batches up to ~4 MB to the driver.
DRIVER_RECORD_BYTES = 200
# Where process() may run: auto (per batch: IngestBatch.where_for), or always one of the two.
WHERE = ("auto", "driver", "executors")


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
    path: str = ""  # where process() ran: driver | executors (IngestBatch.where_for)
    # seconds per stage (read, engine+files; delta-spark: raw, <table>, quarantine; ge:<table>, detect, dq): where a
    # slow batch spends its time
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
    """A loader of a silver frame's rows (the path through Spark's writer: delta-spark): the first call collects the
    frame in its table's types (one more Spark job), every call filters that."""
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
                 scrape_checkpoint: str | None = None, detect: BatchDetect | None = None, where: str = "auto"
                 ) -> None:
        if where not in WHERE:
            raise ValueError(f"where must be one of {WHERE}, got {where!r}")
        self.settings = settings
        self.where = where  # where process() runs (WHERE)
        # the rules run on the batch's committed silver rows (jobs.batch_detect), before its dq rows are written
        self.detect = detect
        # the query's checkpoint, when its source is planewatch_files: the offset log tells each batch's bytes (its
        # size, for where_for; its byte reconciliation, jobs.io.file_accounting)
        self.files_checkpoint = checkpoint
        # the query's checkpoint, when its source is planewatch_prometheus: the offset log tells each batch's bytes
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
        """`auto` processes a file batch of at most about this many records on the driver (0: never; delta-spark:
        never)."""
        return self.settings.driver_batch_max_rows if self.settings.sink_mode == "delta-rs" else 0

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        report = BatchReport(batch_id)
        cached: list[DataFrame] = []
        try:
            suites = self.quality.suites()
            # read the batch once, run the engine, stage and commit each table (the one path)
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
        """Bronze, the engine and every other table of the batch: the one path (delta-rs), with `process()` where
        :meth:`where_for` says; delta-spark through Spark's writer."""
        if self.settings.sink_mode == "delta-rs":
            return self._one_path(raw, suites, report)
        return self._executor_batch(raw, suites, report, cached)

    def where_for(self, batch_id: int) -> str:
        """Where `process()` runs for batch `batch_id` (driver | executors), decided before the batch is read."""
        if self.where != "auto":
            return self.where
        size = self._logged_bytes(batch_id) if self.driver_max_rows else None
        return "driver" if size is not None and size <= self.driver_max_rows * DRIVER_RECORD_BYTES else "executors"

    def _logged_bytes(self, batch_id: int) -> int | None:
        """The bytes of input batch `batch_id` reads, from its offsets in the query's offset log (a file or scrape
        batch; None for another source, or offsets the log does not hold)."""
        from jobs.io.checkpoints import logged_offset

        if self.files_checkpoint is not None:
            from jobs.io.sources import file_batch_bytes

            end = logged_offset(self.files_checkpoint, batch_id)
            return None if end is None else file_batch_bytes(end)
        if self.scrape_checkpoint is not None:
            from jobs.io.prometheus_source import scrape_batch_bytes

            end = logged_offset(self.scrape_checkpoint, batch_id)
            start = logged_offset(self.scrape_checkpoint, batch_id - 1) if batch_id else {"targets": {}}
            return None if end is None or start is None else scrape_batch_bytes(start, end)
        return None

    def _one_path(self, raw: DataFrame, suites: dict[str, Suite], report: BatchReport) -> TablesWritten:
        """The batch read once, through `process()`, staged as files per table and committed per table."""
        from jobs.io.delta_read import read_files
        from jobs.io.engine_files import (
            FilesOutcome,
            committed_rows,
            local_file,
            sample_rows,
            stage_on_driver,
            stage_on_executors,
            write_batch,
        )
        from pipelines.parsing.engine import run_engine

        batch_id, family = report.batch_id, self.family
        where = report.path = self.where_for(batch_id)
        process = functools.partial(run_engine, family=family, suites=suites or None)
        # a replay whose bronze rows the crashed attempt committed reads them, not the source again
        bronze_files = [local_file(u) for u in self.raw_sink.batch_files(batch_id)] \
            if self.raw_sink.last_committed_at_least(batch_id) else None

        def job(pending: Mapping[str, str]) -> FilesOutcome:
            if where == "executors":
                source = raw if bronze_files is None else read_files(
                    raw.sparkSession, self.raw_sink.path, self.raw_table.to_spark(), self.raw_table.partition_by,
                    bronze_files)
                return stage_on_executors(source, family, process, pending)
            rows = raw.toArrow() if bronze_files is None else committed_rows(bronze_files, self.raw_table)
            report.lap("read")
            return stage_on_driver(rows, family, process, pending)

        sinks = [self.raw_sink, *self.silver_sinks.values(), self.quarantine_sink]
        outcome, results = write_batch(job, batch_id, sinks)
        report.lap("engine+files")
        routes, failed = outcome.routes, _failed_rules(outcome.rules, suites)
        report.raw = sum(n for route, n in routes.items() if route != VALIDATE)
        if report.raw == 0:
            return TablesWritten(empty=True)
        report.silver = {s.table.name: routes.get(route, 0) - sum(failed.get(s.table.name, {}).values())
                         for route, s in self.silver_sinks.items()}
        report.quarantine = routes.get(REJECTED, 0) + routes.get(VALIDATE, 0)
        report.unused = routes.get(UNUSED, 0)
        paths = {s.table.name: list(results[s.table.name].paths) if not results[s.table.name].skipped
                 else [local_file(u) for u in s.batch_files(batch_id)]
                 for s in self.silver_sinks.values() if report.silver[s.table.name]}
        samples = {s.table.name: functools.partial(sample_rows, paths[s.table.name], s.table)
                   for s in self.silver_sinks.values() if paths.get(s.table.name)}
        rows = {s.table.name: functools.partial(committed_rows, paths[s.table.name], s.table)
                for s in self.silver_sinks.values() if paths.get(s.table.name)}
        return TablesWritten(failed, samples, rows)

    def _executor_batch(self, raw: DataFrame, suites: dict[str, Suite], report: BatchReport,
                        cached: list[DataFrame]) -> TablesWritten:
        """The path through Spark's writer (delta-spark only): no Spark cache, and in the common case one parse of
        each line.

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
