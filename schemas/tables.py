"""The lake's tables: bronze (raw_logs, raw_metrics), quarantine, silver (state_change_events, request_events,
metric_samples), gold (control_request_latency, alerts, metric_rollups_1m), and dq_results.

Types are neutral names: string, int (32-bit), long, double, boolean, timestamp (UTC, microseconds), date,
map<string,string>. Every table carries `cluster`; event tables carry `date` (UTC day of the event time, or of the
ingest time when the event has none) and are partitioned by (`cluster`, `date`) so the API's queries by cluster and
time prune files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa
    from pyspark.sql.types import StructType

__all__ = [
    "ALERTS",
    "CONTROL_REQUEST_LATENCY",
    "DQ_RESULTS",
    "INCIDENTS",
    "METRIC_ROLLUPS_1M",
    "METRIC_SAMPLES",
    "PAIRING_STATE",
    "QUARANTINE",
    "QUARANTINE_RECORD_CHARS",
    "RAW_LOGS",
    "RAW_METRICS",
    "RAW_RECORDS",
    "REQUEST_EVENTS",
    "ROLL_STEPS",
    "STATE_CHANGE_EVENTS",
    "TABLES",
    "Column",
    "Table",
]

TYPES = ("string", "int", "long", "double", "boolean", "timestamp", "date", "map<string,string>")


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    nullable: bool = True
    doc: str = ""

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"column {self.name}: unknown type {self.type!r}")


@dataclass(frozen=True)
class Table:
    name: str
    layer: str
    columns: tuple[Column, ...]
    partition_by: tuple[str, ...] = ()
    doc: str = ""

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def ddl(self) -> str:
        """Spark DDL string, e.g. for `spark.createDataFrame(rows, TABLE.ddl())` in tests."""
        return ", ".join(f"`{c.name}` {c.type.upper()}" + ("" if c.nullable else " NOT NULL") for c in self.columns)

    def to_spark(self) -> StructType:
        from pyspark.sql import types as T

        def conv(t: str) -> Any:
            simple = {
                "string": T.StringType(),
                "int": T.IntegerType(),
                "long": T.LongType(),
                "double": T.DoubleType(),
                "boolean": T.BooleanType(),
                "timestamp": T.TimestampType(),
                "date": T.DateType(),
            }
            if t in simple:
                return simple[t]
            return T.MapType(T.StringType(), T.StringType())

        return T.StructType([T.StructField(c.name, conv(c.type), c.nullable) for c in self.columns])

    def to_arrow(self, columns: Sequence[str] | None = None) -> pa.Schema:
        """The Arrow schema of the table, or of `columns` only, in that order."""
        import pyarrow as pa

        def conv(t: str) -> Any:
            simple = {
                "string": pa.string(),
                "int": pa.int32(),
                "long": pa.int64(),
                "double": pa.float64(),
                "boolean": pa.bool_(),
                "timestamp": pa.timestamp("us", tz="UTC"),
                "date": pa.date32(),
            }
            if t in simple:
                return simple[t]
            return pa.map_(pa.string(), pa.string())

        by_name = {c.name: c for c in self.columns}
        chosen = self.columns if columns is None else [by_name[n] for n in columns]
        return pa.schema([pa.field(c.name, conv(c.type), c.nullable) for c in chosen])


def _c(name: str, type_: str, doc: str = "", nullable: bool = True) -> Column:
    return Column(name, type_, nullable, doc)


# A source record as every reader hands it to a batch (the Spark data sources' schema, jobs.sources): not a Delta
# table (not in TABLES); bronze keeps each record with its batch (RAW_LOGS, RAW_METRICS).
RAW_RECORDS = Table(
    "raw_records",
    "source",
    (
        _c("cluster", "string"),
        _c("broker_id", "int"),
        _c("kind", "string", "the log kind or metric format the reader told from the file, topic or target"),
        _c("line", "string", "the record: one log event (its continuation lines included) or one metric line"),
        _c("line_bytes", "long"),
        _c("source", "string", "file path, kafka:<topic>/<partition> or URL"),
        _c("source_offset", "long"),
        _c("ingest_ts", "timestamp"),
        _c("truncated", "boolean", "the record was longer than the reader keeps"),
    ),
    doc="a source record as the readers hand it to a batch",
)


# Provenance columns shared by every table fed from a source record: where the record came from, exactly.
_PROVENANCE = (
    _c("source", "string", "file path, or kafka:<topic>/<partition>", nullable=False),
    _c("source_offset", "long", "byte offset of the line in the file, or the Kafka offset", nullable=False),
    _c("ingest_ts", "timestamp", "when the pipeline read the record"),
    _c("batch_id", "long", "the streaming micro-batch that wrote the row"),
)

RAW_LOGS = Table(
    "raw_logs",
    "bronze",
    (
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int", "from a broker-<id> directory/file name, or null"),
        _c("log_kind", "string", "state-change | request | server | controller | log-cleaner | authorizer | gc | "
           "unknown (by file name or content)"),
        _c("line", "string", "the line as read (decoded UTF-8 with replacement; continuation lines joined)"),
        _c("line_bytes", "long", "length of the original line in bytes"),
        *_PROVENANCE,
        _c("date", "date"),
    ),
    partition_by=("cluster", "date"),
    doc="every input log line, recognised or not",
)

RAW_METRICS = Table(
    "raw_metrics",
    "bronze",
    (
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int"),
        _c("metric_format", "string", "json | prometheus | source-error (a failed scrape: `line` says why)"),
        _c("line", "string"),
        _c("line_bytes", "long"),
        *_PROVENANCE,
        _c("date", "date"),
    ),
    partition_by=("cluster", "date"),
    doc="every input metric record (a JSON line, a Prometheus exposition line, or a failed scrape)",
)

# Quarantine keeps a rejected record up to this many characters: a multi-megabyte garbage line must not bloat the
# table, and 64 KiB is more than any real Kafka log line that is not a dump.
QUARANTINE_RECORD_CHARS = 64 * 1024

QUARANTINE = Table(
    "quarantine",
    "quarantine",
    (
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int"),
        _c("target_table", "string", "the table the record was meant for"),
        _c("stage", "string", "decode | source (a failed scrape) | parse | validate"),
        _c("reason", "string", "why it was rejected (parser reason or the failed expectation)"),
        _c("record", "string", "the rejected record, truncated to QUARANTINE_RECORD_CHARS (64 Ki characters)"),
        *_PROVENANCE,
        _c("date", "date"),
    ),
    partition_by=("cluster", "date"),
)

STATE_CHANGE_EVENTS = Table(
    "state_change_events",
    "silver",
    (
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int", "the broker whose log holds the line ([Broker id=N], else from the path)"),
        _c("ts", "timestamp", "log4j timestamp (UTC unless the cluster's zone is configured)"),
        _c("level", "string"),
        _c("logger", "string", "log4j logger, e.g. state.change.logger, kafka.server.KafkaApis"),
        _c("role", "string", "broker | controller | fetcher | log | kraft"),
        _c("event", "string", "canonical event name, see schemas.events.Event"),
        _c("request", "string", "LeaderAndIsr | UpdateMetadata | StopReplica | null"),
        _c("correlation_id", "long"),
        _c("controller_id", "int"),
        _c("controller_epoch", "int"),
        _c("target_broker_id", "int", "controller lines: the broker the request is sent to"),
        _c("target_brokers", "string", "controller UpdateMetadata sends: the broker set, e.g. 0,1"),
        _c("partitions", "int", "number of partitions the line covers"),
        _c("topic", "string"),
        _c("partition", "int"),
        _c("elapsed_ms", "long", "Finished LeaderAndIsr request in Nms"),
        _c("leader", "int"),
        _c("leader_epoch", "int"),
        _c("become_leader", "int"),
        _c("become_follower", "int"),
        _c("broker_epoch", "long", "stale-epoch lines: the request's broker epoch"),
        _c("current_broker_epoch", "long"),
        _c("lock_wait_ms", "long", "reference broker: time waited for a lock"),
        _c("offset", "long", "log start offset / leader epoch offsets in server.log lines"),
        _c("kafka_format", "string", "2.2-2.5 | 2.6+ | 2.7+ | 3.3+ | kraft | reference"),
        _c("message", "string", "the log message (without layout)"),
        *_PROVENANCE,
        _c("date", "date"),
    ),
    partition_by=("cluster", "date"),
)

REQUEST_EVENTS = Table(
    "request_events",
    "silver",
    (
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int"),
        _c("ts", "timestamp", "when the response send completed (the log line's time)"),
        _c("api_key", "int"),
        _c("api_name", "string", "ApiKeys name in Kafka's metric spelling: LeaderAndIsr, Produce, Metadata, ..."),
        _c("api_version", "int"),
        _c("correlation_id", "long"),
        _c("client_id", "string"),
        _c("listener", "string"),
        _c("security_protocol", "string"),
        _c("principal", "string"),
        _c("connection", "string"),
        _c("total_time_ms", "double"),
        _c("request_queue_time_ms", "double"),
        _c("local_time_ms", "double"),
        _c("remote_time_ms", "double"),
        _c("throttle_time_ms", "double"),
        _c("response_queue_time_ms", "double"),
        _c("send_time_ms", "double"),
        _c("error_code", "int"),
        _c("controller_id", "int"),
        _c("controller_epoch", "int"),
        _c("broker_epoch", "long"),
        _c("log_format", "string", "text (1.x-2.7) | json (2.8+)"),
        *_PROVENANCE,
        _c("date", "date"),
    ),
    partition_by=("cluster", "date"),
)

METRIC_SAMPLES = Table(
    "metric_samples",
    "silver",
    (
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int"),
        _c("ts", "timestamp"),
        _c("signal", "string", "canonical signal, e.g. RequestQueueSize, AcceptorBlockedPercent"),
        _c("mbean", "string", "canonical MBean name, e.g. kafka.network:type=RequestChannel,name=RequestQueueSize"),
        _c("attribute", "string", "Value | Count | MeanRate | OneMinuteRate | 99thPercentile | ..."),
        _c("listener", "string"),
        _c("request", "string"),
        _c("processor", "string"),
        _c("labels", "map<string,string>", "every other label/tag"),
        _c("value", "double"),
        _c("raw_name", "string", "the name as it arrived (MBean or Prometheus name)"),
        _c("metric_format", "string", "json | prometheus | source-error (a failed scrape: `line` says why)"),
        *_PROVENANCE,
        _c("date", "date"),
    ),
    partition_by=("cluster", "date"),
)

CONTROL_REQUEST_LATENCY = Table(
    "control_request_latency",
    "gold",
    (
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int"),
        _c("controller_id", "int"),
        _c("controller_epoch", "int"),
        _c("correlation_id", "long"),
        _c("request", "string", "LeaderAndIsr | UpdateMetadata | StopReplica"),
        _c("sent_ts", "timestamp"),
        _c("handling_ts", "timestamp"),
        _c("finished_ts", "timestamp"),
        _c("end_to_end_ms", "double"),
        _c("queue_ms", "double", "controller send to broker handling"),
        _c("processing_ms", "double", "handling to finished"),
        _c("lock_wait_ms", "double", "elapsed - (finished - handling)"),
        _c("partitions", "int"),
        _c("status", "string", "completed | in_flight | never_completed | evicted"),
        _c("pairing", "string", "correlation_id | order"),
        _c("updated_at", "timestamp"),
        _c("request_key", "string", "stable request id (MERGE key): hash of cluster, controller, broker, anchor"),
        _c("flags", "string", "comma list: clock_skew, controller_failover, broker_restart"),
        _c("controller_queue_ms", "double", "time queued at the controller behind the previous request to the broker"),
        _c("date", "date"),
        # the broker's own breakdown (request log, `Completed request`: text 1.x-2.7, JSON 2.8+); null without it.
        # Added after `date`: an existing table gains them at the end (lake.tables.ensure_table)
        _c("broker_queue_ms", "double", "time in the broker's request queue (request log requestQueueTime)"),
        _c("local_ms", "double", "time in the request handler (request log localTime)"),
        _c("remote_ms", "double", "time waiting for other brokers (request log remoteTime)"),
        _c("response_queue_ms", "double", "time the response waited for the network thread (responseQueueTime)"),
        _c("response_send_ms", "double", "time sending the response (request log sendTime)"),
        _c("served_ms", "double", "arrival at the broker to response sent (request log totalTime)"),
        _c("listener", "string", "listener the request arrived on (request log): control plane (KIP-291) or data"),
        _c("witnesses", "string", "comma list of what timed the request: controller_log, broker_log, request_log, "
           "lock_line (a logged lock wait), lock_inferred (a lock wait from the lines' times)"),
    ),
    partition_by=("cluster", "date"),
)

ALERTS = Table(
    "alerts",
    "gold",
    (
        _c("alert_id", "string", "stable id: hash of (type, cluster, broker_id, listener, started_at)", nullable=False),
        _c("type", "string", nullable=False),
        _c("severity", "string", "warning | critical"),
        _c("status", "string", "open | resolved"),
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int"),
        _c("listener", "string"),
        _c("started_at", "timestamp"),
        _c("last_seen_at", "timestamp"),
        _c("resolved_at", "timestamp"),
        _c("summary", "string", "one line an operator can act on"),
        _c("evidence", "string", "JSON: the rows and numbers that made it fire"),
        _c("value", "double", "the measured value that crossed the threshold"),
        _c("threshold", "double"),
        _c("updated_at", "timestamp"),
    ),
    partition_by=(),
)

INCIDENTS = Table(
    "incidents",
    "gold",
    (
        _c("incident_id", "string", "stable id: hash of (cluster, broker_id, its first alert's started_at)",
           nullable=False),
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int", "the broker (or controller node) its alerts are about; null: the cluster's"),
        _c("cause", "string", "schemas.alerts.IncidentCause: the mechanism its alerts are put down to"),
        _c("severity", "string", "the worst of its alerts"),
        _c("status", "string", "open while one of its alerts is | resolved"),
        _c("started_at", "timestamp"),
        _c("last_seen_at", "timestamp"),
        _c("resolved_at", "timestamp"),
        _c("summary", "string", "the cause in one line, with the numbers that show it"),
        _c("action", "string", "what to change or check, with the Kafka documentation's link"),
        _c("impact", "string", "what its alerts say clients and partitions went through"),
        _c("baseline", "string", "its measure against the broker's own history and its peers at the time (when its "
           "alerts measured one), and its cause's earlier incidents on the broker and its peers"),
        _c("alert_types", "string", "comma list of its alerts' types (the symptoms)"),
        _c("alert_ids", "string", "comma list of its alerts' ids"),
        _c("alerts", "int", "how many alerts it groups"),
        _c("evidence", "string", "JSON: what chose the cause"),
        _c("updated_at", "timestamp"),
    ),
    partition_by=(),
)

METRIC_ROLLUPS_1M = Table(
    "metric_rollups_1m",
    "gold",
    (
        _c("cluster", "string", nullable=False),
        _c("broker_id", "int"),
        _c("signal", "string"),
        _c("listener", "string"),
        _c("request", "string"),
        _c("attribute", "string"),
        _c("minute", "timestamp"),
        _c("min", "double"),
        _c("max", "double"),
        _c("avg", "double"),
        _c("last", "double"),
        _c("samples", "long"),
        _c("date", "date"),
    ),
    partition_by=("cluster", "date"),
)

DQ_RESULTS = Table(
    "dq_results",
    "quality",
    (
        _c("table_name", "string", nullable=False),
        _c("batch_id", "long"),
        _c("suite", "string"),
        _c("expectation", "string"),
        _c("success", "boolean"),
        _c("unexpected_count", "long"),
        _c("element_count", "long"),
        _c("run_ts", "timestamp"),
        _c("duration_ms", "double"),
    ),
)

PAIRING_STATE = Table(
    "pairing_state",
    "state",
    (
        _c("cluster", "string", nullable=False),
        _c("bucket", "int", "a group of the cluster's brokers (broker id modulo the buckets); -1: the cluster's clock"),
        _c("state", "string", "JSON: the group's pairing states and brokers' views; the clock's event times"),
        _c("deadline", "long", "epoch ms at which something in the group expires (null: only events step it)"),
        _c("batch_id", "long", "the log batch that wrote the row"),
    ),
    partition_by=("cluster",),
    doc="what pairing remembers between log batches, written with each batch under its app transaction",
)

ROLL_STEPS = Table(
    "roll_steps",
    "gold",
    (
        _c("roll_id", "string", "one `planewatch roll` run", nullable=False),
        _c("step", "long", "the step's number in its roll", nullable=False),
        _c("cluster", "string", nullable=False),
        _c("kind", "string", "plan | gate | restarted | stopped | rolled"),
        _c("node", "int", "the node the step is about (a gate: the node to restart next; null: the cluster)"),
        _c("verdict", "string", "a gate's verdict: safe | wait | unsafe | unknown"),
        _c("at", "timestamp", "when the step was taken"),
        _c("detail", "string", "JSON: a gate's reasons, a restart's command and duration, a stop's why"),
    ),
    partition_by=(),
    doc="the steps of the rolls `planewatch roll --lake` drove, each gate with the verdict it acted on (written by "
        "the roll alone; ROLL_TOO_FAST defers to a gate's fresher verdict)",
)

TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        RAW_LOGS,
        RAW_METRICS,
        QUARANTINE,
        STATE_CHANGE_EVENTS,
        REQUEST_EVENTS,
        METRIC_SAMPLES,
        CONTROL_REQUEST_LATENCY,
        ALERTS,
        INCIDENTS,
        METRIC_ROLLUPS_1M,
        ROLL_STEPS,
        DQ_RESULTS,
        PAIRING_STATE,
    )
}
