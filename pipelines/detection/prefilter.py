"""Can a batch fire any detector at all? Cheap necessary conditions, checked before the detectors' Spark plans.

The latency detectors (:func:`pipelines.detection.detectors.latency_candidates`) are Spark plans whose construction
and run cost about two seconds of driver time even for one row; most pairing batches of a healthy cluster hold only
fast requests. :func:`latency_may_alert` is a necessary condition of every latency detector, checked on the
collected rows: when it is false no detector can produce a candidate and the Spark plans are skipped. It must stay
conservative: the lowest warning level over the base rules and every cluster override, and NaN counts as a
possible alert (Spark orders NaN above every number). :func:`log_rows_that_may_alert` is the same for the log
detectors (stale broker epochs, control requests queued behind data): the rows any of them could start from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from schemas.alerts import AlertType

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from pipelines.detection.config import DetectionConfig

__all__ = ["latency_may_alert", "log_rows_that_may_alert"]


def _lowest_warning(cfg: DetectionConfig, alert_type: str) -> float:
    configs = [cfg, *(cfg.for_cluster(c) for c in cfg.overrides)]
    return min(float(c.threshold(alert_type).warning) for c in configs)


def _reaches(values: Any, level: float) -> bool:
    import pyarrow.compute as pc

    if len(values) == 0:
        return False
    floats = pc.cast(values, "double")
    hit = pc.or_kleene(pc.greater_equal(floats, level), pc.is_nan(floats))
    return bool(pc.any(hit).as_py())


def latency_may_alert(tbl: pa.Table, cfg: DetectionConfig) -> bool:
    """False only when no row can pass DELAYED_LEADER_AND_ISR, LEADER_AND_ISR_NOT_COMPLETED,
    DELAYED_UPDATE_METADATA, DELAYED_STOP_REPLICA or LOCK_CONTENTION (each detector's own value against its lowest
    warning level; a request reported in flight has its age so far as end_to_end_ms, a value no smaller than the
    DELAYED_* detectors' own)."""
    import pyarrow.compute as pc

    if tbl.num_rows == 0:
        return False
    if bool(pc.any(pc.equal(tbl["status"], "never_completed")).as_py()):
        return True
    e2e = tbl["end_to_end_ms"]
    um_value = pc.subtract(pc.cast(e2e, "double"), pc.fill_null(pc.cast(tbl["controller_queue_ms"], "double"), 0.0))
    lock = _lowest_warning(cfg, AlertType.LOCK_CONTENTION)
    return (
        _reaches(e2e, _lowest_warning(cfg, AlertType.DELAYED_LEADER_AND_ISR))
        or _reaches(um_value, min(_lowest_warning(cfg, AlertType.DELAYED_UPDATE_METADATA),
                                  _lowest_warning(cfg, AlertType.DELAYED_STOP_REPLICA)))
        # LOCK_CONTENTION's value is the lock wait, or (fetcher-driven, explicit partitionMapLock waits) needs
        # processing_ms at the threshold first
        or _reaches(tbl["lock_wait_ms"], lock)
        or _reaches(tbl["processing_ms"], lock)
    )


def log_rows_that_may_alert(state_changes: DataFrame, requests: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """The rows from which STALE_BROKER_EPOCH or CONTROL_REQUEST_QUEUED_BEHIND_DATA (request-log form) could fire
    (one column, `_src`): stale-epoch lines, control responses with error 77, control requests whose queue time
    reaches the lowest warning level. Empty: :func:`pipelines.detection.detectors.log_candidates` finds nothing."""
    from pyspark.sql import functions as F

    from pipelines.detection.events import CONTROL_REQUESTS, stale_epoch_events

    queued = F.col("request_queue_time_ms").cast("double")
    lowest = _lowest_warning(cfg, AlertType.CONTROL_REQUEST_QUEUED_BEHIND_DATA)
    control = requests.where(F.col("api_name").isin(*CONTROL_REQUESTS) & (
        (F.col("error_code") == 77) | (queued >= F.lit(lowest)) | F.isnan(queued)))
    return stale_epoch_events(state_changes).select(F.lit("sc").alias("_src")).unionByName(
        control.select(F.lit("rq").alias("_src")))
