"""What an input file is: its family (logs or metrics), its log kind or metric format, told by name or content.

`raw_logs.log_kind` and `raw_metrics.metric_format` hold these values. The file and Kafka sources
(:mod:`jobs.sources.paths`, :mod:`jobs.sources.streams`) and ``planewatch parse`` classify with these tables. The
file-name regexes apply to a file's name (its last path element).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["LOG_FILE_NAMES", "LOG_KIND_BY_LOGGER", "METRIC_FILE_EXTENSIONS", "Envelope", "InputFamily", "LogKind",
           "MetricFormat", "OriginField",
           "Placement", "SourceKind", "ingest_query"]


class InputFamily(StrEnum):
    """Which bronze table a file feeds: `raw_logs` or `raw_metrics`."""

    LOGS = "logs"
    METRICS = "metrics"


class LogKind(StrEnum):
    """Which of Kafka's logs a log file is (`raw_logs.log_kind`)."""

    #: state-change.log (`state.change.logger`): control requests as brokers and the controller see them
    STATE_CHANGE = "state-change"
    #: kafka-request.log (`kafka.request.logger`): one line per completed request
    REQUEST = "request"
    #: server.log: everything else a broker logs (fetchers, log layer, KafkaApis)
    SERVER = "server"
    #: controller.log (`kafka.controller`): the ZooKeeper controller's decisions
    CONTROLLER = "controller"
    #: log-cleaner.log (`kafka.log.LogCleaner`): compaction's progress; read, nothing in it is used
    LOG_CLEANER = "log-cleaner"
    #: kafka-authorizer.log (`kafka.authorizer.logger`): ACL decisions; read, nothing in it is used
    AUTHORIZER = "authorizer"
    #: the JVM's GC log that kafka-run-class.sh writes beside server.log (`kafkaServer-gc.log`, `zookeeper-gc.log`,
    #: rotated `.0`-`.9`): not log4j; every line is recognised and unused
    GC = "gc"
    #: a log file neither its name nor its first lines place
    UNKNOWN = "unknown"


class MetricFormat(StrEnum):
    """How a metric file is written (`raw_metrics.metric_format`)."""

    #: one JSON object per line naming an MBean (the reference broker's reporter, JMX dumps)
    JSON = "json"
    #: Prometheus text exposition (a JMX-exporter scrape)
    PROMETHEUS = "prometheus"


class Envelope(StrEnum):
    """How a Kafka record of a logs topic carries its log line (`sources.kafka.logs_envelope`): as itself, or inside
    a log shipper's JSON envelope (jobs.sources.envelopes names the fields of each)."""

    #: the record's value is the line; its key may name the broker (`broker-2`, `2`)
    RAW = "raw"
    #: rsyslog's omkafka with the project's template (conf/rsyslog/planewatch.conf): host, file, offset, line
    RSYSLOG = "rsyslog"
    #: Vector's kafka sink, JSON codec (file or kubernetes_logs source)
    VECTOR = "vector"
    #: Fluent Bit's kafka output, `Format json` (tail input, optional kubernetes filter)
    FLUENT_BIT = "fluent-bit"
    #: Filebeat's kafka output, JSON codec (filestream/log or container input, add_kubernetes_metadata)
    FILEBEAT = "filebeat"
    #: the OpenTelemetry collector's kafka exporter, `encoding: otlp_json` (filelog receiver): one record may carry
    #: several log records
    OTEL = "otel"


class OriginField(StrEnum):
    """What an envelope says about where its line was written: the fields mapping rules read
    (`sources.kafka.logs_mapping`) and the origin of a line (host and file: the same line shipped twice)."""

    HOST = "host"
    FILE = "file"
    POD = "pod"
    CONTAINER = "container"
    NAMESPACE = "namespace"
    #: the `strimzi.io/cluster` label of a Strimzi pod, where the shipper adds pod labels
    STRIMZI_CLUSTER = "strimzi_cluster"
    #: the Kafka record's key
    KEY = "key"


# Kafka's file names (log4j.properties, with DailyRollingFileAppender's `.yyyy-MM-dd-HH` suffix when rotated).
LOG_FILE_NAMES: tuple[tuple[LogKind, str], ...] = (
    # Kafka 4.0.0's log4j2.yaml rotates it as `stage-change.log.<date>` (a typo, fixed in 4.0.1)
    (LogKind.STATE_CHANGE, r"^sta(te|ge)-change[^/]*\.log(\.[^/]*)?$"),
    (LogKind.REQUEST, r"^kafka-request\.log(\.[^/]*)?$"),
    (LogKind.SERVER, r"^server\.log(\.[^/]*)?$"),
    (LogKind.CONTROLLER, r"^controller\.log(\.[^/]*)?$"),
    (LogKind.LOG_CLEANER, r"^log-cleaner\.log(\.[^/]*)?$"),
    (LogKind.AUTHORIZER, r"^kafka-authorizer\.log(\.[^/]*)?$"),
    # -Xlog:gc*:file=$LOG_DIR/<daemon>-gc.log (Java 9+, rotated .0-.9) or -Xloggc (Java 8, `.0.current`)
    (LogKind.GC, r"^([^/]*[-_])?gc\.log(\.[^/]*)?$"),
)
# A file of another name is placed by the logger its first lines name, as one of the two logs pairing reads; any
# other log4j file is `unknown` (its lines are still classified one by one by the parsers).
LOG_KIND_BY_LOGGER: tuple[tuple[LogKind, str], ...] = (
    (LogKind.STATE_CHANGE, "(state.change.logger)"),
    (LogKind.REQUEST, "(kafka.request.logger)"),
)
# Metric files by extension (lower case).
METRIC_FILE_EXTENSIONS: dict[str, MetricFormat] = {
    ".jsonl": MetricFormat.JSON,
    ".json": MetricFormat.JSON,
    ".prom": MetricFormat.PROMETHEUS,
    ".txt": MetricFormat.PROMETHEUS,
}


class Placement(StrEnum):
    """Where an ingest micro-batch's engine runs (jobs.ingest.batch: `auto` picks one per batch)."""

    #: in the driver's process: it reads the batch and stages it, no Spark job
    DRIVER = "driver"
    #: in Spark's tasks, a task per core, each reading its share where it can
    EXECUTORS = "executors"


class SourceKind(StrEnum):
    """Where a family's records come from (one streaming query per family and source kind)."""

    FILES = "files"
    KAFKA = "kafka"
    PROMETHEUS = "prometheus"  # exporters scraped by planewatch
    PROMETHEUS_SERVER = "prometheus_server"  # the operator's Prometheus, read through its query API


def ingest_query(family: str, source: str) -> str:
    """The name of the streaming query of `family` from source kind `source` (its checkpoint's directory too)."""
    return f"ingest_{family}_{source}"
