"""The ingest streaming queries shared by jobs/ingest_logs.py, jobs/ingest_metrics.py and `planewatch pipeline`.

One query per (family, source): `ingest_logs_files`, `ingest_logs_kafka`, `ingest_metrics_files`,
`ingest_metrics_kafka`. Each micro-batch (`IngestBatch`):

1. raw records -> bronze (`raw_logs` / `raw_metrics`), every record with its source and offset;
2. `pipelines.parsing` -> silver tables + parser rejects (+ recognised-but-unused lines, kept in bronze only);
3. data quality (`pipelines.quality`): hard row rules over every silver row -> failing rows to `quarantine`
   (stage `validate`, reason = the expectation), Great Expectations on a bounded sample -> `dq_results`;
4. a reconciliation row in `dq_results`: raw = silver + quarantine + unused, per batch.

Every table is written through the exactly-once sink with its own app id (`<query>.<run id>:<table>`), the run id
being stored in the query's checkpoint directory: a new checkpoint (batch ids restart at 0) gets new app ids.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from jobs.io.delta_sink import DeltaSink, SinkResult, ensure_table
from jobs.io.settings import Settings
from schemas.tables import (
    DQ_RESULTS,
    METRIC_SAMPLES,
    QUARANTINE,
    RAW_LOGS,
    RAW_METRICS,
    REQUEST_EVENTS,
    STATE_CHANGE_EVENTS,
    Table,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["FAMILY_TABLES", "IngestBatch", "app_run_id", "start_ingest_queries", "to_raw"]

log = logging.getLogger(__name__)

# Silver outputs per family: attribute of the parser's result -> table.
FAMILY_TABLES: dict[str, dict[str, Table]] = {
    "logs": {"state_change": STATE_CHANGE_EVENTS, "requests": REQUEST_EVENTS},
    "metrics": {"samples": METRIC_SAMPLES},
}
RAW_TABLE = {"logs": RAW_LOGS, "metrics": RAW_METRICS}
# A quarantined record keeps at most this much text (QUARANTINE.record's contract: 64 KiB).
MAX_RECORD_CHARS = 64 * 1024
APP_ID_FILE = "_planewatch_app_id"


def app_run_id(checkpoint: str) -> str:
    """The run id kept in the checkpoint directory (created on first use)."""
    os.makedirs(checkpoint, exist_ok=True)
    f = os.path.join(checkpoint, APP_ID_FILE)
    if not os.path.exists(f):
        tmp = f"{f}.{os.getpid()}.tmp"
        with open(tmp, "w") as fh:
            fh.write(uuid.uuid4().hex[:12])
        os.replace(tmp, f)
    with open(f) as fh:
        return fh.read().strip()


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


@dataclass
class _ParseResult:
    silver: dict[str, DataFrame]
    rejected: DataFrame
    unused: DataFrame | None
    result: Any  # the parser's result object (unpersist() when done)


def _parse(raw: DataFrame, family: str) -> _ParseResult:
    """Run H3's parsers (pipelines.parsing); without them every record is kept in bronze as unused."""
    import importlib

    try:
        parsing: Any = importlib.import_module("pipelines.parsing")
    except ImportError:
        log.warning("pipelines.parsing is not available: records kept in bronze only")
        empty_q = raw.sparkSession.createDataFrame([], QUARANTINE.to_spark())
        return _ParseResult({}, empty_q, raw, None)
    fn = parsing.parse_log_lines if family == "logs" else parsing.parse_metric_lines
    out = fn(raw, persist=True)
    silver = {attr: getattr(out, attr) for attr in FAMILY_TABLES[family]}
    return _ParseResult(silver, out.rejected, getattr(out, "unused", None), out)


def _validation_quarantine(bad: DataFrame, table: Table) -> DataFrame:
    """Silver rows that failed a hard expectation, as quarantine rows (stage validate)."""
    from pyspark.sql import functions as F

    record = F.to_json(F.struct(*[F.col(c) for c in table.names if c in bad.columns]))
    return bad.select(
        "cluster",
        "broker_id",
        F.lit(table.name).alias("target_table"),
        F.lit("validate").alias("stage"),
        F.col("_dq_reason").alias("reason"),
        F.substring(record, 1, MAX_RECORD_CHARS).alias("record"),
        "source",
        "source_offset",
        "ingest_ts",
        "batch_id",
        F.coalesce(F.col("date"), F.to_date("ingest_ts")).alias("date"),
    )


def _rows_of(result: SinkResult, frame: DataFrame) -> int:
    """Rows written, from the Parquet footers the sink read; a skipped (replayed) batch is counted by Spark."""
    if result.skipped or result.mode != "delta-rs":
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
    path: str = ""  # driver (small batch, jobs.ingest_driver) | executors
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

    def __init__(self, settings: Settings, family: str, query: str, run_id: str) -> None:
        self.settings = settings
        self.family = family
        self.query = query
        prefix = f"{query}.{run_id}"
        mode = settings.sink_mode
        self.raw_table = RAW_TABLE[family]
        self.raw_sink = DeltaSink(settings.table_path(self.raw_table.name), self.raw_table, f"{prefix}:raw", mode)
        self.silver_sinks = {
            attr: DeltaSink(settings.table_path(t.name), t, f"{prefix}:{t.name}", mode)
            for attr, t in FAMILY_TABLES[family].items()
        }
        self.quarantine_sink = DeltaSink(settings.table_path(QUARANTINE.name), QUARANTINE, f"{prefix}:quarantine", mode)
        self.dq_sink = DeltaSink(settings.table_path(DQ_RESULTS.name), DQ_RESULTS, f"{prefix}:dq_results", mode)
        self.reports: list[BatchReport] = []
        self._ge_last: dict[str, float] = {}  # table -> monotonic time of its last GE sample validation

    def ensure_tables(self) -> None:
        """Create every table this query writes (empty), so readers find them before the first row."""
        if self.settings.sink_mode != "delta-rs":
            return
        for sink in (self.raw_sink, *self.silver_sinks.values(), self.quarantine_sink, self.dq_sink):
            ensure_table(sink.path, sink.table)

    @property
    def driver_max_rows(self) -> int:
        """Batches of at most this many records take the driver path (0: never; delta-spark: never)."""
        return self.settings.driver_batch_max_rows if self.settings.sink_mode == "delta-rs" else 0

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F

        t0 = time.perf_counter()
        report = BatchReport(batch_id)
        raw = to_raw(df, self.family, batch_id).persist()
        cached: list[DataFrame] = [raw]
        release: list[Any] = []
        try:
            if self.driver_max_rows:
                # ONE Spark job reads the batch and decides: at most driver_max_rows records come back whole; a
                # larger batch stops at one record more and goes to the executors (the partitions read so far stay
                # in the cache the executor path then completes)
                head = raw.limit(self.driver_max_rows + 1).toArrow()
                if head.num_rows <= self.driver_max_rows:
                    self._driver_batch(head, report, report.lap("collect", t0))
                    return
            report.path = "executors"
            report.raw = _rows_of(self.raw_sink.write(raw, batch_id), raw)
            lap = report.lap("raw", t0)
            if report.raw == 0:
                return
            parsed = _parse(raw, self.family)
            if parsed.result is not None and hasattr(parsed.result, "unpersist"):
                release.append(parsed.result)
            quarantine_parts = [parsed.rejected.withColumn("batch_id", F.lit(batch_id).cast("long"))]
            dq_rows: list[dict[str, Any]] = []
            for attr, sink in self.silver_sinks.items():
                frame = parsed.silver.get(attr)
                if frame is None:
                    continue
                frame = frame.withColumn("batch_id", F.lit(batch_id).cast("long"))
                good, bad = self._validate(frame, sink.table)
                good = good.persist()
                cached.append(good)
                n_good = _rows_of(sink.write(good, batch_id), good)
                report.silver[sink.table.name] = n_good
                if bad is not None:
                    bad = bad.persist()
                    cached.append(bad)
                    counts = {r["_dq_reason"]: int(r["count"]) for r in bad.groupBy("_dq_reason").count().collect()}
                    dq_rows += self._rule_counts(counts, sink.table, batch_id, n_good)
                    quarantine_parts.append(_validation_quarantine(bad, sink.table))
                lap = report.lap(sink.table.name, lap)
                if self.settings.quality.enabled and n_good and self._ge_due(sink.table.name):
                    dq_rows += self._ge_sample(good, sink.table, batch_id)
                    lap = report.lap(f"ge:{sink.table.name}", lap)
            quarantine = quarantine_parts[0]
            for part in quarantine_parts[1:]:
                quarantine = quarantine.unionByName(part, allowMissingColumns=True)
            quarantine = quarantine.persist()
            cached.append(quarantine)
            report.quarantine = _rows_of(self.quarantine_sink.write(quarantine, batch_id), quarantine)
            report.unused = parsed.unused.count() if parsed.unused is not None else 0
            lap = report.lap("quarantine", lap)
            dq_rows.append(self._reconciliation_row(report))
            self._write_dq(dq_rows, batch_id)
            report.lap("dq", lap)
        finally:
            for frame in cached:
                frame.unpersist()
            for result in release:
                result.unpersist()
            report.seconds = time.perf_counter() - t0
            self.reports.append(report)
            log.info("%s batch %d: %s", self.query, batch_id, report)

    def _validate(self, frame: DataFrame, table: Table) -> tuple[DataFrame, DataFrame | None]:
        if not self.settings.quality.enabled:
            return frame, None
        from pipelines.quality import load_suite, split_valid

        try:
            suite = load_suite(table.name)
        except Exception as exc:
            log.warning("no quality suite for %s: %s", table.name, exc)
            return frame, None
        good, bad = split_valid(frame, suite)
        return good, bad

    def _driver_batch(self, raw: pa.Table, report: BatchReport, lap: float) -> None:
        """The driver path (jobs.ingest_driver): parse, validate and commit a small batch without Spark jobs."""
        import pyarrow as pa

        from jobs.ingest_driver import route_batch

        batch_id = report.batch_id
        report.path = "driver"
        report.raw = raw.num_rows
        self.raw_sink.write_arrow(raw, batch_id)
        lap = report.lap("raw", lap)
        if report.raw == 0:
            return
        suites = self._suites() if self.settings.quality.enabled else None
        routed = route_batch(raw, self.family, batch_id, suites)
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
        report.unused = routed.unused
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

    def _write_dq(self, rows: list[dict[str, Any]], batch_id: int) -> None:
        import pyarrow as pa

        self.dq_sink.write_arrow(pa.Table.from_pylist(rows, DQ_RESULTS.to_arrow()), batch_id)


def _checkpoint_has_commits(checkpoint: str) -> bool:
    return os.path.isdir(os.path.join(checkpoint, "commits"))


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
            .option("defaultCluster", settings.default_cluster)
        )
        if settings.cluster:
            reader = reader.option("cluster", settings.cluster)
        streams.append((f"ingest_{family}_files", reader.load(os.path.abspath(settings.files.path))))
    topics = settings.kafka.logs_topics if family == "logs" else settings.kafka.metrics_topics
    if settings.kafka.enabled and topics:
        reader = (
            spark.readStream.format("planewatch_kafka")
            .option("bootstrap.servers", settings.kafka.bootstrap_servers)
            .option("topics", ",".join(topics))
            .option("family", family)
            .option("startingOffsets", settings.kafka.starting_offsets)
            .option("maxRecordsPerTrigger", settings.kafka.max_records_per_batch)
            .option("defaultCluster", settings.default_cluster)
        )
        if settings.cluster:
            reader = reader.option("cluster", settings.cluster)
        streams.append((f"ingest_{family}_kafka", reader.load()))
    for name, stream in streams:
        checkpoint = settings.checkpoint_path(name)
        handler = IngestBatch(settings, family, name, app_run_id(checkpoint))
        handler.ensure_tables()
        writer = stream.writeStream.queryName(name).option("checkpointLocation", checkpoint).foreachBatch(handler)
        writer = (
            writer.trigger(availableNow=True)
            if settings.once
            else writer.trigger(processingTime=settings.trigger_interval)
        )
        queries.append(writer.start())
        log.info("started %s (checkpoint %s)", name, checkpoint)
    return queries
