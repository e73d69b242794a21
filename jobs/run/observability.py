"""The pipeline's own metrics, in the exposition format the operator's Prometheus scrapes (prometheus_client).

Served by the pipeline's driver process on `observability.metrics_host:metrics_port` (127.0.0.1 by default; not
served while `metrics_port` is null). What is measured, and where it comes from:

Each metric (its type; its labels): what it says, and where it comes from:

* `planewatch_pipeline_up` (gauge): 1 while the runner runs (`start`);
* `planewatch_pipeline_info` (info; version, families, sink_mode): the run's settings, at `start`;
* `planewatch_batches_total` (counter; query, outcome = ok | failed): every ingest batch (jobs.ingest.batch; a
  failed one is retried from the checkpoint);
* `planewatch_batch_duration_seconds` (histogram; query): an ok batch's `BatchReport.seconds`;
* `planewatch_records_read_total`, `planewatch_records_accepted_total` (counters; query): an ok batch's records
  (bronze) and those of them written to silver;
* `planewatch_records_quarantined_total` (counter; query, reason): ... quarantined: `rejected` (the parser or the
  source refused them), the name of the hard quality rule they failed, or `other` (a replay's rows whose crashed
  attempt committed them: counted by the table, their reasons unknown);
* `planewatch_input_newest_event_timestamp_seconds` (gauge; family, query, cluster): the newest event time (`ts`)
  of the cluster's silver rows the query has read since the process started (a batch of older rows, a backfill's
  or a late line's, does not move it back; a time over :data:`MAX_FUTURE_S` ahead of the clock is left out);
* `planewatch_input_lag_seconds` (gauge; family, query, cluster): now less that, computed at each scrape, so it
  grows while nothing newer arrives;
* `planewatch_last_commit_timestamp_seconds` (gauge; table): when an ok batch last committed rows to the table;
* `planewatch_maintenance_runs_total` (counter; table, outcome): each table of each maintenance pass
  (jobs.run.maintenance), failed when it reported errors.

The module, in reading order:

* :data:`METRICS`: the list above as data (name, kind, help, labels); :class:`Update`: one change to one metric;
* :func:`batch_updates`, :func:`maintenance_updates`: pure: a batch's report (a maintenance pass's reports) -> its
  updates; unit-tested without HTTP;
* :class:`PipelineMetrics`: the metrics in a registry of their own, :meth:`~PipelineMetrics.apply` of updates;
  :class:`_InputTimes`: the newest event times and the lag computed from them at each scrape;
* :func:`start`, :func:`stop`: the process's metrics server (jobs.run.runner); :func:`batch_done`,
  :func:`maintenance_done`: the one call of jobs.ingest.batch and of jobs.run.maintenance, a no-op while no server
  runs. Both hooks run on the driver (foreachBatch and the maintenance thread); prometheus_client's metrics are
  thread-safe.

The rules that alert on these (planewatch down, behind, failing) are conf/prometheus/planewatch-rules.yml.
"""

from __future__ import annotations

import enum
import importlib.metadata
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from jobs import PipelineIOError
from schemas.routes import RAW_TABLES
from schemas.tables import DQ_RESULTS, QUARANTINE

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from jobs.ingest.batch import BatchReport
    from jobs.run.settings import Settings
    from lake.maintenance import TableReport

__all__ = ["METRICS", "PipelineMetrics", "Update", "batch_done", "batch_updates", "maintenance_done",
           "maintenance_updates", "start", "stop"]

log = logging.getLogger(__name__)

PREFIX = "planewatch_"
# Batch durations: a quiet query's batch on the driver takes 0.3-1 s, a busy one's or one on the executors 2-15 s, a
# backfill's up to minutes; the buckets tell those apart (and a trigger interval of 2 s or 10 s from its multiples).
DURATION_BUCKETS_S = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
# The reason of quarantined records the engine did not count (a replayed batch whose quarantine rows its crashed
# attempt committed: their count comes from the table, their reasons are not known).
OTHER_REASON = "other"
OK, FAILED = "ok", "failed"
# An event time further than this ahead of the pipeline's clock is a bad timestamp (a broker clock set years ahead,
# a garbled line), not input: taken as the newest, it would hold the lag at 0 for good and PlanewatchBehind silent.
# An hour is beyond any clock skew NTP leaves.
MAX_FUTURE_S = 3600.0
NEWEST = "input_newest_event_timestamp_seconds"
NEWEST_HELP = "Newest event time (unix seconds) of the cluster's rows the query has read"
LAG = "input_lag_seconds"
LAG_HELP = "Seconds from the newest event time the query has read of the cluster to now"
INPUT_LABELS = ("family", "query", "cluster")


class Kind(enum.Enum):
    """A metric's type, by the method an update calls on it (NEWEST: the newest event times, `_InputTimes`)."""

    COUNTER = "inc"
    GAUGE = "set"
    HISTOGRAM = "observe"
    NEWEST = "advance"


@dataclass(frozen=True)
class MetricSpec:
    kind: Kind
    help: str
    labels: tuple[str, ...] = ()


# Every metric updated through `apply`, by its name without PREFIX (the info and the lag: PipelineMetrics).
METRICS: Mapping[str, MetricSpec] = {
    "pipeline_up": MetricSpec(Kind.GAUGE, "1 while the pipeline's runner runs"),
    "batches_total": MetricSpec(Kind.COUNTER, "Ingest micro-batches ended, by outcome (failed: retried from the "
                                "checkpoint)", ("query", "outcome")),
    "batch_duration_seconds": MetricSpec(Kind.HISTOGRAM, "Wall time of an ingest micro-batch that committed",
                                         ("query",)),
    "records_read_total": MetricSpec(Kind.COUNTER, "Records read by committed batches (bronze rows)", ("query",)),
    "records_accepted_total": MetricSpec(Kind.COUNTER, "Records of committed batches written to silver", ("query",)),
    "records_quarantined_total": MetricSpec(Kind.COUNTER, "Records of committed batches quarantined, by reason "
                                            "(rejected: the parser or the source; else the hard rule failed)",
                                            ("query", "reason")),
    NEWEST: MetricSpec(Kind.NEWEST, NEWEST_HELP, INPUT_LABELS),
    "last_commit_timestamp_seconds": MetricSpec(Kind.GAUGE, "When a batch last committed rows to the table (unix "
                                                "seconds)", ("table",)),
    "maintenance_runs_total": MetricSpec(Kind.COUNTER, "Table maintenance runs (one table of one pass), by outcome",
                                         ("table", "outcome")),
}


@dataclass(frozen=True)
class Update:
    """One change to one metric: `metric` (a key of METRICS), its label values in the metric's label order, and the
    value the metric's kind takes (added to a counter, set on a gauge, observed by a histogram)."""

    metric: str
    labels: tuple[str, ...]
    value: float


def batch_updates(family: str, query: str, report: BatchReport, now: float) -> list[Update]:
    """The updates of one ended ingest batch at unix time `now`. A failed batch only counts as failed: it is retried
    from the checkpoint, and its retry counts its records once."""
    # both outcomes' series exist from a query's first batch on (a rule's increase() sees a series' first failure
    # only after a sample without it)
    if not report.ok:
        return [Update("batches_total", (query, FAILED), 1.0), Update("batches_total", (query, OK), 0.0)]
    out = [Update("batches_total", (query, OK), 1.0), Update("batches_total", (query, FAILED), 0.0),
           Update("batch_duration_seconds", (query,), report.seconds)]
    accepted = sum(report.silver.values())
    out += [Update("records_read_total", (query,), float(report.raw)),
            Update("records_accepted_total", (query,), float(accepted))]
    reasons = {r: n for r, n in sorted(report.quarantine_reasons.items()) if n}
    uncounted = report.quarantine - sum(reasons.values())
    if uncounted > 0:
        reasons[OTHER_REASON] = uncounted
    out += [Update("records_quarantined_total", (query, reason), float(n)) for reason, n in reasons.items()]
    out += [Update(NEWEST, (family, query, cluster), ts) for cluster, ts in sorted(report.newest_event_ts.items())
            if ts <= now + MAX_FUTURE_S]
    if report.raw:  # an empty batch commits nothing; one with records commits bronze and its dq rows
        tables = [RAW_TABLES[family].name, *sorted(t for t, n in report.silver.items() if n)]
        tables += [QUARANTINE.name] * bool(report.quarantine) + [DQ_RESULTS.name]
        out += [Update("last_commit_timestamp_seconds", (table,), now) for table in tables]
    return out


def maintenance_updates(reports: Mapping[str, TableReport]) -> list[Update]:
    """The updates of one maintenance pass: a run per table, failed when it reported errors."""
    return [Update("maintenance_runs_total", (table, FAILED if report.errors else OK), 1.0)
            for table, report in sorted(reports.items())]


class _InputTimes(Collector):
    """Per (family, query, cluster) the newest event time read (it only moves forward), exposed with the lag from it
    to the clock's now, computed at each scrape."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._newest: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()

    def advance(self, labels: tuple[str, ...], ts: float) -> None:
        with self._lock:
            self._newest[labels] = max(ts, self._newest.get(labels, ts))

    def describe(self) -> Iterable[Metric]:
        return self._families()

    def _families(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(f"{PREFIX}{NEWEST}", NEWEST_HELP, labels=INPUT_LABELS),
                GaugeMetricFamily(f"{PREFIX}{LAG}", LAG_HELP, labels=INPUT_LABELS)]

    def collect(self) -> Iterable[Metric]:
        newest, lag = self._families()
        now = self.clock()
        with self._lock:
            times = sorted(self._newest.items())
        for labels, ts in times:
            newest.add_metric(list(labels), ts)
            lag.add_metric(list(labels), max(0.0, now - ts))
        return [newest, lag]


class PipelineMetrics:
    """The pipeline's metrics (METRICS, the info, the lag) in a registry of their own.

    Args:
        clock: unix time now (the lag's "now"; tests pass a fixed one).
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.registry = CollectorRegistry()
        self._metrics: dict[str, Counter | Gauge | Histogram | _InputTimes] = {}
        self._inputs = _InputTimes(clock)
        self.registry.register(self._inputs)
        for name, spec in METRICS.items():
            full = f"{PREFIX}{name}"
            if spec.kind is Kind.COUNTER:
                # prometheus_client appends _total to a counter's name itself
                self._metrics[name] = Counter(full.removesuffix("_total"), spec.help, spec.labels,
                                              registry=self.registry)
            elif spec.kind is Kind.GAUGE:
                self._metrics[name] = Gauge(full, spec.help, spec.labels, registry=self.registry)
            elif spec.kind is Kind.NEWEST:
                self._metrics[name] = self._inputs
            else:
                self._metrics[name] = Histogram(full, spec.help, spec.labels, registry=self.registry,
                                                buckets=DURATION_BUCKETS_S)
        self.info = Info(f"{PREFIX}pipeline", "The pipeline's version and settings", registry=self.registry)

    def apply(self, updates: Sequence[Update]) -> None:
        """Apply each update to its metric (a counter's update of 0 makes its series appear at 0)."""
        for u in updates:
            metric = self._metrics[u.metric]
            if isinstance(metric, _InputTimes):
                metric.advance(u.labels, u.value)
                continue
            child = metric.labels(*u.labels) if u.labels else metric
            getattr(child, METRICS[u.metric].kind.value)(u.value)

    def describe_pipeline(self, settings: Settings, families: Sequence[str]) -> None:
        """Set the info and `pipeline_up` for a run of `families` with `settings`."""
        self.info.info({"version": importlib.metadata.version("planewatch"), "families": ",".join(families),
                        "sink_mode": settings.sink_mode})
        self.apply([Update("pipeline_up", (), 1.0)])


@dataclass
class _Served:
    metrics: PipelineMetrics
    server: WSGIServer
    thread: threading.Thread


_served: _Served | None = None
_lock = threading.Lock()


def start(settings: Settings, families: Sequence[str], metrics: PipelineMetrics | None = None) -> int | None:
    """Serve the pipeline's metrics on `observability.metrics_host:metrics_port` (a thread of this process) and make
    the hooks record into `metrics` (default: new ones); returns the port bound (None: no port is set, nothing is
    served and the hooks stay no-ops)."""
    global _served
    cfg = settings.observability
    if cfg.metrics_port is None:
        return None
    metrics = metrics or PipelineMetrics()
    metrics.describe_pipeline(settings, families)
    with _lock:
        if _served is not None:
            raise RuntimeError("the pipeline's metrics are already served")
        try:
            server, thread = start_http_server(cfg.metrics_port, cfg.metrics_host, registry=metrics.registry)
        except OSError as exc:
            raise PipelineIOError(f"observability.metrics_port: cannot listen on {cfg.metrics_host}:"
                                  f"{cfg.metrics_port}: {exc}") from exc
        _served = _Served(metrics, server, thread)
    port = int(server.server_port)
    log.info("pipeline metrics on http://%s:%d/metrics", cfg.metrics_host, port)
    return port


def stop() -> None:
    """Stop serving (the hooks become no-ops again); nothing happens when nothing is served."""
    global _served
    with _lock:
        served, _served = _served, None
    if served is not None:
        served.server.shutdown()
        served.server.server_close()
        served.thread.join()


def batch_done(family: str, query: str, report: BatchReport) -> None:
    """The ingest batch's hook (jobs.ingest.batch): record its report, if metrics are served."""
    served = _served
    if served is not None:
        served.metrics.apply(batch_updates(family, query, report, time.time()))


def maintenance_done(reports: Mapping[str, TableReport]) -> None:
    """The maintenance pass's hook (jobs.run.maintenance): record its tables' runs, if metrics are served."""
    served = _served
    if served is not None:
        served.metrics.apply(maintenance_updates(reports))
