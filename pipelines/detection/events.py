"""Silver rows -> the events pairing understands (pure polars over the batch's Arrow rows).

Detection trusts silver: the parsers give every Kafka log line they recognise one canonical event name
(:class:`schemas.events.Event`) and fill its columns (request, correlation id, controller, epoch, target brokers,
partitions, times); this module picks rows by those names and reads those columns. It never looks at `message`.
A line the parsers do not recognise has no event and plays no part here (it stays in bronze, counted).

`pairing_events(state_changes, requests)` gives one frame of :data:`PAIRING_SCHEMA`: controller sends, broker
handling and finishes, the request log's witness of each control request's end (`served`), and a heartbeat per
(cluster, broker) of the batch (its latest row: until when the broker was alive, and how far event time moved).
`metric_heartbeats` turns the metric family's latest sample per broker into heartbeats of the same shape.
"""

from __future__ import annotations

import polars as pl
import pyarrow as pa

from pipelines.detection.latency_rows import SERVED_BREAKDOWN
from schemas.events import ControlRequest, Event

__all__ = [
    "CONTROL_REQUESTS",
    "FETCHER_EVENTS",
    "LOCK_WAIT_EVENTS",
    "METRIC_HEARTBEAT_LAG_S",
    "PAIRED_REQUEST_COLUMNS",
    "PAIRED_STATE_CHANGE_COLUMNS",
    "PAIRING_DDL",
    "PAIRING_SCHEMA",
    "STALE_EVENTS",
    "metric_heartbeats",
    "pairing_events",
    "touched_brokers",
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
# The kinds a broker-side line pairs by correlation id with (a per-partition 2.2-2.5 line without one is no request).
_NEEDS_CORRELATION = ("received", "handling", "finished", "applied", "part_done", "response", "lock_wait")

# What pairing reads of a state_change_events row and of a request_events row.
PAIRED_STATE_CHANGE_COLUMNS = ("cluster", "broker_id", "controller_id", "target_broker_id", "target_brokers", "event",
                               "ts", "request", "correlation_id", "controller_epoch", "partitions", "elapsed_ms",
                               "lock_wait_ms", "topic", "partition")
PAIRED_REQUEST_COLUMNS = ("cluster", "broker_id", "controller_id", "ts", "api_name", "correlation_id",
                          "controller_epoch", "total_time_ms", *(src for src, _ in SERVED_BREAKDOWN))

PAIRING_SCHEMA = pa.schema([
    ("cluster", pa.string()), ("controller_id", pa.int32()), ("broker_id", pa.int32()), ("kind", pa.string()),
    ("ts", pa.timestamp("us", "UTC")), ("request", pa.string()), ("correlation_id", pa.int64()),
    ("controller_epoch", pa.int32()), ("partitions", pa.int32()), ("elapsed_ms", pa.int64()),
    ("lock_wait_ms", pa.int64()), ("detail", pa.string()),
])
_COLUMNS = PAIRING_SCHEMA.names
# PAIRING_SCHEMA in Spark's DDL (a Spark job that makes the events on the executors).
PAIRING_DDL = ("cluster string, controller_id int, broker_id int, kind string, ts timestamp, request string, "
               "correlation_id long, controller_epoch int, partitions int, elapsed_ms long, lock_wait_ms long, "
               "detail string")

# Metric samples are stamped when reported or scraped, and reach silver within a trigger; a busy broker's log lines
# reach it later (the file ingest's batches of a restart's burst). As pairing heartbeats they count this much in
# the past, so they cannot push event time past log lines still on their way: with them at face value, a demo's
# pairing dropped 338-858 lines a run as late (a fetcher-lock LeaderAndIsr's Finished among them: its
# LOCK_CONTENTION was missed).
METRIC_HEARTBEAT_LAG_S = 20.0


def _is(events: tuple[Event, ...]) -> pl.Expr:
    return pl.col("event").fill_null("").is_in([e.value for e in events])


def _kind() -> pl.Expr:
    """The pairing kind of a state_change_events row, or null for rows pairing does not use."""
    return (
        pl.when(_is(SEND_EVENTS) | _is(PARTITION_SEND_EVENTS)).then(pl.lit("send"))
        .when(_is(FINISHED_EVENTS)).then(pl.lit("finished"))
        .when(_is(HANDLING_EVENTS)).then(pl.lit("handling"))
        .when(_is(RECEIVED_EVENTS)).then(pl.lit("received"))
        .when(_is(APPLIED_EVENTS)).then(pl.lit("applied"))
        .when(_is(PART_DONE_EVENTS)).then(pl.lit("part_done"))
        .when(_is(RESPONSE_EVENTS)).then(pl.lit("response"))
        # the replicaStateChangeLock wait of one request (it names its correlation id); a wait without one is a
        # fetcher's partitionMapLock inside the request being handled (partition_map_lock_waits)
        .when(_is(LOCK_WAIT_EVENTS) & pl.col("lock_wait_ms").is_not_null()).then(pl.lit("lock_wait"))
        .when(_is(GONE_EVENTS)).then(pl.lit("gone"))
        .otherwise(pl.lit(None, pl.String))
    )


def _broker_list(col: str) -> pl.Expr:
    """`target_brokers` ('0,1') -> list[int32], blanks and non-numbers left out."""
    parts = pl.col(col).fill_null("").str.split(",").list.eval(pl.element().str.strip_chars())
    return parts.list.eval(pl.element().filter(pl.element() != "").cast(pl.Int32, strict=False).drop_nulls())


def _frame(table: pa.Table) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def _from_state_changes(sc: pl.DataFrame) -> pl.DataFrame:
    """state_change_events rows -> pairing events, one per (event, target broker).

    Controller lines are keyed by their TARGET broker (`target_broker_id`, or each of `target_brokers` for an
    UpdateMetadata sent to a broker set); broker lines by the broker whose log holds them; a broker change by each
    deleted broker. A per-partition Sending or Received line carries its partition as `detail`."""
    kind = _kind()
    single = pl.col("target_broker_id").cast(pl.Int32)
    targets = (
        pl.when(_is(_TARGETED)).then(
            pl.when(single.is_not_null()).then(pl.concat_list(single)).otherwise(_broker_list("target_brokers")))
        .when(kind == "gone").then(_broker_list("target_brokers"))
        .otherwise(pl.concat_list(pl.col("broker_id").cast(pl.Int32)))
    )
    detail = (pl.when(_is(PARTITION_SEND_EVENTS) | _is(RECEIVED_EVENTS))
              .then(pl.concat_str([pl.col("topic"), pl.col("partition").cast(pl.String)], separator="-",
                                  ignore_nulls=True))
              .otherwise(pl.lit(None, pl.String)))
    out = sc.select(
        pl.col("cluster"),
        pl.col("controller_id").cast(pl.Int32),
        targets.alias("broker_id"),
        kind.alias("kind"),
        pl.col("ts"),
        pl.col("request").cast(pl.String),
        pl.col("correlation_id").cast(pl.Int64),
        pl.col("controller_epoch").cast(pl.Int32),
        pl.col("partitions").cast(pl.Int32),
        pl.col("elapsed_ms").cast(pl.Int64),
        pl.col("lock_wait_ms").cast(pl.Int64),
        detail.alias("detail"),
    ).explode("broker_id")
    needs_corr = pl.col("kind").is_in(list(_NEEDS_CORRELATION))
    return out.filter(
        pl.col("kind").is_not_null() & pl.col("ts").is_not_null() & pl.col("broker_id").is_not_null()
        & pl.col("controller_id").is_not_null()
        & (pl.col("request").is_in(list(CONTROL_REQUESTS))
           | ((pl.col("kind") == "lock_wait") & pl.col("request").is_null()) | (pl.col("kind") == "gone")).fill_null(
               False)
        & (~needs_corr | pl.col("correlation_id").is_not_null())
    )


def _from_requests(rq: pl.DataFrame) -> pl.DataFrame:
    """request_events rows -> pairing events of kind `served`: each control request the broker's request log shows
    answered (kafka-request.log `Completed request`, text or JSON), keyed by the broker whose log holds it and the
    controller that sent it, `elapsed_ms` its totalTime (rounded half up). The second witness of a request's end,
    and the broker's own breakdown of its time (`detail`: JSON of latency_rows.SERVED_BREAKDOWN)."""
    detail = pl.struct([pl.col(src).alias(name) for src, name in SERVED_BREAKDOWN]).struct.json_encode()
    out = rq.select(
        pl.col("cluster"),
        pl.col("controller_id").cast(pl.Int32),
        pl.col("broker_id").cast(pl.Int32),
        pl.lit("served").alias("kind"),
        pl.col("ts"),
        pl.col("api_name").cast(pl.String).alias("request"),
        pl.col("correlation_id").cast(pl.Int64),
        pl.col("controller_epoch").cast(pl.Int32),
        pl.lit(None, pl.Int32).alias("partitions"),
        (pl.col("total_time_ms") + 0.5).floor().cast(pl.Int64).alias("elapsed_ms"),
        pl.lit(None, pl.Int64).alias("lock_wait_ms"),
        detail.alias("detail"),
    )
    return out.filter(
        pl.col("request").is_in(list(CONTROL_REQUESTS)).fill_null(False) & pl.col("ts").is_not_null()
        & pl.col("broker_id").is_not_null() & pl.col("controller_id").is_not_null()
        & pl.col("correlation_id").is_not_null()
    )


def _heartbeats(rows: pl.DataFrame, lag_ms: int = 0) -> pl.DataFrame:
    """The latest timestamped row of each (cluster, broker) as a heartbeat event (controller -1; broker -1 for rows
    of none): it moves event time forward, so a quiet cluster still times out its never-completed requests, and
    shows until when its broker was alive (the in-flight reports' bound). `lag_ms` moves it back in time: a source
    whose rows arrive ahead of the log lines vouches only for that long ago as event time goes; `elapsed_ms` carries
    the lag, so the row's own time still says when its broker was alive."""
    latest = (rows.filter(pl.col("ts").is_not_null())
              .group_by(pl.col("cluster"), pl.col("broker_id").cast(pl.Int32).fill_null(-1))
              .agg(pl.col("ts").max()))
    return latest.select(
        pl.col("cluster"),
        pl.lit(-1, pl.Int32).alias("controller_id"),
        pl.col("broker_id"),
        pl.lit("heartbeat").alias("kind"),
        (pl.col("ts") - pl.duration(milliseconds=lag_ms)).alias("ts"),
        pl.lit(None, pl.String).alias("request"),
        pl.lit(None, pl.Int64).alias("correlation_id"),
        pl.lit(None, pl.Int32).alias("controller_epoch"),
        pl.lit(None, pl.Int32).alias("partitions"),
        pl.lit(lag_ms, pl.Int64).alias("elapsed_ms"),
        pl.lit(None, pl.Int64).alias("lock_wait_ms"),
        pl.lit(None, pl.String).alias("detail"),
    )


def _conform(frames: list[pl.DataFrame]) -> pa.Table:
    parts = [f.select(_COLUMNS).to_arrow().cast(PAIRING_SCHEMA) for f in frames if f.height]
    return pa.concat_tables(parts) if parts else PAIRING_SCHEMA.empty_table()


def pairing_events(state_changes: pa.Table, requests: pa.Table) -> pa.Table:
    """A batch's state_change_events and request_events rows -> pairing events (:data:`PAIRING_SCHEMA`): sends,
    broker lines, the request log's `served` lines, and one heartbeat per (cluster, broker) of the batch."""
    frames: list[pl.DataFrame] = []
    for table, convert in ((state_changes, _from_state_changes), (requests, _from_requests)):
        if table.num_rows:
            rows = _frame(table)
            frames += [convert(rows), _heartbeats(rows)]
    return _conform(frames)


def metric_heartbeats(latest: pa.Table, lag_s: float = METRIC_HEARTBEAT_LAG_S) -> pa.Table:
    """(cluster, broker_id, ts) of metric samples -> heartbeat events `lag_s` in the past
    (:data:`METRIC_HEARTBEAT_LAG_S`), one per (cluster, broker)."""
    if latest.num_rows == 0:
        return PAIRING_SCHEMA.empty_table()
    return _conform([_heartbeats(_frame(latest.select(["cluster", "broker_id", "ts"])), int(lag_s * 1000))])


def touched_brokers(state_changes: pa.Table, requests: pa.Table) -> pl.DataFrame:
    """(cluster, broker_id) of every broker whose pairing a batch's rows may touch: the broker whose log holds a row
    and every broker a controller line targets (a superset of the brokers of `pairing_events`, read from the rows'
    broker columns alone: what the driver reads of a batch the executors pair)."""
    parts: list[pl.DataFrame] = []
    if state_changes.num_rows:
        sc = _frame(state_changes)
        parts.append(sc.select("cluster", pl.concat_list(
            pl.col("broker_id").cast(pl.Int32), pl.col("target_broker_id").cast(pl.Int32),
            _broker_list("target_brokers")).alias("broker_id")).explode("broker_id"))
    if requests.num_rows:
        parts.append(_frame(requests).select("cluster", pl.col("broker_id").cast(pl.Int32)))
    if not parts:
        return pl.DataFrame(schema={"cluster": pl.String, "broker_id": pl.Int32})
    return pl.concat(parts).drop_nulls().unique()
