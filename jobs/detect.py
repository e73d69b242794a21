"""Detection job: silver tables -> control_request_latency, alerts, metric_rollups_1m (gold).

    spark-submit jobs/detect.py --config conf/pipeline.yaml [--once]

`start_detection_queries(spark, settings)` is what `planewatch pipeline` (jobs/runner.py) calls; it starts four
streaming queries, each reading silver through the `planewatch_delta` source (offset = table version):

  detect_pairing  state_change_events + request_events' control requests (the request log's witness of their end;
                  every row of both, and metric_samples, as heartbeats) -> pairing operator -> MERGE latency rows
                  on request_key; latency detectors -> alert lifecycle -> MERGE alerts on alert_id
  detect_logs     state_change_events + request_events -> stale-epoch and queued-behind-data detectors -> alerts
  detect_metrics  metric_samples -> event-time windows (update mode) -> metric detectors -> alerts
  detect_rollups  metric_samples -> 1-minute windows (update mode) -> MERGE metric_rollups_1m

Every write is a delta-rs MERGE under a Delta app transaction (jobs.io.delta_sink.DeltaMerger), so a replayed
micro-batch writes nothing twice. The four queries share one `alerts` table: each owns its alert types (it
resolves only those), and a lock in this process serialises their read-modify-merge of `alerts`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if __name__ == "__main__":  # spark-submit jobs/detect.py: the repository root must be importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from jobs.io.settings import Settings
from pipelines.detection.config import DetectionConfig
from schemas.alerts import METRIC_FORMS, AlertType
from schemas.events import LatencyStatus
from schemas.tables import (
    ALERTS,
    CONTROL_REQUEST_LATENCY,
    METRIC_ROLLUPS_1M,
    METRIC_SAMPLES,
    REQUEST_EVENTS,
    STATE_CHANGE_EVENTS,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["AlertWriter", "main", "start_detection_queries"]

log = logging.getLogger(__name__)

# One lock per process: the detect queries' foreachBatch functions run on separate driver threads and must not
# interleave their read-open-alerts / merge steps on the shared `alerts` table.
_ALERTS_LOCK = threading.Lock()
QUERIES = ("detect_pairing", "detect_logs", "detect_metrics", "detect_rollups")
# Continuous mode waits at most this long for a query's first batch before starting the next one.
STARTUP_WAIT_S = 120.0


def _owned(query: str) -> Callable[[dict[str, Any]], bool]:
    """Which open alerts a query may update or resolve (a type of METRIC_FORMS has its metric form too: the alerts
    carrying that form's listener are the metric query's)."""
    from pipelines.detection.detectors import LATENCY_TYPES, LOG_TYPES, METRIC_TYPES

    def metric_form(a: dict[str, Any]) -> bool:
        form = METRIC_FORMS.get(a["type"])
        return form is not None and a["listener"] == form

    if query == "detect_pairing":
        return lambda a: a["type"] in LATENCY_TYPES and not metric_form(a)
    if query == "detect_logs":
        return lambda a: a["type"] in LOG_TYPES and not metric_form(a)
    return lambda a: a["type"] in METRIC_TYPES or metric_form(a)


class AlertWriter:
    """Candidates of one micro-batch -> lifecycle -> MERGE into `alerts` (exactly once per batch id)."""

    def __init__(self, settings: Settings, query: str, run_id: str, cfg: DetectionConfig) -> None:
        from jobs.io.delta_sink import DeltaMerger

        self.path = settings.table_path(ALERTS.name)
        self.query = query
        self.cfg = cfg
        self.owns = _owned(query)
        self.merger = DeltaMerger(self.path, ALERTS, f"{query}-alerts-{run_id}", ["alert_id"])

    def open_alerts(self) -> list[dict[str, Any]]:
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self.path):
            return []
        import pyarrow as pa

        tbl = pa.table(DeltaTable(self.path).to_pyarrow_table())
        tbl = tbl.filter(pc.equal(tbl["status"], "open"))
        return [a for a in tbl.to_pylist() if self.owns(a)]

    def write(self, candidates: list[dict[str, Any]], watermark: dt.datetime | None, batch_id: int) -> int:
        """Apply the lifecycle and merge; returns the number of alert rows written."""
        import pyarrow as pa

        from pipelines.detection.lifecycle import Candidate, apply_lifecycle

        with _ALERTS_LOCK:  # a replayed batch is skipped by the merger's app transaction
            rows = apply_lifecycle(
                self.open_alerts(),
                [Candidate.from_row(c) for c in candidates],
                watermark,
                dt.timedelta(seconds=self.cfg.resolve_after_s),
                dt.datetime.now(dt.UTC),
            )
            self.merger.write_arrow(pa.Table.from_pylist(rows, schema=ALERTS.to_arrow()), batch_id)
            return len(rows)


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
        log.warning("%s: %d late rows were past the watermark and not processed", holder.get("name"), dropped)
    return None if when.year < 2000 else when


class PairingBatch:
    """foreachBatch of detect_pairing: latency rows -> MERGE; latency detectors -> alerts."""

    def __init__(self, spark: SparkSession, settings: Settings, run_id: str, cfg: DetectionConfig) -> None:
        from jobs.io.delta_sink import DeltaMerger

        self.spark, self.settings, self.cfg = spark, settings, cfg
        self.latency = DeltaMerger(
            settings.table_path(CONTROL_REQUEST_LATENCY.name),
            CONTROL_REQUEST_LATENCY,
            f"detect_pairing-latency-{run_id}",
            ["request_key"],
        )
        self.alerts = AlertWriter(settings, "detect_pairing", run_id, cfg)
        self.holder: dict[str, Any] = {"name": "detect_pairing"}

    def _fetcher_lines(self, batch: pa.Table) -> pa.Table:
        """state_change_events of the batch's clusters and days (LOCK_CONTENTION's fetcher bursts and lock waits,
        LEADER_AND_ISR_NOT_COMPLETED's controller elections): the keys come from the collected rows and only those
        partitions' files are read, on the driver (no Spark job, no listing of the whole table)."""
        import pyarrow.compute as pc

        from jobs.io.delta_read import read_delta_arrow

        ts = pc.coalesce(batch["handling_ts"], batch["finished_ts"], batch["sent_ts"])
        keys = {(c, d) for c, d in zip(batch["cluster"].to_pylist(), pc.cast(ts, "date32").to_pylist(), strict=True)
                if c is not None and d is not None}
        path = self.settings.table_path(STATE_CHANGE_EVENTS.name)
        if not keys:
            return STATE_CHANGE_EVENTS.to_arrow().empty_table()
        dnf = [[("cluster", "=", c), ("date", "=", d.isoformat())] for c, d in sorted(keys)]
        return read_delta_arrow(path, dnf)

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        import time

        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark.sql import functions as F

        from pipelines.detection.detectors import latency_candidates

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
        self.latency.write_arrow(tbl, batch_id)
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
        t3 = time.perf_counter()
        n = self.alerts.write(cands, watermark, batch_id)
        evicted = pc.sum(pc.equal(tbl["status"], LatencyStatus.EVICTED.value)).as_py() if tbl.num_rows else 0
        if evicted:  # the rows are in control_request_latency with that status: this says the bound was reached
            log.warning("detect_pairing batch %d: %d open request(s) evicted by pairing's state bound (status %s)",
                        batch_id, evicted, LatencyStatus.EVICTED.value)
        log.info("detect_pairing batch %d: %d request row(s), %d candidate(s), %d alert row(s); pairing %.0f ms, "
                 "latency merge %.0f ms, detectors %.0f ms, alerts %.0f ms", batch_id, tbl.num_rows, len(cands), n,
                 (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (time.perf_counter() - t3) * 1e3)


class LogsBatch:
    """foreachBatch of detect_logs: state-change + request-log rows -> stale-epoch / queued-behind-data alerts."""

    def __init__(self, settings: Settings, run_id: str, cfg: DetectionConfig) -> None:
        self.cfg = cfg
        self.alerts = AlertWriter(settings, "detect_logs", run_id, cfg)
        self.holder: dict[str, Any] = {"name": "detect_logs"}

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        import time

        import pyarrow as pa
        import pyarrow.compute as pc

        from pipelines.detection.detectors import log_candidates

        watermark = _watermark(self.holder)
        t0 = time.perf_counter()
        # ONE action, collecting only the rows the detectors read; the watermark saw every row upstream
        both = pa.table(df.where(_log_rows_read()).toArrow())
        t1 = time.perf_counter()
        sc = both.filter(pc.equal(both["_src"], "sc")).select(STATE_CHANGE_EVENTS.names)
        rq = both.filter(pc.equal(both["_src"], "rq")).select([f"rq_{n}" for n in REQUEST_EVENTS.names])
        rq = rq.rename_columns(REQUEST_EVENTS.names)
        cands = log_candidates(sc, rq, self.cfg)
        t2 = time.perf_counter()
        n = self.alerts.write(cands, watermark, batch_id)
        log.info("detect_logs batch %d: %d row(s), %d candidate(s), %d alert row(s); rows %.0f ms, detectors %.0f ms, "
                 "alerts %.0f ms", batch_id, both.num_rows, len(cands), n, (t1 - t0) * 1e3, (t2 - t1) * 1e3,
                 (time.perf_counter() - t2) * 1e3)


class MetricsBatch:
    """foreachBatch of detect_metrics: updated metric windows -> metric detectors -> alerts."""

    def __init__(self, settings: Settings, run_id: str, cfg: DetectionConfig) -> None:
        self.cfg = cfg
        self.alerts = AlertWriter(settings, "detect_metrics", run_id, cfg)
        self.holder: dict[str, Any] = {"name": "detect_metrics"}

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        import time

        import pyarrow as pa

        from pipelines.detection.detectors import metric_candidates

        watermark = _watermark(self.holder)
        t0 = time.perf_counter()
        # ONE action runs the windowed aggregation (and the source read under it); the rules read the collected
        # windows with polars, on the driver (a Spark plan per rule took seconds per micro-batch)
        windows = pa.table(df.toArrow())
        t1 = time.perf_counter()
        cands = metric_candidates(windows, self.cfg)
        t2 = time.perf_counter()
        n = self.alerts.write(cands, watermark, batch_id)
        log.info("detect_metrics batch %d: %d window(s), %d candidate(s), %d alert row(s); windows %.0f ms, "
                 "detectors %.0f ms, alerts %.0f ms", batch_id, windows.num_rows, len(cands), n, (t1 - t0) * 1e3,
                 (t2 - t1) * 1e3, (time.perf_counter() - t2) * 1e3)


class RollupsBatch:
    """foreachBatch of detect_rollups: updated 1-minute windows -> MERGE metric_rollups_1m."""

    KEYS = ("cluster", "broker_id", "signal", "listener", "request", "attribute", "minute")

    def __init__(self, settings: Settings, run_id: str) -> None:
        from jobs.io.delta_sink import DeltaMerger

        self.merger = DeltaMerger(
            settings.table_path(METRIC_ROLLUPS_1M.name), METRIC_ROLLUPS_1M, f"detect_rollups-{run_id}", list(self.KEYS)
        )
        self.holder: dict[str, Any] = {"name": "detect_rollups"}

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        self.merger.write(df, batch_id)


def _stream(spark: SparkSession, settings: Settings, table: Any) -> DataFrame:
    path = os.path.abspath(settings.table_path(table.name))
    return spark.readStream.format("planewatch_delta").load(path)


def _logs_input(sc: DataFrame, rq: DataFrame) -> DataFrame:
    """Both log tables in one stream: state-change columns + request columns prefixed `rq_`, tagged by `_src`."""
    from pyspark.sql import functions as F

    sc_types = {f.name: f.dataType for f in STATE_CHANGE_EVENTS.to_spark().fields}
    rq_types = {f.name: f.dataType for f in REQUEST_EVENTS.to_spark().fields}
    left = sc.select(
        F.lit("sc").alias("_src"),
        *[F.col(n) for n in STATE_CHANGE_EVENTS.names],
        *[F.lit(None).cast(rq_types[n]).alias(f"rq_{n}") for n in REQUEST_EVENTS.names],
    )
    right = rq.select(
        F.lit("rq").alias("_src"),
        *[F.lit(None).cast(sc_types[n]).alias(n) for n in STATE_CHANGE_EVENTS.names],
        *[F.col(n).alias(f"rq_{n}") for n in REQUEST_EVENTS.names],
    )
    both = left.unionByName(right)
    return both.withColumn("_ts", F.coalesce("ts", "rq_ts"))


def _log_rows_read() -> Column:
    """The rows of the detect_logs stream (`_logs_input`) the log detectors read: stale-epoch lines and the request
    log's control requests (STALE_BROKER_EPOCH, CONTROL_REQUEST_QUEUED_BEHIND_DATA); the others only move its
    watermark."""
    from pyspark.sql import functions as F

    from pipelines.detection.events import CONTROL_REQUESTS, STALE_EVENTS

    stale = F.col("event").isin(*[e.value for e in STALE_EVENTS])
    control = F.col("rq_api_name").isin(*CONTROL_REQUESTS)
    return ((F.col("_src") == "sc") & stale) | ((F.col("_src") == "rq") & control)


def start_detection_queries(spark: SparkSession, settings: Settings) -> list[StreamingQuery]:
    """Start the four detection queries (see the module doc); --once: availableNow. Returns them running."""
    from jobs.io.checkpoints import app_run_id
    from jobs.io.delta_read import DeltaStreamSource
    from jobs.io.delta_sink import ensure_table
    from pipelines.detection.events import METRIC_HEARTBEAT_LAG_S, heartbeats, pairing_input, served_input
    from pipelines.detection.metric_detectors import metric_rollups, metric_windows
    from pipelines.detection.operator import pair_requests

    cfg = DetectionConfig.from_mapping(settings.detection)
    spark.dataSource.register(DeltaStreamSource)
    for t in (STATE_CHANGE_EVENTS, REQUEST_EVENTS, METRIC_SAMPLES, CONTROL_REQUEST_LATENCY, ALERTS, METRIC_ROLLUPS_1M):
        ensure_table(os.path.abspath(settings.table_path(t.name)), t)
    delay = f"{int(cfg.watermark_delay_s * 1000)} milliseconds"

    sc = _stream(spark, settings, STATE_CHANGE_EVENTS)
    ms = _stream(spark, settings, METRIC_SAMPLES)
    rq = _stream(spark, settings, REQUEST_EVENTS)
    plans: list[tuple[str, DataFrame, Any, str]] = []
    ids = {q: app_run_id(settings.checkpoint_path(q)) for q in QUERIES}
    pairing = pair_requests(pairing_input(sc).unionByName(served_input(rq))
                            .unionByName(heartbeats(ms, METRIC_HEARTBEAT_LAG_S))
                            .unionByName(heartbeats(sc)).unionByName(heartbeats(rq)), cfg)
    plans.append(("detect_pairing", pairing, PairingBatch(spark, settings, ids["detect_pairing"], cfg), "append"))
    logs = _logs_input(sc, rq).withWatermark("_ts", delay)
    plans.append(("detect_logs", logs, LogsBatch(settings, ids["detect_logs"], cfg), "append"))
    plans.append(
        ("detect_metrics", metric_windows(ms, cfg), MetricsBatch(settings, ids["detect_metrics"], cfg), "update")
    )
    plans.append(("detect_rollups", metric_rollups(ms), RollupsBatch(settings, ids["detect_rollups"]), "update"))

    queries: list[StreamingQuery] = []
    for name, frame, handler, mode in plans:
        writer = (
            frame.writeStream.queryName(name)
            .outputMode(mode)
            .option("checkpointLocation", settings.checkpoint_path(name))
            .foreachBatch(handler)
        )
        writer = (
            writer.trigger(availableNow=True)
            if settings.once
            else writer.trigger(processingTime=settings.trigger_interval)
        )
        q = writer.start()
        handler.holder["query"] = q
        queries.append(q)
        log.info("started %s (checkpoint %s)", name, settings.checkpoint_path(name))
        _settle(q, settings.once)
    return queries


def _settle(q: StreamingQuery, once: bool) -> None:
    """Start the queries one after the other: each query plans its Python sources and pandas workers when it
    starts, and starting four at once on a small, busy machine made Python workers miss Spark's connect-back
    timeout. --once: wait for the query to finish; continuous: wait for its first progress (bounded)."""
    import time

    if once:
        q.awaitTermination()
        return
    deadline = time.monotonic() + STARTUP_WAIT_S
    while q.isActive and q.lastProgress is None and time.monotonic() < deadline:
        time.sleep(0.2)


def main(argv: Sequence[str] | None = None) -> int:
    """spark-submit entry point: detection only (ingestion runs in jobs/ingest_*.py)."""
    from jobs.io.session import build_session
    from jobs.io.settings import add_arguments, load_settings

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
