"""The latency rules: detectors over the control_request_latency rows a log batch's pairing changed.

Each is a pure function over polars frames (the latency rows pairing emitted, the state_change_events lines around
them, :class:`~pipelines.detection.candidates.ControlRequests`) returning candidate-alert rows (the fields of
lifecycle.Candidate). The detector registry (:mod:`pipelines.detection.registry`) runs them; the log rules over the
batch's own rows are in log_detectors.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from pipelines.detection.candidates import (
    ControlRequests,
    Evidence,
    Rows,
    candidate_rows,
    evidence,
    frame,
    half_up,
    level,
    setting,
    severity,
)
from pipelines.detection.events import CONTROL_REQUESTS, FETCHER_EVENTS, LOCK_WAIT_EVENTS
from pipelines.detection.in_flight import IN_FLIGHT_FLAG
from pipelines.detection.latency_rows import BREAKDOWN_COLUMNS
from schemas.alerts import AlertType
from schemas.events import ControlRequest, Event, LatencyStatus

if TYPE_CHECKING:
    import pyarrow as pa

    from pipelines.detection.config import DetectionConfig

__all__ = [
    "LATENCY_RULE_COLUMNS",
    "LATENCY_RULE_EVENTS",
    "detect_delayed_leader_and_isr",
    "detect_delayed_stop_replica",
    "detect_delayed_update_metadata",
    "detect_leader_and_isr_not_completed",
    "detect_lock_contention",
    "state_change_spans",
    "time_split",
]


# Rows with these flags are not the control plane's fault: the broker restarted or was declared gone by the
# controller, or the controller moved.
EXCUSED_FLAGS = r"broker_restart|broker_gone|controller_failover"
_LATENCY_EVIDENCE = ("request_key", "request", "controller_id", "controller_epoch", "correlation_id", "broker_id",
                     "sent_ts", "handling_ts", "finished_ts", "end_to_end_ms", "queue_ms", "processing_ms",
                     "lock_wait_ms", "controller_queue_ms", "partitions", "status", "pairing", "flags",
                     *(c for c in BREAKDOWN_COLUMNS if c != "listener"), "request_listener", "served_ms",
                     "witnesses")
# The state-change lines these rules read beside the requests (ControlRequests.state_changes): the controller's
# elections (a request sent by a replaced controller), the fetchers' log lines and lock waits of a slow handling.
LATENCY_RULE_EVENTS = (Event.CONTROLLER_ELECTED, *FETCHER_EVENTS, *LOCK_WAIT_EVENTS)
# ... and what of them they read.
LATENCY_RULE_COLUMNS = ("cluster", "broker_id", "ts", "event", "controller_epoch", "lock_wait_ms", "correlation_id")
# A component of a request's time shorter than this is left out of the sentence that splits it (it stays in the
# evidence): a millisecond of response send says nothing an operator acts on.
MIN_COMPONENT_MS = 1.0


def _is(events: tuple[Event, ...]) -> pl.Expr:
    return pl.col("event").is_in([e.value for e in events]).fill_null(False)


def _not_excused() -> pl.Expr:
    return ~pl.col("flags").fill_null("").str.contains(EXCUSED_FLAGS)


def _started() -> pl.Expr:
    return pl.coalesce("sent_ts", "handling_ts")


def _after(start: pl.Expr, ms: pl.Expr) -> pl.Expr:
    return start + pl.duration(microseconds=(ms * 1000).round().cast(pl.Int64))


def _who(r: Mapping[str, Any]) -> str:
    """'LeaderAndIsr correlationId 17 from controller 1' (the parts that are known)."""
    corr = "" if r["correlation_id"] is None else f" correlationId {r['correlation_id']}"
    ctl = "" if r["controller_id"] is None else f" from controller {r['controller_id']}"
    return f"{r['request']}{corr}{ctl}"


def _request_listener() -> dict[str, pl.Expr]:
    """A latency row's `listener` (the one its request arrived on, from the request log) kept as `request_listener`:
    an alert of a request names no listener (its id must not change when the request log's line comes later)."""
    return {"request_listener": pl.col("listener"), "listener": pl.lit(None, dtype=pl.String)}


def time_split(r: Mapping[str, Any]) -> str:
    """Where a control request's time went, from every witness its row has: the wait at the controller behind the
    broker's previous request; then the broker's own request-log breakdown (request queue, with the listener it
    came in on, handler, remote, response), or without a request log the state-change lines' spans (send to
    Handling, Handling to Finished); and the lock wait, saying when it is inferred from the lines' times.
    '' when the row has none of them."""
    def ms(key: str) -> float | None:
        v = r.get(key)
        return None if v is None else float(v)

    parts: list[str] = []
    ctl = ms("controller_queue_ms")
    if ctl is not None and ctl >= MIN_COMPONENT_MS:
        parts.append(f"{half_up(ctl)} ms queued at the controller behind the broker's previous request")
    lock = ms("lock_wait_ms")
    how = ", inferred from the log lines' times" if "lock_inferred" in (r.get("witnesses") or "") else ""
    waited = lock is not None and lock >= MIN_COMPONENT_MS
    lock_text = f" ({half_up(lock or 0.0)} ms of it waiting for a lock{how})" if waited else ""
    queued, local = ms("broker_queue_ms"), ms("local_ms")
    if queued is not None or local is not None:
        via = f" (listener {r['request_listener']})" if r.get("request_listener") else ""
        if queued is not None:
            parts.append(f"{half_up(queued)} ms in the broker's request queue{via}")
        if local is not None:
            parts.append(f"{half_up(local)} ms in the handler{lock_text}")
        elif lock_text:
            parts.append(lock_text.strip(" ()"))
        remote = ms("remote_ms")
        if remote is not None and remote >= MIN_COMPONENT_MS:
            parts.append(f"{half_up(remote)} ms waiting for other brokers")
        back = (ms("response_queue_ms") or 0.0) + (ms("response_send_ms") or 0.0)
        if back >= MIN_COMPONENT_MS:
            parts.append(f"{half_up(back)} ms returning the response")
        return ", ".join(parts)
    sent_to_handling, handling = ms("queue_ms"), ms("processing_ms")
    if sent_to_handling is not None and ctl is not None:  # the Sending line was logged when it was queued
        sent_to_handling = max(0.0, sent_to_handling - ctl)
    if sent_to_handling is not None:
        parts.append(f"{half_up(sent_to_handling)} ms from the controller's send to the broker's Handling line"
                     f"{lock_text}")
    if handling is not None:
        parts.append(f"{half_up(handling)} ms from Handling to its end")
    if sent_to_handling is None and lock_text:
        parts.append(lock_text.strip(" ()"))
    return ", ".join(parts)


def _controller_elections(state_changes: pl.DataFrame) -> pl.DataFrame:
    """controller.log `N successfully elected as the controller. Epoch incremented to E` rows (controller_epoch)."""
    return state_changes.filter(_is((Event.CONTROLLER_ELECTED,)) & pl.col("controller_epoch").is_not_null())


def _without_replaced(rows: pl.DataFrame, state_changes: pl.DataFrame | None, until: str) -> pl.DataFrame:
    """`rows` (open requests, judged at their column `until`) minus those whose controller was replaced meanwhile: a
    controller of a higher epoch was elected in the cluster between the request's start and `until`. In ZK mode the
    old controller's queued requests die with it, and its pairing key never sees the new epoch, so pairing cannot
    tell on its own."""
    if state_changes is None or rows.is_empty():
        return rows
    elected = _controller_elections(state_changes).select("cluster", e_ts=pl.col("ts"),
                                                          e_epoch=pl.col("controller_epoch"))
    rows = rows.with_row_index("_row")
    replaced = (rows.join(elected, on="cluster", how="inner")
                .filter((pl.col("e_epoch") > pl.col("controller_epoch").fill_null(-1))
                        & (pl.col("e_ts") >= _started()) & (pl.col("e_ts") <= pl.col(until)))
                .select("_row").unique())
    return rows.join(replaced, on="_row", how="anti").drop("_row")


def _delayed(latency: pl.DataFrame, cfg: DetectionConfig, request: ControlRequest, t: AlertType, what: str,
             completed_value: pl.Expr, completed_summary: Callable[[Mapping[str, Any]], str],
             state_changes: pl.DataFrame | None) -> Rows:
    """A DELAYED_* alert of one request type, in its three moments (one alert: the later ones update it):

    * in flight, flag ``in_flight_alerted`` (pairing reported it when event time passed its start plus a level):
      value = its age so far, not counting the wait at the controller behind the previous request; at that time;
    * completed: value = `completed_value`, at its finish;
    * never completed after it was reported in flight: value = the timeout, at its start plus the timeout.

    A request still open whose controller was replaced before that time raises nothing (:func:`_without_replaced`):
    it is not stuck on the broker, its controller is gone.
    """
    status = pl.col("status")
    reported = pl.col("flags").fill_null("").str.contains(IN_FLIGHT_FLAG, literal=True)
    rows = latency.filter((pl.col("request") == request.value) & _not_excused() & (
        (status == LatencyStatus.COMPLETED.value)
        | (status.is_in([LatencyStatus.IN_FLIGHT.value, LatencyStatus.NEVER_COMPLETED.value]) & reported)))
    timeout_ms = setting(cfg, "never_completed_timeout_s") * 1000
    age = pl.col("end_to_end_ms") - pl.col("controller_queue_ms").fill_null(0.0)
    value = (pl.when(status == LatencyStatus.IN_FLIGHT.value).then(age)
             .when(status == LatencyStatus.NEVER_COMPLETED.value).then(timeout_ms).otherwise(completed_value))
    ts = (pl.when(status == LatencyStatus.IN_FLIGHT.value).then(_after(_started(), pl.col("end_to_end_ms")))
          .when(status == LatencyStatus.NEVER_COMPLETED.value).then(_after(_started(), timeout_ms))
          .otherwise(pl.coalesce("finished_ts", "handling_ts", "sent_ts")))
    rows = rows.with_columns(value=value, ts=ts, severity=severity(cfg, t, value), threshold=level(cfg, t, "warning"),
                             **_request_listener())
    done = rows.filter(status == LatencyStatus.COMPLETED.value)
    rows = pl.concat([done, _without_replaced(rows.filter(status != LatencyStatus.COMPLETED.value), state_changes,
                                              "ts")])

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        if r["status"] == LatencyStatus.IN_FLIGHT.value:
            summary = (f"{_who(r)} to broker {r['broker_id']} has been running for {half_up(r['value'])} ms and has "
                       f"not finished (in flight): {what}")
        elif r["status"] == LatencyStatus.NEVER_COMPLETED.value:
            summary = (f"{_who(r)} to broker {r['broker_id']} did not finish within {half_up(r['value'] / 1000)} s: "
                       f"{what}")
        else:
            summary = completed_summary(r)
        return summary, evidence(r, _LATENCY_EVIDENCE)

    return candidate_rows(rows, t, describe)


def detect_delayed_leader_and_isr(rows: ControlRequests, cfg: DetectionConfig) -> Rows:
    """DELAYED_LEADER_AND_ISR: a LeaderAndIsr took longer than the threshold from send to finish, or is still
    running past it (reported in flight, then updated by its finish or its timeout). The time it waited at the
    controller behind the broker's previous request is not counted (that request's own alert has it), as for the
    other control requests; the summary says where the rest went (time_split)."""
    def done(r: Mapping[str, Any]) -> str:
        return _took(r, f"{_who(r)} took {half_up(r['value'])} ms on broker {r['broker_id']}")

    value = pl.col("end_to_end_ms") - pl.col("controller_queue_ms").fill_null(0.0)
    return _delayed(rows.latency, cfg, ControlRequest.LEADER_AND_ISR, AlertType.DELAYED_LEADER_AND_ISR,
                    "its partitions wait for their new leaders and followers", value, done, rows.state_changes)


def _took(r: Mapping[str, Any], head: str) -> str:
    split = time_split(r)
    return f"{head}: {split}" if split else head


def detect_leader_and_isr_not_completed(rows: ControlRequests, cfg: DetectionConfig) -> Rows:
    """LEADER_AND_ISR_NOT_COMPLETED: a LeaderAndIsr was sent (or started) and not finished within the timeout.

    Requests dropped by a broker restart or superseded by a controller failover are excused (flags). So is a request
    whose controller was replaced before the timeout: a controller with a higher epoch was elected in the cluster
    (controller.log `N successfully elected as the controller. Epoch incremented to E`; in ZK mode the old
    controller's queued requests die with it, and its key never sees the new epoch, so pairing cannot flag it).

    An `evicted` request (pairing stopped tracking it at its state bound) is not a never-completed one: its outcome is
    unknown, not a failure the broker showed, and the request the broker is stuck on is never the one evicted, so a
    stuck broker still raises this alert; an evicted row raises none (a backfill of a controller log whose broker log
    is not shipped yet would otherwise raise one per request)."""
    t = AlertType.LEADER_AND_ISR_NOT_COMPLETED
    timeout_ms = setting(cfg, "never_completed_timeout_s") * 1000
    stuck = rows.latency.filter((pl.col("request") == ControlRequest.LEADER_AND_ISR.value)
                                & (pl.col("status") == LatencyStatus.NEVER_COMPLETED.value) & _not_excused())
    stuck = stuck.with_columns(_started=_started(), _deadline=_after(_started(), timeout_ms))
    stuck = _without_replaced(stuck, rows.state_changes, "_deadline").with_columns(
        severity=pl.lit("critical"), ts=pl.col("_deadline"), value=timeout_ms, threshold=timeout_ms,
        **_request_listener())

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        how = " started but" if r["handling_ts"] is not None else " was sent but"
        sent: datetime = r["_started"]
        summary = (f"{_who(r)} to broker {r['broker_id']}{how} did not finish within {half_up(r['value'] / 1000)} s "
                   f"(sent {sent.strftime('%Y-%m-%d %H:%M:%S.')}{sent.microsecond // 1000:03d} UTC); check the "
                   "broker's request handler")
        return summary, evidence(r, _LATENCY_EVIDENCE)

    return candidate_rows(stuck, t, describe)


def detect_delayed_update_metadata(rows: ControlRequests, cfg: DetectionConfig) -> Rows:
    """DELAYED_UPDATE_METADATA: an UpdateMetadata took longer than the threshold to reach the broker's cache, or is
    still on its way past it (a broker that never gets it serves stale metadata until it does).

    The time it waited at the controller behind a previous (already alerted) request is not counted."""
    def done(r: Mapping[str, Any]) -> str:
        head = (f"{_who(r)} reached broker {r['broker_id']}'s metadata cache after {half_up(r['value'])} ms (clients "
                "of that broker saw stale metadata meanwhile)")
        return _took(r, head)

    value = pl.col("end_to_end_ms") - pl.col("controller_queue_ms").fill_null(0.0)
    return _delayed(rows.latency, cfg, ControlRequest.UPDATE_METADATA, AlertType.DELAYED_UPDATE_METADATA,
                    "the broker serves stale metadata meanwhile", value, done, rows.state_changes)


def detect_delayed_stop_replica(rows: ControlRequests, cfg: DetectionConfig) -> Rows:
    """DELAYED_STOP_REPLICA: a StopReplica took longer than the threshold, or is still running past it (its
    replicas keep fetching, or are not deleted, meanwhile). The wait at the controller is not counted."""
    def done(r: Mapping[str, Any]) -> str:
        return _took(r, f"{_who(r)} took {half_up(r['value'])} ms on broker {r['broker_id']}")

    value = pl.col("end_to_end_ms") - pl.col("controller_queue_ms").fill_null(0.0)
    return _delayed(rows.latency, cfg, ControlRequest.STOP_REPLICA, AlertType.DELAYED_STOP_REPLICA,
                    "its replicas are not stopped meanwhile", value, done, rows.state_changes)


def _during(slow: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """`lines` (f_cluster, f_broker, f_ts, ...) logged on each slow request's broker between its Handling and
    Finished lines, with the request's key."""
    return (slow.select("request_key", "cluster", "broker_id", "handling_ts", "finished_ts")
            .join(lines, left_on=["cluster", "broker_id"], right_on=["f_cluster", "f_broker"], how="inner")
            .filter((pl.col("f_ts") >= pl.col("handling_ts")) & (pl.col("f_ts") <= pl.col("finished_ts"))))


def detect_lock_contention(requests: ControlRequests, cfg: DetectionConfig) -> Rows:
    """LOCK_CONTENTION: a control request waited for a lock.

    Three forms: (a) lock wait (elapsed - (Finished - Handling), or the reference broker's explicit lock-wait line)
    above the threshold; (b) a LeaderAndIsr whose handling took longer than the threshold while the same broker's
    fetchers logged a burst of log-start-offset increments / checkpoint flushes (the KAFKA-6974 partitionMapLock
    signature: the handler waits for fetcher locks inside the request); (c) the reference broker's explicit
    `LeaderAndIsr waited N ms for partitionMapLock of ReplicaFetcherThread-...` lines logged on the broker while the
    request was handled (between its Handling and Finished lines; a broker handles one control request at a time,
    and the lines carry no correlation id), summed, above the threshold. That wait is inside the handling, so
    FACTS.md 1.3's `elapsed - (Finished - Handling)` (the replicaStateChangeLock wait) does not see it."""
    t = AlertType.LOCK_CONTENTION
    warn = level(cfg, t, "warning")
    state_changes = requests.state_changes
    base = requests.latency.filter(pl.col("request").is_in(CONTROL_REQUESTS) & pl.col("status").is_in(
        [LatencyStatus.COMPLETED.value, LatencyStatus.IN_FLIGHT.value]))
    slow = base.filter(pl.col("processing_ms") >= warn)
    # fetcher/log activity lines (log-start-offset increments, epoch-cache/checkpoint flushes), FACTS.md 6
    fetch = state_changes.filter(_is(FETCHER_EVENTS)).select(
        f_cluster="cluster", f_broker="broker_id", f_ts="ts")
    # the reference broker's partitionMapLock lines: lock-wait events without a correlation id (the
    # replicaStateChangeLock line names its request's)
    map_waits = state_changes.filter(_is(LOCK_WAIT_EVENTS) & pl.col("lock_wait_ms").is_not_null()
                                     & pl.col("correlation_id").is_null()).select(
        f_cluster="cluster", f_broker="broker_id", f_ts="ts", f_wait="lock_wait_ms")
    burst = _during(slow, fetch).group_by("request_key").agg(fetcher_lines=pl.len())
    fetcher_lock = _during(slow, map_waits).group_by("request_key").agg(
        fetcher_lock_ms=pl.col("f_wait").sum().cast(pl.Float64))
    rows = (base.join(burst, on="request_key", how="left").join(fetcher_lock, on="request_key", how="left")
            .with_columns(pl.col("fetcher_lines").fill_null(0).cast(pl.Int64))
            .with_columns(fetcher_driven=pl.col("fetcher_lines") >= setting(cfg, "fetcher_burst_lines")))
    waited = pl.col("lock_wait_ms").fill_null(0.0) + pl.col("fetcher_lock_ms").fill_null(0.0)
    value = (pl.when(pl.col("fetcher_driven")).then(pl.max_horizontal(waited, pl.col("processing_ms")))
             .when(pl.col("lock_wait_ms").is_not_null() | pl.col("fetcher_lock_ms").is_not_null()).then(waited))
    rows = rows.with_columns(value=value, severity=severity(cfg, t, value), threshold=warn,
                             ts=pl.coalesce("finished_ts", "handling_ts"), **_request_listener())

    def describe(r: Mapping[str, Any]) -> tuple[str, Evidence]:
        corr = "?" if r["correlation_id"] is None else r["correlation_id"]
        summary = (f"{r['request']} correlationId {corr} on broker {r['broker_id']} waited "
                   f"{half_up(r['lock_wait_ms'] or 0.0)} ms for replicaStateChangeLock")
        if r["fetcher_lock_ms"] is not None:
            summary += (f" and {half_up(r['fetcher_lock_ms'])} ms for the replica fetchers' partitionMapLock "
                        "(KAFKA-6974)")
        if r["fetcher_driven"]:
            summary += (f" and ran {half_up(r['processing_ms'])} ms while its fetchers logged {r['fetcher_lines']} "
                        "log-start-offset/checkpoint lines (fetcher partitionMapLock contention)")
        request = {f: r.get(f) for f in _LATENCY_EVIDENCE}
        return summary, evidence(r, ("fetcher_lines", "fetcher_lock_ms"), request=request)

    return candidate_rows(rows, t, describe)


def state_change_spans(latency: pa.Table, cfg: DetectionConfig) -> list[tuple[str, datetime, datetime]]:
    """Per cluster, the stretch of state_change_events that `latency_candidates` reads for these rows: from the
    earliest request's start to the latest of its finish and its start plus the never-completed timeout (the lines
    logged while a request was handled, the elections before its deadline)."""
    rows = frame(latency)
    if rows.is_empty():
        return []
    start = pl.coalesce("sent_ts", "handling_ts", "finished_ts")
    end = pl.max_horizontal(pl.col("finished_ts"), _after(start, setting(cfg, "never_completed_timeout_s") * 1000))
    spans = (rows.filter(pl.col("cluster").is_not_null() & start.is_not_null())
             .group_by("cluster").agg(lo=start.min(), hi=end.max()).sort("cluster"))
    return [(r["cluster"], r["lo"], r["hi"]) for r in spans.iter_rows(named=True)]
