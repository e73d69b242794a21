"""Detection inside an ingest micro-batch: the rules that need no pairing run on the rows the batch just committed to
silver, so their alerts are one micro-batch away from the line or sample that showed the condition (a separate
detect query reading silver added a second trigger and batch, 3-6 s under load on 2 cores).

* :class:`LogRules` (log batches): STALE_BROKER_EPOCH, CONTROL_REQUEST_QUEUED_BEHIND_DATA and the KRaft
  controller's BROKER_FENCED, BROKER_HEARTBEAT_TIMEOUT and QUORUM_UNSTABLE
  (pipelines.detection.registry.log_candidates), from the batch's state_change_events and request_events
  rows; a batch holding a quorum election reads the window's earlier elections back from state_change_events.
* :class:`MetricRules` (metric batches): every metric rule (pipelines.detection.registry.metric_candidates) over
  the sliding windows the batch's samples fall in. A window also holds earlier batches' samples: they are read back
  from metric_samples (the window's span of the batch's clusters, files pruned by their `ts` statistics), so the
  windows need no state of their own and survive a restart.

Each runs after the batch's silver tables are committed and writes through an :class:`jobs.detect.alerts.AlertWriter`
under the ingest query's own app id, so a replayed batch merges nothing twice. Alerts resolve by the event time the
rule's input reached: the highest `ts` of earlier batches minus `detection.watermark_delay_s`, as a streaming
watermark would be. A writer updates and resolves only the alerts of the clusters its query has read since it
started (two sources of one family may carry different clusters, each at its own event time).
"""

from __future__ import annotations

import datetime as dt
import functools
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from jobs.detect.alerts import AlertWriter
from jobs.detect.pairing import CLOCK_SCHEMA, ExecutorInput, LogPairing
from jobs.detect.roll_judge import RollJudge
from lake.merge import DeltaMerger
from lake.read import LatestTable, committed_rows
from lake.spark_read import read_files
from lake.tables import ensure_table
from pipelines.detection.baselines import QUEUED_TYPE, add_queue_baselines, history_spans
from pipelines.detection.config import DetectionConfig
from pipelines.detection.events import (
    CONTROL_REQUESTS,
    PAIRED_REQUEST_COLUMNS,
    PAIRED_STATE_CHANGE_COLUMNS,
    PAIRING_DDL,
    STALE_EVENTS,
    pairing_events,
    touched_brokers,
)
from pipelines.detection.kraft_detectors import ELECTION_COLUMNS, KRAFT_EVENTS, SHUTDOWN_COLUMNS, SHUTDOWN_ECHO_S
from pipelines.detection.latency_detectors import LATENCY_RULE_COLUMNS, LATENCY_RULE_EVENTS
from pipelines.detection.metric_baselines import add_metric_baselines
from pipelines.detection.metric_detectors import (
    BASELINE_SPECS,
    DETECTION_SIGNALS,
    ROLLUP_SERIES,
    detection_samples,
    max_window_s,
    metric_windows,
    minute_rollups,
)
from pipelines.detection.pairing_groups import bucket_of
from pipelines.detection.registry import log_candidates, metric_candidates
from pipelines.detection.roll_detectors import (
    SHUTDOWN_EVENTS,
)
from pipelines.roll_safety import utc_frame
from schemas.alerts import DetectQuery
from schemas.events import Event
from schemas.inputs import InputFamily
from schemas.tables import (
    ALERTS,
    CONTROL_REQUEST_LATENCY,
    INCIDENTS,
    METRIC_ROLLUPS_1M,
    METRIC_SAMPLES,
    PAIRING_STATE,
    REQUEST_EVENTS,
    STATE_CHANGE_EVENTS,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from jobs.run.settings import Settings
    from pipelines.detection.config import DetectionConfig
    from schemas.tables import Table

__all__ = ["BatchDetect", "LogRules", "MetricRules", "SilverBatch", "SilverRows", "batch_detect"]

log = logging.getLogger(__name__)

# silver table name -> the batch's rows of it, loaded on demand (on the executor paths they are read back): the
# columns asked for (None: all) of the rows an Arrow expression keeps (None: all)
SilverLoad = Callable[[list[str] | None, "pc.Expression | None"], "pa.Table"]
SilverRows = Mapping[str, SilverLoad]


@dataclass(frozen=True)
class SilverBatch:
    """A batch's silver rows as its rules read them: loaders of its rows, its committed files, and where the batch
    was processed (on the executors: rules whose work grows with the batch run there too, over those files)."""

    rows: SilverRows = field(default_factory=dict)
    paths: Mapping[str, list[str]] = field(default_factory=dict)
    on_executors: bool = False
    spark: SparkSession | None = None


class BatchDetect(Protocol):
    """A family's detection in its micro-batches: the tables it writes created up front, then one call a batch."""

    def ensure_tables(self) -> None: ...

    def __call__(self, silver: SilverBatch, batch_id: int) -> None: ...
# What a queued control request's baseline reads of the request log's earlier rows.
QUEUE_HISTORY_COLUMNS = ["cluster", "broker_id", "api_name", "correlation_id", "ts", "request_queue_time_ms"]
# A minute's rollup is recomputed from every sample of the minute: the history read reaches this far around the batch.
ROLLUP_MINUTE_S = 60.0
# What the event clock reads of every row of a batch.
CLOCK_COLUMNS = ["cluster", "ts"]
# the state_change_events columns that name the brokers a row's pairing events are about (events.touched_brokers)
_TOUCHED_SC = ["broker_id", "target_broker_id", "target_brokers"]
# What the driver reads of a batch the executors processed, one read per table: the clock's columns and the brokers
# the rows touch (which groups the executors step) and, of its state-change lines, what the latency rules read
# around a request (the pairing keeps those between batches: jobs.detect.recent_lines).
_SC_HERE = list(dict.fromkeys([*CLOCK_SCHEMA.names, *_TOUCHED_SC, *LATENCY_RULE_COLUMNS]))
_REQUESTS_HERE = [*CLOCK_SCHEMA.names, "broker_id"]


class EventClock:
    """The event time each cluster's input reached: its highest `ts` seen, minus the watermark delay (a cluster
    without rows yet has none). Per cluster: a back-filling cluster's alerts are not resolved by a live one's time."""

    def __init__(self, delay_s: float) -> None:
        self.delay = dt.timedelta(seconds=delay_s)
        self.highest: dict[str, dt.datetime] = {}

    @property
    def watermarks(self) -> dict[str, dt.datetime]:
        return {c: t - self.delay for c, t in self.highest.items()}

    def advance(self, tables: list[pa.Table]) -> None:
        for t in tables:
            if not t.num_rows:
                continue
            per = t.select(CLOCK_COLUMNS).group_by("cluster").aggregate([("ts", "max")])
            for cluster, top in zip(per["cluster"].to_pylist(), per["ts_max"].to_pylist(), strict=True):
                if cluster is None or top is None:
                    continue
                top = top if top.tzinfo else top.replace(tzinfo=dt.UTC)
                if cluster not in self.highest or top > self.highest[cluster]:
                    self.highest[cluster] = top


def _cluster_spans(rows: pa.Table, before: dt.timedelta, after: dt.timedelta
                   ) -> list[tuple[str, dt.datetime, dt.datetime]]:
    """Per cluster of `rows`, its first `ts` less `before` and its last plus `after` (LatestTable.read_spans)."""
    spans = rows.select(CLOCK_COLUMNS).group_by("cluster").aggregate([("ts", "min"), ("ts", "max")])
    return [(cluster, first - before, last + after)
            for cluster, first, last in zip(*(spans[c].to_pylist() for c in ("cluster", "ts_min", "ts_max")),
                                            strict=True)]


def _rows(silver: SilverBatch, table: Table, where: pc.Expression | None = None,
          columns: list[str] | None = None) -> pa.Table:
    """The batch's rows of silver `table` that `where` keeps, in its types (none: the table's empty frame)."""
    names = columns or table.names
    schema = table.to_arrow(names)
    load = silver.rows.get(table.name)
    return schema.empty_table() if load is None else load(names, where).cast(schema)


class _BatchRules:
    """What both rule sets share: the alert writer of the query's role, and the event clock of its input."""

    role: DetectQuery

    # the tables the family's detection writes besides alerts and incidents
    writes: tuple[Table, ...] = ()

    def __init__(self, settings: Settings, query: str, run_id: str, cfg: DetectionConfig) -> None:
        self.settings = settings
        self.cfg = cfg
        self.query = query
        self.alerts = AlertWriter(settings, self.role, f"{query}-alerts-{run_id}", cfg)
        self.clock = EventClock(cfg.watermark_delay_s)

    def ensure_tables(self) -> None:
        """Create every table the rules write (empty), so readers find them before the first row."""
        for table in (*self.writes, ALERTS, INCIDENTS):
            ensure_table(self.settings.table_path(table.name), table)

    def _write(self, cands: list[dict[str, Any]], watermarks: dict[str, dt.datetime], batch_id: int) -> int:
        """Merge the batch's candidates; the writer updates and resolves the alerts of the clusters this query has
        read since it started (those the clock knows)."""
        return self.alerts.write(cands, watermarks, batch_id, set(self.clock.highest))


class LogRules(_BatchRules):
    """A log batch's state_change_events and request_events -> STALE_BROKER_EPOCH, CONTROL_REQUEST_QUEUED_BEHIND_DATA
    (request-log form), BROKER_FENCED, BROKER_HEARTBEAT_TIMEOUT, QUORUM_UNSTABLE -> alerts."""

    role = DetectQuery.LOG
    writes = (CONTROL_REQUEST_LATENCY, PAIRING_STATE)

    def __init__(self, settings: Settings, query: str, run_id: str, cfg: DetectionConfig) -> None:
        super().__init__(settings, query, run_id, cfg)
        self.pairing = LogPairing(settings, query, run_id, cfg, settings.checkpoint_path(query))
        self.state_changes = LatestTable(settings.table_path(STATE_CHANGE_EVENTS.name),
                                         STATE_CHANGE_EVENTS.to_arrow())
        self.requests = LatestTable(settings.table_path(REQUEST_EVENTS.name), REQUEST_EVENTS.to_arrow())
        self.rolls = RollJudge(settings.table_path, settings.checkpoint_path(query), self.state_changes, cfg)

    def _elections(self, sc: pa.Table) -> pa.Table | None:
        """The quorum's elections from `quorum_window_s` before each cluster's elections in the batch to as long
        after, read back from state_change_events (None: the batch holds none, and QUORUM_UNSTABLE has nothing to
        judge)."""
        elected = pc.field("event") == Event.KRAFT_ACTIVE_CONTROLLER.value
        batch = sc.filter(elected)
        if batch.num_rows == 0:
            return None
        window = dt.timedelta(seconds=self.cfg.quorum_window_s)
        return self.state_changes.read_spans(_cluster_spans(batch, window, window), where=elected).select(
            ELECTION_COLUMNS)

    def _granted(self, sc: pa.Table) -> pa.Table | None:
        """Granted controlled shutdowns from SHUTDOWN_ECHO_S before the batch's fencings, read back from
        state_change_events (None: the batch fences nobody)."""
        fenced = sc.filter(pc.field("event") == Event.KRAFT_BROKER_FENCED.value)
        if fenced.num_rows == 0:
            return None
        back = dt.timedelta(seconds=SHUTDOWN_ECHO_S)
        return self.state_changes.read_spans(_cluster_spans(fenced, back, dt.timedelta(0)),
                                             where=pc.field("event") == Event.KRAFT_SHUTDOWN_GRANTED.value).select(
                                                 SHUTDOWN_COLUMNS)

    def _queue_baselines(self, cands: list[dict[str, Any]]) -> None:
        """The queued control requests' baselines (pipelines.detection.baselines.add_queue_baselines): the request
        log's control requests of their clusters over the window before them, read only when a batch has one."""
        queued = [c for c in cands if c["type"] == QUEUED_TYPE and c.get("broker_id") is not None]
        if not queued or not self.requests.exists():
            return
        window = dt.timedelta(seconds=self.cfg.baseline_window_s)
        rows = self.requests.read_spans(history_spans(queued, window),
                                        where=pc.field("api_name").isin(list(CONTROL_REQUESTS)))
        add_queue_baselines(queued, utc_frame(rows.select(QUEUE_HISTORY_COLUMNS)), window, self.cfg)

    def _executor_input(self, silver: SilverBatch) -> ExecutorInput | None:
        """The batch's pairing events made by the executors from its committed silver files (a batch the executors
        processed), with the times of its rows for the clock; None: the batch is paired here."""
        if not silver.on_executors or silver.spark is None:
            return None
        spark = silver.spark
        frames = []
        times = []
        read: dict[str, pa.Table] = {}
        for table, columns, here in ((STATE_CHANGE_EVENTS, PAIRED_STATE_CHANGE_COLUMNS, _SC_HERE),
                                     (REQUEST_EVENTS, PAIRED_REQUEST_COLUMNS, _REQUESTS_HERE)):
            paths = silver.paths.get(table.name) or []
            if not paths:
                read[table.name] = table.to_arrow(here).empty_table()
                continue
            rows = read_files(spark, self.settings.table_path(table.name), table.to_spark(), table.partition_by,
                              paths).select(*columns)
            frames.append(rows.mapInArrow(functools.partial(_events_of, table.name), PAIRING_DDL))
            read[table.name] = committed_rows(paths, table, here)
            times.append(read[table.name].select(CLOCK_SCHEMA.names).cast(CLOCK_SCHEMA))
        clock = pa.concat_tables(times) if times else CLOCK_SCHEMA.empty_table()
        touched = touched_brokers(read[STATE_CHANGE_EVENTS.name], read[REQUEST_EVENTS.name])
        groups = {(c, bucket_of(b)) for c, b in touched.iter_rows() if b >= 0}
        sc = read[STATE_CHANGE_EVENTS.name]
        lines = sc.filter(pc.is_in(sc["event"], pa.array([e.value for e in LATENCY_RULE_EVENTS], pa.string())))
        return ExecutorInput(spark, frames, clock, groups, lines.select(list(LATENCY_RULE_COLUMNS)))

    def __call__(self, silver: SilverBatch, batch_id: int) -> None:
        t0 = time.perf_counter()
        on_executors = self._executor_input(silver)
        if on_executors is None:
            paired = self.pairing(_rows(silver, STATE_CHANGE_EVENTS, columns=[*PAIRED_STATE_CHANGE_COLUMNS, "source"]),
                                  _rows(silver, REQUEST_EVENTS, columns=[*PAIRED_REQUEST_COLUMNS, "source"]), batch_id)
        else:
            empty_sc = STATE_CHANGE_EVENTS.to_arrow(list(PAIRED_STATE_CHANGE_COLUMNS)).empty_table()
            paired = self.pairing(empty_sc, REQUEST_EVENTS.to_arrow(list(PAIRED_REQUEST_COLUMNS)).empty_table(),
                                  batch_id, on_executors)
        t1 = time.perf_counter()
        # the rows the rules read: stale-epoch lines, the request log's control requests
        sc = _rows(silver, STATE_CHANGE_EVENTS, pc.field("event").isin([e.value for e in (*STALE_EVENTS,
                                                                                          *KRAFT_EVENTS,
                                                                                          *SHUTDOWN_EVENTS)]))
        rq = _rows(silver, REQUEST_EVENTS, pc.field("api_name").isin(list(CONTROL_REQUESTS)))
        cands = (log_candidates(sc, rq, self.cfg, self._elections(sc), self._granted(sc))
                 if sc.num_rows + rq.num_rows else [])
        self._queue_baselines(cands)
        cands += self.rolls(sc, batch_id)
        cands += paired.candidates
        t2 = time.perf_counter()
        n = 0
        if cands or paired.moved:  # else nothing to open, and event time did not move to resolve anything
            n = self.alerts.write(cands, paired.watermarks, batch_id, set(paired.watermarks))
        log.info("%s batch %d: pairing %d request row(s) %s, log rules %d candidate(s), %d alert row(s); pairing "
                 "%.0f ms, rules %.0f ms, alerts %.0f ms", self.query, batch_id, paired.rows, paired.timings,
                 len(cands), n, (t1 - t0) * 1e3, (t2 - t1) * 1e3, (time.perf_counter() - t2) * 1e3)


def _events_of(table: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """A task's share of a batch's silver rows of `table` -> pairing events (mapInArrow)."""
    empty_sc = STATE_CHANGE_EVENTS.to_arrow(list(PAIRED_STATE_CHANGE_COLUMNS)).empty_table()
    empty_rq = REQUEST_EVENTS.to_arrow(list(PAIRED_REQUEST_COLUMNS)).empty_table()
    for b in batches:
        rows = pa.Table.from_batches([b])
        events = pairing_events(rows, empty_rq) if table == STATE_CHANGE_EVENTS.name else pairing_events(empty_sc,
                                                                                                          rows)
        yield from events.to_batches()


class MetricRules(_BatchRules):
    """A metric batch's samples -> the sliding windows they fall in (with the earlier samples of those windows, read
    back from metric_samples) -> every metric rule -> alerts."""

    role = DetectQuery.METRIC
    writes = (METRIC_ROLLUPS_1M,)

    def __init__(self, settings: Settings, query: str, run_id: str, cfg: DetectionConfig) -> None:
        super().__init__(settings, query, run_id, cfg)
        self.samples = LatestTable(settings.table_path(METRIC_SAMPLES.name), METRIC_SAMPLES.to_arrow())
        rollups_path = settings.table_path(METRIC_ROLLUPS_1M.name)
        self.rollups = LatestTable(rollups_path, METRIC_ROLLUPS_1M.to_arrow())
        self.rollup_merger = DeltaMerger(rollups_path, METRIC_ROLLUPS_1M, f"{query}.{run_id}:metric_rollups_1m",
                                         [*ROLLUP_SERIES, "minute"])

    def _history(self, batch: pa.Table) -> pa.Table:
        """metric_samples rows over the span of every window the batch's samples fall in and of every minute they
        fall in, per cluster (a superset: files are chosen by their statistics; the batch's own rows are among
        them, committed)."""
        length = dt.timedelta(seconds=max(max_window_s(self.cfg), ROLLUP_MINUTE_S))  # sparse series: longer windows
        # the scan keeps the spans' rows only: a compacted partition is a day in one file, and the windows are
        # minutes of it (without this the rules' cost grew with the hour of the day: soak, 0.66 -> 1.7 s a batch)
        return self.samples.read_spans(_cluster_spans(batch, length, length))

    def _baselines(self, cands: list[dict[str, Any]]) -> None:
        """The candidates' own history (pipelines.detection.metric_baselines): metric_rollups_1m of their clusters
        over the baseline window before them, read on the driver only when a batch has candidates."""
        wanted = [c for c in cands if c["type"] in BASELINE_SPECS and c.get("broker_id") is not None]
        if not wanted:
            return
        window = dt.timedelta(seconds=self.cfg.baseline_window_s)
        rollups = pl.DataFrame()
        if self.rollups.exists():
            rollups = utc_frame(self.rollups.read_spans(history_spans(wanted, window), "minute"))
        add_metric_baselines(wanted, rollups, window, self.cfg, BASELINE_SPECS)

    def __call__(self, silver: SilverBatch, batch_id: int) -> None:
        t0 = time.perf_counter()
        every = _rows(silver, METRIC_SAMPLES)
        if every.num_rows == 0:
            return
        history = self._history(every)
        rollups = self._rollups(history, every, batch_id)
        watermarks = self.clock.watermarks
        frame = pl.from_arrow(every.filter(pc.field("signal").isin(list(DETECTION_SIGNALS))))
        assert isinstance(frame, pl.DataFrame)
        samples = detection_samples(frame).drop("sig")
        self.clock.advance([samples.select(CLOCK_COLUMNS).to_arrow()])
        # a sample older than its cluster's event time is late, as a streaming aggregation would drop it: its windows
        # were judged already (an alert they raised may be resolved since; judging them again would reopen it)
        late = pl.col("ts") < pl.col("cluster").replace_strict(watermarks, default=None, return_dtype=pl.Datetime(
            "us", "UTC"))
        kept = samples.filter(~late.fill_null(False))
        dropped = samples.height - kept.height
        new = kept.to_arrow()
        cands: list[dict[str, Any]] = []
        windows = 0
        if new.num_rows:
            found = metric_windows(history, self.cfg, touched=new)
            windows = found.num_rows
            cands = metric_candidates(found, self.cfg)
            self._baselines(cands)
        t1 = time.perf_counter()
        n = self._write(cands, watermarks, batch_id)
        log.info("%s batch %d: %d rollup row(s), metric rules over %d window(s), %d candidate(s), %d alert row(s)%s; "
                 "windows and rules %.0f ms, alerts %.0f ms", self.query, batch_id, rollups, windows, len(cands), n,
                 f", {dropped} late sample(s) not judged" if dropped else "", (t1 - t0) * 1e3,
                 (time.perf_counter() - t1) * 1e3)


    def _rollups(self, history: pa.Table, batch: pa.Table, batch_id: int) -> int:
        """Recompute the 1-minute rollups of the minutes the batch's samples fall in, from every sample of those
        minutes (`history`), and merge them into metric_rollups_1m; returns the rows merged."""
        rows = minute_rollups(utc_frame(history), utc_frame(batch.select(["cluster", "ts", "value"])))
        if rows.is_empty():
            return 0
        self.rollup_merger.write_arrow(rows.to_arrow(), batch_id)
        return rows.height


def batch_detect(settings: Settings, family: str, query: str, run_id: str) -> BatchDetect:
    """The in-batch detection of an ingest query of `family` (logs | metrics)."""

    cfg = DetectionConfig.from_mapping(settings.detection)
    if family == InputFamily.LOGS:
        return LogRules(settings, query, run_id, cfg)
    if family == InputFamily.METRICS:
        return MetricRules(settings, query, run_id, cfg)
    raise ValueError(f"no in-batch rules for input family {family!r}")
