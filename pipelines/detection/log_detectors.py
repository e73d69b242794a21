"""The log rules: detectors over a log batch's own rows (state_change_events and request_events), no pairing.

STALE_BROKER_EPOCH (a broker rejected control requests as carrying a stale broker epoch), the request log's form of
CONTROL_REQUEST_QUEUED_BEHIND_DATA (a control request waited in a data-plane listener's queue), and through
kraft_detectors the KRaft controller's fencings, heartbeat timeouts and elections. Each is a pure function over a
batch's :class:`~pipelines.detection.candidates.LogRows` returning candidate-alert rows (the fields of
lifecycle.Candidate); the detector registry (:mod:`pipelines.detection.registry`) runs them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection.candidates import Evidence, LogRows, Rows, candidate_rows, evidence, half_up, level, severity
from pipelines.detection.events import CONTROL_REQUESTS, STALE_EVENTS
from schemas.alerts import AlertType
from schemas.events import Event

if TYPE_CHECKING:
    from pipelines.detection.config import DetectionConfig

__all__ = ["detect_control_request_queued_behind_data", "detect_stale_broker_epoch"]

# How many of a broker's stale-epoch lines an alert's evidence quotes.
STALE_LINES_QUOTED = 5


def _is(events: tuple[Event, ...]) -> pl.Expr:
    return pl.col("event").is_in([e.value for e in events]).fill_null(False)


def _control_plane_listener(cfg: DetectionConfig) -> pl.Expr:
    """True where a row's listener (upper-cased) is one of its cluster's control-plane listeners."""
    listener = pl.col("listener").str.to_uppercase()
    default = listener.is_in(list(cfg.control_plane_listeners))
    expr: Any = None
    for name in sorted(cfg.overrides):
        own = listener.is_in(list(cfg.for_cluster(name).control_plane_listeners))
        expr = (pl.when(pl.col("cluster") == name).then(own) if expr is None
                else expr.when(pl.col("cluster") == name).then(own))
    return default if expr is None else expr.otherwise(default)


def detect_control_request_queued_behind_data(batch: LogRows, cfg: DetectionConfig) -> Rows:
    """CONTROL_REQUEST_QUEUED_BEHIND_DATA (request-log form): a control request (LeaderAndIsr, UpdateMetadata,
    StopReplica) waited in the request queue of a listener that is not the control plane (KIP-291 not configured,
    or the controller fell back to the inter-broker listener). The metric forms live in metric_detectors and
    request_metrics."""
    t = AlertType.CONTROL_REQUEST_QUEUED_BEHIND_DATA
    rows = batch.requests.filter(pl.col("api_name").is_in(CONTROL_REQUESTS) & pl.col("listener").is_not_null()
                           & ~_control_plane_listener(cfg))
    value = pl.col("request_queue_time_ms").cast(pl.Float64)
    rows = rows.with_columns(value=value, severity=severity(cfg, t, value), threshold=level(cfg, t, "warning"))

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        summary = (f"{r['api_name']} correlationId {r['correlation_id']} waited {half_up(r['value'])} ms in broker "
                   f"{r['broker_id']}'s shared request queue on data-plane listener {r['listener']}: configure "
                   "control.plane.listener.name (KIP-291)")
        return summary, evidence(r, ("api_name", "correlation_id", "client_id", "listener", "total_time_ms",
                                     "request_queue_time_ms", "local_time_ms", "ts", "source", "source_offset"))

    return candidate_rows(rows, t, describe)


def detect_stale_broker_epoch(batch: LogRows, cfg: DetectionConfig) -> Rows:
    """STALE_BROKER_EPOCH: a broker rejected control requests for a stale broker epoch (KafkaApis log line, or a
    request-log control response with error code 77). One candidate per broker and batch, value = rejections.

    One rejection has up to two witnesses, the log line and its request-log entry, so they are not added: per
    request type, the rejections are the larger of the two witnesses' counts (a request log without the broker epoch
    still matches). A line shipped twice (same time and text; same correlation id in the request log) counts once."""
    t = AlertType.STALE_BROKER_EPOCH
    logs = batch.state_changes.filter(_is(STALE_EVENTS)).select(
        "cluster", "broker_id", "ts", api=pl.col("request"), line=pl.col("message"),
        broker_epoch=pl.col("broker_epoch").cast(pl.Int64),
        current_broker_epoch=pl.col("current_broker_epoch").cast(pl.Int64), witness=pl.lit("log"),
    ).unique(["cluster", "broker_id", "ts", "line"], keep="first", maintain_order=True)
    errs = batch.requests.filter(pl.col("api_name").is_in(CONTROL_REQUESTS) & (pl.col("error_code") == 77)).unique(
        ["cluster", "broker_id", "api_name", "correlation_id"], keep="first", maintain_order=True).select(
        "cluster", "broker_id", "ts", api=pl.col("api_name"),
        line=pl.format("{} correlationId {} answered STALE_BROKER_EPOCH", "api_name", "correlation_id"),
        broker_epoch=pl.col("broker_epoch").cast(pl.Int64), current_broker_epoch=pl.lit(None, dtype=pl.Int64),
        witness=pl.lit("request log"))
    both = pl.concat([logs, errs], how="vertical_relaxed")
    if both.is_empty():
        return []
    rejections = (both.group_by("cluster", "broker_id", "api", "witness").agg(n=pl.len())
                  .group_by("cluster", "broker_id", "api").agg(n=pl.col("n").max())
                  .group_by("cluster", "broker_id").agg(n=pl.col("n").sum()))
    agg = both.sort("ts").group_by("cluster", "broker_id").agg(
        last_ts=pl.col("ts").max(), first_ts=pl.col("ts").min(),
        lines=pl.col("line").head(STALE_LINES_QUOTED), request_epoch=pl.col("broker_epoch").max(),
        current_epoch=pl.col("current_broker_epoch").max()).join(rejections, on=["cluster", "broker_id"])
    rows = agg.with_columns(value=pl.col("n").cast(pl.Float64), ts=pl.col("last_ts"),
                            severity=severity(cfg, t, pl.col("n").cast(pl.Float64)),
                            threshold=level(cfg, t, "warning"), listener=pl.lit(None, dtype=pl.String))

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        epochs = ("" if r["current_epoch"] is None
                  else f" (request epoch {r['request_epoch']} < current {r['current_epoch']})")
        summary = (f"Broker {r['broker_id']} rejected {r['n']} control request(s) as carrying a stale broker "
                   f"epoch{epochs}: the controller holds an old registration of this broker")
        return summary, evidence(r, ("n", "first_ts", "last_ts", "lines", "request_epoch", "current_epoch"))

    return candidate_rows(rows, t, describe)
