"""Baselines of a slow control request: is this broker slow against its own history, or against its peers?

Pure (polars): a DELAYED_* candidate (latency_detectors) and the control_request_latency rows of its cluster over
`detection.baseline_window_s` before it -> the broker's own p90 of the same measure for the same request type
(its completed requests in the window, the candidate's own left out), and its peers' median (the other brokers'
requests of that type in the same window). The measure is the alerts' (end to end, less the wait at the controller
behind the previous request). Requests at or above the alert's warning level are left out of both: they are
alerts of their own, and a slowdown that lasts would otherwise become its own baseline. The candidate's summary
gains one clause and its evidence a `baseline` object; a baseline of fewer than BASELINE_MIN_REQUESTS requests is
not given (too few to call a p90 or a median).

A control request that waited behind data (CONTROL_REQUEST_QUEUED_BEHIND_DATA, from the broker's request log) is
compared the same way on its measure, the time in the request queue, over the request log's rows of the same
request type (:func:`add_queue_baselines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection.candidates import half_up
from schemas.alerts import AlertType
from schemas.events import LatencyStatus

if TYPE_CHECKING:
    from pipelines.detection.config import DetectionConfig

__all__ = ["BASELINE_MIN_REQUESTS", "BASELINE_TYPES", "QUEUED_TYPE", "add_baselines", "add_queue_baselines",
           "history_spans"]

# A p90 or a median of fewer requests than this is noise: the baseline is left out.
BASELINE_MIN_REQUESTS = 5
# The alerts a baseline is given to, and the request type each is about.
BASELINE_TYPES: dict[str, str] = {
    AlertType.DELAYED_LEADER_AND_ISR.value: "LeaderAndIsr",
    AlertType.DELAYED_UPDATE_METADATA.value: "UpdateMetadata",
    AlertType.DELAYED_STOP_REPLICA.value: "StopReplica",
}


def history_spans(candidates: Sequence[dict[str, Any]], window: timedelta) -> list[tuple[str, datetime, datetime]]:
    """Per cluster of `candidates`, from `window` before its earliest to its latest (LatestTable.read_spans): what
    their baselines read."""
    out = []
    for cluster in sorted({str(c["cluster"]) for c in candidates}):
        times = [c["ts"] for c in candidates if c["cluster"] == cluster]
        out.append((cluster, min(times) - window, max(times)))
    return out


def _measure() -> pl.Expr:
    return pl.col("end_to_end_ms") - pl.col("controller_queue_ms").fill_null(0.0)


def _stat(rows: pl.DataFrame, measure: pl.Expr, q: float) -> tuple[float | None, int]:
    n = rows.height
    if n < BASELINE_MIN_REQUESTS:
        return None, n
    value = rows.select(measure.quantile(q, "nearest")).item()
    return (None if value is None else float(value)), n


def _against(c: dict[str, Any], span: pl.DataFrame, measure: pl.Expr, level: float, window: timedelta,
             what: str) -> None:
    """Compare candidate `c` with `span` (the requests of its cluster and type in the window before it, those at
    or above `level` and itself left out): its broker's own p90 and its peers' median of `measure`; the summary
    gains the clause, the evidence a `baseline` object (nothing when both are too few)."""
    own, own_n = _stat(span.filter(pl.col("broker_id") == c["broker_id"]), measure, 0.9)
    peers, peers_n = _stat(span.filter(pl.col("broker_id") != c["broker_id"]), measure, 0.5)
    if own is None and peers is None:
        return
    minutes = round(window.total_seconds() / 60)
    parts = []
    if own is not None:
        parts.append(f"its own p90{what} over the last {minutes} min {half_up(own)} ms ({own_n} requests under "
                     f"{half_up(level)} ms)")
    if peers is not None:
        parts.append(f"its peers' median {half_up(peers)} ms ({peers_n} requests)")
    c["summary"] = f"{c['summary']} [against: {'; '.join(parts)}]"
    c["evidence"]["baseline"] = {"window_s": window.total_seconds(), "own_p90_ms": own, "own_requests": own_n,
                                 "peers_median_ms": peers, "peers_requests": peers_n, "text": "; ".join(parts)}


def add_baselines(candidates: Sequence[dict[str, Any]], history: pl.DataFrame, window: timedelta,
                  cfg: DetectionConfig) -> None:
    """Add the broker's own p90 and its peers' median to each DELAYED_* candidate (in place), from `history`
    (control_request_latency rows of the candidates' clusters reaching `window` before the earliest of them)."""
    if history.is_empty():
        return
    done = history.filter((pl.col("status") == LatencyStatus.COMPLETED.value) & pl.col("end_to_end_ms").is_not_null()
                          & pl.col("sent_ts").is_not_null())
    for c in candidates:
        request = BASELINE_TYPES.get(str(c["type"]))
        if request is None or c.get("broker_id") is None:
            continue
        at = c["ts"]
        key = _request_key(c)
        level = cfg.for_cluster(str(c["cluster"])).threshold(str(c["type"])).warning
        span = done.filter((pl.col("cluster") == c["cluster"]) & (pl.col("request") == request)
                           & (pl.col("sent_ts") >= at - window) & (pl.col("sent_ts") < at) & (_measure() < level))
        if key is not None:
            span = span.filter(pl.col("request_key") != key)
        _against(c, span, _measure(), level, window, "")


QUEUED_TYPE = AlertType.CONTROL_REQUEST_QUEUED_BEHIND_DATA.value


def add_queue_baselines(candidates: Sequence[dict[str, Any]], history: pl.DataFrame, window: timedelta,
                        cfg: DetectionConfig) -> None:
    """Add the broker's own p90 and its peers' median of the request queue time to each request-log
    CONTROL_REQUEST_QUEUED_BEHIND_DATA candidate (in place), from `history` (request_events rows of control requests
    of the candidates' clusters reaching `window` before the earliest of them): the same request type's waits in
    the request queue, those at or above the warning level and the request itself left out."""
    if history.is_empty():
        return
    measure = pl.col("request_queue_time_ms").cast(pl.Float64)
    timed = history.filter(measure.is_not_null())
    for c in candidates:
        if c["type"] != QUEUED_TYPE or c.get("broker_id") is None:
            continue
        ev = c["evidence"]
        api, corr = ev.get("api_name"), ev.get("correlation_id")
        if api is None:
            continue
        at = c["ts"]
        level = cfg.for_cluster(str(c["cluster"])).threshold(QUEUED_TYPE).warning
        span = timed.filter((pl.col("cluster") == c["cluster"]) & (pl.col("api_name") == api)
                            & (pl.col("ts") >= at - window) & (pl.col("ts") < at) & (measure < level)
                            & ~((pl.col("broker_id") == c["broker_id"]) & (pl.col("correlation_id") == corr)))
        _against(c, span, measure, level, window, " in the request queue")


def _request_key(c: dict[str, Any]) -> str | None:
    key = c["evidence"].get("request_key")
    return key if isinstance(key, str) else None
