"""Detection inside an ingest micro-batch: the rules that need no pairing run on the rows the batch just committed to
silver, so their alerts are one micro-batch away from the line or sample that showed the condition (a separate
detect query reading silver added a second trigger and batch, 3-6 s under load on 2 cores).

* :class:`LogRules` (log batches): STALE_BROKER_EPOCH and CONTROL_REQUEST_QUEUED_BEHIND_DATA's request-log form, from
  the batch's state_change_events and request_events rows.
* :class:`MetricRules` (metric batches): every metric rule (pipelines.detection.detectors.metric_candidates) over the
  sliding windows the batch's samples fall in. A window also holds earlier batches' samples: they are read back from
  metric_samples (the window's span of the batch's clusters, files pruned by their `ts` statistics), so the windows
  need no state of their own and survive a restart.

Each runs after the batch's silver tables are committed and writes through an :class:`jobs.alert_writer.AlertWriter`
under the ingest query's own app id, so a replayed batch merges nothing twice. Alerts resolve by the event time the
rule's input reached: the highest `ts` of earlier batches minus `detection.watermark_delay_s`, as a streaming
watermark would be. A writer updates and resolves only the alerts of the clusters its query has read since it
started (two sources of one family may carry different clusters, each at its own event time).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from jobs.alert_writer import AlertWriter
from schemas.alerts import DetectQuery
from schemas.tables import METRIC_SAMPLES, REQUEST_EVENTS, STATE_CHANGE_EVENTS

if TYPE_CHECKING:
    import pyarrow as pa
    from deltalake import DeltaTable

    from jobs.io.settings import Settings
    from pipelines.detection.config import DetectionConfig
    from schemas.tables import Table

__all__ = ["BatchDetect", "LogRules", "MetricRules", "SilverRows", "batch_detect"]

log = logging.getLogger(__name__)

# silver table name -> the batch's rows of it (loaded on demand: on the executor paths they are read back)
SilverRows = Mapping[str, Callable[[], "pa.Table"]]
BatchDetect = Callable[[SilverRows, int], None]


class EventClock:
    """The event time an input reached: the highest `ts` seen, minus the watermark delay (None before any row)."""

    def __init__(self, delay_s: float) -> None:
        self.delay = dt.timedelta(seconds=delay_s)
        self.highest: dt.datetime | None = None

    @property
    def watermark(self) -> dt.datetime | None:
        return None if self.highest is None else self.highest - self.delay

    def advance(self, tables: list[pa.Table]) -> None:
        import pyarrow.compute as pc

        for t in tables:
            if t.num_rows and "ts" in t.column_names:
                top = pc.max(t["ts"]).as_py()
                if top is not None:
                    top = top if top.tzinfo else top.replace(tzinfo=dt.UTC)
                    self.highest = top if self.highest is None or top > self.highest else self.highest


def _clusters(tables: list[pa.Table]) -> set[str]:
    import pyarrow.compute as pc

    return {c for t in tables if t.num_rows for c in pc.unique(t["cluster"]).to_pylist() if c is not None}


def _rows(silver: SilverRows, table: Table) -> pa.Table:
    """The batch's rows of silver `table` in its columns and types (none: the table's empty frame)."""
    load = silver.get(table.name)
    if load is None:
        return table.to_arrow().empty_table()
    return load().select(table.names).cast(table.to_arrow())


class LogRules:
    """A log batch's state_change_events and request_events -> STALE_BROKER_EPOCH, CONTROL_REQUEST_QUEUED_BEHIND_DATA
    (request-log form) -> alerts."""

    def __init__(self, settings: Settings, query: str, run_id: str, cfg: DetectionConfig) -> None:
        self.cfg = cfg
        self.query = query
        self.alerts = AlertWriter(settings, DetectQuery.LOG, f"{query}-alerts-{run_id}", cfg)
        self.clock = EventClock(cfg.watermark_delay_s)
        self.clusters: set[str] = set()

    def __call__(self, silver: SilverRows, batch_id: int) -> None:
        from pipelines.detection.detectors import log_candidates

        t0 = time.perf_counter()
        sc = _rows(silver, STATE_CHANGE_EVENTS)
        rq = _rows(silver, REQUEST_EVENTS)
        watermark = self.clock.watermark  # as of the earlier batches, like a streaming watermark
        self.clock.advance([sc, rq])
        self.clusters |= _clusters([sc, rq])
        cands = log_candidates(sc, rq, self.cfg) if sc.num_rows + rq.num_rows else []
        t1 = time.perf_counter()
        n = self.alerts.write(cands, watermark, batch_id, self.clusters)
        log.info("%s batch %d: log rules %d candidate(s), %d alert row(s); rules %.0f ms, alerts %.0f ms",
                 self.query, batch_id, len(cands), n, (t1 - t0) * 1e3, (time.perf_counter() - t1) * 1e3)


class MetricRules:
    """A metric batch's samples -> the sliding windows they fall in (with the earlier samples of those windows, read
    back from metric_samples) -> every metric rule -> alerts."""

    def __init__(self, settings: Settings, query: str, run_id: str, cfg: DetectionConfig) -> None:
        self.cfg = cfg
        self.query = query
        self.path = settings.table_path(METRIC_SAMPLES.name)
        self._table: DeltaTable | None = None
        self.alerts = AlertWriter(settings, DetectQuery.METRIC, f"{query}-alerts-{run_id}", cfg)
        self.clock = EventClock(cfg.watermark_delay_s)
        self.clusters: set[str] = set()

    def _history(self, new: pa.Table) -> pa.Table:
        """metric_samples rows of the new samples' clusters over the span of every window the new samples fall in
        (a superset: files are chosen by their statistics; the batch's own rows are among them, committed)."""
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        length = dt.timedelta(seconds=self.cfg.metric_window_s)
        lo = pc.min(new["ts"]).as_py() - length
        hi = pc.max(new["ts"]).as_py() + length
        days = sorted({lo.date() + dt.timedelta(days=i) for i in range((hi.date() - lo.date()).days + 1)})
        clusters = sorted(_clusters([new]))
        # one handle, brought up to date by the new log entries only (opening the table anew reads its checkpoint,
        # whose size grows with the table's files)
        if self._table is None:
            self._table = DeltaTable(self.path)
        else:
            self._table.update_incremental()
        files = [[("cluster", "in", clusters), ("date", "in", days), ("ts", ">=", lo), ("ts", "<=", hi)]]
        return self._table.to_pyarrow_dataset(file_pruning_predicate=files).to_table()

    def __call__(self, silver: SilverRows, batch_id: int) -> None:
        import polars as pl

        from pipelines.detection.detectors import metric_candidates
        from pipelines.detection.metric_detectors import detection_samples, metric_windows

        t0 = time.perf_counter()
        batch = _rows(silver, METRIC_SAMPLES)
        watermark = self.clock.watermark
        self.clusters |= _clusters([batch])
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        new = detection_samples(frame).drop("sig").to_arrow() if batch.num_rows else batch
        self.clock.advance([new])
        cands: list[dict[str, Any]] = []
        windows = 0
        if new.num_rows:
            found = metric_windows(self._history(new), self.cfg, touched=new)
            windows = found.num_rows
            cands = metric_candidates(found, self.cfg)
        t1 = time.perf_counter()
        n = self.alerts.write(cands, watermark, batch_id, self.clusters)
        log.info("%s batch %d: metric rules over %d window(s), %d candidate(s), %d alert row(s); windows and rules "
                 "%.0f ms, alerts %.0f ms", self.query, batch_id, windows, len(cands), n, (t1 - t0) * 1e3,
                 (time.perf_counter() - t1) * 1e3)


def batch_detect(settings: Settings, family: str, query: str, run_id: str) -> BatchDetect:
    """The in-batch detection of an ingest query of `family` (logs | metrics)."""
    from pipelines.detection.config import DetectionConfig

    cfg = DetectionConfig.from_mapping(settings.detection)
    return LogRules(settings, query, run_id, cfg) if family == "logs" else MetricRules(settings, query, run_id, cfg)
