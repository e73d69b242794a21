"""Every detector, grouped by the input it reads; each group returns its candidate rows (the fields of
lifecycle.Candidate), computed with polars over one micro-batch's rows collected to Arrow.

control_request_latency: DELAYED_LEADER_AND_ISR, LEADER_AND_ISR_NOT_COMPLETED, DELAYED_UPDATE_METADATA,
    DELAYED_STOP_REPLICA, LOCK_CONTENTION (+ fetcher lines of state_change_events)        -> latency_candidates
state_change_events + request_events: STALE_BROKER_EPOCH, CONTROL_REQUEST_QUEUED_BEHIND_DATA (request-log form)
                                                                    -> log_candidates
metric windows: CONTROL_PLANE_QUEUE_BACKLOG, REQUEST_QUEUE_SATURATED, ACCEPTOR_BLOCKED,
    NETWORK_PROCESSOR_SATURATED, REQUEST_HANDLER_SATURATED, METADATA_APPLY_LAG, CONTROLLER_EVENT_QUEUE_DELAY,
    CONTROL_REQUEST_QUEUE_DELAY (RequestQueueSize or RequestMetrics without a control plane),
    LEADER_AND_ISR_TOTAL_TIME_HIGH (RequestMetrics)                 -> metric_candidates
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection import latency_detectors as lat
from pipelines.detection import metric_detectors as met
from pipelines.detection import request_metrics as rm

if TYPE_CHECKING:
    import pyarrow as pa

    from pipelines.detection.config import DetectionConfig

__all__ = ["latency_candidates", "log_candidates", "metric_candidates"]


def _frame(tbl: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(tbl)
    assert isinstance(frame, pl.DataFrame)
    return frame


def latency_candidates(latency: pa.Table, state_changes: pa.Table, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """Candidates from control_request_latency rows (state_changes: fetcher and lock lines for LOCK_CONTENTION,
    controller elections that excuse the open requests of the controller they replaced)."""
    lat_rows, sc = _frame(latency), _frame(state_changes)
    if lat_rows.is_empty():
        return []
    return [
        *lat.detect_delayed_leader_and_isr(lat_rows, cfg, sc),
        *lat.detect_leader_and_isr_not_completed(lat_rows, cfg, sc),
        *lat.detect_delayed_update_metadata(lat_rows, cfg, sc),
        *lat.detect_delayed_stop_replica(lat_rows, cfg, sc),
        *lat.detect_lock_contention(lat_rows, sc, cfg),
    ]


def log_candidates(state_changes: pa.Table, requests: pa.Table, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """Candidates from log rows: stale broker epochs and control requests queued on a data-plane listener."""
    sc, rq = _frame(state_changes), _frame(requests)
    return [
        *lat.detect_stale_broker_epoch(sc, rq, cfg),
        *lat.detect_control_request_queued_behind_data(rq, cfg),
    ]


def metric_candidates(windows: pa.Table, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """Candidates from metric windows (metric_detectors.metric_windows output, collected to Arrow)."""
    frame = _frame(windows)
    if frame.is_empty():
        return []
    frame = frame.with_row_index("_wid")
    return [c for rule in (
        met.detect_control_plane_queue_backlog,
        met.detect_request_queue_saturated,
        met.detect_acceptor_blocked,
        met.detect_network_processor_saturated,
        met.detect_request_handler_saturated,
        met.detect_metadata_apply_lag,
        met.detect_controller_event_queue_delay,
        met.detect_queue_saturated_without_control_plane,
        rm.detect_leader_and_isr_total_time_high,
        rm.detect_control_request_queue_time,
    ) for c in rule(frame, cfg)]
