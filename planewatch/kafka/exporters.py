"""The JMX exporter set-ups planewatch runs Apache Kafka with: the metric names operators' stacks give Kafka's MBeans.

Each set-up is the agent's rules (first match wins, as jmx_exporter applies them), the MBeans it leaves out, and how
long the agent waits after the JVM starts before it answers. The rules are planewatch's own, written to give the names
each stack's published configuration gives the MBeans planewatch reads (as of the dates below; those files change):

``kafka-2_0_0``
    prometheus/jmx_exporter's ``example_configs/kafka-2_0_0.yml`` (``broker.metrics.prometheus.RULES``, which the
    reference broker also serves), plus a rule for KRaft's raft-metrics and broker-metadata-metrics, which it drops.
``strimzi``
    the ``kafka-metrics-config.yml`` of strimzi/strimzi-kafka-operator's ``packaging/examples/metrics/
    kafka-metrics.yaml`` (2026): percents as ``..._percent``, meters' counts as ``..._total``, histograms' counts as
    ``..._count`` and their percentiles as ``quantile`` gauges, **RequestMetrics not exported at all** (the rules
    skip ``type=RequestMetrics``), raft-metrics as ``kafka_server_raftmetrics_*``, broker-metadata-metrics as
    ``kafka_server_brokermetadatametrics_*``, of socket-server-metrics only ``connection-count``.
``confluent``
    confluentinc/jmx-monitoring-stacks' ``shared-assets/jmx-exporter/kafka_broker.yml`` (2026): ``Count`` and
    ``Value`` under the bare name (no attribute suffix), label names lower-cased, percentiles as ``quantile``
    gauges, the request handlers' idle meter's ``OneMinuteRate`` as a gauge named
    ``..._requesthandleravgidlepercent_total``, the MBeans whose only key is ``type`` left out (raft-metrics,
    broker-metadata-metrics: ``kafka.server:type=*``), and the agent answering nothing for 120 s after each JVM
    start (``startDelaySeconds``: HTTP 500 until then).

Every set-up exports only ``JMX_INCLUDE`` (the stacks export every MBean; the names are theirs, the volume
is planewatch's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from broker.metrics.prometheus import RULES as KAFKA_2_0_0_RULES
from broker.metrics.prometheus import Rule

__all__ = ["DEFAULT_EXPORTER", "EXPORTERS", "JMX_INCLUDE", "Exporter", "exporter_yaml"]

# The MBeans the agent exports: the control-plane signals planewatch reads (FACTS.md section 3). Exporting every MBean
# costs the JVM a few thousand attribute reads per scrape and the pipeline tens of thousands of rows a minute.
JMX_INCLUDE: tuple[str, ...] = (
    "kafka.network:type=RequestChannel,*",
    "kafka.network:type=SocketServer,*",
    "kafka.network:type=Processor,*",
    "kafka.network:type=Acceptor,*",
    *(f"kafka.network:type=RequestMetrics,request={r},*" for r in (
        "LeaderAndIsr", "UpdateMetadata", "StopReplica", "ControlledShutdown", "Produce", "FetchFollower",
        "FetchConsumer", "Metadata")),
    "kafka.server:type=KafkaRequestHandlerPool,*",
    "kafka.server:type=ReplicaManager,*",
    "kafka.server:type=ReplicaFetcherManager,*",
    "kafka.server:type=broker-metadata-metrics,*",
    "kafka.server:type=raft-metrics,*",
    "kafka.server:type=MetadataLoader,*",
    "kafka.controller:type=KafkaController,*",
    "kafka.controller:type=ControllerEventManager,*",
    "kafka.controller:type=ControllerChannelManager,*",
    "kafka.controller:type=ControllerStats,*",
)


@dataclass(frozen=True)
class Exporter:
    """One JMX exporter set-up: its rules in order, the MBeans it excludes, its start delay, whether it lower-cases
    label names."""

    rules: tuple[Rule, ...]
    exclude: tuple[str, ...] = ()
    start_delay_s: int = 0
    lowercase_labels: bool = False


# KRaft's Kafka-metrics MBeans, which kafka-2_0_0 drops (one attribute per metric, e.g. last-applied-record-lag-ms ->
# kafka_server_broker_metadata_metrics_last_applied_record_lag_ms).
_KRAFT_RULES = (
    Rule(r"kafka.server<type=(broker-metadata-metrics|raft-metrics)><>([a-z-]+)", "kafka_server_$1_$2", "GAUGE"),
)

_NOT_RM = "(?!RequestMetrics)"  # Strimzi's rules skip RequestMetrics' many series
_STRIMZI_RULES = (
    Rule(r"kafka.server<type=socket-server-metrics, listener=(.+), networkProcessor=(.+)><>connection-count",
            "kafka_server_socket_server_metrics_connection_count", "GAUGE",
            (("listener", "$1"), ("networkProcessor", "$2"))),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+)Percent\w*><>MeanRate", "kafka_$1_$2_$3_percent", "GAUGE"),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+)Percent\w*><>Value", "kafka_$1_$2_$3_percent", "GAUGE"),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+)Percent\w*, (.+)=(.+)><>Value", "kafka_$1_$2_$3_percent", "GAUGE",
            (("$4", "$5"),)),
    Rule(rf"kafka.(\w+)<type={_NOT_RM}(.+), name=(.+)PerSec\w*, (.+)=(.+), (.+)=(.+)><>Count",
            "kafka_$1_$2_$3_total", "COUNTER", (("$4", "$5"), ("$6", "$7"))),
    Rule(rf"kafka.(\w+)<type={_NOT_RM}(.+), name=(.+)PerSec\w*, (.+)=(.+)><>Count", "kafka_$1_$2_$3_total",
            "COUNTER", (("$4", "$5"),)),
    Rule(rf"kafka.(\w+)<type={_NOT_RM}(.+), name=(.+)PerSec\w*><>Count", "kafka_$1_$2_$3_total", "COUNTER"),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+), (.+)=(.+)><>Value", "kafka_$1_$2_$3", "GAUGE",
            (("$4", "$5"), ("$6", "$7"))),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+)><>Value", "kafka_$1_$2_$3", "GAUGE", (("$4", "$5"),)),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+)><>Value", "kafka_$1_$2_$3", "GAUGE"),
    Rule(rf"kafka.(\w+)<type={_NOT_RM}(.+), name=(.+), (.+)=(.+), (.+)=(.+)><>Count", "kafka_$1_$2_$3_count",
            "COUNTER", (("$4", "$5"), ("$6", "$7"))),
    Rule(rf"kafka.(\w+)<type={_NOT_RM}(.+), name=(.+), (.+)=(.*), (.+)=(.+)><>(\d+)thPercentile",
            "kafka_$1_$2_$3", "GAUGE", (("$4", "$5"), ("$6", "$7"), ("quantile", "0.$8"))),
    Rule(rf"kafka.(\w+)<type={_NOT_RM}(.+), name=(.+), (.+)=(.+)><>Count", "kafka_$1_$2_$3_count", "COUNTER",
            (("$4", "$5"),)),
    Rule(rf"kafka.(\w+)<type={_NOT_RM}(.+), name=(.+), (.+)=(.*)><>(\d+)thPercentile", "kafka_$1_$2_$3",
            "GAUGE", (("$4", "$5"), ("quantile", "0.$6"))),
    Rule(rf"kafka.(\w+)<type={_NOT_RM}(.+), name=(.+)><>Count", "kafka_$1_$2_$3_count", "COUNTER"),
    Rule(rf"kafka.(\w+)<type={_NOT_RM}(.+), name=(.+)><>(\d+)thPercentile", "kafka_$1_$2_$3", "GAUGE",
            (("quantile", "0.$4"),)),
    Rule(r"kafka.server<type=raft-metrics><>(.+-total|.+-max):", "kafka_server_raftmetrics_$1", "COUNTER"),
    Rule(r"kafka.server<type=raft-metrics><>(.+):", "kafka_server_raftmetrics_$1", "GAUGE"),
    Rule(r"kafka.server<type=broker-metadata-metrics><>(.+):", "kafka_server_brokermetadatametrics_$1", "GAUGE"),
)

_CONFLUENT_RULES = (
    Rule(r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+), (.+)=(.+)><>(Count|Value)", "kafka_$1_$2_$3", "UNTYPED",
            (("$4", "$5"), ("$6", "$7"))),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.*), (.+)=(.+)><>(\d+)thPercentile", "kafka_$1_$2_$3",
            "GAUGE", (("$4", "$5"), ("$6", "$7"), ("quantile", "0.$8"))),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.+)><>(Count|Value)", "kafka_$1_$2_$3", "UNTYPED",
            (("$4", "$5"),)),
    Rule(r"kafka.(\w+)<type=(.+), (.+)=(.+), (.+)=(.+)><>(Count|Value)", "kafka_$1_$2", "UNTYPED",
            (("$3", "$4"), ("$5", "$6"))),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+)><>(Count|Value)", "kafka_$1_$2_$3", "UNTYPED"),
    Rule(r"kafka.server<type=KafkaRequestHandlerPool, name=RequestHandlerAvgIdlePercent><>OneMinuteRate",
            "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total", "GAUGE"),
    Rule(r"kafka.server<type=socket-server-metrics, listener=(.+), networkProcessor=(.+)><>(.+):",
            "kafka_server_socketservermetrics_$3", "GAUGE", (("listener", "$1"), ("network_processor", "$2"))),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+), (.+)=(.*)><>(\d+)thPercentile", "kafka_$1_$2_$3", "GAUGE",
            (("$4", "$5"), ("quantile", "0.$6"))),
    Rule(r"kafka.(\w+)<type=(.+), name=(.+)><>(\d+)thPercentile", "kafka_$1_$2_$3", "GAUGE",
            (("quantile", "0.$4"),)),
)

# Confluent's stack gives the agent two minutes after the JVM starts (its configuration's startDelaySeconds).
CONFLUENT_START_DELAY_S = 120

EXPORTERS: Mapping[str, Exporter] = {
    "kafka-2_0_0": Exporter(KAFKA_2_0_0_RULES + _KRAFT_RULES),
    "strimzi": Exporter(_STRIMZI_RULES),
    "confluent": Exporter(_CONFLUENT_RULES, exclude=("kafka.server:type=*",), start_delay_s=CONFLUENT_START_DELAY_S,
                          lowercase_labels=True),
}
DEFAULT_EXPORTER = "kafka-2_0_0"


def exporter_yaml(exporter: Exporter, include: Sequence[str] = JMX_INCLUDE, start_delay_s: int | None = None) -> str:
    """The agent's configuration file: lower-cased names, the MBeans in ``include`` less the excluded ones, the
    rules in order; ``start_delay_s`` overrides the set-up's delay."""
    doc: dict[str, Any] = {}
    delay = exporter.start_delay_s if start_delay_s is None else start_delay_s
    if delay:
        doc["startDelaySeconds"] = delay
    doc["lowercaseOutputName"] = True
    if exporter.lowercase_labels:
        doc["lowercaseOutputLabelNames"] = True
    doc["includeObjectNames"] = list(include)
    if exporter.exclude:
        doc["excludeObjectNames"] = list(exporter.exclude)
    doc["rules"] = [{"pattern": r.pattern, "name": r.name, "type": r.type,
                     **({"labels": dict(r.labels)} if r.labels else {})} for r in exporter.rules]
    return str(yaml.safe_dump(doc, sort_keys=False, width=200))
