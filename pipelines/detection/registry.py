"""The detector registry: for every alert type, in one row, the family that writes it, the input its detectors read,
the detector functions and the default warning and critical levels (:class:`Threshold`).

Derived from it: which family opens, updates and resolves each type (:func:`owned_types`, the alerts sink's
ownership), the configuration's default levels (`pipelines.detection.config.DEFAULT_THRESHOLDS`), the runs of the
rules over each input (:func:`metric_candidates`, :func:`log_candidates`, :func:`latency_candidates`; ROLL_TOO_FAST's
controlled shutdowns are judged by the log family's roll step), and the alert reference's checks
(tests/docs/test_docs.py: every type's section states these levels and names these functions). What an alert type
costs is said by :mod:`pipelines.detection.impact`, and what to do by its incident's cause
(:data:`pipelines.detection.incidents.CAUSE_RULES`): advice belongs to a cause, and one alert type has several.

A detector is a pure function `(input, cfg) -> candidate rows`; the input is a frame of metric windows
(:data:`DetectorInput.METRIC_WINDOWS`), a log batch's rows (:class:`~pipelines.detection.candidates.LogRows`) or
the control requests its pairing timed (:class:`~pipelines.detection.candidates.ControlRequests`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection.candidates import ControlRequests, LogRows, Rows, frame
from pipelines.detection.kraft_detectors import (
    detect_broker_fenced,
    detect_broker_heartbeat_timeout,
    detect_quorum_unstable,
)
from pipelines.detection.latency_detectors import (
    detect_delayed_leader_and_isr,
    detect_delayed_stop_replica,
    detect_delayed_update_metadata,
    detect_leader_and_isr_not_completed,
    detect_lock_contention,
)
from pipelines.detection.log_detectors import detect_control_request_queued_behind_data, detect_stale_broker_epoch
from pipelines.detection.metric_detectors import (
    detect_acceptor_blocked,
    detect_control_plane_queue_backlog,
    detect_controller_event_queue_delay,
    detect_leader_elected_from_elr,
    detect_metadata_apply_lag,
    detect_network_processor_saturated,
    detect_queue_saturated_without_control_plane,
    detect_request_handler_saturated,
    detect_request_queue_saturated,
    detect_unclean_leader_election,
)
from pipelines.detection.request_metrics import (
    detect_control_request_queue_time,
    detect_leader_and_isr_total_time_high,
)
from pipelines.detection.roll_detectors import detect_roll_too_fast
from schemas.alerts import AlertType, DetectQuery
from schemas.tables import REQUEST_EVENTS

if TYPE_CHECKING:
    import pyarrow as pa

    from pipelines.detection.config import DetectionConfig

__all__ = ["DETECTORS", "DetectionConfigError", "Detector", "DetectorInput", "Threshold", "latency_candidates",
           "log_candidates", "metric_candidates", "owned_types"]


class DetectionConfigError(ValueError):
    """The `detection:` configuration is invalid (unknown alert type, bad number, warning beyond critical)."""


@dataclass(frozen=True)
class Threshold:
    """Warning and critical levels of one rule. `below=True`: the rule fires when the value falls under them."""

    warning: float
    critical: float
    below: bool = False

    def __post_init__(self) -> None:
        if self.below and self.critical > self.warning:
            raise DetectionConfigError(f"below-threshold: critical {self.critical} must be <= warning {self.warning}")
        if not self.below and self.critical < self.warning:
            raise DetectionConfigError(f"critical {self.critical} must be >= warning {self.warning}")

    def severity(self, value: float) -> str | None:
        """'critical', 'warning' or None for a measured value."""
        if self.below:
            return "critical" if value <= self.critical else "warning" if value < self.warning else None
        return "critical" if value >= self.critical else "warning" if value >= self.warning else None


class DetectorInput(StrEnum):
    """What a detector reads."""

    #: the metric family's sliding windows over metric_samples (a polars frame of metric_detectors.metric_windows)
    METRIC_WINDOWS = "metric windows"
    #: a log batch's state_change_events and request_events rows (LogRows)
    LOG_ROWS = "log rows"
    #: the control requests the log batch's pairing timed, with the state-change lines of their time
    #: (ControlRequests)
    CONTROL_REQUESTS = "control requests"
    #: controlled shutdowns with the roll-safety inputs before each (roll_detectors.detect_roll_too_fast)
    CONTROLLED_SHUTDOWNS = "controlled shutdowns"


@dataclass(frozen=True)
class Detector:
    """One alert type's row: its writer, its input, its detector functions (all read `reads`) and default levels."""

    query: DetectQuery
    reads: DetectorInput
    functions: tuple[Callable[..., Rows], ...]
    threshold: Threshold


_LOG, _METRIC = DetectQuery.LOG, DetectQuery.METRIC
_WINDOWS, _ROWS, _REQUESTS = DetectorInput.METRIC_WINDOWS, DetectorInput.LOG_ROWS, DetectorInput.CONTROL_REQUESTS
_T = AlertType

# Units of the levels: ms for latencies, fraction 0..1 for idle/blocked ratios, counts for STALE_BROKER_EPOCH and
# the KRaft log rules (lines per batch; QUORUM_UNSTABLE: active controllers elected within quorum_window_s), and for
# the controller's election counters (elections within a metric window). Queue saturations are fractions of the
# queue's capacity (20 for the control plane, queued.max.requests for data).
DETECTORS: Mapping[AlertType, Detector] = {
    _T.DELAYED_LEADER_AND_ISR: Detector(_LOG, _REQUESTS, (detect_delayed_leader_and_isr,), Threshold(5_000, 30_000)),
    _T.LEADER_AND_ISR_NOT_COMPLETED: Detector(_LOG, _REQUESTS, (detect_leader_and_isr_not_completed,),
                                              Threshold(1, 1)),
    _T.CONTROL_REQUEST_QUEUED_BEHIND_DATA: Detector(_LOG, _ROWS, (detect_control_request_queued_behind_data,),
                                                    Threshold(100, 1_000)),
    _T.CONTROL_REQUEST_QUEUE_DELAY: Detector(
        _METRIC, _WINDOWS, (detect_queue_saturated_without_control_plane, detect_control_request_queue_time),
        Threshold(100, 1_000)),
    _T.LEADER_AND_ISR_TOTAL_TIME_HIGH: Detector(_METRIC, _WINDOWS, (detect_leader_and_isr_total_time_high,),
                                                Threshold(5_000, 30_000)),
    _T.CONTROL_PLANE_QUEUE_BACKLOG: Detector(_METRIC, _WINDOWS, (detect_control_plane_queue_backlog,),
                                             Threshold(0.5, 0.9)),
    _T.REQUEST_QUEUE_SATURATED: Detector(_METRIC, _WINDOWS, (detect_request_queue_saturated,),
                                         Threshold(0.8, 0.95)),
    _T.ACCEPTOR_BLOCKED: Detector(_METRIC, _WINDOWS, (detect_acceptor_blocked,), Threshold(0.05, 0.25)),
    _T.LOCK_CONTENTION: Detector(_LOG, _REQUESTS, (detect_lock_contention,), Threshold(1_000, 10_000)),
    _T.DELAYED_UPDATE_METADATA: Detector(_LOG, _REQUESTS, (detect_delayed_update_metadata,),
                                         Threshold(5_000, 30_000)),
    _T.DELAYED_STOP_REPLICA: Detector(_LOG, _REQUESTS, (detect_delayed_stop_replica,), Threshold(5_000, 30_000)),
    _T.STALE_BROKER_EPOCH: Detector(_LOG, _ROWS, (detect_stale_broker_epoch,), Threshold(1, 10)),
    _T.NETWORK_PROCESSOR_SATURATED: Detector(_METRIC, _WINDOWS, (detect_network_processor_saturated,),
                                             Threshold(0.3, 0.1, below=True)),
    _T.REQUEST_HANDLER_SATURATED: Detector(_METRIC, _WINDOWS, (detect_request_handler_saturated,),
                                           Threshold(0.3, 0.1, below=True)),
    _T.METADATA_APPLY_LAG: Detector(_METRIC, _WINDOWS, (detect_metadata_apply_lag,), Threshold(5_000, 30_000)),
    _T.CONTROLLER_EVENT_QUEUE_DELAY: Detector(_METRIC, _WINDOWS, (detect_controller_event_queue_delay,),
                                              Threshold(1_000, 5_000)),
    _T.BROKER_FENCED: Detector(_LOG, _ROWS, (detect_broker_fenced,), Threshold(1, 1)),
    _T.BROKER_HEARTBEAT_TIMEOUT: Detector(_LOG, _ROWS, (detect_broker_heartbeat_timeout,), Threshold(1, 5)),
    _T.QUORUM_UNSTABLE: Detector(_LOG, _ROWS, (detect_quorum_unstable,), Threshold(3, 6)),
    _T.UNCLEAN_LEADER_ELECTION: Detector(_METRIC, _WINDOWS, (detect_unclean_leader_election,), Threshold(1, 1)),
    _T.LEADER_ELECTED_FROM_ELR: Detector(_METRIC, _WINDOWS, (detect_leader_elected_from_elr,), Threshold(1, 10)),
    # the roll-safety verdict just before the shutdown: 1 = wait, 2 = unsafe (roll_detectors.VERDICT_VALUE)
    _T.ROLL_TOO_FAST: Detector(_LOG, DetectorInput.CONTROLLED_SHUTDOWNS, (detect_roll_too_fast,), Threshold(1, 2)),
}


def owned_types(query: DetectQuery) -> frozenset[str]:
    """The alert types `query` writes: it opens, updates and resolves these and no other."""
    return frozenset(t.value for t, d in DETECTORS.items() if d.query == query)


def _run(reads: DetectorInput, rows: Any, cfg: DetectionConfig) -> Rows:
    return [c for d in DETECTORS.values() if d.reads == reads for detect in d.functions for c in detect(rows, cfg)]


def metric_candidates(windows: pa.Table, cfg: DetectionConfig) -> Rows:
    """Every metric rule's candidates from metric windows (metric_detectors.metric_windows output, in Arrow)."""
    rows = frame(windows)
    if rows.is_empty():
        return []
    return _run(DetectorInput.METRIC_WINDOWS, rows.with_row_index("_wid"), cfg)


def log_candidates(state_changes: pa.Table | pl.DataFrame, requests: pa.Table | pl.DataFrame | None,
                   cfg: DetectionConfig, elections: pa.Table | pl.DataFrame | None = None,
                   granted: pa.Table | pl.DataFrame | None = None) -> Rows:
    """The log rules' candidates from a log batch's rows (LogRows: `requests` None reads no request_events)."""
    def polars(tbl: pa.Table | pl.DataFrame) -> pl.DataFrame:
        return tbl if isinstance(tbl, pl.DataFrame) else frame(tbl)

    rq = polars(REQUEST_EVENTS.to_arrow().empty_table() if requests is None else requests)
    batch = LogRows(polars(state_changes), rq, None if elections is None else polars(elections),
                    None if granted is None else polars(granted))
    return _run(DetectorInput.LOG_ROWS, batch, cfg)


def latency_candidates(latency: pa.Table, state_changes: pa.Table, cfg: DetectionConfig) -> Rows:
    """The latency rules' candidates from control_request_latency rows (`state_changes`: the lines of their time,
    ControlRequests)."""
    rows = frame(latency)
    if rows.is_empty():
        return []
    return _run(DetectorInput.CONTROL_REQUESTS, ControlRequests(rows, frame(state_changes)), cfg)
