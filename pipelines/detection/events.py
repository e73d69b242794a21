"""Silver rows -> the events detection understands (pure Column/DataFrame functions).

The parsers name events canonically (schemas.events.Event); detection accepts those names AND recognises the
Kafka message texts themselves (FACTS.md 1.3/1.4), so a renamed event or a parser that only fills `message`
still pairs. Where a silver column is null the value is taken from the message with the same regexes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schemas.events import ControlRequest, Event

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = [
    "CONTROL_REQUESTS",
    "METRIC_HEARTBEAT_LAG_S",
    "PAIRING_INPUT_DDL",
    "controller_elections",
    "heartbeats",
    "pairing_input",
    "partition_map_lock_waits",
    "stale_epoch_events",
    "x",
]

CONTROL_REQUESTS: tuple[str, ...] = tuple(r.value for r in ControlRequest)

# The events (schemas.events) that mean each pairing kind, besides the message patterns below.
_E = Event
SEND_EVENTS = (_E.LEADER_AND_ISR_SENDING, _E.UPDATE_METADATA_SENDING, _E.STOP_REPLICA_SENDING)
HANDLING_EVENTS = (_E.LEADER_AND_ISR_HANDLING, _E.STOP_REPLICA_HANDLING, _E.BECOME_LEADER_STARTED,
                   _E.BECOME_FOLLOWER_STARTED)
PARTITION_SEND_EVENTS = (_E.LEADER_AND_ISR_PARTITION_SENDING, _E.UPDATE_METADATA_PARTITION_SENDING,
                         _E.STOP_REPLICA_PARTITION_SENDING)
FINISHED_EVENTS = (_E.LEADER_AND_ISR_FINISHED,)
APPLIED_EVENTS = (_E.METADATA_CACHE_UPDATED,)
RESPONSE_EVENTS = (_E.RESPONSE_RECEIVED,)
# controller.log `Newly added brokers: .., deleted brokers: 3, bounced brokers: 2, ..`: the controller dropped the
# queued requests of the deleted and bounced brokers (pairing kind `gone`)
GONE_EVENTS = (_E.BROKER_CHANGE,)
RX_GONE = r"deleted brokers: [0-9, ]*, bounced brokers: "
LOCK_WAIT_EVENTS = (_E.LOCK_WAIT,)
STALE_EVENTS = (_E.STALE_BROKER_EPOCH,)
FETCHER_EVENTS = (_E.LOG_START_OFFSET_INCREMENTED, _E.EPOCH_CACHE_CLEARED, _E.EPOCH_CACHE_TRUNCATED,
                  _E.LEADER_EPOCH_CHECKPOINT_FLUSHED)

# Message patterns (Kafka 2.2-3.x texts). Per-partition TRACE `Sending ... for partition` lines are not sends:
# the INFO summary (2.6+) or the TRACE `Received response` line stands for the request.
_REQ = r"(LeaderAndIsr|UpdateMetadata|StopReplica)"
RX_SEND = rf"Sending (?:become-leader |become-follower )?{_REQ} request"
RX_HANDLING = rf"Handling {_REQ} request correlationId (\d+) from controller (\d+)"
RX_FINISHED = r"Finished LeaderAndIsr request in (\d+)ms correlationId (\d+) from controller (\d+)"
RX_APPLIED = r"partitions from metadata cache in response to UpdateMetadata request sent by controller (\d+) epoch (\d+) with correlation id (\d+)"  # noqa: E501
RX_RESPONSE = r"Received response .* for request (\w+) with correlation id (\d+) sent to broker .*id: (\d+)"
RX_PARTITION_MAP_LOCK = r"waited \d+ ?ms for partitionMapLock"
RX_STALE = r"(?i)(smaller than the current broker epoch|stale broker epoch)"
RX_FETCHER = (r"(?i)(Increment(?:ed|ing) log start offset|Cleared earliest \d+ entries from epoch cache"
              r"|leader-epoch-checkpoint)")

_API_NAMES = {"LEADER_AND_ISR": "LeaderAndIsr", "UPDATE_METADATA": "UpdateMetadata", "STOP_REPLICA": "StopReplica"}

PAIRING_INPUT_DDL = (
    "cluster STRING, controller_id INT, broker_id INT, kind STRING, ts TIMESTAMP, request STRING, "
    "correlation_id LONG, controller_epoch INT, partitions INT, elapsed_ms LONG, lock_wait_ms LONG, detail STRING"
)


def x(col: Column | str, rx: str, group: int = 1) -> Column:
    """regexp_extract that gives NULL, not '', when the pattern does not match (ANSI-safe)."""
    from pyspark.sql import functions as F

    return F.nullif(F.regexp_extract(col if not isinstance(col, str) else F.col(col), rx, group), F.lit(""))


def _is(events: tuple[Event, ...]) -> Column:
    from pyspark.sql import functions as F

    return F.coalesce(F.col("event"), F.lit("")).isin(*[e.value for e in events])


def _msg(rx: str) -> Column:
    from pyspark.sql import functions as F

    return F.coalesce(F.col("message"), F.lit("")).rlike(rx)


def classify() -> Column:
    """The pairing kind of a state_change_events row, or NULL for rows pairing does not use."""
    from pyspark.sql import functions as F

    return (
        F.when(_is(SEND_EVENTS) | _is(PARTITION_SEND_EVENTS) | _msg(RX_SEND), F.lit("send"))
        .when(_is(FINISHED_EVENTS) | _msg(RX_FINISHED), F.lit("finished"))
        .when(_is(HANDLING_EVENTS) | _msg(RX_HANDLING), F.lit("handling"))
        .when(_is(APPLIED_EVENTS) | _msg(RX_APPLIED), F.lit("applied"))
        .when(_is(RESPONSE_EVENTS) | _msg(RX_RESPONSE), F.lit("response"))
        .when(_is(LOCK_WAIT_EVENTS) & F.col("lock_wait_ms").isNotNull(), F.lit("lock_wait"))
        .when(_is(GONE_EVENTS) | _msg(RX_GONE), F.lit("gone"))
    )


def pairing_input(state_changes: DataFrame) -> DataFrame:
    """state_change_events -> pairing events (PAIRING_INPUT_DDL), one per (event, target broker).

    Controller lines are keyed by their TARGET broker (`Sending UpdateMetadata request to brokers HashSet(1, 2)`
    becomes one event per broker); broker lines by the broker whose log holds them.
    """
    from pyspark.sql import functions as F

    m = F.col("message")
    kind = classify()
    request = F.coalesce(
        F.col("request"),
        x(m, rf"{_REQ} request"),
        F.element_at(F.create_map(*[F.lit(v) for kv in _API_NAMES.items() for v in kv]), x(m, RX_RESPONSE, 1)),
    )
    controller = F.coalesce(
        F.col("controller_id"),
        x(m, r"from controller (\d+)").try_cast("int"),
        x(m, r"sent by controller (\d+)").try_cast("int"),
        x(m, r"\[Controller id=(\d+)").try_cast("int"),
    )
    epoch = F.coalesce(
        F.col("controller_epoch"),
        x(m, r"\[Controller id=\d+ epoch=(\d+)\]").try_cast("int"),
        x(m, r"from controller \d+ epoch (\d+)").try_cast("int"),
        x(m, r"sent by controller \d+ epoch (\d+)").try_cast("int"),
    )
    corr = F.coalesce(
        F.col("correlation_id"),
        x(m, r"correlationId (\d+)").try_cast("long"),
        x(m, r"correlation id (\d+)").try_cast("long"),
    )
    # a per-partition TRACE Sending line: which partition (one request is a burst of them)
    detail = F.when(kind == "send", x(m, r"^.*Sending .* request .* for partition (\S+)"))
    partitions = F.coalesce(
        F.col("partitions"),
        F.when(detail.isNotNull(), F.lit(1)),
        x(m, r"for (\d+) partitions").try_cast("int"),
        x(m, r"for (\d+) replicas").try_cast("int"),
        (x(m, r"with (\d+) become-leader").try_cast("int") + x(m, r"and (\d+) become-follower").try_cast("int")),
        x(m, r"^.*?Add (\d+) partitions").try_cast("int"),
    )
    set_targets = F.transform(
        F.filter(F.split(F.coalesce(x(m, r"to brokers (?:Hash)?Set\(([^)]*)\)"), F.lit("")), r",\s*"),
                 lambda s: s != F.lit("")),
        lambda s: s.try_cast("int"),
    )
    single_target = F.coalesce(
        F.col("target_broker_id"), x(m, RX_RESPONSE, 3).try_cast("int"),
        x(m, r"to broker (\d+)(?![\d.:])").try_cast("int")
    )
    gone_targets = F.transform(
        F.filter(F.split(F.concat_ws(",", x(m, r"deleted brokers: ([0-9, ]*),"), x(m, r"bounced brokers: ([0-9, ]*),")),
                         r",\s*"), lambda s: s != F.lit("")),
        lambda s: s.try_cast("int"),
    )
    targets = F.when(kind.isin("send", "response"),
                     F.when(single_target.isNotNull(), F.array(single_target)).otherwise(set_targets)) \
        .when(kind == "gone", gone_targets) \
        .otherwise(F.array(F.col("broker_id")))
    out = state_changes.select(
        "cluster",
        controller.alias("controller_id"),
        F.explode(targets).alias("broker_id"),
        kind.alias("kind"),
        "ts",
        request.alias("request"),
        corr.alias("correlation_id"),
        epoch.alias("controller_epoch"),
        partitions.alias("partitions"),
        F.coalesce(F.col("elapsed_ms"), x(m, r"request in (\d+)ms").try_cast("long")).alias("elapsed_ms"),
        F.col("lock_wait_ms").cast("long").alias("lock_wait_ms"),
        detail.alias("detail"),
    )
    # Broker-side lines pair by correlation id: per-partition 2.2-2.5 lines without one (`Handling stop replica
    # (delete=false) for partition t-0`) are not requests. A lock-wait line may omit the request name.
    needs_corr = F.col("kind").isin("handling", "finished", "applied", "response", "lock_wait")
    return out.where(
        F.col("kind").isNotNull() & F.col("ts").isNotNull() & F.col("broker_id").isNotNull()
        & F.col("controller_id").isNotNull()
        & (F.col("request").isin(*CONTROL_REQUESTS) | ((F.col("kind") == "lock_wait") & F.col("request").isNull())
           | (F.col("kind") == "gone"))
        & (~needs_corr | F.col("correlation_id").isNotNull())
    )


# Metric samples are stamped when reported or scraped, and reach silver within a trigger; a busy broker's log lines
# reach it later (the file ingest's batches of a restart's burst). As pairing heartbeats they count this much in
# the past, so they cannot push the watermark past log lines still on their way: with them at face value, a demo's
# pairing dropped 338-858 lines a run as late (a fetcher-lock LeaderAndIsr's Finished among them: its
# LOCK_CONTENTION was missed).
METRIC_HEARTBEAT_LAG_S = 20.0


def heartbeats(df: DataFrame, lag_s: float = 0.0) -> DataFrame:
    """Any timestamped silver rows (metric samples, any log line) as heartbeat events: they move event time
    forward so a quiet cluster still times out its never-completed requests. Keyed (cluster, -1, -1). `lag_s`
    moves them back in time: a source whose rows arrive ahead of the log lines vouches only for that long ago."""
    from pyspark.sql import functions as F

    ts = F.col("ts") if not lag_s else (F.col("ts") - F.expr(f"INTERVAL {int(lag_s * 1000)} MILLISECONDS"))
    return df.where(F.col("ts").isNotNull()).select(
        "cluster",
        F.lit(-1).cast("int").alias("controller_id"),
        F.lit(-1).cast("int").alias("broker_id"),
        F.lit("heartbeat").alias("kind"),
        ts.alias("ts"),
        *[F.lit(None).cast(t).alias(n) for n, t in (("request", "string"), ("correlation_id", "long"),
                                                    ("controller_epoch", "int"), ("partitions", "int"),
                                                    ("elapsed_ms", "long"), ("lock_wait_ms", "long"),
                                                    ("detail", "string"))],
    )


def stale_epoch_events(state_changes: DataFrame) -> DataFrame:
    """Rows where a broker rejected a control request for a stale broker epoch (KafkaApis lines)."""

    return state_changes.where(_is(STALE_EVENTS) | _msg(RX_STALE))


def controller_elections(state_changes: DataFrame) -> DataFrame:
    """controller.log `N successfully elected as the controller. Epoch incremented to E` rows (controller_epoch)."""
    from pyspark.sql import functions as F

    return state_changes.where((_is((Event.CONTROLLER_ELECTED,)) | _msg(r"successfully elected as the controller"))
                               & F.col("controller_epoch").isNotNull())


def partition_map_lock_waits(state_changes: DataFrame) -> DataFrame:
    """The reference broker's `LeaderAndIsr waited N ms for partitionMapLock of ReplicaFetcherThread-...` lines
    (ReplicaFetcherManager, DEBUG, server.log): a control request's wait for one fetcher's lock (KAFKA-6974)."""
    from pyspark.sql import functions as F

    return state_changes.where(_is(LOCK_WAIT_EVENTS) & F.col("lock_wait_ms").isNotNull()
                               & _msg(RX_PARTITION_MAP_LOCK))


def fetcher_events(state_changes: DataFrame) -> DataFrame:
    """Fetcher/log activity lines (log-start-offset increments, epoch-cache/checkpoint flushes), FACTS.md 6."""
    return state_changes.where(_is(FETCHER_EVENTS) | _msg(RX_FETCHER))
