"""Kafka's own RequestMetrics of the control requests as detection signals: a cluster that ships metrics and no
state-change or request logs still gets DELAYED_LEADER_AND_ISR and CONTROL_REQUEST_QUEUED_BEHIND_DATA.

`kafka.network:type=RequestMetrics,name=<N>,request=<Api>` (FACTS.md section 2) holds Yammer histograms per
request type: the quantiles (jmx_exporter: ``kafka_network_requestmetrics_totaltimems{request=..,quantile="0.99"}``,
attribute 99thPercentile in silver) and the Count (``..._count``/``..._count_total``: requests served so far).
Data- and control-plane channels register the same MBeans, so the times are plane-agnostic.

Metric windows (:func:`pipelines.detection.metric_detectors.metric_windows`) keep these series apart per request
type: their `sig` is ``<signal>/<request>`` (:func:`series_key`; silver's `signal` and `request` as they are), and
only the control requests' series are kept (:func:`request_metric_wanted`).

A Yammer histogram's reservoir is exponentially decaying (about five minutes): a quantile stays high long after the
slow request that raised it. So a window judges a quantile only when the window saw a request complete (its Count
increased) or the quantile itself rise; its value is the window's highest 99th percentile (else highest quantile).

* DELAYED_LEADER_AND_ISR (metric form, listener :data:`schemas.alerts.METRIC_FORMS`' marker): TotalTimeMs of
  `request=LeaderAndIsr` at or above the rule's levels (ms, like the log form's send-to-finish time).
* CONTROL_REQUEST_QUEUED_BEHIND_DATA (metric form, listener ``data-plane``): RequestQueueTimeMs of LeaderAndIsr,
  UpdateMetadata or StopReplica at or above the rule's levels (ms, like the request-log form) on a broker that
  reports no control-plane series in the window (without KIP-291 control requests share the data-plane queue;
  with it, a control request's queue time is CONTROL_PLANE_QUEUE_BACKLOG's business).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.detection.common import candidates, level, severity
from schemas.alerts import METRIC_FORMS, AlertType
from schemas.events import ControlRequest
from schemas.signals import Signal

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from pipelines.detection.config import DetectionConfig

__all__ = [
    "REQUEST_METRIC_SIGNALS",
    "detect_request_metrics_delayed_leader_and_isr",
    "detect_request_metrics_queued_behind_data",
    "request_metric_wanted",
    "series_key",
]

# The RequestMetrics histograms detection reads, for the control requests only.
REQUEST_METRIC_SIGNALS: tuple[str, ...] = (Signal.TotalTimeMs.value, Signal.RequestQueueTimeMs.value,
                                           Signal.LocalTimeMs.value)
_CONTROL: tuple[str, ...] = tuple(r.value for r in ControlRequest)
# `<signal>/<request>`: '/' appears in neither Kafka's metric names nor its ApiKeys names.
_SEP = "/"
_CONTROL_PLANE_PREFIX = "ControlPlane"


def series_key() -> Column:
    """The metric window's series key `sig`: the signal, or `<signal>/<request>` for a RequestMetrics histogram."""
    from pyspark.sql import functions as F

    return F.when(F.col("signal").isin(*REQUEST_METRIC_SIGNALS),
                  F.concat(F.col("signal"), F.lit(_SEP), F.coalesce(F.col("request"), F.lit("")))
                  ).otherwise(F.col("signal"))


def request_metric_wanted() -> Column:
    """False for a RequestMetrics sample of a request that is not a control request (Produce, Fetch ... would
    multiply the window state for nothing)."""
    from pyspark.sql import functions as F

    return ~F.col("signal").isin(*REQUEST_METRIC_SIGNALS) | F.coalesce(F.col("request").isin(*_CONTROL), F.lit(False))


def _judged(windows: DataFrame, signal: str, requests: tuple[str, ...]) -> DataFrame:
    """One row per (cluster, broker, request series, window) whose window saw a request complete or its quantile
    rise: `value` (highest 99th percentile, else highest quantile), `request`, `last_ts`, `served` (requests
    completed in the window, from the Count)."""
    from pyspark.sql import functions as F

    attr = F.lower(F.coalesce(F.col("attribute"), F.lit("")))
    quantile = attr.endswith("percentile")
    rows = windows.where(F.col("sig").isin(*[f"{signal}{_SEP}{r}" for r in requests]))
    per = rows.groupBy("cluster", "broker_id", "sig", "window_start", "window_end").agg(
        F.coalesce(F.max(F.when(attr == "99thpercentile", F.col("vmax"))),
                   F.max(F.when(quantile, F.col("vmax")))).alias("value"),
        F.max(F.when(quantile, F.col("vmax") - F.col("vfirst"))).alias("rise"),
        F.max(F.when(attr == "count", F.col("vlast") - F.col("vfirst"))).alias("served"),
        F.max("last_ts").alias("last_ts"),
    )
    return per.where(F.col("value").isNotNull() & ((F.coalesce("rise", F.lit(0.0)) > 0)
                                                   | (F.coalesce("served", F.lit(0.0)) > 0))).withColumn(
        "request", F.substring_index(F.col("sig"), _SEP, -1))


def _first_per_value(rows: DataFrame) -> DataFrame:
    """Sliding windows that saw the same completion show the same value: keep the earliest of each."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    w = Window.partitionBy("cluster", "broker_id", "sig", "value").orderBy("window_start")
    return rows.withColumn("_nth", F.row_number().over(w)).where(F.col("_nth") == 1).drop("_nth")


def _window_text() -> Column:
    from pyspark.sql import functions as F

    return F.concat(F.lit(" over "), F.date_format("window_start", "HH:mm:ss"), F.lit("-"),
                    F.date_format("window_end", "HH:mm:ss"), F.lit(" UTC"))


def _evidence(signal: str) -> Column:
    from pyspark.sql import functions as F

    return F.to_json(F.struct(F.lit(signal).alias("signal"), "request", "window_start", "window_end", "value",
                              "rise", "served", "last_ts"))


def _ms(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.round(c).cast("long").cast("string")


def detect_request_metrics_delayed_leader_and_isr(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """DELAYED_LEADER_AND_ISR from RequestMetrics: LeaderAndIsr's TotalTimeMs quantile at or above the levels."""
    from pyspark.sql import functions as F

    t = AlertType.DELAYED_LEADER_AND_ISR
    rows = _first_per_value(_judged(windows, Signal.TotalTimeMs.value, (ControlRequest.LEADER_AND_ISR.value,)))
    summary = F.concat(F.lit("LeaderAndIsr requests on broker "), F.col("broker_id"), F.lit(" took up to "),
                       _ms(F.col("value")), F.lit(" ms (RequestMetrics TotalTimeMs)"), _window_text(),
                       F.lit(": its partitions waited for their new leaders and followers"))
    return candidates(
        rows, t, sev=severity(cfg, t, F.col("value")), broker_id=F.col("broker_id"), listener=F.lit(METRIC_FORMS[t]),
        ts=F.col("last_ts"), value=F.col("value"), threshold=level(cfg, t, "warning"), summary=summary,
        evidence=_evidence(Signal.TotalTimeMs.value),
    )


def detect_request_metrics_queued_behind_data(windows: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """CONTROL_REQUEST_QUEUED_BEHIND_DATA from RequestMetrics: a control request's RequestQueueTimeMs quantile at or
    above the levels on a broker without control-plane series in the window."""
    from pyspark.sql import functions as F

    t = AlertType.CONTROL_REQUEST_QUEUED_BEHIND_DATA
    judged = _judged(windows, Signal.RequestQueueTimeMs.value, _CONTROL)
    planes = windows.where(F.col("sig").startswith(_CONTROL_PLANE_PREFIX)).select(
        "cluster", "broker_id", "window_start").distinct()
    rows = _first_per_value(judged.join(planes, ["cluster", "broker_id", "window_start"], "left_anti"))
    summary = F.concat(F.col("request"), F.lit(" requests waited up to "), _ms(F.col("value")),
                       F.lit(" ms in broker "), F.col("broker_id"),
                       F.lit("'s request queue (RequestMetrics RequestQueueTimeMs)"), _window_text(),
                       F.lit(" and the broker has no control plane: configure control.plane.listener.name (KIP-291)"))
    return candidates(
        rows, t, sev=severity(cfg, t, F.col("value")), broker_id=F.col("broker_id"), listener=F.lit(METRIC_FORMS[t]),
        ts=F.col("last_ts"), value=F.col("value"), threshold=level(cfg, t, "warning"), summary=summary,
        evidence=_evidence(Signal.RequestQueueTimeMs.value),
    )
