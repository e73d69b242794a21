"""The ingest streaming queries shared by jobs/ingest_logs.py, jobs/ingest_metrics.py and `planewatch pipeline`.

One query per (family, source): `ingest_logs_files`, `ingest_logs_kafka`, `ingest_metrics_files`,
`ingest_metrics_kafka`, `ingest_metrics_prometheus` (live endpoints scraped every trigger; a failed scrape is one raw
record the parser quarantines with stage `source`). Each micro-batch (`IngestBatch`):

1. raw records -> bronze (`raw_logs` / `raw_metrics`), every record with its source and offset;
2. `pipelines.parsing` -> silver tables + parser rejects (+ recognised-but-unused lines, kept in bronze only);
3. data quality (`pipelines.quality`): hard row rules over every silver row -> failing rows to `quarantine`
   (stage `validate`, reason = the expectation), Great Expectations on a bounded sample -> `dq_results`;
4. a reconciliation row in `dq_results`: raw = silver + quarantine + unused, per batch; a file query adds the byte
   reconciliation and its skipped input entries (jobs.io.file_accounting).

Every table is written through the exactly-once sink with its own app id (`<query>.<run id>:<table>`), the run id
being stored in the query's checkpoint directory: a new checkpoint (batch ids restart at 0) gets new app ids.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.io.checkpoints import SCRAPE_SPOOL_DIR, app_run_id
from jobs.io.delta_sink import DeltaSink, SinkResult, ensure_table
from jobs.io.settings import Settings
from pipelines.parsing.engine import ROUTE_TABLES
from schemas.tables import (
    DQ_RESULTS,
    QUARANTINE,
    RAW_LOGS,
    RAW_METRICS,
    Table,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["IngestBatch", "start_ingest_queries", "to_raw"]

log = logging.getLogger(__name__)

RAW_TABLE = {"logs": RAW_LOGS, "metrics": RAW_METRICS}
# A file micro-batch above this many bytes skips the driver path's row-count job: that job reads every partition
# of the batch in full (a limit over a Python source), which for a backfill cost as much as the bronze write. One
# source piece (jobs.io.file_tail.SPLIT_BYTES) holds ~40,000 Kafka log lines, twice the default row limit.
DRIVER_PATH_MAX_BYTES = 8 * 1024 * 1024


def to_raw(df: DataFrame, family: str, batch_id: int) -> DataFrame:
    """Source records (jobs.io.sources.RAW_RECORD_DDL) -> the bronze table's columns."""
    from pyspark.sql import functions as F

    kind_col = "log_kind" if family == "logs" else "metric_format"
    return df.select(
        "cluster",
        "broker_id",
        F.col("kind").alias(kind_col),
        "line",
        "line_bytes",
        "source",
        "source_offset",
        "ingest_ts",
        F.lit(batch_id).cast("long").alias("batch_id"),
        F.to_date(F.col("ingest_ts")).alias("date"),
    )


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
    # seconds per stage (raw, parse+<table>, ge:<table>, quarantine, dq): where a slow batch spends its time
    stages: dict[str, float] = field(default_factory=dict)

    def lap(self, stage: str, since: float) -> float:
        """Add the time since ``since`` to ``stage``; returns now (the next stage's start)."""
        now = time.perf_counter()
        self.stages[stage] = round(self.stages.get(stage, 0.0) + now - since, 3)
        return now

    @property
    def balanced(self) -> bool:
        return self.raw == sum(self.silver.values()) + self.quarantine + self.unused


class IngestBatch:
    """The foreachBatch function of one ingest query (callable(df, batch_id))."""

    def __init__(self, settings: Settings, family: str, query: str, run_id: str, checkpoint: str | None = None
                 ) -> None:
        self.settings = settings
        # the query's checkpoint, when its source is planewatch_files: the offset log tells each batch's bytes
        self.files_checkpoint = checkpoint
        self.family = family
        self.query = query
        prefix = f"{query}.{run_id}"
        mode = settings.sink_mode
        self.raw_table = RAW_TABLE[family]
        self.raw_sink = DeltaSink(settings.table_path(self.raw_table.name), self.raw_table, f"{prefix}:raw", mode)
        # parser route -> its silver table's sink; the first is the family's main table (most of the lines)
        self.silver_sinks = {
            route: DeltaSink(settings.table_path(t.name), t, f"{prefix}:{t.name}", mode)
            for route, t in ROUTE_TABLES[family].items()
        }
        self.quarantine_sink = DeltaSink(settings.table_path(QUARANTINE.name), QUARANTINE, f"{prefix}:quarantine", mode)
        self.dq_sink = DeltaSink(settings.table_path(DQ_RESULTS.name), DQ_RESULTS, f"{prefix}:dq_results", mode)
        self.reports: list[BatchReport] = []
        self._ge_last: dict[str, float] = {}  # table -> monotonic time of its last GE sample validation

    def ensure_tables(self) -> None:
        """Create every table this query writes (empty), so readers find them before the first row."""
        for sink in (self.raw_sink, *self.silver_sinks.values(), self.quarantine_sink, self.dq_sink):
            ensure_table(sink.path, sink.table)

    def prepare_quality(self) -> None:
        """Build the Great Expectations context in the background while the first batch runs (~3 s)."""
        if self.settings.quality.enabled:
            from pipelines.quality.gx import prepare_in_background

            prepare_in_background(list(self._suites().values()))

    @property
    def driver_max_rows(self) -> int:
        """Batches of at most this many records take the driver path (0: never; delta-spark: never)."""
        return self.settings.driver_batch_max_rows if self.settings.sink_mode == "delta-rs" else 0

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        t0 = time.perf_counter()
        report = BatchReport(batch_id)
        raw = to_raw(df, self.family, batch_id)
        cached: list[DataFrame] = []
        lap = t0
        try:
            if self._driver_path_possible(batch_id):
                # ONE Spark job reads the batch and decides: at most driver_max_rows records come back whole; a
                # larger batch stops at one record more and goes to the executors
                head = raw.limit(self.driver_max_rows + 1).toArrow()
                lap = report.lap("collect", t0)
                if head.num_rows <= self.driver_max_rows:
                    self._driver_batch(head, report, lap)
                    return
            if not (self.settings.sink_mode == "delta-rs" and self._files_batch(raw, report, lap)):
                self._executor_batch(raw, report, lap, cached)
        except BaseException:
            log.exception("batch %d failed", batch_id)
            raise
        finally:
            for frame in cached:
                frame.unpersist()
            report.seconds = time.perf_counter() - t0
            self.reports.append(report)
            log.info("%s batch %d: %s", self.query, batch_id, report)

    def _driver_path_possible(self, batch_id: int) -> bool:
        """Whether the batch may be small enough for the driver path: a file batch of more than
        DRIVER_PATH_MAX_BYTES goes to the executors without the row-count job (which reads every partition)."""
        if not self.driver_max_rows:
            return False
        if self.files_checkpoint is None:
            return True
        from jobs.io.sources import logged_file_batch_bytes

        size = logged_file_batch_bytes(self.files_checkpoint, batch_id)
        return size is None or size <= DRIVER_PATH_MAX_BYTES

    def _files_batch(self, raw: DataFrame, report: BatchReport, lap: float) -> bool:
        """The executor path of a new batch (delta-rs): ONE job in which the executors run the engine and write every
        table's Parquet files themselves (jobs.io.engine_files), then the driver commits them. False (nothing
        written) for a replayed batch, which :meth:`_executor_batch` re-derives from the bronze rows it committed."""
        from jobs.io.engine_files import sample_rows, write_batch

        report.path = "executors"
        quality = self._suites() if self.settings.quality.enabled else {}
        sinks = [self.raw_sink, *self.silver_sinks.values(), self.quarantine_sink]
        written = write_batch(raw, self.family, quality or None, report.batch_id, sinks)
        if written is None:
            return False
        outcome, results = written
        lap = report.lap("engine+files", lap)
        report.raw = results[self.raw_table.name].rows
        report.silver = {s.table.name: results[s.table.name].rows for s in self.silver_sinks.values()}
        report.quarantine = results[QUARANTINE.name].rows
        report.unused = outcome.routes.get("unused", 0)
        dq_rows: list[dict[str, Any]] = []
        for table_name, suite in quality.items():
            failed = {e.name: outcome.rules.get(f"{table_name}|{e.name}", 0) for e in suite.hard}
            dq_rows += self._rule_counts({k: v for k, v in failed.items() if v}, suite_table(self, table_name),
                                         report.batch_id, report.silver.get(table_name, 0))
        for sink in self.silver_sinks.values():
            paths = results[sink.table.name].paths
            if sink.table.name in quality and paths and self._ge_due(sink.table.name):
                dq_rows += self._ge_validate(sample_rows(paths, sink.table, self.settings.quality.sample_limit),
                                             sink.table, report.batch_id)
                lap = report.lap(f"ge:{sink.table.name}", lap)
        dq_rows.append(self._reconciliation_row(report))
        dq_rows += self._file_rows(report.batch_id)
        self._write_dq(dq_rows, report.batch_id)
        report.lap("dq", lap)
        return True

    def _executor_batch(self, raw: DataFrame, report: BatchReport, lap: float, cached: list[DataFrame]) -> None:
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
        lap = report.lap("raw", lap)
        if report.raw == 0:
            self._write_file_rows(batch_id)
            return
        from pipelines.parsing.engine_spark import engine_frame, route_frame, routes

        quality = self._suites() if self.settings.quality.enabled else {}
        wide = engine_frame(bronze, self.family, quality or None, batch_id)
        observed = Counts(f"routes:{self.query}:{batch_id}")
        rule_keys = [f"{t}|{e.name}" for t, suite in quality.items() for e in suite.hard]
        rules = Counts(f"rules:{self.query}:{batch_id}")
        wide = observed.on(wide, F.col("_route"), routes(self.family))
        if rule_keys:  # quality off: no rule to count (an observation needs at least one metric)
            wide = rules.on(wide, F.col("_rule"), rule_keys)
        dq_rows: list[dict[str, Any]] = []
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
            lap = report.lap(sink.table.name, lap)
        by_rule = rules.get() if rule_keys else {}
        for table_name, suite in quality.items():
            failed = {e.name: by_rule.get(f"{table_name}|{e.name}", 0) for e in suite.hard}
            dq_rows += self._rule_counts({k: v for k, v in failed.items() if v}, suite_table(self, table_name),
                                         batch_id, report.silver.get(table_name, 0))
        for route, sink in self.silver_sinks.items():
            if sink.table.name in quality and report.silver[sink.table.name] and self._ge_due(sink.table.name):
                dq_rows += self._ge_sample(route_frame(wide, self.family, route), sink.table, batch_id)
                lap = report.lap(f"ge:{sink.table.name}", lap)
        report.unused = counts.get("unused", 0)
        n_quarantine = counts.get("rejected", 0) + counts.get("invalid", 0)
        if n_quarantine:
            quarantine = route_frame(wide, self.family, "quarantine")
            report.quarantine = _rows_of(self.quarantine_sink.write(quarantine, batch_id), quarantine)
        lap = report.lap("quarantine", lap)
        dq_rows.append(self._reconciliation_row(report))
        dq_rows += self._file_rows(report.batch_id)
        self._write_dq(dq_rows, batch_id)
        report.lap("dq", lap)

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

    def _driver_batch(self, raw: pa.Table, report: BatchReport, lap: float) -> None:
        """The driver path: a small batch collected once, run through the engine here, committed without Spark jobs.

        A micro-batch of a few lines costs the executor path a Spark job per output table (seconds of fixed cost on
        a busy 2-core machine, most of a quiet cluster's detection delay); the engine is the same on both paths."""
        import pyarrow as pa

        from pipelines.parsing.engine import run_engine

        batch_id = report.batch_id
        report.path = "driver"
        report.raw = raw.num_rows
        self.raw_sink.write_arrow(raw, batch_id)
        lap = report.lap("raw", lap)
        if report.raw == 0:
            self._write_file_rows(batch_id)
            return
        suites = self._suites() if self.settings.quality.enabled else None
        routed = run_engine(raw, self.family, suites=suites, batch_id=batch_id)
        lap = report.lap("parse", lap)
        dq_rows: list[dict[str, Any]] = []
        for sink in self.silver_sinks.values():
            good = routed.silver.get(sink.table.name)
            if good is None:
                continue
            sink.write_arrow(good, batch_id)
            report.silver[sink.table.name] = good.num_rows
            if sink.table.name in routed.failed_rules:
                dq_rows += self._rule_counts(routed.failed_rules[sink.table.name], sink.table, batch_id, good.num_rows)
            lap = report.lap(sink.table.name, lap)
        quarantine = routed.quarantine if routed.quarantine is not None else pa.table({})
        self.quarantine_sink.write_arrow(quarantine, batch_id)
        report.quarantine = quarantine.num_rows
        report.unused = routed.unused.num_rows if routed.unused is not None else 0
        lap = report.lap("quarantine", lap)
        # Great Expectations after every table is committed: the silver rows are readable (detection) meanwhile
        for sink in self.silver_sinks.values():
            good = routed.silver.get(sink.table.name)
            if self.settings.quality.enabled and good is not None and good.num_rows and self._ge_due(sink.table.name):
                sample = good.drop_columns([c for c in ("labels",) if c in good.column_names])
                dq_rows += self._ge_validate(sample.slice(0, self.settings.quality.sample_limit).to_pandas(),
                                             sink.table, batch_id)
                lap = report.lap(f"ge:{sink.table.name}", lap)
        dq_rows.append(self._reconciliation_row(report))
        dq_rows += self._file_rows(report.batch_id)
        self._write_dq(dq_rows, batch_id)
        report.lap("dq", lap)

    def _suites(self) -> dict[str, Any]:
        from pipelines.quality import load_suite

        out: dict[str, Any] = {}
        for sink in self.silver_sinks.values():
            try:
                out[sink.table.name] = load_suite(sink.table.name)
            except Exception as exc:
                log.warning("no quality suite for %s: %s", sink.table.name, exc)
        return out

    def _rule_counts(self, counts: dict[str, int], table: Table, batch_id: int, n_good: int) -> list[dict[str, Any]]:
        import datetime as dt

        from pipelines.quality import load_suite

        total = n_good + sum(counts.values())
        now = dt.datetime.now(dt.UTC)
        return [
            {
                "table_name": table.name,
                "batch_id": batch_id,
                "suite": f"{table.name}:rows",
                "expectation": e.name,
                "success": counts.get(e.name, 0) == 0,
                "unexpected_count": counts.get(e.name, 0),
                "element_count": total,
                "run_ts": now,
                "duration_ms": 0.0,
            }
            for e in load_suite(table.name).hard
        ]

    def _ge_due(self, table: str) -> bool:
        """Whether this table's GE sample runs in this batch (at most once per quality.ge_interval_s)."""
        now = time.monotonic()
        last = self._ge_last.get(table)
        if last is not None and now - last < self.settings.quality.ge_interval_s:
            return False
        self._ge_last[table] = now
        return True

    def _ge_sample(self, good: DataFrame, table: Table, batch_id: int) -> list[dict[str, Any]]:
        try:
            pdf = good.drop("labels").limit(self.settings.quality.sample_limit).toPandas()
        except Exception as exc:  # pragma: no cover - a failed Spark action fails the batch anyway
            return self._ge_error(table, batch_id, exc)
        return self._ge_validate(pdf, table, batch_id)

    def _ge_validate(self, pdf: Any, table: Table, batch_id: int) -> list[dict[str, Any]]:
        from pipelines.quality import load_suite
        from pipelines.quality.gx import validate_sample

        try:
            return validate_sample(pdf, load_suite(table.name), table.name, batch_id)
        except Exception as exc:  # GE trouble must not stop ingestion; it shows in the results table
            log.exception("Great Expectations failed on %s batch %d", table.name, batch_id)
            return self._ge_error(table, batch_id, exc)

    @staticmethod
    def _ge_error(table: Table, batch_id: int, exc: Exception) -> list[dict[str, Any]]:
        import datetime as dt

        return [
            {
                "table_name": table.name,
                "batch_id": batch_id,
                "suite": table.name,
                "expectation": f"great_expectations error: {exc}"[:500],
                "success": False,
                "unexpected_count": None,
                "element_count": None,
                "run_ts": dt.datetime.now(dt.UTC),
                "duration_ms": None,
            }
        ]

    def _reconciliation_row(self, report: BatchReport) -> dict[str, Any]:
        import datetime as dt

        accounted = sum(report.silver.values()) + report.quarantine + report.unused
        return {
            "table_name": self.raw_table.name,
            "batch_id": report.batch_id,
            "suite": "reconciliation",
            "expectation": "raw == silver + quarantine + unused",
            "success": report.balanced,
            "unexpected_count": abs(report.raw - accounted),
            "element_count": report.raw,
            "run_ts": dt.datetime.now(dt.UTC),
            "duration_ms": None,
        }

    def _file_rows(self, batch_id: int) -> list[dict[str, Any]]:
        """A file query's rows about its input (jobs.io.file_accounting): the byte reconciliation, and the entries
        skipped as not regular files (each reported once); none for other sources."""
        if self.files_checkpoint is None:
            return []
        from jobs.io.file_accounting import file_batch_rows

        return file_batch_rows(self.files_checkpoint, batch_id, self.raw_table.name)

    def _write_file_rows(self, batch_id: int) -> None:
        """A batch without records (only a file query's skipped entries changed, or only blank lines were read):
        its file rows, when it has any."""
        rows = self._file_rows(batch_id)
        if rows:
            self._write_dq(rows, batch_id)

    def _write_dq(self, rows: list[dict[str, Any]], batch_id: int) -> None:
        import pyarrow as pa

        self.dq_sink.write_arrow(pa.Table.from_pylist(rows, DQ_RESULTS.to_arrow()), batch_id)


def start_ingest_queries(spark: SparkSession, settings: Settings, family: str) -> list[StreamingQuery]:
    """Start the ingest queries of `family` (logs | metrics) for every enabled source; returns them running."""
    from jobs.io.sources import register_sources

    register_sources(spark)
    queries: list[StreamingQuery] = []
    streams: list[tuple[str, DataFrame]] = []
    if settings.files.enabled:
        reader = (
            spark.readStream.format("planewatch_files")
            .option("family", family)
            .option("maxBytesPerTrigger", settings.files.max_bytes_per_batch)
            .option("tailQuietS", settings.files.tail_quiet_s)
            .option("defaultCluster", settings.default_cluster)
        )
        if settings.cluster:
            reader = reader.option("cluster", settings.cluster)
        streams.append((f"ingest_{family}_files", reader.load(os.path.abspath(settings.files.path))))
    topics = settings.kafka.logs_topics if family == "logs" else settings.kafka.metrics_topics
    if settings.kafka.enabled and topics:
        from jobs.io.kafka_stream import kafka_stream

        name = f"ingest_{family}_kafka"
        streams.append((name, kafka_stream(spark, settings, family, topics, settings.checkpoint_path(name))))
    prom = settings.prometheus
    if prom.enabled and family == "metrics":
        import json

        from jobs.io.settings import interval_seconds

        name = f"ingest_{family}_prometheus"
        root = os.path.abspath(settings.files.path) if settings.files.enabled else None
        targets = [{"url": t.url, "cluster": t.cluster, "broker_id": t.broker_id} for t in prom.targets]
        reader = (
            spark.readStream.format("planewatch_prometheus")
            .option("targets", json.dumps(targets))
            .option("clusterJson", json.dumps([{"path": os.path.abspath(p), "root": root} for p in prom.cluster_json]))
            .option("interval", prom.interval_s or interval_seconds(settings.trigger_interval))
            .option("timeout", prom.timeout_s)
            .option("defaultCluster", settings.default_cluster)
            .option("spoolDir", os.path.join(os.path.abspath(settings.checkpoint_path(name)), SCRAPE_SPOOL_DIR))
        )
        if settings.cluster:
            reader = reader.option("cluster", settings.cluster)
        streams.append((name, reader.load()))
    for name, stream in streams:
        checkpoint = settings.checkpoint_path(name)
        handler = IngestBatch(settings, family, name, app_run_id(checkpoint),
                              checkpoint if name.endswith("_files") else None)
        handler.ensure_tables()
        handler.prepare_quality()
        writer = stream.writeStream.queryName(name).option("checkpointLocation", checkpoint).foreachBatch(handler)
        writer = (
            writer.trigger(availableNow=True)
            if settings.once
            else writer.trigger(processingTime=settings.trigger_interval)
        )
        queries.append(writer.start())
        log.info("started %s (checkpoint %s)", name, checkpoint)
    return queries


def suite_table(batch: IngestBatch, table_name: str) -> Table:
    """The silver table of `batch` named `table_name`."""
    return next(s.table for s in batch.silver_sinks.values() if s.table.name == table_name)
