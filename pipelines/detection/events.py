"""Silver rows -> the events detection understands (pure Column/DataFrame functions).

Detection trusts silver: the parsers give every Kafka log line they recognise one canonical event name
(:class:`schemas.events.Event`) and fill its columns (request, correlation id, controller, epoch, target brokers,
partitions, times); this module picks rows by those names and reads those columns. It never looks at `message`.
A line the parsers do not recognise has no event and plays no part here (it stays in bronze, counted).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F

from pipelines.detection.latency_rows import SERVED_BREAKDOWN
from schemas.events import ControlRequest, Event

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "CONTROL_REQUESTS",
    "FETCHER_EVENTS",
    "LOCK_WAIT_EVENTS",
    "METRIC_HEARTBEAT_LAG_S",
    "PAIRING_INPUT_DDL",
    "STALE_EVENTS",
    "heartbeats",
    "pairing_input",
    "served_input",
]

CONTROL_REQUESTS: tuple[str, ...] = tuple(r.value for r in ControlRequest)

# The events (schemas.events) that mean each pairing kind.
_E = Event
SEND_EVENTS = (_E.LEADER_AND_ISR_SENDING, _E.UPDATE_METADATA_SENDING, _E.STOP_REPLICA_SENDING)
# TRACE controllers (2.2-2.5) log one Sending line per PARTITION; a burst of them is one request (pairing.py)
PARTITION_SEND_EVENTS = (_E.LEADER_AND_ISR_PARTITION_SENDING, _E.UPDATE_METADATA_PARTITION_SENDING,
                         _E.STOP_REPLICA_PARTITION_SENDING)
HANDLING_EVENTS = (_E.LEADER_AND_ISR_HANDLING, _E.STOP_REPLICA_HANDLING, _E.BECOME_LEADER_STARTED,
                   _E.BECOME_FOLLOWER_STARTED)
# 2.2-2.5 brokers (TRACE) log a request's per-partition Received lines before it waits for replicaStateChangeLock
RECEIVED_EVENTS = (_E.LEADER_AND_ISR_PARTITION_RECEIVED,)
FINISHED_EVENTS = (_E.LEADER_AND_ISR_FINISHED,)
# 2.2-2.5 brokers (TRACE) log no summary finish: a request ends with its last per-partition completion line
PART_DONE_EVENTS = (_E.BECOME_LEADER_COMPLETED, _E.BECOME_FOLLOWER_COMPLETED, _E.LEADER_INFO_CACHED,
                    _E.PARTITION_DELETED_FROM_CACHE)
APPLIED_EVENTS = (_E.METADATA_CACHE_UPDATED,)
RESPONSE_EVENTS = (_E.RESPONSE_RECEIVED,)
# controller.log `Newly added brokers: .., deleted brokers: 3, bounced brokers: 2, ..`: the controller dropped the
# queued requests of the deleted brokers (`target_brokers`; pairing kind `gone`)
GONE_EVENTS = (_E.BROKER_CHANGE,)
LOCK_WAIT_EVENTS = (_E.LOCK_WAIT,)
STALE_EVENTS = (_E.STALE_BROKER_EPOCH,)
FETCHER_EVENTS = (_E.LOG_START_OFFSET_INCREMENTED, _E.EPOCH_CACHE_CLEARED, _E.EPOCH_CACHE_TRUNCATED,
                  _E.LEADER_EPOCH_CHECKPOINT_FLUSHED)
# Controller lines are keyed by the broker they target, broker lines by the broker whose log holds them.
_TARGETED = (*SEND_EVENTS, *PARTITION_SEND_EVENTS, *RESPONSE_EVENTS)

PAIRING_INPUT_DDL = (
    "cluster STRING, controller_id INT, broker_id INT, kind STRING, ts TIMESTAMP, request STRING, "
    "correlation_id LONG, controller_epoch INT, partitions INT, elapsed_ms LONG, lock_wait_ms LONG, detail STRING"
)


def _is(events: tuple[Event, ...]) -> Column:
    return F.coalesce(F.col("event"), F.lit("")).isin(*[e.value for e in events])


def classify() -> Column:
    """The pairing kind of a state_change_events row, or NULL for rows pairing does not use."""
    return (
        F.when(_is(SEND_EVENTS) | _is(PARTITION_SEND_EVENTS), F.lit("send"))
        .when(_is(FINISHED_EVENTS), F.lit("finished"))
        .when(_is(HANDLING_EVENTS), F.lit("handling"))
        .when(_is(RECEIVED_EVENTS), F.lit("received"))
        .when(_is(APPLIED_EVENTS), F.lit("applied"))
        .when(_is(PART_DONE_EVENTS), F.lit("part_done"))
        .when(_is(RESPONSE_EVENTS), F.lit("response"))
        # the replicaStateChangeLock wait of one request (it names its correlation id); a wait without one is a
        # fetcher's partitionMapLock inside the request being handled (partition_map_lock_waits)
        .when(_is(LOCK_WAIT_EVENTS) & F.col("lock_wait_ms").isNotNull(), F.lit("lock_wait"))
        .when(_is(GONE_EVENTS), F.lit("gone"))
    )


def _broker_list(col: str) -> Column:
    """`target_brokers` ('0,1') -> array<int>."""
    parts = F.filter(F.split(F.coalesce(F.col(col), F.lit("")), ","), lambda s: F.trim(s) != F.lit(""))
    return F.transform(parts, lambda s: F.trim(s).try_cast("int"))


def pairing_input(state_changes: DataFrame) -> DataFrame:
    """state_change_events -> pairing events (PAIRING_INPUT_DDL), one per (event, target broker).

    Controller lines are keyed by their TARGET broker (`target_broker_id`, or each of `target_brokers` for an
    UpdateMetadata sent to a broker set); broker lines by the broker whose log holds them; a broker change by each
    deleted broker. A per-partition Sending or Received line carries its partition as `detail`.
    """
    kind = classify()
    single = F.col("target_broker_id")
    targets = (
        F.when(_is(_TARGETED), F.when(single.isNotNull(), F.array(single)).otherwise(_broker_list("target_brokers")))
        .when(kind == "gone", _broker_list("target_brokers"))
        .otherwise(F.array(F.col("broker_id")))
    )
    detail = F.when(_is(PARTITION_SEND_EVENTS) | _is(RECEIVED_EVENTS),
                    F.concat_ws("-", F.col("topic"), F.col("partition").cast("string")))
    out = state_changes.select(
        "cluster",
        F.col("controller_id").cast("int").alias("controller_id"),
        F.explode(targets).alias("broker_id"),
        kind.alias("kind"),
        "ts",
        F.col("request").alias("request"),
        F.col("correlation_id").cast("long").alias("correlation_id"),
        F.col("controller_epoch").cast("int").alias("controller_epoch"),
        F.col("partitions").cast("int").alias("partitions"),
        F.col("elapsed_ms").cast("long").alias("elapsed_ms"),
        F.col("lock_wait_ms").cast("long").alias("lock_wait_ms"),
        detail.alias("detail"),
    )
    # Broker-side lines pair by correlation id: per-partition 2.2-2.5 lines without one (`Handling stop replica
    # (delete=false) for partition t-0`) are not requests. A lock-wait line may omit the request name.
    needs_corr = F.col("kind").isin("received", "handling", "finished", "applied", "part_done", "response",
                                    "lock_wait")
    return out.where(
        F.col("kind").isNotNull() & F.col("ts").isNotNull() & F.col("broker_id").isNotNull()
        & F.col("controller_id").isNotNull()
        & (F.col("request").isin(*CONTROL_REQUESTS) | ((F.col("kind") == "lock_wait") & F.col("request").isNull())
           | (F.col("kind") == "gone"))
        & (~needs_corr | F.col("correlation_id").isNotNull())
    )


def served_input(requests: DataFrame) -> DataFrame:
    """request_events -> pairing events (PAIRING_INPUT_DDL) of kind `served`: each control request the broker's
    request log shows answered (kafka-request.log `Completed request`, text or JSON), keyed by the broker whose log
    holds it and the controller that sent it, `elapsed_ms` its totalTime. The second witness of a request's end,
    and the broker's own breakdown of its time (`detail`: JSON of latency_rows.SERVED_BREAKDOWN, nulls left out)."""
    out = requests.select(
        "cluster",
        F.col("controller_id").cast("int").alias("controller_id"),
        F.col("broker_id").cast("int").alias("broker_id"),
        F.lit("served").alias("kind"),
        "ts",
        F.col("api_name").alias("request"),
        F.col("correlation_id").cast("long").alias("correlation_id"),
        F.col("controller_epoch").cast("int").alias("controller_epoch"),
        F.lit(None).cast("int").alias("partitions"),
        F.round(F.col("total_time_ms")).cast("long").alias("elapsed_ms"),
        F.lit(None).cast("long").alias("lock_wait_ms"),
        F.to_json(F.struct(*[F.col(src).alias(name) for src, name in SERVED_BREAKDOWN])).alias("detail"),
    )
    return out.where(
        F.col("request").isin(*CONTROL_REQUESTS) & F.col("ts").isNotNull() & F.col("broker_id").isNotNull()
        & F.col("controller_id").isNotNull() & F.col("correlation_id").isNotNull()
    )


# Metric samples are stamped when reported or scraped, and reach silver within a trigger; a busy broker's log lines
# reach it later (the file ingest's batches of a restart's burst). As pairing heartbeats they count this much in
# the past, so they cannot push the watermark past log lines still on their way: with them at face value, a demo's
# pairing dropped 338-858 lines a run as late (a fetcher-lock LeaderAndIsr's Finished among them: its
# LOCK_CONTENTION was missed).
METRIC_HEARTBEAT_LAG_S = 20.0


def heartbeats(df: DataFrame, lag_s: float = 0.0) -> DataFrame:
    """Any timestamped silver rows (metric samples, any log line) as heartbeat events: they move event time
    forward so a quiet cluster still times out its never-completed requests, and show until when their broker was
    alive (the in-flight reports' bound). Controller -1, the row's own broker (-1 for a row of none). `lag_s`
    moves them back in time: a source whose rows arrive ahead of the log lines vouches only for that long ago as
    event time goes; `elapsed_ms` carries the lag, so the row's own time still says when its broker was alive."""
    ts = F.col("ts") if not lag_s else (F.col("ts") - F.expr(f"INTERVAL {int(lag_s * 1000)} MILLISECONDS"))
    return df.where(F.col("ts").isNotNull()).select(
        "cluster",
        F.lit(-1).cast("int").alias("controller_id"),
        F.coalesce(F.col("broker_id").cast("int"), F.lit(-1)).alias("broker_id"),
        F.lit("heartbeat").alias("kind"),
        ts.alias("ts"),
        *[F.lit(None).cast(t).alias(n) for n, t in (("request", "string"), ("correlation_id", "long"),
                                                    ("controller_epoch", "int"), ("partitions", "int"))],
        F.lit(int(lag_s * 1000)).cast("long").alias("elapsed_ms"),
        *[F.lit(None).cast(t).alias(n) for n, t in (("lock_wait_ms", "long"), ("detail", "string"))],
    )
