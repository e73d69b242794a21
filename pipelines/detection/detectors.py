"""Every detector, grouped by the input it reads, each group returning one candidate DataFrame.

control_request_latency: DELAYED_LEADER_AND_ISR, LEADER_AND_ISR_NOT_COMPLETED, DELAYED_UPDATE_METADATA,
    DELAYED_STOP_REPLICA, LOCK_CONTENTION (+ fetcher lines of state_change_events)        -> latency_candidates
state_change_events + request_events: STALE_BROKER_EPOCH, CONTROL_REQUEST_QUEUED_BEHIND_DATA (request-log form)
                                                                    -> log_candidates
metric windows: CONTROL_PLANE_QUEUE_BACKLOG, REQUEST_QUEUE_SATURATED, ACCEPTOR_BLOCKED,
    NETWORK_PROCESSOR_SATURATED, REQUEST_HANDLER_SATURATED, METADATA_APPLY_LAG, CONTROLLER_EVENT_QUEUE_DELAY,
    CONTROL_REQUEST_QUEUED_BEHIND_DATA and DELAYED_LEADER_AND_ISR (metric forms: RequestQueueSize without a
    control plane, Kafka's RequestMetrics of the control requests)  -> metric_candidates (polars, a list of rows)
"""

from __future__ import annotations

from functools import reduce
from typing import TYPE_CHECKING, Any

from pipelines.detection import latency_detectors as lat
from pipelines.detection import metric_detectors as met
from pipelines.detection import request_metrics as rm
from schemas.alerts import OWNERS, DetectQuery

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from pipelines.detection.config import DetectionConfig

__all__ = ["LATENCY_TYPES", "LOG_TYPES", "METRIC_TYPES", "latency_candidates", "log_candidates", "metric_candidates"]

# Which query of the detect job owns which alert types (each resolves only its own, by its own watermark).
LATENCY_TYPES = tuple(t for t, o in OWNERS.items() if o.query == DetectQuery.LATENCY)
LOG_TYPES = tuple(t for t, o in OWNERS.items() if o.query == DetectQuery.LOG)
METRIC_TYPES = tuple(t for t, o in OWNERS.items() if o.query == DetectQuery.METRIC)
# CONTROL_REQUEST_QUEUED_BEHIND_DATA and DELAYED_LEADER_AND_ISR also come from metric windows (metric query); the
# forms are told apart by listener (schemas.alerts.METRIC_FORMS).


def _union(frames: list[DataFrame]) -> DataFrame:
    return reduce(lambda a, b: a.unionByName(b), frames)


def latency_candidates(latency: DataFrame, state_changes: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """Candidates from control_request_latency rows (state_changes: fetcher and lock lines for LOCK_CONTENTION,
    controller elections for LEADER_AND_ISR_NOT_COMPLETED)."""
    return _union([
        lat.detect_delayed_leader_and_isr(latency, cfg),
        lat.detect_leader_and_isr_not_completed(latency, cfg, state_changes),
        lat.detect_delayed_update_metadata(latency, cfg),
        lat.detect_delayed_stop_replica(latency, cfg),
        lat.detect_lock_contention(latency, state_changes, cfg),
    ])


def log_candidates(state_changes: DataFrame, requests: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """Candidates from log rows: stale broker epochs and control requests queued on a data-plane listener."""
    return _union([
        lat.detect_stale_broker_epoch(state_changes, requests, cfg),
        lat.detect_control_request_queued_behind_data(requests, cfg),
    ])


def metric_candidates(windows: pa.Table, cfg: DetectionConfig) -> list[dict[str, Any]]:
    """Candidates (CANDIDATE_DDL's fields) from metric windows (metric_detectors.metric_windows output, collected
    to Arrow), computed with polars on the driver."""
    import polars as pl

    frame = pl.from_arrow(windows)
    assert isinstance(frame, pl.DataFrame)
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
        rm.detect_request_metrics_delayed_leader_and_isr,
        rm.detect_request_metrics_queued_behind_data,
    ) for c in rule(frame, cfg)]
