"""Metric windows (polars), 1-minute rollups (polars), and the detectors of sustained metric conditions
(polars, over the windows a micro-batch's samples fall in).

`metric_windows` aggregates metric_samples into SLIDING event-time windows (`DetectionConfig.metric_window_s` long,
or longer for a series scraped too sparsely to put min_samples samples in that: :func:`series_window_lengths`; a
new one every `metric_window_slide_s`) per (cluster, broker, signal, listener, attribute): min/max/avg/first/last,
the number of samples and the samples themselves (`points`, time-ordered, exact duplicates dropped). Sliding, so a
short condition is seen whole by some window wherever it falls (tumbling windows split a 10-20 s condition that
straddles a boundary into two halves too small to count). Windows are aligned on the epoch, as Spark's `window()`
aligns them. The ingest job judges the windows its batch's samples fall in, over every sample of them (the earlier
ones read back from silver: jobs.detect.rules). Each detector then reads window rows; "sustained" means: for
the queue rules, a run of at least `min_samples` CONSECUTIVE samples of the window all at or above the warning level
(its lowest sample is the value; the window's other samples do not matter, so a burst shorter than the window
counts); for the other rules at least `min_samples` samples in the window (for the capacity rules, the idle ratios,
also spanning `min_span_s` of event time) whose AVG (idle/blocked ratios, delays) or MAX (lags) crosses the
threshold. Windows of one series holding the same samples are one observation: each rule keeps one of them.
The detector registry (:mod:`pipelines.detection.registry`) runs every metric rule (these and
:mod:`pipelines.detection.request_metrics`') over them.

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

# Over 500 lines: the windows and every metric rule read the same window rows.
from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection.candidates import (
    CONTROL_PLANE_PREFIX,
    CONTROL_PLANE_QUEUE_CAPACITY,
    NANOS_PER_SECOND,
    Evidence,
    attribute_key,
    candidate_rows,
    evidence,
    fmt1,
    level,
    setting,
    severity,
    steps,
    window_text,
    without_control_plane,
)
from pipelines.detection.metric_baselines import (
    REQUEST_RULE_SPECS,
    BaselineSpec,
    MeasureKind,
    peers_baseline,
    with_peers,
)
from pipelines.detection.request_metrics import REQUEST_METRIC_SIGNALS, request_metric_wanted, series_key
from schemas.alerts import AlertType
from schemas.signals import EVENT_QUEUE_ATTRIBUTE, START_SIGNALS, Signal

if TYPE_CHECKING:
    import pyarrow as pa

    from pipelines.detection.config import DetectionConfig

__all__ = [
    "BASELINE_SPECS",
    "METRIC_RULES",
    "ROLLUP_SERIES",
    "MetricRule",
    "detect_acceptor_blocked",
    "detect_control_plane_queue_backlog",
    "detect_controller_event_queue_delay",
    "detect_leader_elected_from_elr",
    "detect_metadata_apply_lag",
    "detect_network_processor_saturated",
    "detect_queue_saturated_without_control_plane",
    "detect_request_handler_saturated",
    "detect_request_queue_saturated",
    "detect_unclean_leader_election",
    "detection_samples",
    "metric_windows",
    "minute_rollups",
]


@dataclass(frozen=True)
class MetricRule:
    """How one alert type reads metric windows."""

    alert_type: AlertType
    signals: tuple[Signal, ...]
    stat: str  # "min" (a run of samples all crossed) | "avg" | "max"
    kind: str  # "ratio" (0..1 fraction, meters allowed) | "queue_cp" | "queue_data" | "ms" | "events" (a Count's rise)
    what: str  # subject of the summary
    # Capacity signals (idle ratios): a busy broker's burst of a few seconds is normal, and a young broker's ratio
    # covers only the seconds since it started, so the window's samples must also span detection.min_span_s.
    # Incident signals (a blocked acceptor, queue backlogs, lags) fire however short (a 10 s storm on a broker that
    # lived 17 s is an incident).
    span: bool = False
    # The one attribute of a histogram the rule reads (None: each window's best, _ATTR_RANK).
    attribute: str | None = None


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
               _S.EventQueueTimeMs, attribute=EVENT_QUEUE_ATTRIBUTE),
    # The active controller's election meters: any rise of their Count over a window is an election of that kind
    # (the window's samples bracket it: at a 60 s scrape, the minute it happened in). Exporters give the Count
    # (`..._total`); a rate attribute alone says no more than "some time in the last minute".
    MetricRule(AlertType.UNCLEAN_LEADER_ELECTION, (_S.UncleanLeaderElectionsPerSec,), "max", "events",
               "unclean leader election"),
    MetricRule(AlertType.LEADER_ELECTED_FROM_ELR, (_S.ElectionFromEligibleLeaderReplicasPerSec,), "max", "events",
               "leader election from eligible leader replicas (KIP-966)"),
)}
# Kafka's windowed rates divide by at least (metrics.num.samples - 1) x metrics.sample.window.ms (30 s with Kafka's
# defaults) however young the metric is (org.apache.kafka.common.metrics.stats.Rate.windowSize), so for its first
# 30 s a ratio reads idle x age / (age + 30 s): NetworkProcessorAvgIdlePercent (the processors' io-wait-ratio)
# climbs from near 0 after every broker start (Apache Kafka 4.4.0 under light load: 0.13, 0.23, ... 0.46 over 25 s,
# then 0.96 at once; two NETWORK_PROCESSOR_SATURATED alerts on a healthy cluster). The processors are created
# during startup, seconds after the JVM (11-16 s here, 2 cores under load), so a sample of these signals within
# WINDOWED_RATE_WARMUP_S of its broker's process start (jmx_exporter's process_start_time_seconds, scraped with it)
# measures nothing yet. 60 s: the 30 s window and 30 s of startup. A ZooKeeper-mode broker recovering its logs
# creates its processors only after the recovery: its first minutes of ratios may still read low.
WINDOWED_RATE_WARMUP_S = 60.0
WINDOWED_RATE_SIGNALS: tuple[str, ...] = (_S.NetworkProcessorAvgIdlePercent.value,
                                          _S.ControlPlaneNetworkProcessorAvgIdlePercent.value)
# how far back a process-start sample vouches for a later sample of its broker: one scrape at the longest interval
# detection reads (DetectionConfig.max_scrape_interval_s), and its jitter
MAX_START_AGE_S = 75.0
DETECTION_SIGNALS: tuple[str, ...] = tuple(sorted({s.value for r in METRIC_RULES.values() for s in r.signals}
                                                  | set(REQUEST_METRIC_SIGNALS) | set(START_SIGNALS)))

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
_REQUEST_QUEUE = _S.RequestQueueSize.value
# Kafka 4.x's KRaft controller request handler pool (a controller node's own plane).
_KRAFT_CONTROLLER_SIGNALS = (_S.ControllerRequestHandlerAvgIdlePercent.value,)


WINDOW_KEYS = ("cluster", "broker_id", "sig", "listener", "attribute")
# A series' window leaves room for one of its scrapes to come this share of an interval late (scrapers start each
# scrape on a schedule, but the exporter's answer, and so the sample's time, can lag it).
SCRAPE_JITTER = 0.25


# Metadata lag gauges of a node that has applied no record yet: Kafka computes the lag as the wall clock minus the
# last applied record's append time, which starts at 0, so a KRaft controller's first scrape after its start reads
# the epoch itself (Apache Kafka 4.4.0, a controller restarted in a roll: LastAppliedRecordLagMs 1,796,543,775,400 ms,
# then 390 ms a scrape later: a critical METADATA_APPLY_LAG on a healthy roll). A lag within UNSET_LAG_SLACK_MS of
# the sample's own epoch milliseconds is that "nothing applied yet", not a lag: left out like an idle meter's 0.
METADATA_LAG_SIGNALS: tuple[str, ...] = (_S.LastAppliedRecordLagMs.value, _S.MetadataApplyLagMs.value)
UNSET_LAG_SLACK_MS = 86_400_000.0  # a day: no real lag comes near the epoch's 56 years, clock skew included


def detection_samples(samples: pl.DataFrame) -> pl.DataFrame:
    """The metric_samples rows the rules read, with their series key `sig`: finite values of DETECTION_SIGNALS (only
    the control requests' RequestMetrics), without the idle meters' exact zeros (not measured yet, see IDLE_METERS)
    and the metadata lags of a node that applied no record yet (METADATA_LAG_SIGNALS).
    With the quality rules off an +Inf could reach silver, and a window's "at least inf of 20 requests" is no
    evidence."""
    v = pl.col("value")
    src = samples.filter(pl.col("ts").is_not_null() & v.is_not_null() & v.is_finite()
                         & pl.col("signal").is_in(DETECTION_SIGNALS) & request_metric_wanted())
    src = src.with_columns(sig=series_key())
    epoch_ms = pl.col("ts").dt.epoch("ms").cast(pl.Float64)
    unmeasured = ((pl.col("sig").is_in(IDLE_METERS)
                   & pl.col("attribute").fill_null("").str.to_lowercase().is_in(METER_ATTRIBUTES) & (v == 0.0))
                  | (pl.col("signal").is_in(METADATA_LAG_SIGNALS) & (v >= epoch_ms - UNSET_LAG_SLACK_MS)))
    return _without_warmup(src.filter(~unmeasured))


def _without_warmup(src: pl.DataFrame) -> pl.DataFrame:
    """`src` without the start samples (START_SIGNALS) and without the WINDOWED_RATE_SIGNALS samples taken within
    WINDOWED_RATE_WARMUP_S of their broker's start (the newest start sampled by then, within one scrape interval;
    a broker whose exporter gives no start keeps every sample)."""
    is_start = pl.col("signal").is_in(list(START_SIGNALS))
    to_s = pl.col("signal").replace_strict(START_SIGNALS, default=None, return_dtype=pl.Float64)
    starts = (src.filter(is_start).select("cluster", "broker_id", "ts", _started=pl.col("value") * to_s)
              .unique(subset=["cluster", "broker_id", "ts"], keep="last", maintain_order=True).sort("ts"))
    rest = src.filter(~is_start)
    rated = pl.col("signal").is_in(WINDOWED_RATE_SIGNALS)
    if starts.is_empty() or rest.filter(rated).is_empty():
        return rest
    tagged = (rest.with_row_index("_row").sort("ts")
              .join_asof(starts, on="ts", by=["cluster", "broker_id"], strategy="backward",
                         tolerance=dt.timedelta(seconds=MAX_START_AGE_S))
              .sort("_row"))
    age_s = pl.col("ts").dt.epoch("us").cast(pl.Float64) / 1e6 - pl.col("_started")
    young = rated & (age_s < WINDOWED_RATE_WARMUP_S).fill_null(False)
    return tagged.filter(~young).drop("_row", "_started")


def window_length_us(cfg: DetectionConfig, interval_us: pl.Expr | None = None) -> pl.Expr:
    """A series' window length (µs, a multiple of the slide): metric_window_s, or long enough for min_samples of
    its samples when it is sampled every `interval_us` (at most max_scrape_interval_s): (min_samples - 1)
    intervals, SCRAPE_JITTER of one more for a late scrape, and one slide (windows start on the slide's grid), or
    one interval when that is shorter (a series denser than the slide keeps metric_window_s)."""
    slide = round(cfg.metric_window_slide_s * 1e6)
    base = pl.lit(round(cfg.metric_window_s * 1e6), dtype=pl.Int64)
    if interval_us is None:
        return base
    ivl = pl.when(interval_us.is_not_null()).then(  # min_horizontal would skip a null
        pl.min_horizontal(interval_us, setting(cfg, "max_scrape_interval_s") * 1e6))
    need = (setting(cfg, "min_samples") - 1 + SCRAPE_JITTER) * ivl + pl.min_horizontal(ivl, pl.lit(float(slide)))
    grid = (need / slide).ceil().cast(pl.Int64) * slide
    return pl.max_horizontal(base, grid.fill_null(base))


def max_window_s(cfg: DetectionConfig) -> float:
    """The longest window any series of any cluster gets (what a batch's history must reach back)."""
    longest = 0.0
    for c in (cfg, *(cfg.for_cluster(name) for name in sorted(cfg.overrides))):
        need = ((c.min_samples - 1 + SCRAPE_JITTER) * c.max_scrape_interval_s
                + min(c.max_scrape_interval_s, c.metric_window_slide_s))
        longest = max(longest, c.metric_window_s, math.ceil(need / c.metric_window_slide_s) * c.metric_window_slide_s)
    return longest


def series_window_lengths(src: pl.DataFrame, cfg: DetectionConfig) -> pl.DataFrame:
    """Per series (WINDOW_KEYS) its sampling interval (`_ivl`, µs: the median step between its distinct sample
    times) and window length (`_len`, :func:`window_length_us`); a series of one sample gets metric_window_s."""
    us = pl.col("ts").dt.epoch("us")
    step = pl.col("_us").diff().over(WINDOW_KEYS)
    ivl = (src.select(*WINDOW_KEYS, _us=us).unique().sort(*WINDOW_KEYS, "_us", nulls_last=True)
           .with_columns(_step=step).filter(pl.col("_step") > 0)
           .group_by(WINDOW_KEYS).agg(_ivl=pl.col("_step").median()))
    keys = src.select(WINDOW_KEYS).unique()
    return (keys.join(ivl, on=WINDOW_KEYS, how="left", nulls_equal=True)
            .with_columns(_len=window_length_us(cfg, pl.col("_ivl"))))


def metric_windows(samples: pa.Table, cfg: DetectionConfig, touched: pa.Table | None = None) -> pa.Table:
    """metric_samples rows -> one row per (cluster, broker, series `sig`, listener, attribute, sliding event-time
    window): signal, vmin/vmax/vavg, vfirst/vlast (by time), first_ts/last_ts, source_min/source_max (one file = one
    broker incarnation: the reference broker and the JSON reporters start a new file at start; a scrape answer's
    file counts as its directory, the scraped target, as a URL does), `points` (the window's distinct (ts, value)
    pairs in time order: a sample shipped twice, by two sources or a replayed file, is one sample), `samples` (their
    number), window_start/window_end, `vprev` (the series' sample before the window's first, null when `samples`
    holds none) and `vstep` (the largest one-step change ending in the window, from that sample on: a rise that
    straddles the window's start counts).

    Window length per series (:func:`series_window_lengths`): metric_window_s, or longer for a series sampled too
    sparsely to put min_samples samples in it (a 30 or 60 s scrape), so every rule reads the same number of samples
    at every scrape interval; the windows slide by metric_window_slide_s.

    touched: when given, only the windows of a broker that hold at least one of these samples (a micro-batch's new
    samples), for every series of that broker; each is computed over all of `samples`."""
    slide = round(cfg.metric_window_slide_s * 1e6)
    n = -(-round(max_window_s(cfg) * 1e6) // slide)
    lengths = series_window_lengths(detection_samples(_polars(samples)), cfg).select(*WINDOW_KEYS, "_len")

    def windowed(frame: pl.DataFrame) -> pl.DataFrame:
        src = detection_samples(frame).join(lengths, on=WINDOW_KEYS, how="left", nulls_equal=True)
        src = src.sort(*WINDOW_KEYS, "ts", "value", nulls_last=True).with_columns(
            pl.col("_len").fill_null(window_length_us(cfg)), _prev=pl.col("value").shift(1).over(WINDOW_KEYS))
        us = pl.col("ts").dt.epoch("us")
        last = us - us % slide
        return (src.with_columns(_ws=pl.concat_list([last - k * slide for k in range(n)]))
                .explode("_ws").filter(pl.col("_ws") + pl.col("_len") > us))

    rows = windowed(_polars(samples))
    if touched is not None:
        # every series of a broker in a touched window, not only the series touched: rules compare series (a
        # control-plane series shows KIP-291 is configured)
        keys = windowed(_polars(touched)).select("cluster", "broker_id", "_ws").unique()
        rows = rows.join(keys, on=["cluster", "broker_id", "_ws"], how="semi", nulls_equal=True)
    v = pl.col("value")
    start = pl.from_epoch(pl.col("_ws"), time_unit="us").dt.replace_time_zone("UTC")
    return (
        rows.with_columns(source=_incarnation())
        .sort(*WINDOW_KEYS, "_ws", "ts", "value", nulls_last=True)
        .group_by(*WINDOW_KEYS, "_ws", maintain_order=True)
        .agg(signal=pl.col("signal").first(), vmin=v.min(), vmax=v.max(), vavg=v.mean(), vfirst=v.first(),
             vlast=v.last(), first_ts=pl.col("ts").min(), last_ts=pl.col("ts").max(),
             source_min=pl.col("source").min(), source_max=pl.col("source").max(),
             points=pl.struct("ts", "value").unique(maintain_order=True), _len=pl.col("_len").first(),
             vprev=pl.col("_prev").first(), vstep=(v - pl.col("_prev")).max())
        .with_columns(samples=pl.col("points").list.len().cast(pl.Int64), window_start=start,
                      window_end=start + pl.duration(microseconds=pl.col("_len")))
        .drop("_ws", "_len")
        .to_arrow()
    )


def _incarnation() -> pl.Expr:
    """What a sample's `source` says about the broker incarnation it comes from: a file per incarnation (the JSON
    reporters' files) as it is; a scrape answer's file (`*.prom`, `*.txt`: one file per scrape) as its directory,
    the target scraped, like a live scrape's URL (restarts then show as counter resets)."""
    src = pl.col("source")
    return pl.when(src.str.contains(r"(?i)\.(prom|txt)$")).then(src.str.replace(r"/[^/]*$", "")).otherwise(src)


def _polars(tbl: pa.Table) -> pl.DataFrame:
    """An Arrow table of metric_samples rows as polars, `ts` in UTC (Spark's Arrow carries the session's zone,
    delta-rs' UTC)."""
    frame = pl.from_arrow(tbl)
    assert isinstance(frame, pl.DataFrame)
    ts = frame.schema.get("ts")
    if isinstance(ts, pl.Datetime):
        utc = pl.col("ts").dt.replace_time_zone("UTC") if ts.time_zone is None else pl.col("ts").dt.convert_time_zone(
            "UTC")
        frame = frame.with_columns(utc.dt.cast_time_unit("us"))
    return frame


# The series a 1-minute rollup row is kept per (and its MERGE key, with the minute).
ROLLUP_SERIES = ("cluster", "broker_id", "signal", "listener", "request", "attribute")


def minute_rollups(samples: pl.DataFrame, touched: pl.DataFrame) -> pl.DataFrame:
    """metric_rollups_1m rows (min/max/avg/last/samples per series and minute) of the (cluster, minute) pairs of
    `touched`'s samples, from `samples` (every sample of those minutes: a minute's row is recomputed whole, as a
    streaming aggregation in update mode would emit it)."""
    minute = pl.col("ts").dt.truncate("1m")
    valid = pl.col("ts").is_not_null() & pl.col("value").is_not_null()
    keys = touched.filter(valid).select("cluster", minute.alias("minute")).unique()
    if keys.is_empty():
        return pl.DataFrame()
    rows = samples.filter(valid).with_columns(minute=minute).join(keys, on=["cluster", "minute"], how="semi")
    return (rows.group_by([*ROLLUP_SERIES, "minute"])
            .agg(min=pl.col("value").min(), max=pl.col("value").max(), avg=pl.col("value").mean(),
                 last=pl.col("value").sort_by("ts").last(), samples=pl.len().cast(pl.Int64))
            .with_columns(date=pl.col("minute").dt.date()))


# ------------------------------------------------------------------------------------------------ the rules (polars)
# Every rule below reads the windows `metric_windows` produced, collected to a polars frame with a window id `_wid`.


def _with_counter_increase(rows: pl.DataFrame) -> pl.DataFrame:
    """`inc`, `secs`: a cumulative Count's increase over the window and the seconds it was measured over, as
    Prometheus' increase() reads a counter: every step between consecutive samples where the value did not fall
    adds its delta and its duration, however long (a scrape gap only lengthens a step). A step where the value fell
    is a counter reset (the broker restarted, its meter began again at 0): it adds neither, since what the new
    incarnation counted since its start is not an increase over that step."""
    s = steps(rows)
    secs = (pl.col("ts") - pl.col("prev_ts")).dt.total_microseconds().cast(pl.Float64) / 1e6
    ok = (pl.col("prev_value").is_not_null() & (secs > 0) & (pl.col("value") >= pl.col("prev_value"))).fill_null(False)
    inc = s.group_by("_wid").agg(
        inc=pl.when(ok).then(pl.col("value") - pl.col("prev_value")).otherwise(0.0).sum(),
        secs=pl.when(ok).then(secs).otherwise(0.0).sum(),
    )
    return rows.join(inc, on="_wid", how="left").with_columns(pl.col("inc").fill_null(0.0),
                                                             pl.col("secs").fill_null(0.0))


def _count_usable() -> pl.Expr:
    """A Count that measured something over the window: it increased over a positive time, and all its samples come
    from one file (a restarted broker writes a new one; its unmarked 0 is dropped, so the values alone can look
    like one counter across the restart). A file roll inside the window costs the exact fraction for that window
    only (the rates still count); a scrape's source (its URL) outlives restarts, which the resets show."""
    return (pl.col("secs") > 0) & (pl.col("inc") > 0) & pl.col("source_min").eq_missing(pl.col("source_max"))


def _best_attribute(rows: pl.DataFrame, prefer_count: bool = False) -> pl.DataFrame:
    """One attribute per window of a series. ``prefer_count`` (meters in ns): a Count with a usable delta wins,
    because it is the exact fraction over the window, while a young meter's OneMinuteRate is still 0 (Yammer ticks
    every 5 s), which reads as "never idle" on a broker that just started."""
    rank = attribute_key().replace_strict(_ATTR_RANK, default=5, return_dtype=pl.Int32)
    if prefer_count:
        usable = (attribute_key() == "count") & (pl.col("samples") >= 2) & _count_usable()
        rank = pl.when(usable).then(pl.lit(-1, dtype=pl.Int32)).otherwise(rank)
    keys = ["cluster", "broker_id", "sig", "listener", "window_start"]
    return (rows.with_columns(_rank=rank).sort([*keys, "_rank", "attribute"], nulls_last=False)
            .unique(subset=keys, keep="first", maintain_order=True).drop("_rank"))


def _ratio(stat: str) -> pl.Expr:
    """A window's fraction 0..1: meter rates and gauges as they are (0..100 scaled down); a Count from its
    increments (:func:`_with_counter_increase`)."""
    raw = pl.col("vmin") if stat == "min" else pl.col("vavg")
    direct = pl.when(raw > 1.0 + 1e-9).then(raw / 100.0).otherwise(raw)
    from_count = pl.when(_count_usable()).then(
        pl.min_horizontal(pl.col("inc") / (pl.col("secs") * NANOS_PER_SECOND), pl.lit(1.0)))
    return pl.when(attribute_key() == "count").then(from_count).otherwise(direct)


def _sustained(cfg: DetectionConfig, span: bool = False) -> pl.Expr:
    """A window long enough to call its condition sustained: min_samples samples (spanning min_span_s: `span`)."""
    enough = pl.col("samples") >= setting(cfg, "min_samples")
    if not span:
        return enough
    span_us = (pl.col("last_ts") - pl.col("first_ts")).dt.total_microseconds()
    return enough & (span_us >= setting(cfg, "min_span_s") * 1_000_000)


def _high_run(rows: pl.DataFrame, lowest: pl.Expr) -> pl.DataFrame:
    """The longest run of consecutive samples (`points`) at or above `lowest` in each window (the earliest of equal
    runs): `vmin`, `samples`, `first_ts` and `last_ts` become the run's (its lowest value, its length, its first and
    last sample time); a window without such a sample gets nulls."""
    rows = rows.with_columns(_lowest=lowest)
    s = steps(rows, "_lowest").with_columns(_high=pl.col("value") >= pl.col("_lowest"))
    s = s.with_columns(_run=(~pl.col("_high")).cast(pl.Int64).cum_sum().over("_wid"),
                       _pos=pl.int_range(pl.len()).over("_wid"))
    runs = (s.filter(pl.col("_high")).group_by("_wid", "_run")
            .agg(n=pl.len(), lo=pl.col("value").min(), t0=pl.col("ts").min(), t1=pl.col("ts").max(),
                 at=pl.col("_pos").min())
            .sort(["_wid", "n", "at"], descending=[False, True, False])
            .unique(subset=["_wid"], keep="first"))
    best = runs.select("_wid", vmin="lo", samples=pl.col("n").cast(pl.Int64), first_ts="t0", last_ts="t1")
    return rows.drop("vmin", "samples", "first_ts", "last_ts", "_lowest").join(best, on="_wid", how="left")


def _one_per_observation(rows: pl.DataFrame) -> pl.DataFrame:
    """Sliding windows of one series that hold the same samples (or the same run) are one observation: keep the
    earliest window of each."""
    same = ["cluster", "broker_id", "sig", "listener", "attribute", "first_ts", "last_ts", "samples"]
    return rows.sort("window_start").unique(subset=same, keep="first", maintain_order=True)


def _plane() -> pl.Expr:
    return (pl.when(pl.col("sig").str.starts_with(CONTROL_PLANE_PREFIX)).then(pl.lit("control-plane"))
            .when(pl.col("sig").is_in(_KRAFT_CONTROLLER_SIGNALS)).then(pl.lit("kraft-controller"))
            .otherwise(pl.col("listener").fill_null("data-plane")))


_EVIDENCE = ("signal", "attribute", "listener_raw", "window_start", "window_end", "samples", "vmin", "vmax", "vavg",
             "vfirst", "vlast", "first_ts", "last_ts")


def _rule(windows: pl.DataFrame, cfg: DetectionConfig, rule: MetricRule, advice: str) -> list[dict[str, Any]]:
    t = rule.alert_type
    series = windows.filter(pl.col("sig").is_in([s.value for s in rule.signals]))
    if rule.attribute is not None:  # its peers are compared on the same attribute
        series = series.filter(attribute_key() == rule.attribute.lower())
    rows = series
    if rows.is_empty():
        return []
    warn = level(cfg, t, "warning")
    if rule.kind == "ratio":
        rows = _best_attribute(_with_counter_increase(rows).filter(_sustained(cfg, rule.span)), prefer_count=True)
        rows = rows.with_columns(_measure=_ratio(rule.stat)).with_columns(value=pl.col("_measure"), threshold=warn)
    elif rule.kind == "events":
        rows = _with_counter_increase(rows.filter(attribute_key() == "count")).filter(_sustained(cfg, rule.span))
        rows = rows.with_columns(_measure=pl.col("inc"), value=pl.col("inc"), threshold=warn)
    elif rule.kind in ("queue_cp", "queue_data"):
        cap = (pl.lit(float(CONTROL_PLANE_QUEUE_CAPACITY)) if rule.kind == "queue_cp"
               else setting(cfg, "queued_max_requests"))
        rows = _high_run(rows, warn * cap).filter(_sustained(cfg, rule.span))
        rows = rows.with_columns(_cap=cap, _measure=pl.col("vmin") / cap, value=pl.col("vmin"), threshold=warn * cap)
    else:
        rows = _best_attribute(rows.filter(_sustained(cfg, rule.span)))
        measure = pl.col({"min": "vmin", "max": "vmax"}.get(rule.stat, "vavg"))
        rows = rows.with_columns(_measure=measure, value=measure, threshold=warn)
    kind = MEASURE_KINDS[rule.kind]
    if rule.kind != "events":  # an election is the active controller's alone: it has no peers
        rows = with_peers(rows, _levels(series, cfg, rule), lower_is_worse=cfg.threshold(t).below)
    # an election is the controller's, not a listener's
    plane = pl.lit(None, dtype=pl.String) if rule.kind == "events" else _plane()
    rows = _one_per_observation(rows).with_columns(
        severity=severity(cfg, t, pl.col("_measure")), listener_raw=pl.col("listener"), listener=plane,
        ts=pl.col("last_ts"))

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        doc = {**r, "listener": r["listener_raw"]}
        fields = [f if f != "listener_raw" else "listener" for f in _EVIDENCE]
        if rule.kind == "events":
            n = round(r["_measure"])
            summary = (f"{n} {rule.what}{'s' if n != 1 else ''} by the active controller (node {r['broker_id']})"
                       f"{window_text(r)}: {advice}")
            return summary, evidence(doc, fields)
        peers = peers_baseline(r, kind) or None
        if rule.kind == "ratio":
            shown = f"{fmt1(r['_measure'] * 100)}%"
        elif rule.kind in ("queue_cp", "queue_data"):
            shown = f"at least {fmt1(r['vmin'])} of {fmt1(r['_cap'])} requests"
        else:
            shown = f"{fmt1(r['_measure'])} ms"
        summary = (f"{r['signal']} on broker {r['broker_id']} ({r['listener']}) was {shown}{window_text(r)}: "
                   f"{advice}")
        return summary, evidence(doc, fields, baseline=peers)

    return candidate_rows(rows, t, describe)


# the metric rules' kinds as their baselines read them (pipelines.detection.metric_baselines)
MEASURE_KINDS = {"ratio": MeasureKind.RATIO, "queue_cp": MeasureKind.QUEUE, "queue_data": MeasureKind.QUEUE,
                 "ms": MeasureKind.MS, "events": MeasureKind.EVENTS}
BASELINE_SPECS: dict[str, BaselineSpec] = {
    **{t: BaselineSpec(MEASURE_KINDS[r.kind], r.stat) for t, r in METRIC_RULES.items()},
    **REQUEST_RULE_SPECS,
}


def _levels(rows: pl.DataFrame, cfg: DetectionConfig, rule: MetricRule) -> pl.DataFrame:
    """Every window of a rule's series with `_level`, the rule's measure whatever its value (what peers are
    compared on): the fraction of a ratio, a queue's mean length, the statistic of a lag or a delay."""
    if rows.is_empty():
        return rows.with_columns(_level=pl.lit(None, dtype=pl.Float64))
    if rule.kind == "ratio":
        return _best_attribute(_with_counter_increase(rows), prefer_count=True).with_columns(_level=_ratio(rule.stat))
    if rule.kind in ("queue_cp", "queue_data"):
        return _best_attribute(rows).with_columns(_level=pl.col("vavg"))
    return _best_attribute(rows).with_columns(_level=pl.col({"min": "vmin", "max": "vmax"}.get(rule.stat, "vavg")))


def detect_control_plane_queue_backlog(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """CONTROL_PLANE_QUEUE_BACKLOG: ControlPlaneRequestQueueSize stayed high against its capacity of 20."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.CONTROL_PLANE_QUEUE_BACKLOG],
                 "controller requests are piling up behind the single control-plane handler")


def detect_request_queue_saturated(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """REQUEST_QUEUE_SATURATED: RequestQueueSize stayed near `queued.max.requests` (per cluster)."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.REQUEST_QUEUE_SATURATED],
                 "network threads block on the full request queue; find the slow requests or add num.io.threads")


def detect_acceptor_blocked(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """ACCEPTOR_BLOCKED: AcceptorBlockedPercent (KIP-402 draft name AcceptorIdlePercent) high."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.ACCEPTOR_BLOCKED],
                 "every processor's new-connection queue is full or max.connections is reached (connection storm)")


def detect_network_processor_saturated(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """NETWORK_PROCESSOR_SATURATED: network processors' idle ratio (data or control plane) below threshold."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.NETWORK_PROCESSOR_SATURATED],
                 "network threads are saturated; consider num.network.threads")


def detect_request_handler_saturated(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """REQUEST_HANDLER_SATURATED: request handlers' idle ratio (data or control plane) below threshold."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.REQUEST_HANDLER_SATURATED],
                 "request handler threads are saturated; consider num.io.threads or find the slow requests")


def detect_metadata_apply_lag(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """METADATA_APPLY_LAG (KRaft): broker-metadata-metrics last-applied-record-lag-ms stayed high."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.METADATA_APPLY_LAG],
                 "the broker applies metadata records late, so it serves stale leadership")


def detect_controller_event_queue_delay(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """CONTROLLER_EVENT_QUEUE_DELAY: ControllerEventManager EventQueueTimeMs high (events wait to be processed)."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.CONTROLLER_EVENT_QUEUE_DELAY],
                 "controller events wait in its queue; leadership changes are delayed")


def detect_unclean_leader_election(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """UNCLEAN_LEADER_ELECTION: the active controller's UncleanLeaderElectionsPerSec Count rose."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.UNCLEAN_LEADER_ELECTION],
                 "a replica outside the ISR became leader, so messages the old ISR had acknowledged may be lost; "
                 "find the topics (the controller's log) and check unclean.leader.election.enable")


def detect_leader_elected_from_elr(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """LEADER_ELECTED_FROM_ELR: the active controller's ElectionFromEligibleLeaderReplicasPerSec Count rose."""
    return _rule(windows, cfg, METRIC_RULES[AlertType.LEADER_ELECTED_FROM_ELR],
                 "a partition's ISR had fallen below min.insync.replicas and its leader came from the eligible "
                 "leader replicas (no data lost); find why its replicas fell out of the ISR")


def detect_queue_saturated_without_control_plane(windows: pl.DataFrame, cfg: DetectionConfig
                                                 ) -> list[dict[str, Any]]:
    """CONTROL_REQUEST_QUEUE_DELAY: RequestQueueSize saturated on a broker that reports no
    ControlPlaneRequestQueueSize in the same window, so controller requests share that full queue."""
    t = AlertType.CONTROL_REQUEST_QUEUE_DELAY
    queue_rows = windows.filter(pl.col("sig") == _REQUEST_QUEUE)
    if queue_rows.is_empty():
        return []
    cap = setting(cfg, "queued_max_requests")
    sat = level(cfg, AlertType.REQUEST_QUEUE_SATURATED, "warning")
    queue = _high_run(queue_rows, sat * cap).filter(pl.col("vmin").is_not_null())
    per = (without_control_plane(queue, windows)
           .group_by("cluster", "broker_id", "window_start", "window_end")
           .agg(pl.col("vmin").max(), pl.col("samples").max(), pl.col("last_ts").max())
           .filter(_sustained(cfg))
           .sort("window_start")
           .unique(subset=["cluster", "broker_id", "vmin", "samples", "last_ts"], keep="first", maintain_order=True)
           .with_columns(_cap=cap, threshold=sat * cap, value=pl.col("vmin"), listener=pl.lit("data-plane"),
                         ts=pl.col("last_ts"), cp_series=pl.lit(0))
           .with_columns(severity=pl.when(pl.col("vmin") / pl.col("_cap") >= sat).then(pl.lit("warning"))))

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        summary = (f"RequestQueueSize on broker {r['broker_id']} stayed at >= {fmt1(r['vmin'])} of "
                   f"{fmt1(r['_cap'])}{window_text(r)} and the broker has no control plane: controller requests "
                   "wait behind data requests; configure control.plane.listener.name (KIP-291)")
        return summary, evidence(r, ("window_start", "window_end", "vmin", "samples", "cp_series"))

    return candidate_rows(per, t, describe)
