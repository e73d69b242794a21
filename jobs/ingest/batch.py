"""One micro-batch of an ingest query (`IngestBatch`, the query's foreachBatch function): ONE path.

A batch of source records (jobs.sources.streams.RAW_RECORD_DDL):

1. is read ONCE, by its one reader, where `process()` runs: jobs.ingest.readers.READERS[(kind, placement)], the
   kind (a replay's committed bronze files, a file batch's pieces, a scrape batch's spooled answers, else the
   stream Spark handed the batch) and the placement (driver or executors) decided before anything is read;
2. is handed to one pure `process()` (the engine, pipelines.parsing.engine.run_engine, with the family and the
   quality suites bound): each record is routed to a silver table, to `quarantine` (parser rejects, stage
   `parse`/`source`; rows failing a hard quality rule, stage `validate`) or to recognised-but-unused (kept in bronze
   only, counted); the route and stage vocabulary is schemas.routes;
3. is staged as Parquet files per table (bronze, each silver table, quarantine) and committed per table
   (jobs.ingest.staging.write_batch, lake.sink.DeltaSink.commit_pending);
4. its family's detection runs on the committed silver rows (jobs.detect.rules: the log family pairs and runs its
   rules, the metric family rolls up and runs its rules; a log batch without records too: it moves the pairing's
   event time), then its dq_results rows are written
   (jobs.ingest.quality, schemas.dq): per hard rule, Great Expectations on a sample, the reconciliation
   raw = silver + quarantine + unused, and a file query's byte reconciliation and skipped input entries
   (jobs.sources.file_accounting); a de-duplicating Kafka log query's `duplicates` rows of the batch before
   (jobs.sources.dedup).

Where `process()` runs is a parameter of that one path, not another path (`IngestBatch.where`, by default chosen
per batch before it is read): `driver` reads the batch here (no Spark job, but for a stream's batch: one, to
collect it) and stages it; `executors` stages it in one Spark job, a task per core. `auto` takes the driver for a
batch whose offsets (the query's offset log: metadata, not the input) say it holds at most about
`sink.driver_batch_max_rows` records (a file or scrape batch: DRIVER_RECORD_BYTES each; a Kafka batch: its offsets'
span; its first batch: its end, an upper bound), the executors otherwise; until the executors have run a batch of
the process, COLD_EXECUTORS_FACTOR times that. Both write the same rows.
(Reading a file or scrape batch through its stream instead, a Spark job for the driver and a pass of every record
through the JVM for the executors, measured up to 40% slower.)

Every table is committed through the exactly-once sink (lake.sink) under its own app id
(`<query>.<run id>:<table>`, the run id kept in the query's checkpoint: jobs.sources.checkpoints) and the batch id as
version: a replayed batch writes nothing twice (a table that committed it is staged nothing). The sink mode only
chooses the committer of the staged files: delta-rs (the driver moves them into the table and commits their add
actions) or delta-spark (Spark reads them and delta-spark's writer appends them under txnAppId/txnVersion).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from jobs.detect.rules import SilverBatch
from jobs.ingest.quality import IngestQuality
from jobs.ingest.readers import READERS, BatchInput, BatchKind
from jobs.ingest.staging import FilesOutcome, sample_rows, write_batch
from jobs.run import observability
from jobs.run.settings import Settings
from jobs.sources.checkpoints import logged_offset
from jobs.sources.dedup import dedup_results
from jobs.sources.file_accounting import file_batch_rows
from jobs.sources.file_tail import file_batch_bytes, logged_file_pieces
from jobs.sources.kafka_stream import kafka_batch_records
from jobs.sources.prometheus_source import logged_scrape_records, scrape_batch_bytes
from lake.read import committed_rows
from lake.sink import DeltaSink
from lake.storage import file_location
from lake.tables import ensure_table
from pipelines.parsing.engine import run_engine
from schemas.dq import RECONCILIATION_SUITE, RECORDS_EXPECTATION, SOURCE_SUITE, DqResult
from schemas.inputs import InputFamily, Placement
from schemas.routes import RAW_TABLES, REJECTED, ROUTE_TABLES, UNUSED, VALIDATE
from schemas.tables import DQ_RESULTS, QUARANTINE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from jobs.detect.rules import BatchDetect, SilverLoad
    from jobs.sources.file_tail import Piece
    from pipelines.quality.rules import Suite

__all__ = ["BatchReport", "IngestBatch"]

log = logging.getLogger(__name__)

# Bytes of file input counted as one record when `auto` sizes a file batch from its offsets (not from its records:
# the batch is not read to decide where it is processed): about a Kafka log line (the benchmark's lines average
# 200 bytes), so the default sink.driver_batch_max_rows (20,000) takes file batches up to ~4 MB to the driver.
DRIVER_RECORD_BYTES = 200
# Until a batch of the process has run on the executors, `auto` takes batches up to this many times the limit to the
# driver: the executors' first batch pays their Python workers' start and imports (measured 25-50 s on a loaded
# 2-core machine: a rolling restart's first request-log burst, ~9,000 lines, ~10 MB, alerted after 69 s), where the
# warm driver parses such a batch in a few seconds. A batch above it goes to the executors, cold or not.
COLD_EXECUTORS_FACTOR = 5
# Where process() may run: auto (per batch: IngestBatch.where_for), or always one of the two.
WHERE = ("auto", *(p.value for p in Placement))


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
    # seconds per stage: where a slow batch spends its time. open (every table's batch opened), read (the driver
    # read the batch; on the executors it is part of stage), stage (the engine, every table's files written),
    # commit (every table), ge:<table>, detect, dq
    stages: dict[str, float] = field(default_factory=dict)
    ok: bool = field(default=False, repr=False)  # every table and the dq rows committed (else it raised)
    # quarantined records by reason: schemas.routes.REJECTED (the parser or the source refused them), else the name
    # of the hard rule they failed
    quarantine_reasons: dict[str, int] = field(default_factory=dict, repr=False)
    # per cluster, the newest event time (`ts`, unix seconds) of the batch's silver rows
    newest_event_ts: dict[str, float] = field(default_factory=dict, repr=False)
    # per kind of source failure (schemas.dq.SOURCE_SUITE), its quarantined records: a dq_results row each
    source_failures: dict[str, int] = field(default_factory=dict, repr=False)
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
    # silver table with rows -> a loader of its rows of the batch as Arrow (in-batch detection: jobs.detect.rules)
    rows: Mapping[str, SilverLoad] = field(default_factory=dict)
    # silver table with rows -> the files the batch committed to it
    paths: Mapping[str, list[str]] = field(default_factory=dict)
    empty: bool = False  # the batch held no record: no table rows to judge or reconcile


def _failed_rules(counts: Mapping[str, int], suites: Mapping[str, Suite]) -> dict[str, dict[str, int]]:
    """Counts per `<table>|<expectation>` (the engine's rule keys) -> per table and hard rule, failures only."""
    return {table: {e.name: n for e in suite.hard if (n := counts.get(f"{table}|{e.name}", 0))}
            for table, suite in suites.items()}


class IngestBatch:
    """The foreachBatch function of one ingest query (callable(df, batch_id))."""

    # whether a batch of this process has run on the executors (their Python workers are started and warm): the
    # queries of a process share the executors
    executors_warm: ClassVar[bool] = False

    def __init__(self, settings: Settings, family: str, query: str, run_id: str, checkpoint: str | None = None,
                 scrape_checkpoint: str | None = None, detect: BatchDetect | None = None, where: str = "auto",
                 kafka_checkpoint: str | None = None) -> None:
        if where not in WHERE:
            raise ValueError(f"where must be one of {WHERE}, got {where!r}")
        self.settings = settings
        self.where = where  # where process() runs (WHERE)
        # the rules run on the batch's committed silver rows (jobs.detect.rules), before its dq rows are written
        self.detect = detect
        # the query's checkpoint, when its source is planewatch_files: the offset log tells each batch's bytes (its
        # size, for where_for; its byte reconciliation, jobs.sources.file_accounting)
        self.files_checkpoint = checkpoint
        # the query's checkpoint, when its source is planewatch_prometheus: the offset log tells each batch's bytes
        self.scrape_checkpoint = scrape_checkpoint
        # the query's checkpoint, when its source is a Kafka topic: the offset log tells each batch's records
        self.kafka_checkpoint = kafka_checkpoint
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
        # the query's last progress (a dict, None before its first batch), set once the query runs: a de-duplicating
        # query's `duplicates` rows of a batch come from it (jobs.sources.dedup), written by the next batch
        self.last_progress: Callable[[], Mapping[str, Any] | None] | None = None
        self._dedup_reported = -1  # the last batch whose `duplicates` rows were written

    def ensure_tables(self) -> None:
        """Create every table this query writes (empty), so readers find them before the first row."""
        for sink in (self.raw_sink, *self.silver_sinks.values(), self.quarantine_sink, self.dq_sink):
            ensure_table(sink.path, sink.table)
        if self.detect is not None:
            self.detect.ensure_tables()

    @property
    def driver_max_rows(self) -> int:
        """`auto` processes a file batch of at most about this many records on the driver (0: never)."""
        return self.settings.driver_batch_max_rows

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        report = BatchReport(batch_id)
        try:
            suites = self.quality.suites()
            # read the batch once, run the engine, stage and commit each table (the one path)
            written = self._one_path(df, suites, report)
            # a log batch without records still moves the pairing's event time (a tick of a quiet source: the
            # metric family's samples show its brokers alive, and a stuck request is reported in flight)
            if self.detect is not None and (not written.empty or self.family == InputFamily.LOGS):
                self.detect(SilverBatch(written.rows, written.paths, report.path == Placement.EXECUTORS,
                                        df.sparkSession),
                            batch_id)
                report.lap("detect")
            # write the dq rows
            self._write_dq(self._dq_results(written, suites, report) + self._dedup_results(), report)
            report.ok = True
        except BaseException:
            log.exception("batch %d failed", batch_id)
            raise
        finally:
            report.seconds = time.perf_counter() - report.started
            self.reports.append(report)
            log.info("%s batch %d: %s", self.query, batch_id, report)
            observability.batch_done(self.family, self.query, report)

    def where_for(self, batch_id: int) -> str:
        """Where `process()` runs for batch `batch_id` (driver | executors), decided before the batch is read."""
        if self.where != "auto":
            return self.where
        size = self._logged_bytes(batch_id) if self.driver_max_rows else None
        cold = 1 if IngestBatch.executors_warm else COLD_EXECUTORS_FACTOR
        limit = self.driver_max_rows * DRIVER_RECORD_BYTES * cold
        small = size is not None and size <= limit
        return Placement.DRIVER.value if small else Placement.EXECUTORS.value

    def _logged_bytes(self, batch_id: int) -> int | None:
        """The bytes of input batch `batch_id` reads, from its offsets in the query's offset log (a file or scrape
        batch; None for another source, or offsets the log does not hold)."""
        if self.files_checkpoint is not None:
            end = logged_offset(self.files_checkpoint, batch_id)
            return None if end is None else file_batch_bytes(end)
        if self.scrape_checkpoint is not None:
            end = logged_offset(self.scrape_checkpoint, batch_id)
            start = logged_offset(self.scrape_checkpoint, batch_id - 1) if batch_id else {"targets": {}}
            return None if end is None or start is None else scrape_batch_bytes(start, end)
        if self.kafka_checkpoint is not None:
            # the first batch starts where the query began (not logged): at most every record before its end
            start = logged_offset(self.kafka_checkpoint, batch_id - 1) if batch_id else {}
            records = kafka_batch_records(start, logged_offset(self.kafka_checkpoint, batch_id))
            return None if records is None else records * DRIVER_RECORD_BYTES
        return None

    def _file_pieces(self, batch_id: int) -> list[Piece] | None:
        """The pieces of a file batch as its offsets name them (None: another source, or offsets the log does not
        hold)."""
        if self.files_checkpoint is None:
            return None
        return logged_file_pieces(self.files_checkpoint, batch_id, self.family)

    def _input(self, df: DataFrame, batch_id: int, pending: Mapping[str, str], report: BatchReport) -> BatchInput:
        """What holds the batch's records (readers.BatchKind), decided before anything is read: a replay whose bronze
        rows the crashed attempt committed (no pending directory for bronze: nothing to stage), a file batch's
        pieces, a scrape batch's spooled answers, else the stream Spark handed the batch."""
        batch = BatchInput(df, self.family, batch_id, self.raw_table, self.raw_sink.path, BatchKind.STREAM,
                           on_read=lambda: report.lap("read"))
        if self.raw_table.name not in pending:
            batch.kind, batch.bronze_files = BatchKind.REPLAY, [file_location(u) for u in self.raw_sink.batch_files(
                batch_id)]
        elif (pieces := self._file_pieces(batch_id)) is not None:
            batch.kind, batch.pieces = BatchKind.FILES, pieces
        elif self.scrape_checkpoint is not None and report.path == Placement.DRIVER and (
                scraped := logged_scrape_records(self.scrape_checkpoint, batch_id)) is not None:
            batch.kind, batch.scraped = BatchKind.SCRAPES, list(scraped)
        return batch

    def _one_path(self, df: DataFrame, suites: dict[str, Suite], report: BatchReport) -> TablesWritten:
        """The batch read once by its one reader (readers.READERS[(kind, placement)]), through `process()`, staged as
        files per table and committed per table."""
        batch_id, family = report.batch_id, self.family
        placement = Placement(self.where_for(batch_id))
        report.path = placement.value
        if placement == Placement.EXECUTORS:
            IngestBatch.executors_warm = True
        process = functools.partial(run_engine, family=family, suites=suites or None)

        def job(pending: Mapping[str, str]) -> FilesOutcome:
            batch = self._input(df, batch_id, pending, report)
            return READERS[(batch.kind, placement)](batch, process, pending)

        sinks = [self.raw_sink, *self.silver_sinks.values(), self.quarantine_sink]
        outcome, results = write_batch(job, batch_id, sinks, report.lap)
        routes, failed = outcome.routes, _failed_rules(outcome.rules, suites)

        def rows_of(table: str, counted: int) -> int:
            # what the table committed (the footers of its files; delta-spark: its commit's metrics), so the
            # reconciliation checks the tables; a table the crashed attempt committed: the engine's count
            result = results[table]
            return result.rows if result.rows_known else counted

        report.raw = rows_of(self.raw_table.name, sum(n for route, n in routes.items() if route != VALIDATE))
        if report.raw == 0:
            return TablesWritten(empty=True)
        for route, sink in self.silver_sinks.items():
            name = sink.table.name
            report.silver[name] = rows_of(name, routes.get(route, 0) - sum(failed.get(name, {}).values()))
        report.quarantine = rows_of(QUARANTINE.name, routes.get(REJECTED, 0) + routes.get(VALIDATE, 0))
        report.unused = routes.get(UNUSED, 0)
        report.quarantine_reasons = dict(Counter({REJECTED: routes.get(REJECTED, 0)})
                                         + sum((Counter(rules) for rules in failed.values()), Counter()))
        report.newest_event_ts = dict(outcome.newest)
        report.source_failures = dict(outcome.sources)
        paths = {s.table.name: list(results[s.table.name].paths) if not results[s.table.name].skipped
                 else [file_location(u) for u in s.batch_files(batch_id)]
                 for s in self.silver_sinks.values() if report.silver[s.table.name]}
        samples = {s.table.name: functools.partial(sample_rows, paths[s.table.name], s.table)
                   for s in self.silver_sinks.values() if paths.get(s.table.name)}
        rows = {s.table.name: functools.partial(committed_rows, paths[s.table.name], s.table)
                for s in self.silver_sinks.values() if paths.get(s.table.name)}
        return TablesWritten(failed, samples, rows, paths)

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
        now = dt.datetime.now(dt.UTC)
        results += [DqResult(self.raw_table.name, batch_id, SOURCE_SUITE, kind, False, n, report.raw, now)
                    for kind, n in sorted(report.source_failures.items())]
        return results + self._file_results(batch_id)

    def _dedup_results(self) -> list[DqResult]:
        """The `duplicates` rows of the query's last finished batch not reported yet (jobs.sources.dedup)."""
        progress = self.last_progress() if self.last_progress is not None else None
        if not progress or int(progress.get("batchId", -1)) <= self._dedup_reported:
            return []
        done = int(progress["batchId"])
        raw = next((r.raw for r in reversed(self.reports) if r.batch_id == done), None)
        self._dedup_reported = done
        return dedup_results(progress, raw, self.raw_table.name, dt.datetime.now(dt.UTC))

    def _file_results(self, batch_id: int) -> list[DqResult]:
        """A file query's rows about its input (jobs.sources.file_accounting): the byte reconciliation, and the entries
        skipped as not regular files (each reported once); none for other sources."""
        if self.files_checkpoint is None:
            return []
        return file_batch_rows(self.files_checkpoint, batch_id, self.raw_table.name)

    def _write_dq(self, results: list[DqResult], report: BatchReport) -> None:
        """Write the batch's dq rows (a batch without records and without file rows writes none)."""
        if not results:
            return
        rows = pa.Table.from_pylist([r.to_row() for r in results], DQ_RESULTS.to_arrow())
        self.dq_sink.write_arrow(rows, report.batch_id)
        report.lap("dq")
