"""Kafka's own RequestMetrics of the control requests as detection signals: a cluster that ships metrics and no
state-change or request logs still learns that LeaderAndIsr is slow or that control requests queue behind data.

`kafka.network:type=RequestMetrics,name=<N>,request=<Api>` (FACTS.md section 2) holds Yammer histograms per
request type: the quantiles (jmx_exporter: ``kafka_network_requestmetrics_totaltimems{request=..,quantile="0.99"}``,
attribute 99thPercentile in silver) and the Count (``..._count``/``..._count_total``: requests served so far).
Data- and control-plane channels register the same MBeans, so the times are plane-agnostic.

Metric windows (:func:`pipelines.detection.metric_detectors.metric_windows`) keep these series apart per request
type: their `sig` is ``<signal>/<request>`` (:func:`series_key`; silver's `signal` and `request` as they are), and
only the control requests' series are kept (:func:`request_metric_wanted`).

A Yammer histogram's reservoir is exponentially decaying (about five minutes): a quantile stays high long after the
slow request that raised it (a LeaderAndIsr of 8,263 ms re-reported minutes later in a window whose own requests
took 1,425, 752 and 7 ms, on Apache Kafka 3.9.1). So a quantile counts for a window only when it rose in it (a new
slow request entered the reservoir). Where the Mean is exported too (JSON reporters, exporters that keep it), the
window's own mean is exact from the cumulative Count and Mean; the window's value is the larger of the two.

* LEADER_AND_ISR_TOTAL_TIME_HIGH (no listener: the histogram is plane-agnostic): TotalTimeMs of
  `request=LeaderAndIsr` at or above the rule's levels (ms, the broker's receive-to-response time; the log's
  DELAYED_LEADER_AND_ISR measures from the controller's send).
* CONTROL_REQUEST_QUEUE_DELAY (listener ``data-plane``): RequestQueueTimeMs of LeaderAndIsr, UpdateMetadata or
  StopReplica at or above the rule's levels (ms, like the request log's CONTROL_REQUEST_QUEUED_BEHIND_DATA) on a
  broker that reports no control-plane series in the window (without KIP-291 control requests share the data-plane
  queue; with it, a control request's queue time is CONTROL_PLANE_QUEUE_BACKLOG's business).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection.candidates import (
    Evidence,
    attribute_key,
    candidate_rows,
    evidence,
    half_up,
    level,
    severity,
    window_text,
    without_control_plane,
)
from schemas.alerts import AlertType
from schemas.events import ControlRequest
from schemas.signals import Signal

if TYPE_CHECKING:
    from pipelines.detection.config import DetectionConfig

__all__ = [
    "REQUEST_METRIC_SIGNALS",
    "detect_control_request_queue_time",
    "detect_leader_and_isr_total_time_high",
    "request_metric_wanted",
    "series_key",
]

# The RequestMetrics histograms detection reads, for the control requests only.
REQUEST_METRIC_SIGNALS: tuple[str, ...] = (Signal.TotalTimeMs.value, Signal.RequestQueueTimeMs.value,
                                           Signal.LocalTimeMs.value)
_CONTROL: tuple[str, ...] = tuple(r.value for r in ControlRequest)
# `<signal>/<request>`: '/' appears in neither Kafka's metric names nor its ApiKeys names.
_SEP = "/"


def series_key() -> pl.Expr:
    """The metric window's series key `sig`: the signal, or `<signal>/<request>` for a RequestMetrics histogram."""
    return (pl.when(pl.col("signal").is_in(REQUEST_METRIC_SIGNALS))
            .then(pl.concat_str(pl.col("signal"), pl.lit(_SEP), pl.col("request").fill_null("")))
            .otherwise(pl.col("signal")))


def request_metric_wanted() -> pl.Expr:
    """False for a RequestMetrics sample of a request that is not a control request (Produce, Fetch ... would
    multiply the windows for nothing)."""
    return ~pl.col("signal").is_in(REQUEST_METRIC_SIGNALS) | pl.col("request").is_in(_CONTROL).fill_null(False)


def _judged(windows: pl.DataFrame, signal: str, requests: tuple[str, ...]) -> pl.DataFrame:
    """One row per (cluster, broker, request series, window) with a value of the window's own requests: `value`,
    the larger of the highest 99th percentile (else highest quantile) when the quantile ROSE in the window (a new
    slow request entered the reservoir) and the window's mean (`window_mean`: the requests completed in the window,
    from the cumulative Count and Mean: (Mean1*Count1 - Mean0*Count0) / (Count1 - Count0)); `request`, `last_ts`,
    `served` (requests completed in the window, from the Count). A quantile that did not rise is the reservoir's
    memory of older requests and is never attributed to the window."""
    attr = attribute_key()
    quantile = attr.str.ends_with("percentile")
    # a window's requests: those completed after the series' sample before it (or its first, when it has none)
    rows = windows.filter(pl.col("sig").is_in([f"{signal}{_SEP}{r}" for r in requests])).with_columns(
        _base=pl.coalesce("vprev", "vfirst"))
    per = rows.group_by("cluster", "broker_id", "sig", "window_start", "window_end").agg(
        pl.coalesce(pl.col("vmax").filter(attr == "99thpercentile").max(),
                    pl.col("vmax").filter(quantile).max()).alias("quantile"),
        pl.col("vstep").filter(quantile).max().alias("rise"),
        *[pl.col(v).filter(attr == a).first().alias(f"_{a}{i}")
          for a in ("count", "mean") for i, v in ((0, "_base"), (1, "vlast"))],
        pl.col("last_ts").max(),
    )
    served = pl.col("_count1") - pl.col("_count0")
    window_mean = pl.when((served > 0) & pl.col("_mean0").is_not_null() & pl.col("_mean1").is_not_null()).then(
        (pl.col("_mean1") * pl.col("_count1") - pl.col("_mean0") * pl.col("_count0")) / served)
    rose = pl.when(pl.col("rise").fill_null(0.0) > 0).then(pl.col("quantile"))
    return (per.with_columns(window_mean=window_mean, served=served)
            .with_columns(value=pl.max_horizontal(rose, pl.col("window_mean")))
            .filter(pl.col("value").is_not_null())
            .drop("_count0", "_count1", "_mean0", "_mean1")
            .with_columns(request=pl.col("sig").str.split(_SEP).list.last()))


def _first_per_value(rows: pl.DataFrame) -> pl.DataFrame:
    """Sliding windows that saw the same completion show the same value: keep the earliest of each."""
    return rows.sort("window_start").unique(subset=["cluster", "broker_id", "sig", "value"], keep="first",
                                            maintain_order=True)


def _finish(rows: pl.DataFrame, cfg: DetectionConfig, alert_type: AlertType, listener: str | None) -> pl.DataFrame:
    return rows.with_columns(severity=severity(cfg, alert_type, pl.col("value")),
                             threshold=level(cfg, alert_type, "warning"),
                             listener=pl.lit(listener, dtype=pl.String), ts=pl.col("last_ts"))


_EVIDENCE = ("signal", "request", "window_start", "window_end", "value", "quantile", "rise", "window_mean", "served",
             "last_ts")


def detect_leader_and_isr_total_time_high(windows: pl.DataFrame, cfg: DetectionConfig
                                                  ) -> list[dict[str, Any]]:
    """LEADER_AND_ISR_TOTAL_TIME_HIGH: LeaderAndIsr's RequestMetrics TotalTimeMs quantile at or above the levels."""
    t = AlertType.LEADER_AND_ISR_TOTAL_TIME_HIGH
    rows = _first_per_value(_judged(windows, Signal.TotalTimeMs.value, (ControlRequest.LEADER_AND_ISR.value,)))

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        summary = (f"LeaderAndIsr requests on broker {r['broker_id']} took up to {half_up(r['value'])} ms "
                   f"(RequestMetrics TotalTimeMs){window_text(r, samples=False)}: its partitions waited for their new "
                   "leaders and followers")
        return summary, evidence(r, _EVIDENCE, signal=Signal.TotalTimeMs.value)

    return candidate_rows(_finish(rows, cfg, t, None), t, describe)


def detect_control_request_queue_time(windows: pl.DataFrame, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """CONTROL_REQUEST_QUEUE_DELAY from RequestMetrics: a control request's RequestQueueTimeMs quantile at or above
    the levels on a broker without control-plane series in the window."""
    t = AlertType.CONTROL_REQUEST_QUEUE_DELAY
    rows = _first_per_value(without_control_plane(_judged(windows, Signal.RequestQueueTimeMs.value, _CONTROL),
                                                  windows))

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        summary = (f"{r['request']} requests waited up to {half_up(r['value'])} ms in broker {r['broker_id']}'s "
                   f"request queue (RequestMetrics RequestQueueTimeMs){window_text(r, samples=False)} and the broker "
                   "has no control plane: configure control.plane.listener.name (KIP-291)")
        return summary, evidence(r, _EVIDENCE, signal=Signal.RequestQueueTimeMs.value)

    return candidate_rows(_finish(rows, cfg, t, "data-plane"), t, describe)
