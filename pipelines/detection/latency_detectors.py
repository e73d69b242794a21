"""Detectors over control-request latency rows (gold control_request_latency) and broker/request log events.

Each is a pure function: DataFrame(s) in, candidate-alert rows (common.CANDIDATE_DDL) out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.detection.common import candidates, level, setting, severity
from pipelines.detection.events import (
    CONTROL_REQUESTS,
    controller_elections,
    fetcher_events,
    partition_map_lock_waits,
    stale_epoch_events,
)
from pipelines.detection.in_flight import IN_FLIGHT_FLAG
from schemas.alerts import AlertType
from schemas.events import ControlRequest, LatencyStatus

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from pipelines.detection.config import DetectionConfig

__all__ = [
    "detect_control_request_queued_behind_data",
    "detect_delayed_leader_and_isr",
    "detect_delayed_stop_replica",
    "detect_delayed_update_metadata",
    "detect_leader_and_isr_not_completed",
    "detect_lock_contention",
    "detect_stale_broker_epoch",
]

# Rows with these flags are not the control plane's fault: the broker restarted or was declared gone by the
# controller, or the controller moved.
EXCUSED_FLAGS = r"broker_restart|broker_gone|controller_failover"


def _fmt(c: Column) -> Column:
    from pyspark.sql import functions as F

    return F.round(c).cast("long").cast("string")


def _not_excused() -> Column:
    from pyspark.sql import functions as F

    return ~F.coalesce(F.col("flags"), F.lit("")).rlike(EXCUSED_FLAGS)


def _latency_evidence() -> Column:
    from pyspark.sql import functions as F

    cols = ["request_key", "request", "controller_id", "controller_epoch", "correlation_id", "broker_id", "sent_ts",
            "handling_ts", "finished_ts", "end_to_end_ms", "queue_ms", "processing_ms", "lock_wait_ms",
            "controller_queue_ms", "partitions", "status", "pairing", "flags"]
    return F.to_json(F.struct(*[F.col(c) for c in cols]))


def _who(request: str) -> Column:
    """'LeaderAndIsr correlationId 17 from controller 1' (the id part only when known)."""
    from pyspark.sql import functions as F

    return F.concat(
        F.lit(request),
        F.when(F.col("correlation_id").isNotNull(), F.concat(F.lit(" correlationId "), F.col("correlation_id")))
        .otherwise(F.lit("")),
        F.lit(" from controller "), F.col("controller_id"),
    )


def _delayed(latency: DataFrame, cfg: DetectionConfig, request: ControlRequest, t: AlertType,
             what: str, completed_value: Column, completed_summary: Column) -> DataFrame:
    """A DELAYED_* alert of one request type, in its three moments (one alert: the later ones update it):

    * in flight, flag ``in_flight_alerted`` (pairing reported it when event time passed its start plus a level):
      value = its age so far, not counting the wait at the controller behind the previous request; at that time;
    * completed: value = `completed_value`, at its finish;
    * never completed after it was reported in flight: value = the timeout, at its start plus the timeout.
    """
    from pyspark.sql import functions as F

    status = F.col("status")
    reported = F.coalesce(F.col("flags"), F.lit("")).contains(IN_FLIGHT_FLAG)
    rows = latency.where((F.col("request") == request) & _not_excused() & (
        (status == LatencyStatus.COMPLETED)
        | (status.isin(LatencyStatus.IN_FLIGHT.value, LatencyStatus.NEVER_COMPLETED.value) & reported)))
    timeout_ms = setting(cfg, "never_completed_timeout_s") * 1000
    started = F.coalesce("sent_ts", "handling_ts")
    age = F.col("end_to_end_ms") - F.coalesce(F.col("controller_queue_ms"), F.lit(0.0))
    value = (F.when(status == LatencyStatus.IN_FLIGHT, age)
             .when(status == LatencyStatus.NEVER_COMPLETED, timeout_ms).otherwise(completed_value))
    ts = (F.when(status == LatencyStatus.IN_FLIGHT, started + F.make_dt_interval(secs=F.col("end_to_end_ms") / 1000))
          .when(status == LatencyStatus.NEVER_COMPLETED, started + F.make_dt_interval(secs=timeout_ms / 1000))
          .otherwise(F.coalesce("finished_ts", "handling_ts", "sent_ts")))
    summary = (
        F.when(status == LatencyStatus.IN_FLIGHT, F.concat(
            _who(request), F.lit(" to broker "), F.col("broker_id"), F.lit(" has been running for "), _fmt(value),
            F.lit(" ms and has not finished (in flight): " + what)))
        .when(status == LatencyStatus.NEVER_COMPLETED, F.concat(
            _who(request), F.lit(" to broker "), F.col("broker_id"), F.lit(" did not finish within "),
            _fmt(value / 1000), F.lit(" s: " + what)))
        .otherwise(completed_summary)
    )
    return candidates(
        rows, t, sev=severity(cfg, t, value), broker_id=F.col("broker_id"), listener=F.lit(None), ts=ts,
        value=value, threshold=level(cfg, t, "warning"), summary=summary, evidence=_latency_evidence(),
    )


def detect_delayed_leader_and_isr(latency: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """DELAYED_LEADER_AND_ISR: a LeaderAndIsr took longer than the threshold from send to finish, or is still
    running past it (reported in flight, then updated by its finish or its timeout)."""
    from pyspark.sql import functions as F

    value = F.col("end_to_end_ms")
    done = F.concat(
        _who(ControlRequest.LEADER_AND_ISR), F.lit(" took "), _fmt(value), F.lit(" ms on broker "), F.col("broker_id"),
        F.when(F.col("lock_wait_ms").isNotNull(),
               F.concat(F.lit(", "), _fmt(F.col("lock_wait_ms")), F.lit(" ms of it waiting for a lock"))).otherwise(""),
    )
    out = _delayed(latency, cfg, ControlRequest.LEADER_AND_ISR, AlertType.DELAYED_LEADER_AND_ISR,
                   "its partitions wait for their new leaders and followers", value, done)
    return out


def detect_leader_and_isr_not_completed(latency: DataFrame, cfg: DetectionConfig,
                                        state_changes: DataFrame | None = None) -> DataFrame:
    """LEADER_AND_ISR_NOT_COMPLETED: a LeaderAndIsr was sent (or started) and not finished within the timeout.

    Requests dropped by a broker restart or superseded by a controller failover are excused (flags). So is a request
    whose controller was replaced before the timeout: a controller with a higher epoch was elected in the cluster
    (controller.log `N successfully elected as the controller. Epoch incremented to E`; in ZK mode the old
    controller's queued requests die with it, and its key never sees the new epoch, so pairing cannot flag it).

    An `evicted` request (pairing stopped tracking it at its state bound) is not a never-completed one: its outcome is
    unknown, not a failure the broker showed, and the request the broker is stuck on is never the one evicted, so a
    stuck broker still raises this alert; an evicted row raises none (a backfill of a controller log whose broker log
    is not shipped yet would otherwise raise one per request)."""
    from pyspark.sql import functions as F

    rows = latency.where(
        (F.col("request") == ControlRequest.LEADER_AND_ISR) & (F.col("status") == LatencyStatus.NEVER_COMPLETED)
        & _not_excused()
    )
    timeout_ms = setting(cfg, "never_completed_timeout_s") * 1000
    started = F.coalesce("sent_ts", "handling_ts")
    if state_changes is not None:
        elected = controller_elections(state_changes).select(
            F.col("cluster").alias("e_cluster"), F.col("ts").alias("e_ts"),
            F.col("controller_epoch").alias("e_epoch"))
        rows = rows.join(elected, (F.col("e_cluster") == F.col("cluster"))
                         & (F.col("e_epoch") > F.coalesce(F.col("controller_epoch"), F.lit(-1)))
                         & (F.col("e_ts") >= started)
                         & (F.col("e_ts") <= started + F.make_dt_interval(secs=timeout_ms / 1000)), "left_anti")
    summary = F.concat(
        _who(ControlRequest.LEADER_AND_ISR), F.lit(" to broker "), F.col("broker_id"),
        F.when(F.col("handling_ts").isNotNull(), F.lit(" started but")).otherwise(F.lit(" was sent but")),
        F.lit(" did not finish within "), _fmt(timeout_ms / 1000), F.lit(" s (sent "),
        F.date_format(started, "yyyy-MM-dd HH:mm:ss.SSS"), F.lit(" UTC); check the broker's request handler"),
    )
    t = AlertType.LEADER_AND_ISR_NOT_COMPLETED
    return candidates(
        rows, t, sev=F.lit("critical"), broker_id=F.col("broker_id"), listener=F.lit(None),
        ts=started + F.make_dt_interval(secs=timeout_ms / 1000), value=timeout_ms, threshold=timeout_ms,
        summary=summary, evidence=_latency_evidence(),
    )


def detect_delayed_update_metadata(latency: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """DELAYED_UPDATE_METADATA: an UpdateMetadata took longer than the threshold to reach the broker's cache, or is
    still on its way past it (a broker that never gets it serves stale metadata until it does).

    The time it waited at the controller behind a previous (already alerted) request is not counted."""
    from pyspark.sql import functions as F

    value = F.col("end_to_end_ms") - F.coalesce(F.col("controller_queue_ms"), F.lit(0.0))
    done = F.concat(
        _who(ControlRequest.UPDATE_METADATA), F.lit(" reached broker "), F.col("broker_id"),
        F.lit("'s metadata cache after "), _fmt(value),
        F.lit(" ms: clients of that broker saw stale metadata meanwhile"),
    )
    out = _delayed(latency, cfg, ControlRequest.UPDATE_METADATA, AlertType.DELAYED_UPDATE_METADATA,
                   "the broker serves stale metadata meanwhile", value, done)
    return out


def detect_delayed_stop_replica(latency: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """DELAYED_STOP_REPLICA: a StopReplica took longer than the threshold, or is still running past it (its
    replicas keep fetching, or are not deleted, meanwhile). The wait at the controller is not counted."""
    from pyspark.sql import functions as F

    value = F.col("end_to_end_ms") - F.coalesce(F.col("controller_queue_ms"), F.lit(0.0))
    done = F.concat(_who(ControlRequest.STOP_REPLICA), F.lit(" took "), _fmt(value), F.lit(" ms on broker "),
                    F.col("broker_id"))
    out = _delayed(latency, cfg, ControlRequest.STOP_REPLICA, AlertType.DELAYED_STOP_REPLICA,
                   "its replicas are not stopped meanwhile", value, done)
    return out


def detect_lock_contention(latency: DataFrame, state_changes: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """LOCK_CONTENTION: a control request waited for a lock.

    Three forms: (a) lock wait (elapsed - (Finished - Handling), or the reference broker's explicit lock-wait line)
    above the threshold; (b) a LeaderAndIsr whose handling took longer than the threshold while the same broker's
    fetchers logged a burst of log-start-offset increments / checkpoint flushes (the KAFKA-6974 partitionMapLock
    signature: the handler waits for fetcher locks inside the request); (c) the reference broker's explicit
    `LeaderAndIsr waited N ms for partitionMapLock of ReplicaFetcherThread-...` lines logged on the broker while the
    request was handled (between its Handling and Finished lines; a broker handles one control request at a time,
    and the lines carry no correlation id), summed, above the threshold. That wait is inside the handling, so
    FACTS.md 1.3's `elapsed - (Finished - Handling)` (the replicaStateChangeLock wait) does not see it."""
    from pyspark.sql import functions as F

    t = AlertType.LOCK_CONTENTION
    warn = level(cfg, t, "warning")
    base = latency.where(F.col("request").isin(*CONTROL_REQUESTS)
                         & F.col("status").isin(LatencyStatus.COMPLETED.value, LatencyStatus.IN_FLIGHT.value))
    fetch = fetcher_events(state_changes).select(
        F.col("cluster").alias("f_cluster"), F.col("broker_id").alias("f_broker"), F.col("ts").alias("f_ts"))
    slow = base.alias("l").where(F.col("processing_ms") >= warn)
    during = (F.col("f_cluster") == F.col("cluster")) & (F.col("f_broker") == F.col("broker_id")) \
        & F.col("f_ts").between(F.col("handling_ts"), F.col("finished_ts"))
    burst = slow.join(fetch, during).groupBy("request_key").agg(F.count("*").alias("fetcher_lines"))
    map_waits = partition_map_lock_waits(state_changes).select(
        F.col("cluster").alias("f_cluster"), F.col("broker_id").alias("f_broker"), F.col("ts").alias("f_ts"),
        F.col("lock_wait_ms").alias("f_wait"))
    fetcher_lock = slow.join(map_waits, during).groupBy("request_key").agg(
        F.sum("f_wait").cast("double").alias("fetcher_lock_ms"))
    rows = base.join(burst, "request_key", "left").join(fetcher_lock, "request_key", "left").withColumn(
        "fetcher_lines", F.coalesce("fetcher_lines", F.lit(0))
    ).withColumn(
        "fetcher_driven", F.col("fetcher_lines") >= setting(cfg, "fetcher_burst_lines")
    )
    waited = F.coalesce("lock_wait_ms", F.lit(0.0)) + F.coalesce("fetcher_lock_ms", F.lit(0.0))
    value = F.when(F.col("fetcher_driven"), F.greatest(waited, F.col("processing_ms"))).otherwise(
        F.when(F.col("lock_wait_ms").isNotNull() | F.col("fetcher_lock_ms").isNotNull(), waited))
    summary = F.concat(
        F.col("request"), F.lit(" correlationId "), F.coalesce(F.col("correlation_id").cast("string"), F.lit("?")),
        F.lit(" on broker "), F.col("broker_id"), F.lit(" waited "), _fmt(F.coalesce("lock_wait_ms", F.lit(0.0))),
        F.lit(" ms for replicaStateChangeLock"),
        F.when(F.col("fetcher_lock_ms").isNotNull(), F.concat(
            F.lit(" and "), _fmt(F.col("fetcher_lock_ms")),
            F.lit(" ms for the replica fetchers' partitionMapLock (KAFKA-6974)"))).otherwise(F.lit("")),
        F.when(F.col("fetcher_driven"), F.concat(
            F.lit(" and ran "), _fmt(F.col("processing_ms")), F.lit(" ms while its fetchers logged "),
            F.col("fetcher_lines"), F.lit(" log-start-offset/checkpoint lines (fetcher partitionMapLock contention)"),
        )).otherwise(F.lit("")),
    )
    evidence = F.to_json(F.struct(
        F.from_json(_latency_evidence(), "map<string,string>").alias("request"), F.col("fetcher_lines"),
        F.col("fetcher_lock_ms")))
    return candidates(
        rows, t, sev=severity(cfg, t, value), broker_id=F.col("broker_id"), listener=F.lit(None),
        ts=F.coalesce("finished_ts", "handling_ts"), value=value, threshold=warn, summary=summary, evidence=evidence,
    )


def detect_control_request_queued_behind_data(requests: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """CONTROL_REQUEST_QUEUED_BEHIND_DATA (request-log form): a control request (LeaderAndIsr, UpdateMetadata,
    StopReplica) waited in the request queue of a listener that is not the control plane (KIP-291 not configured,
    or the controller fell back to the inter-broker listener). The metric form lives in metric_detectors."""
    from pyspark.sql import functions as F

    t = AlertType.CONTROL_REQUEST_QUEUED_BEHIND_DATA
    listeners = F.array(*[F.lit(v) for v in cfg.control_plane_listeners])
    per_cluster = [(n, cfg.for_cluster(n).control_plane_listeners) for n in sorted(cfg.overrides)]
    control = listeners
    if per_cluster:
        expr = None
        for n, ls in per_cluster:
            arr = F.array(*[F.lit(v) for v in ls])
            expr = F.when(F.col("cluster") == n, arr) if expr is None else expr.when(F.col("cluster") == n, arr)
        assert expr is not None
        control = expr.otherwise(listeners)
    rows = requests.where(
        F.col("api_name").isin(*CONTROL_REQUESTS) & F.col("listener").isNotNull()
        & ~F.array_contains(control, F.upper(F.col("listener")))
    )
    value = F.col("request_queue_time_ms")
    summary = F.concat(
        F.col("api_name"), F.lit(" correlationId "), F.col("correlation_id"), F.lit(" waited "), _fmt(value),
        F.lit(" ms in broker "), F.col("broker_id"), F.lit("'s shared request queue on data-plane listener "),
        F.col("listener"), F.lit(": configure control.plane.listener.name (KIP-291)"),
    )
    evidence = F.to_json(F.struct(*[F.col(c) for c in (
        "api_name", "correlation_id", "client_id", "listener", "total_time_ms", "request_queue_time_ms",
        "local_time_ms", "ts", "source", "source_offset")]))
    return candidates(
        rows, t, sev=severity(cfg, t, value), broker_id=F.col("broker_id"), listener=F.col("listener"), ts=F.col("ts"),
        value=value, threshold=level(cfg, t, "warning"), summary=summary, evidence=evidence,
    )


def detect_stale_broker_epoch(state_changes: DataFrame, requests: DataFrame, cfg: DetectionConfig) -> DataFrame:
    """STALE_BROKER_EPOCH: a broker rejected control requests for a stale broker epoch (KafkaApis log line, or a
    request-log control response with error code 77). One candidate per broker and batch, value = rejections."""
    from pyspark.sql import functions as F

    t = AlertType.STALE_BROKER_EPOCH
    logs = stale_epoch_events(state_changes).select(
        "cluster", "broker_id", "ts", F.col("message").alias("line"),
        F.col("broker_epoch"), F.col("current_broker_epoch"))
    errs = requests.where(F.col("api_name").isin(*CONTROL_REQUESTS) & (F.col("error_code") == 77)).select(
        "cluster", "broker_id", "ts",
        F.concat(F.col("api_name"), F.lit(" correlationId "), F.col("correlation_id"),
                 F.lit(" answered STALE_BROKER_EPOCH")).alias("line"),
        F.col("broker_epoch"), F.lit(None).cast("long").alias("current_broker_epoch"))
    agg = logs.unionByName(errs).groupBy("cluster", "broker_id").agg(
        F.count("*").alias("n"), F.max("ts").alias("last_ts"), F.min("ts").alias("first_ts"),
        F.slice(F.collect_list("line"), 1, 5).alias("lines"), F.max("broker_epoch").alias("request_epoch"),
        F.max("current_broker_epoch").alias("current_epoch"),
    )
    value = F.col("n")
    summary = F.concat(
        F.lit("Broker "), F.col("broker_id"), F.lit(" rejected "), F.col("n"),
        F.lit(" control request(s) as carrying a stale broker epoch"),
        F.when(F.col("current_epoch").isNotNull(), F.concat(
            F.lit(" (request epoch "), F.col("request_epoch"), F.lit(" < current "), F.col("current_epoch"),
            F.lit(")"))).otherwise(F.lit("")),
        F.lit(": the controller holds an old registration of this broker"),
    )
    evidence = F.to_json(F.struct("n", "first_ts", "last_ts", "lines", "request_epoch", "current_epoch"))
    return candidates(
        agg, t, sev=severity(cfg, t, value), broker_id=F.col("broker_id"), listener=F.lit(None), ts=F.col("last_ts"),
        value=value, threshold=level(cfg, t, "warning"), summary=summary, evidence=evidence,
    )
