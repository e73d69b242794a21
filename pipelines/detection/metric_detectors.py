"""Metric windows, 1-minute rollups, and the detectors of sustained metric conditions.

`metric_windows` aggregates metric_samples into SLIDING event-time windows (`DetectionConfig.metric_window_s` long,
a new one every `metric_window_slide_s`) per (cluster, broker, signal, listener, attribute): min/max/avg/first/last,
the number of samples and the samples themselves (`points`, time-ordered, exact duplicates dropped). Sliding, so a
short condition is seen whole by some window wherever it falls (tumbling windows split a 10-20 s condition that
straddles a boundary into two halves too small to count). On a stream it sets the watermark, so window state is
dropped once the watermark passes the window's end. Each detector then reads window rows; "sustained" means: for
the queue rules, a run of at least `min_samples` CONSECUTIVE samples of the window all at or above the warning level
(its lowest sample is the value; the window's other samples do not matter, so a burst shorter than the window
counts); for the other rules at least `min_samples` samples in the window (for the capacity rules, the idle ratios,
also spanning `min_span_s` of event time) whose AVG (idle/blocked ratios, delays) or MAX (lags) crosses the
threshold. Windows of one series holding the same samples are one observation: each rule keeps one of them.

Detection reads the canonical signal names of :class:`schemas.signals.Signal` as silver holds them; resolving the
many spellings of a metric is the parsers' job.

Meter semantics (FACTS.md section 3): RequestHandlerAvgIdlePercent and AcceptorBlockedPercent are Yammer meters in
NANOSECONDS: MeanRate/OneMinuteRate are fractions 0..1 and Count is cumulative nanoseconds, so over a window the
fraction is the Count's increase over the seconds it was measured, in ns (counter resets skipped, scrape gaps only
lengthen a step: :func:`_counter_increase`). The jmx_exporter rules most clusters run export only that Count
(``..._count``, ``..._count_total`` with jmx_exporter 1.x), which the parsers resolve to attribute Count. Some
exporters scale ratios to 0..100: values above 1 are divided by 100.
When one window has several attributes of a signal, the most current one wins (OneMinuteRate, Value, Count, ...);
for the ratio meters a Count with at least two samples wins over all of them (the exact fraction of the window;
a young meter's OneMinuteRate is 0 until its first 5-second tick).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelines.detection.common import candidates, level, setting, severity
from pipelines.detection.config import CONTROL_PLANE_QUEUE_CAPACITY
from pipelines.detection.request_metrics import REQUEST_METRIC_SIGNALS, request_metric_wanted, series_key
from schemas.alerts import AlertType
from schemas.signals import Signal

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from pipelines.detection.config import DetectionConfig

__all__ = [
    "METRIC_RULES",
    "MetricRule",
    "detect_acceptor_blocked",
    "detect_control_plane_queue_backlog",
    "detect_controller_event_queue_delay",
    "detect_metadata_apply_lag",
    "detect_network_processor_saturated",
    "detect_queue_saturated_without_control_plane",
    "detect_request_handler_saturated",
    "detect_request_queue_saturated",
    "metric_rollups",
    "metric_windows",
]


@dataclass(frozen=True)
class MetricRule:
    """How one alert type reads metric windows."""

    alert_type: AlertType
    signals: tuple[Signal, ...]
    stat: str  # "min" (a run of samples all crossed) | "avg" | "max"
    kind: str  # "ratio" (0..1 fraction, meters allowed) | "queue_cp" | "queue_data" | "ms"
    what: str  # subject of the summary
    # Capacity signals (idle ratios): a busy broker's burst of a few seconds is normal, and a young broker's ratio
    # covers only the seconds since it started, so the window's samples must also span detection.min_span_s.
    # Incident signals (a blocked acceptor, queue backlogs, lags) fire however short (a 10 s storm on a broker that
    # lived 17 s is an incident).
    span: bool = False


_S = Signal
METRIC_RULES: dict[str, MetricRule] = {r.alert_type: r for r in (
    MetricRule(AlertType.CONTROL_PLANE_QUEUE_BACKLOG, (_S.ControlPlaneRequestQueueSize,), "min", "queue_cp",
               _S.ControlPlaneRequestQueueSize),
    MetricRule(AlertType.REQUEST_QUEUE_SATURATED, (_S.RequestQueueSize,), "min", "queue_data",
               _S.RequestQueueSize),
    MetricRule(AlertType.ACCEPTOR_BLOCKED, (_S.AcceptorBlockedPercent, _S.ControlPlaneAcceptorBlockedPercent),
               "avg", "ratio", _S.AcceptorBlockedPercent),
    MetricRule(AlertType.NETWORK_PROCESSOR_SATURATED, (_S.NetworkProcessorAvgIdlePercent,
                                                      _S.ControlPlaneNetworkProcessorAvgIdlePercent),
               "avg", "ratio", _S.NetworkProcessorAvgIdlePercent, span=True),
    MetricRule(AlertType.REQUEST_HANDLER_SATURATED, (_S.RequestHandlerAvgIdlePercent,
                                                    _S.ControlPlaneRequestHandlerAvgIdlePercent,
                                                    _S.BrokerRequestHandlerAvgIdlePercent,
                                                    _S.ControllerRequestHandlerAvgIdlePercent),
               "avg", "ratio", _S.RequestHandlerAvgIdlePercent, span=True),
    # Kafka computes last-applied-record-lag-ms when it is read (now - the newest applied record's time): it grows
    # while the broker applies nothing (a stalled controller quorum) and falls the moment a record is applied again,
    # so a scrape every few seconds catches one or two high samples of a 15 s stall (Apache Kafka 4.4.0,
    # kraft-metadata-lag run: 2.1 s, 13.7 s, then 0.3 s): the window's highest sample is the measure.
    MetricRule(AlertType.METADATA_APPLY_LAG, (_S.LastAppliedRecordLagMs, _S.MetadataApplyLagMs), "max", "ms",
               "last-applied-record-lag-ms"),
    MetricRule(AlertType.CONTROLLER_EVENT_QUEUE_DELAY, (_S.EventQueueTimeMs,), "avg", "ms",
               _S.EventQueueTimeMs),
)}
DETECTION_SIGNALS: tuple[str, ...] = tuple(sorted({s.value for r in METRIC_RULES.values() for s in r.signals}
                                                  | set(REQUEST_METRIC_SIGNALS)))

# Idle meters (Yammer, ns): a meter that was never marked has Count 0 and every rate 0 (rates only move at the first
# 5-second tick), which reads as "never idle" for a broker that just (re)started. A live idle meter is never exactly 0
# (Kafka's handlers mark their idle time at every poll of the request queue), so an exact 0, Count or rate, is "not
# measured yet" (a Count of 0 is no baseline either: the handlers may have started marking late in the interval);
# likewise a Count that did not move over a window measures nothing.
IDLE_METERS: tuple[str, ...] = (_S.RequestHandlerAvgIdlePercent.value,
                                _S.ControlPlaneRequestHandlerAvgIdlePercent.value,
                                _S.BrokerRequestHandlerAvgIdlePercent.value,
                                _S.ControllerRequestHandlerAvgIdlePercent.value)
METER_ATTRIBUTES = ("count", "meanrate", "oneminuterate", "fiveminuterate", "fifteenminuterate")

# Preferred attribute per window (lower wins): the current rate/percentile over lifetime means.
_ATTR_RANK = {"oneminuterate": 0, "99thpercentile": 0, "0.99": 0, "value": 1, "": 1, "count": 2, "mean": 3,
              "fiveminuterate": 3, "fifteenminuterate": 3, "meanrate": 4}
NANOS_PER_SECOND = 1e9
_REQUEST_QUEUE = _S.RequestQueueSize.value
# Control-plane signals are named so by Kafka (ControlPlaneRequestQueueSize, ControlPlane...IdlePercent).
_CONTROL_PLANE_PREFIX = "ControlPlane"
# Kafka 4.x's KRaft controller request handler pool (a controller node's own plane).
_KRAFT_CONTROLLER_SIGNALS = (_S.ControllerRequestHandlerAvgIdlePercent.value,)


def metric_windows(samples: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """metric_samples -> one row per (cluster, broker, signal, listener, attribute, sliding event-time window)."""
    from pyspark.sql import functions as F

    # only finite values measure something: with the quality rules off an +Inf would reach silver, and a window's
    # "at least inf of 20 requests" is no evidence
    finite = F.col("value").isNotNull() & ~F.isnan("value") & (F.abs("value") != F.lit(float("inf")))
    src = samples.where(F.col("ts").isNotNull() & finite)
    src = src.where(F.col("signal").isin(*DETECTION_SIGNALS) & request_metric_wanted())
    src = src.withColumn("sig", series_key())
    unmeasured = F.col("sig").isin(*IDLE_METERS) & F.lower(F.coalesce(F.col("attribute"), F.lit(""))).isin(
        *METER_ATTRIBUTES) & (F.col("value") == 0.0)
    src = src.where(~unmeasured)
    if samples.isStreaming:
        src = src.withWatermark("ts", f"{int(cfg.watermark_delay_s * 1000)} milliseconds")
    w = F.window("ts", f"{int(cfg.metric_window_s * 1000)} milliseconds",
                 f"{int(cfg.metric_window_slide_s * 1000)} milliseconds")
    return (
        src.groupBy("cluster", "broker_id", "sig", "listener", "attribute", w.alias("w"))
        .agg(
            F.first("signal").alias("signal"),
            F.min("value").alias("vmin"), F.max("value").alias("vmax"), F.avg("value").alias("vavg"),
            F.min_by("value", "ts").alias("vfirst"), F.max_by("value", "ts").alias("vlast"),
            F.min("ts").alias("first_ts"), F.max("ts").alias("last_ts"),
            # one file = one broker incarnation (the reference broker and JSON reporters start a new file at start)
            F.min("source").alias("source_min"), F.max("source").alias("source_max"),
            F.array_sort(F.collect_set(F.struct("ts", "value"))).alias("points"),
        )
        # a sample shipped twice (two sources, a replayed file) is one sample
        .select("*", F.size("points").cast("long").alias("samples"), F.col("w.start").alias("window_start"),
                F.col("w.end").alias("window_end"))
        .drop("w")
    )


def metric_rollups(samples: DataFrame, watermark_delay_s: float = 60.0) -> DataFrame:
    """metric_samples -> metric_rollups_1m rows: 1-minute min/max/avg/last/samples per series."""
    from pyspark.sql import functions as F

    src = samples.where(F.col("ts").isNotNull() & F.col("value").isNotNull())
    if samples.isStreaming:
        src = src.withWatermark("ts", f"{int(watermark_delay_s * 1000)} milliseconds")
    return (
        src.groupBy("cluster", "broker_id", "signal", "listener", "request", "attribute",
                    F.window("ts", "1 minute").alias("w"))
        .agg(F.min("value").alias("min"), F.max("value").alias("max"), F.avg("value").alias("avg"),
             F.max_by("value", "ts").alias("last"), F.count("*").alias("samples"))
        .select("cluster", "broker_id", "signal", "listener", "request", "attribute",
                F.col("w.start").alias("minute"), "min", "max", "avg", "last", "samples",
                F.to_date(F.col("w.start")).alias("date"))
    )


def _ratio(stat: str) -> Column:
    """A window's fraction 0..1: meter rates and gauges as they are (0..100 scaled down); Count from its increments
    (:func:`_counter_increase`)."""
    from pyspark.sql import functions as F

    raw = F.col("vmin") if stat == "min" else F.col("vavg")
    direct = F.when(raw > 1.0 + 1e-9, raw / 100.0).otherwise(raw)
    inc = _counter_increase()
    from_count = F.when(_count_usable(inc), F.least(inc["inc"] / (inc["secs"] * NANOS_PER_SECOND), F.lit(1.0)))
    return F.when(F.lower(F.coalesce(F.col("attribute"), F.lit(""))) == "count", from_count).otherwise(direct)


def _counter_increase() -> Column:
    """A cumulative Count's increase over the window and the seconds it was measured over, from its samples in time
    order (`points`), as Prometheus' increase() reads a counter: every step between consecutive samples where the
    value did not fall adds its delta and its duration, however long (a scrape gap only lengthens a step). A step
    where the value fell is a counter reset (the broker restarted, its meter began again at 0): it adds neither,
    since what the new incarnation counted since its start is not an increase over that step."""
    from pyspark.sql import functions as F

    init = F.struct(F.lit(None).cast("double").alias("pv"), F.lit(None).cast("timestamp").alias("pt"),
                    F.lit(0.0).alias("inc"), F.lit(0.0).alias("secs"))

    def step(acc: Column, p: Column) -> Column:
        secs = (F.unix_micros(p["ts"]) - F.unix_micros(acc["pt"])).cast("double") / 1e6
        ok = F.coalesce(acc["pv"].isNotNull() & (secs > 0) & (p["value"] >= acc["pv"]), F.lit(False))
        return F.struct(p["value"].alias("pv"), p["ts"].alias("pt"),
                        F.when(ok, acc["inc"] + p["value"] - acc["pv"]).otherwise(acc["inc"]).alias("inc"),
                        F.when(ok, acc["secs"] + secs).otherwise(acc["secs"]).alias("secs"))

    return F.aggregate(F.col("points"), init, step)


def _count_usable(inc: Column) -> Column:
    """A Count that measured something over the window: it increased over a positive time, and all its samples come
    from one file (a restarted broker writes a new one; its unmarked 0 is dropped, so the values alone can look
    like one counter across the restart). A file roll inside the window costs the exact fraction for that window
    only (the rates still count); a scrape's source (its URL) outlives restarts, which the resets show."""
    from pyspark.sql import functions as F

    return (inc["secs"] > 0) & (inc["inc"] > 0) & F.col("source_min").eqNullSafe(F.col("source_max"))


def _best_attribute(df: DataFrame, keys: list[str], prefer_count: bool = False) -> DataFrame:
    """One attribute per window. ``prefer_count`` (meters in ns): a Count with a usable delta wins, because it is the
    exact fraction over the window, while a young meter's OneMinuteRate is still 0 (Yammer ticks every 5 s), which
    reads as "never idle" on a broker that just started."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    attr = F.lower(F.coalesce(F.col("attribute"), F.lit("")))
    rank = F.coalesce(
        F.element_at(F.create_map(*[F.lit(v) for kv in _ATTR_RANK.items() for v in kv]), attr),
        F.lit(5),
    )
    if prefer_count:
        usable = (attr == "count") & (F.col("samples") >= 2) & _count_usable(_counter_increase())
        rank = F.when(usable, F.lit(-1)).otherwise(rank)
    w = Window.partitionBy(*keys).orderBy(rank, F.col("attribute"))
    return df.withColumn("_rank", F.row_number().over(w)).where(F.col("_rank") == 1).drop("_rank")


def _plane(c: Column) -> Column:
    from pyspark.sql import functions as F

    return (F.when(F.col("sig").startswith(_CONTROL_PLANE_PREFIX), F.lit("control-plane"))
            .when(F.col("sig").isin(*_KRAFT_CONTROLLER_SIGNALS), F.lit("kraft-controller"))
            .otherwise(F.coalesce(c, F.lit("data-plane"))))


def _window_text() -> Column:
    from pyspark.sql import functions as F

    return F.concat(F.lit(" over "), F.date_format("window_start", "HH:mm:ss"), F.lit("-"),
                    F.date_format("window_end", "HH:mm:ss"), F.lit(" UTC ("), F.col("samples"), F.lit(" samples)"))


def _evidence() -> Column:
    from pyspark.sql import functions as F

    return F.to_json(F.struct("signal", "attribute", "listener", "window_start", "window_end", "samples", "vmin",
                              "vmax", "vavg", "vfirst", "vlast", "first_ts", "last_ts"))


def _sustained(cfg: DetectionConfig, span: bool = False) -> Column:
    """A window long enough to call its condition sustained: min_samples samples (spanning min_span_s: `span`)."""
    from pyspark.sql import functions as F

    enough = F.col("samples") >= setting(cfg, "min_samples")
    if not span:
        return enough
    span_us = F.unix_micros(F.col("last_ts")) - F.unix_micros(F.col("first_ts"))
    return enough & (span_us >= setting(cfg, "min_span_s") * F.lit(1_000_000))


def _high_run(rows: DataFrame, lowest: Column) -> DataFrame:
    """The longest run of consecutive samples (`points`) at or above `lowest` in each window: `vmin`, `samples`,
    `first_ts` and `last_ts` become the run's (its lowest value, its length, its first and last sample time)."""
    from pyspark.sql import functions as F

    rows = rows.withColumn("_lowest", lowest)
    init = F.struct(F.lit(0).alias("n"), F.lit(None).cast("double").alias("lo"),
                    F.lit(None).cast("timestamp").alias("t0"), F.lit(0).alias("bn"),
                    F.lit(None).cast("double").alias("blo"), F.lit(None).cast("timestamp").alias("bt0"),
                    F.lit(None).cast("timestamp").alias("bt1"))

    def step(acc: Column, p: Column) -> Column:
        high = p["value"] >= F.col("_lowest")
        n = F.when(high, acc["n"] + 1).otherwise(F.lit(0))
        lo = F.when(high & (acc["n"] > 0), F.least(acc["lo"], p["value"])).when(high, p["value"])
        t0 = F.when(high & (acc["n"] > 0), acc["t0"]).when(high, p["ts"])
        better = n > acc["bn"]
        return F.struct(n.alias("n"), lo.alias("lo"), t0.alias("t0"),
                        F.when(better, n).otherwise(acc["bn"]).alias("bn"),
                        F.when(better, lo).otherwise(acc["blo"]).alias("blo"),
                        F.when(better, t0).otherwise(acc["bt0"]).alias("bt0"),
                        F.when(better, p["ts"]).otherwise(acc["bt1"]).alias("bt1"))

    run = F.aggregate(F.col("points"), init, step)
    return (rows.withColumn("_run", run)
            .withColumn("vmin", F.col("_run.blo")).withColumn("samples", F.col("_run.bn").cast("long"))
            .withColumn("first_ts", F.col("_run.bt0")).withColumn("last_ts", F.col("_run.bt1"))
            .drop("_run", "_lowest"))


def _one_per_observation(rows: DataFrame) -> DataFrame:
    """Sliding windows of one series that hold the same samples (or the same run) are one observation: keep the
    earliest window of each."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    same = Window.partitionBy("cluster", "broker_id", "sig", "listener", "attribute", "first_ts", "last_ts",
                              "samples").orderBy("window_start")
    return rows.withColumn("_nth", F.row_number().over(same)).where(F.col("_nth") == 1).drop("_nth")


def _rule(windows: DataFrame, cfg: DetectionConfig, rule: MetricRule, advice: str) -> DataFrame:
    from pyspark.sql import functions as F

    t = rule.alert_type
    rows = windows.where(F.col("sig").isin(*[s.value for s in rule.signals]))
    if rule.kind == "ratio":
        rows = _best_attribute(rows.where(_sustained(cfg, rule.span)),
                               ["cluster", "broker_id", "sig", "listener", "window_start"], prefer_count=True)
        measure = _ratio(rule.stat)
        value, threshold, shown = measure, level(cfg, t, "warning"), F.concat(_fmt1(measure * 100), F.lit("%"))
    elif rule.kind in ("queue_cp", "queue_data"):
        cap = F.lit(float(CONTROL_PLANE_QUEUE_CAPACITY)) if rule.kind == "queue_cp" else \
            setting(cfg, "queued_max_requests").cast("double")
        rows = _high_run(rows, level(cfg, t, "warning") * cap).where(_sustained(cfg, rule.span))
        measure = F.col("vmin") / cap
        value, threshold = F.col("vmin"), level(cfg, t, "warning") * cap
        shown = F.concat(F.lit("at least "), _fmt1(F.col("vmin")), F.lit(" of "), _fmt1(cap), F.lit(" requests"))
    else:
        rows = _best_attribute(rows.where(_sustained(cfg, rule.span)),
                               ["cluster", "broker_id", "sig", "listener", "window_start"])
        measure = F.col({"min": "vmin", "max": "vmax"}.get(rule.stat, "vavg"))
        value, threshold, shown = measure, level(cfg, t, "warning"), F.concat(_fmt1(measure), F.lit(" ms"))
    rows = _one_per_observation(rows)
    listener = _plane(F.col("listener"))
    summary = F.concat(F.col("signal"), F.lit(" on broker "), F.col("broker_id"), F.lit(" ("), listener,
                       F.lit(") was "), shown, _window_text(), F.lit(": " + advice))
    return candidates(
        rows, t, sev=severity(cfg, t, measure), broker_id=F.col("broker_id"), listener=listener,
        ts=F.col("last_ts"), value=value, threshold=threshold, summary=summary, evidence=_evidence(),
    )


def _fmt1(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.format_number(c.cast("double"), 1)


def detect_control_plane_queue_backlog(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """CONTROL_PLANE_QUEUE_BACKLOG: ControlPlaneRequestQueueSize stayed high against its capacity of 20."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.CONTROL_PLANE_QUEUE_BACKLOG],
                 "controller requests are piling up behind the single control-plane handler")


def detect_request_queue_saturated(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """REQUEST_QUEUE_SATURATED: RequestQueueSize stayed near `queued.max.requests` (per cluster)."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.REQUEST_QUEUE_SATURATED],
                 "network threads block on the full request queue; find the slow requests or add num.io.threads")


def detect_acceptor_blocked(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """ACCEPTOR_BLOCKED: AcceptorBlockedPercent (KIP-402 draft name AcceptorIdlePercent) high."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.ACCEPTOR_BLOCKED],
                 "every processor's new-connection queue is full or max.connections is reached (connection storm)")


def detect_network_processor_saturated(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """NETWORK_PROCESSOR_SATURATED: network processors' idle ratio (data or control plane) below threshold."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.NETWORK_PROCESSOR_SATURATED],
                 "network threads are saturated; consider num.network.threads")


def detect_request_handler_saturated(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """REQUEST_HANDLER_SATURATED: request handlers' idle ratio (data or control plane) below threshold."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.REQUEST_HANDLER_SATURATED],
                 "request handler threads are saturated; consider num.io.threads or find the slow requests")


def detect_metadata_apply_lag(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """METADATA_APPLY_LAG (KRaft): broker-metadata-metrics last-applied-record-lag-ms stayed high."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.METADATA_APPLY_LAG],
                 "the broker applies metadata records late, so it serves stale leadership")


def detect_controller_event_queue_delay(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """CONTROLLER_EVENT_QUEUE_DELAY: ControllerEventManager EventQueueTimeMs high (events wait to be processed)."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.CONTROLLER_EVENT_QUEUE_DELAY],
                 "controller events wait in its queue; leadership changes are delayed")


def detect_queue_saturated_without_control_plane(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """CONTROL_REQUEST_QUEUED_BEHIND_DATA (metric form): RequestQueueSize saturated on a broker that reports no
    ControlPlaneRequestQueueSize in the same window, so controller requests share that full queue."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    t = AlertType.CONTROL_REQUEST_QUEUED_BEHIND_DATA
    cap = setting(cfg, "queued_max_requests").cast("double")
    sat = level(cfg, AlertType.REQUEST_QUEUE_SATURATED, "warning")
    queue = _high_run(windows.where(F.col("sig") == _REQUEST_QUEUE), sat * cap)
    plane = windows.where(F.col("sig") != _REQUEST_QUEUE).withColumn("samples", F.lit(None).cast("long"))
    per = queue.unionByName(plane).groupBy("cluster", "broker_id", "window_start", "window_end").agg(
        F.max(F.when(F.col("sig") == _REQUEST_QUEUE, F.col("vmin"))).alias("vmin"),
        F.max(F.when(F.col("sig") == _REQUEST_QUEUE, F.col("samples"))).alias("samples"),
        F.max(F.when(F.col("sig") == _REQUEST_QUEUE, F.col("last_ts"))).alias("last_ts"),
        F.count(F.when(F.col("sig").startswith(_CONTROL_PLANE_PREFIX), 1)).alias("cp_series"),
    ).where(F.col("vmin").isNotNull() & (F.col("cp_series") == 0) & _sustained(cfg))
    first = Window.partitionBy("cluster", "broker_id", "vmin", "samples", "last_ts").orderBy("window_start")
    per = per.withColumn("_nth", F.row_number().over(first)).where(F.col("_nth") == 1).drop("_nth")
    summary = F.concat(F.lit("RequestQueueSize on broker "), F.col("broker_id"), F.lit(" stayed at >= "),
                       _fmt1(F.col("vmin")), F.lit(" of "), _fmt1(cap), _window_text(),
                       F.lit(" and the broker has no control plane: controller requests wait behind data requests; "
                             "configure control.plane.listener.name (KIP-291)"))
    evidence = F.to_json(F.struct("window_start", "window_end", "vmin", "samples", "cp_series"))
    return candidates(
        per, t, sev=F.when(F.col("vmin") / cap >= sat, F.lit("warning")), broker_id=F.col("broker_id"),
        listener=F.lit("data-plane"), ts=F.col("last_ts"), value=F.col("vmin"), threshold=sat * cap,
        summary=summary, evidence=evidence,
    )
