"""Detection job: silver tables -> control_request_latency, alerts (latency types), metric_rollups_1m (gold).

    spark-submit jobs/detect.py --config conf/pipeline.yaml [--once]

`start_detection_queries(spark, settings)` is what `planewatch pipeline` (jobs/runner.py) calls; it starts two
streaming queries, each reading silver through the `planewatch_delta` source (offset = table version):
  detect_pairing  state_change_events + request_events' control requests (the request log's witness of their end;
                  every row of both, and metric_samples, as heartbeats) -> pairing operator -> latency rows: a
                  request's first row appended, a later one MERGEd on request_key; latency detectors -> alert
                  lifecycle -> MERGE alerts on alert_id
  detect_rollups  metric_samples -> 1-minute windows (update mode) -> MERGE metric_rollups_1m

The rules that need no pairing (stale epochs, request-log queue times, every metric rule) run inside the ingest
job's micro-batches (jobs.batch_detect), one hop from the data. Every write is a delta-rs MERGE under a Delta app
transaction (lake.merge.DeltaMerger), so a replayed micro-batch writes nothing twice; the alert writers
share `alerts`, each owning its alert types (jobs.alert_writer).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import functions as F

if __name__ == "__main__":  # spark-submit jobs/detect.py: the repository root must be importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jobs.alert_writer import AlertWriter
from jobs.io.checkpoints import app_run_id
from jobs.io.session import build_session
from jobs.io.settings import Settings, add_arguments, interval_seconds, load_settings
from lake.log import newest_time
from lake.merge import DeltaMerger
from lake.read import LatestTable
from lake.spark_read import DeltaStreamSource
from lake.tables import ensure_table
from pipelines.detection.baselines import BASELINE_TYPES, add_baselines, history_spans
from pipelines.detection.config import DetectionConfig
from pipelines.detection.events import METRIC_HEARTBEAT_LAG_S, heartbeats, pairing_input, served_input
from pipelines.detection.latency_detectors import latency_candidates, state_change_spans
from pipelines.detection.metric_detectors import metric_rollups
from pipelines.detection.operator import pair_requests
from pipelines.detection.rule_common import frame as polars_frame
from schemas.alerts import AlertType, DetectQuery
from schemas.events import LatencyStatus
from schemas.tables import (
    ALERTS,
    CONTROL_REQUEST_LATENCY,
    INCIDENTS,
    METRIC_ROLLUPS_1M,
    METRIC_SAMPLES,
    REQUEST_EVENTS,
    STATE_CHANGE_EVENTS,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["main", "start_detection_queries"]

log = logging.getLogger(__name__)

QUERIES = ("detect_pairing", "detect_rollups")
# The times of a control_request_latency row by which the pairing tells a request new to the table.
REQUEST_TIMES = ("sent_ts", "handling_ts", "finished_ts")
# The pairing query looks for new commits of its inputs this often (when `trigger.interval` is longer): a look that
# finds none costs a listing of three Delta logs (~10 ms), and a batch runs only on new commits, which come at the
# ingest queries' own triggers; so the hop from a log line's silver row to its alert waits ~0.25 s on average
# instead of half the trigger interval (1 s at the default 2 s).
PAIRING_POLL_S = 0.5
# Spark runs a batch without data after each batch that moved the watermark (spark.sql.streaming.
# noDataMicroBatches.enabled): at a 0.5 s look that was every other pairing batch (soak: 64 a minute for 30 log
# batches, ~350 ms each, doing nothing else). Live, the next data batch applies the watermark instead (the logs'
# trigger, or the metrics' heartbeats on a quiet cluster); --once keeps them: its last watermark fires only in one.
NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"
# Continuous mode waits at most this long for a query's first batch before starting the next one.
STARTUP_WAIT_S = 120.0


def _watermark(holder: dict[str, Any]) -> dt.datetime | None:
    """The query's event-time watermark as of its last finished batch (None before the first)."""
    q = holder.get("query")
    prog = q.lastProgress if q is not None else None
    mark = ((prog or {}).get("eventTime") or {}).get("watermark")
    if not mark:
        return None
    when = dt.datetime.fromisoformat(mark.replace("Z", "+00:00"))
    dropped = sum(int(s.get("numRowsDroppedByWatermark", 0)) for s in (prog or {}).get("stateOperators", []))
    if dropped:
        # metric heartbeats run METRIC_HEARTBEAT_LAG_S behind their samples on purpose (events.py): while log lines
        # move event time ahead they fall behind the watermark and count here, with any log line that came too late
        log.warning("%s: %d rows were past the watermark and not processed (metric heartbeats, lagged on purpose, "
                    "are among them whenever log lines lead event time)", holder.get("name"), dropped)
    return None if when.year < 2000 else when


# Spark's phases of a micro-batch (StreamingQueryProgress.durationMs) that the pairing log line reports.
SPARK_PHASES = ("latestOffset", "getBatch", "queryPlanning", "addBatch", "walCommit", "commitOffsets",
                "triggerExecution")


def _spark_phases(holder: dict[str, Any]) -> str:
    """The previous micro-batch's phases in ms ("" before the first): where a batch's fixed cost goes."""
    q = holder.get("query")
    prog = q.lastProgress if q is not None else None
    took = (prog or {}).get("durationMs") or {}
    return " ".join(f"{k}={took[k]}" for k in SPARK_PHASES if k in took)


class PairingBatch:
    """foreachBatch of detect_pairing: latency rows -> MERGE; latency detectors -> alerts."""

    def __init__(self, spark: SparkSession, settings: Settings, run_id: str, cfg: DetectionConfig) -> None:
        self.spark, self.settings, self.cfg = spark, settings, cfg
        self.latency = DeltaMerger(
            settings.table_path(CONTROL_REQUEST_LATENCY.name),
            CONTROL_REQUEST_LATENCY,
            f"detect_pairing-latency-{run_id}",
            ["request_key"],
        )
        self.alerts = AlertWriter(settings, DetectQuery.LATENCY, f"detect_pairing-alerts-{run_id}", cfg)
        self.state_changes = LatestTable(settings.table_path(STATE_CHANGE_EVENTS.name), STATE_CHANGE_EVENTS.to_arrow())
        self.latency_rows = LatestTable(settings.table_path(CONTROL_REQUEST_LATENCY.name),
                                        CONTROL_REQUEST_LATENCY.to_arrow())
        self.holder: dict[str, Any] = {"name": "detect_pairing"}
        # a request's first row is appended only when it started after everything the table held when this query
        # started: an earlier one may be there already (the query's checkpoint was reset, or its last run crashed
        # between the commit and the checkpoint), and a MERGE finds it
        self.appends_after = newest_time(settings.table_path(CONTROL_REQUEST_LATENCY.name), REQUEST_TIMES)

    def _appendable(self, tbl: pa.Table) -> pa.ChunkedArray:
        """The rows of `tbl` to append rather than merge: first rows (no earlier row of theirs was emitted) of
        requests that started after `appends_after`."""
        first = pc.fill_null(tbl["first_row"], False)
        if self.appends_after is None:
            return first
        start = pc.coalesce(tbl["sent_ts"], tbl["handling_ts"], tbl["finished_ts"])
        after = pc.fill_null(pc.greater(start, pa.scalar(self.appends_after, pa.timestamp("us", "UTC"))), False)
        return pc.and_(first, after)

    def _fetcher_lines(self, batch: pa.Table) -> pa.Table:
        """state_change_events of the stretch the batch's requests need (`state_change_spans`: LOCK_CONTENTION's
        fetcher bursts and lock waits, the controller elections that excuse an open request), on the driver (no
        Spark job): the files of those clusters and days whose statistics reach into it, and of them the row
        groups that do (a compacted partition is a whole day: 1 million lines an hour at 30 brokers)."""

        spans = state_change_spans(batch, self.cfg)
        if not spans:
            return STATE_CHANGE_EVENTS.to_arrow().empty_table()
        return self.state_changes.read_spans(spans)

    def _baselines(self, cands: list[dict[str, Any]]) -> None:
        """The slow requests' baselines (pipelines.detection.baselines): control_request_latency of their clusters
        over the window before them, read on the driver only when a batch has such a candidate."""
        slow = [c for c in cands if c["type"] in BASELINE_TYPES]
        if not slow or not self.latency_rows.exists():
            return
        window = dt.timedelta(seconds=self.cfg.baseline_window_s)
        add_baselines(cands, polars_frame(self.latency_rows.read_spans(history_spans(slow, window), "sent_ts")),
                      window, self.cfg)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        watermark = _watermark(self.holder)
        t0 = time.perf_counter()
        # ONE action runs the stateful operator; everything after works on the collected rows (a batch holds the
        # requests that changed, not raw lines, so it is small)
        tbl = pa.table(df.select(
            *list(df.columns),
            F.current_timestamp().alias("updated_at"),
            F.to_date(F.coalesce("sent_ts", "handling_ts", "finished_ts")).alias("date"),
        ).toArrow())
        t1 = time.perf_counter()
        append = self._appendable(tbl)
        self.latency.insert_arrow(tbl.filter(append), batch_id)
        self.latency.write_arrow(tbl.filter(pc.invert(append)), batch_id)
        t2 = time.perf_counter()
        cands: list[dict[str, Any]] = []
        if tbl.num_rows:
            slowest = pc.max(tbl["processing_ms"]).as_py()
            open_ = pc.is_in(tbl["status"], pa.array([LatencyStatus.NEVER_COMPLETED.value,
                                                      LatencyStatus.IN_FLIGHT.value]))
            dead = bool(pc.any(open_).as_py())
            # the fetcher, lock and election lines matter only to a slow or a still-open request
            fetch = (
                self._fetcher_lines(tbl)
                if dead or (slowest is not None and slowest >= self.cfg.threshold(AlertType.LOCK_CONTENTION).warning)
                else STATE_CHANGE_EVENTS.to_arrow().empty_table()
            )
            cands = latency_candidates(tbl, fetch, self.cfg)
            self._baselines(cands)
        t3 = time.perf_counter()
        n = self.alerts.write(cands, watermark, batch_id)
        evicted = pc.sum(pc.equal(tbl["status"], LatencyStatus.EVICTED.value)).as_py() if tbl.num_rows else 0
        if evicted:  # the rows are in control_request_latency with that status: this says the bound was reached
            log.warning("detect_pairing batch %d: %d open request(s) evicted by pairing's state bound (status %s)",
                        batch_id, evicted, LatencyStatus.EVICTED.value)
        log.info("detect_pairing batch %d: %d request row(s), %d candidate(s), %d alert row(s); pairing %.0f ms, "
                 "latency merge %.0f ms, detectors %.0f ms, alerts %.0f ms; previous batch (ms): %s",
                 batch_id, tbl.num_rows, len(cands), n,
                 (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (time.perf_counter() - t3) * 1e3,
                 _spark_phases(self.holder))


class RollupsBatch:
    """foreachBatch of detect_rollups: updated 1-minute windows -> MERGE metric_rollups_1m."""

    KEYS = ("cluster", "broker_id", "signal", "listener", "request", "attribute", "minute")

    def __init__(self, settings: Settings, run_id: str) -> None:
        self.merger = DeltaMerger(
            settings.table_path(METRIC_ROLLUPS_1M.name), METRIC_ROLLUPS_1M, f"detect_rollups-{run_id}", list(self.KEYS)
        )
        self.holder: dict[str, Any] = {"name": "detect_rollups"}

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.merger.write(df, batch_id)


def _stream(spark: SparkSession, settings: Settings, table: Any) -> DataFrame:
    path = os.path.abspath(settings.table_path(table.name))
    return spark.readStream.format("planewatch_delta").load(path)


def start_detection_queries(spark: SparkSession, settings: Settings) -> list[StreamingQuery]:
    """Start the detection queries (see the module doc); --once: availableNow. Returns them running."""

    cfg = DetectionConfig.from_mapping(settings.detection)
    spark.dataSource.register(DeltaStreamSource)
    for t in (STATE_CHANGE_EVENTS, REQUEST_EVENTS, METRIC_SAMPLES, CONTROL_REQUEST_LATENCY, ALERTS, INCIDENTS,
              METRIC_ROLLUPS_1M):
        ensure_table(os.path.abspath(settings.table_path(t.name)), t)

    sc = _stream(spark, settings, STATE_CHANGE_EVENTS)
    ms = _stream(spark, settings, METRIC_SAMPLES)
    rq = _stream(spark, settings, REQUEST_EVENTS)
    plans: list[tuple[str, DataFrame, Any, str, str]] = []
    ids = {q: app_run_id(settings.checkpoint_path(q)) for q in QUERIES}
    pairing = pair_requests(pairing_input(sc).unionByName(served_input(rq))
                            .unionByName(heartbeats(ms, METRIC_HEARTBEAT_LAG_S))
                            .unionByName(heartbeats(sc)).unionByName(heartbeats(rq)), cfg)
    poll = min(interval_seconds(settings.trigger_interval), PAIRING_POLL_S)
    plans.append(("detect_pairing", pairing, PairingBatch(spark, settings, ids["detect_pairing"], cfg), "append",
                  f"{int(poll * 1000)} milliseconds"))
    plans.append(("detect_rollups", metric_rollups(ms), RollupsBatch(settings, ids["detect_rollups"]), "update",
                  settings.trigger_for("metrics")))

    queries: list[StreamingQuery] = []
    for name, frame, handler, mode, interval in plans:
        writer = (
            frame.writeStream.queryName(name)
            .outputMode(mode)
            .option("checkpointLocation", settings.checkpoint_path(name))
            .foreachBatch(handler)
        )
        writer = (
            writer.trigger(availableNow=True)
            if settings.once
            else writer.trigger(processingTime=interval)
        )
        q = _start(spark, writer, {NO_DATA_BATCHES: "false"} if name == "detect_pairing" and not settings.once
                   else {})
        handler.holder["query"] = q
        queries.append(q)
        log.info("started %s (checkpoint %s)", name, settings.checkpoint_path(name))
        _settle(q, settings.once)
    return queries


def _start(spark: SparkSession, writer: Any, conf: dict[str, str]) -> StreamingQuery:
    """Start a query with `conf` set for it alone: a query takes a copy of the session's conf when it starts."""
    before: dict[str, str | None] = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:
        query: StreamingQuery = writer.start()
    finally:
        for k, old in before.items():
            if old is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, old)
    return query


def _settle(q: StreamingQuery, once: bool) -> None:
    """Start the queries one after the other: each query plans its Python sources and pandas workers when it
    starts, and starting four at once on a small, busy machine made Python workers miss Spark's connect-back
    timeout. --once: wait for the query to finish; continuous: wait for its first progress (bounded)."""

    if once:
        q.awaitTermination()
        return
    deadline = time.monotonic() + STARTUP_WAIT_S
    while q.isActive and q.lastProgress is None and time.monotonic() < deadline:
        time.sleep(0.2)


def main(argv: Sequence[str] | None = None) -> int:
    """spark-submit entry point: detection only (ingestion runs in jobs/ingest_*.py)."""

    parser = argparse.ArgumentParser(
        prog="detect", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings(args.config, args)
    spark = build_session(settings, "planewatch-detect")
    spark.sparkContext.setLogLevel("WARN")
    queries: list[StreamingQuery] = []
    try:
        queries = start_detection_queries(spark, settings)
        for q in queries:
            q.awaitTermination()
            if q.exception() is not None:
                log.error("query %s failed: %s", q.name, q.exception())
                return 1
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        for q in queries:
            if q.isActive:
                q.stop()
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
