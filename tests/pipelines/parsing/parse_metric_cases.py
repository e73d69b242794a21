"""Metric lines in every naming convention of FACTS.md section 3 (JMX exporter, Strimzi, Confluent, Bitnami, the
reference broker's JSON lines), each with the sample row the parser must produce. Shared by the Python-engine and
Spark-engine tests."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any


# ---- metrics: every naming convention of FACTS.md section 3 (and the JSON-line variants)
@dataclass
class MCase:
    line: str
    route: str
    expect: dict[str, Any] = field(default_factory=dict)
    metric_format: str | None = None


T0 = dt.datetime(2021, 3, 2, 8, 0, tzinfo=dt.UTC)
INGEST = dt.datetime(2024, 1, 1, 0, 0, tzinfo=dt.UTC)
_RQ = "kafka.network:type=RequestChannel,name=RequestQueueSize"
_HANDLER = "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent"
_ACCEPTOR = "kafka.network:type=Acceptor,name=AcceptorBlockedPercent"
_TOTAL = "kafka.network:type=RequestMetrics,name=TotalTimeMs"
_SSM = "kafka.server:type=socket-server-metrics"


def sample(line: str, signal: str, mbean: str | None, attribute: str, value: float, ts: dt.datetime = INGEST,
           fmt: str = "prometheus", labels: dict[str, str | None] | None = None, **more: Any) -> MCase:
    raw_name = more.pop("raw_name", line.split("{")[0].split(" ")[0])
    row = {"ts": ts, "signal": signal, "mbean": mbean, "attribute": attribute, "value": value, "labels": labels or {},
           "raw_name": raw_name, "metric_format": fmt, "listener": None, "request": None, "processor": None, **more}
    return MCase(line, "sample", row)


METRIC_CASES: list[MCase] = [
    sample("kafka_network_requestchannel_requestqueuesize 3.0 1614672000000", "RequestQueueSize", _RQ, "Value", 3.0,
           T0),
    sample("kafka_network_requestchannel_controlplanerequestqueuesize 1", "ControlPlaneRequestQueueSize",
           "kafka.network:type=RequestChannel,name=ControlPlaneRequestQueueSize", "Value", 1.0),
    sample('kafka_network_requestchannel_responsequeuesize{processor="3"} 0', "ResponseQueueSize",
           "kafka.network:type=RequestChannel,name=ResponseQueueSize", "Value", 0.0, processor="3"),
    sample("kafka_network_socketserver_networkprocessoravgidlepercent 0.8", "NetworkProcessorAvgIdlePercent",
           "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent", "Value", 0.8),
    sample("kafka_network_socketserver_networkprocessoravgidle_percent 0.8", "NetworkProcessorAvgIdlePercent",
           "kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent", "Value", 0.8),
    sample('kafka_network_processor_idlepercent{networkProcessor="2"} 0.9', "ProcessorIdlePercent",
           "kafka.network:type=Processor,name=IdlePercent", "Value", 0.9, processor="2"),
    sample('kafka_network_processor_idle_percent{networkprocessor="2"} 0.9', "ProcessorIdlePercent",
           "kafka.network:type=Processor,name=IdlePercent", "Value", 0.9, processor="2"),
    sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent 0.25", "RequestHandlerAvgIdlePercent",
           _HANDLER, "MeanRate", 0.25),
    sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_oneminuterate 0.3",
           "RequestHandlerAvgIdlePercent", _HANDLER, "OneMinuteRate", 0.3),
    # Confluent jmx-monitoring-stacks' kafka_broker.yml (2026): the OneMinuteRate as a gauge named ..._total, the
    # Count under the bare name
    sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total 0.3",
           "RequestHandlerAvgIdlePercent", _HANDLER, "OneMinuteRate", 0.3),
    sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent 1.5e9",
           "RequestHandlerAvgIdlePercent", _HANDLER, "Count", 1.5e9),
    # Strimzi's kafka-metrics.yaml (2026): KRaft's raft-metrics and broker-metadata-metrics
    sample("kafka_server_raftmetrics_current_leader 1", "RaftCurrentLeader", "kafka.server:type=raft-metrics", "Value",
           1.0),
    sample("kafka_server_brokermetadatametrics_last_applied_record_lag_ms 12", "MetadataApplyLagMs",
           "kafka.server:type=broker-metadata-metrics", "Value", 12.0),
    sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count 1.5e9",
           "RequestHandlerAvgIdlePercent", _HANDLER, "Count", 1.5e9),
    sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count_total 1.5e9",
           "RequestHandlerAvgIdlePercent", _HANDLER, "Count", 1.5e9),
    sample("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_value 0.7",
           "RequestHandlerAvgIdlePercent", _HANDLER, "Value", 0.7),
    sample("kafka_server_kafkarequesthandlerpool_controlplanerequesthandleravgidle_percent 1.0",
           "ControlPlaneRequestHandlerAvgIdlePercent",
           "kafka.server:type=KafkaRequestHandlerPool,name=ControlPlaneRequestHandlerAvgIdlePercent", "MeanRate", 1.0),
    sample('kafka_network_acceptor_acceptorblockedpercent_count{listener="PLAINTEXT"} 12', "AcceptorBlockedPercent",
           _ACCEPTOR, "Count", 12.0, listener="PLAINTEXT"),
    sample('kafka_network_acceptor_acceptorblockedpercent{listener="PLAINTEXT"} 12', "AcceptorBlockedPercent",
           _ACCEPTOR, "Count", 12.0, listener="PLAINTEXT"),
    sample('kafka_network_acceptor_acceptoridlepercent_oneminuterate{listener="PLAINTEXT"} 0.1',
           "AcceptorBlockedPercent", _ACCEPTOR, "OneMinuteRate", 0.1, listener="PLAINTEXT"),
    sample('kafka_network_requestmetrics_totaltimems{request="LeaderAndIsr",quantile="0.99"} 12.5', "TotalTimeMs",
           _TOTAL, "99thPercentile", 12.5, request="LeaderAndIsr"),
    sample('kafka_network_requestmetrics_totaltimems{request="LeaderAndIsr",quantile="0.999"} 13', "TotalTimeMs",
           _TOTAL, "999thPercentile", 13.0, request="LeaderAndIsr"),
    sample('kafka_network_requestmetrics_totaltimems{request="LeaderAndIsr",quantile="0.5"} 2', "TotalTimeMs",
           _TOTAL, "50thPercentile", 2.0, request="LeaderAndIsr"),
    sample('kafka_network_requestmetrics_totaltimems_count{request="LeaderAndIsr"} 40', "TotalTimeMs", _TOTAL,
           "Count", 40.0, request="LeaderAndIsr"),
    sample('kafka_network_requestmetrics_requests_total{request="LeaderAndIsr",version="5"} 7', "RequestsPerSec",
           "kafka.network:type=RequestMetrics,name=RequestsPerSec", "Count", 7.0, request="LeaderAndIsr",
           labels={"version": "5"}),
    sample('kafka_network_requestmetrics_errors_total{request="LeaderAndIsr",error="STALE_BROKER_EPOCH"} 2',
           "ErrorsPerSec", "kafka.network:type=RequestMetrics,name=ErrorsPerSec", "Count", 2.0,
           request="LeaderAndIsr", labels={"error": "STALE_BROKER_EPOCH"}),
    sample('kafka_network_requestmetrics_errorspersec{request="LeaderAndIsr",error="NONE"} 2', "ErrorsPerSec",
           "kafka.network:type=RequestMetrics,name=ErrorsPerSec", "Count", 2.0, request="LeaderAndIsr",
           labels={"error": "NONE"}),
    sample('kafka_server_socket_server_metrics_connection_count{listener="PLAINTEXT",networkProcessor="1"} 3',
           "ConnectionCount", _SSM, "Value", 3.0, listener="PLAINTEXT", processor="1"),
    sample('kafka_server_socketservermetrics_connection_count{listener="PLAINTEXT",network_processor="1"} 3',
           "ConnectionCount", _SSM, "Value", 3.0, listener="PLAINTEXT", processor="1"),
    sample("kafka_server_socket_server_metrics_connection_close_total 5", "ConnectionCloseTotal", _SSM, "Value", 5.0),
    sample("kafka_controller_controllereventmanager_eventqueuesize 4", "EventQueueSize",
           "kafka.controller:type=ControllerEventManager,name=EventQueueSize", "Value", 4.0),
    sample('kafka_controller_controllereventmanager_eventqueuetimems{quantile="0.99"} 40', "EventQueueTimeMs",
           "kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs", "99thPercentile", 40.0),
    sample('kafka_controller_controllerchannelmanager_queuesize{broker_id="2"} 0', "ControllerChannelQueueSize",
           "kafka.controller:type=ControllerChannelManager,name=QueueSize", "Value", 0.0, labels={"broker_id": "2"}),
    sample("kafka_server_broker_metadata_metrics_last_applied_record_lag_ms 12", "MetadataApplyLagMs",
           "kafka.server:type=broker-metadata-metrics", "Value", 12.0),
    sample("kafka_network_socketserver_expiredconnectionskilledcount 0", "ExpiredConnectionsKilledCount",
           "kafka.network:type=SocketServer,name=ExpiredConnectionsKilledCount", "Value", 0.0),
    sample("some_other_metric_total 1 1614672000000", "some_other_metric_total", None, "Value", 1.0, T0),
    sample('  kafka_network_requestchannel_requestqueuesize{a="x\\"y"}   +Inf  ', "RequestQueueSize", _RQ, "Value",
           float("inf"), labels={"a": 'x\\"y'}, raw_name="kafka_network_requestchannel_requestqueuesize"),
    # JSON lines: the reference broker's, and a metrics reporter's variants
    sample('{"ts": 1614672000000, "broker_id": 1, "mbean": "' + _RQ + '", "attribute": "Value", "value": 0.0}',
           "RequestQueueSize", _RQ, "Value", 0.0, T0, "json", raw_name=_RQ, broker_id=1),
    sample('{"ts": 1614672000000, "broker_id": 1, "mbean": "' + _ACCEPTOR + ',listener=PLAINTEXT", "attribute": '
           '"OneMinuteRate", "value": 0.1}', "AcceptorBlockedPercent", _ACCEPTOR, "OneMinuteRate", 0.1, T0, "json",
           raw_name=_ACCEPTOR + ",listener=PLAINTEXT", broker_id=1, listener="PLAINTEXT"),
    sample('{"ts": 1614672000000, "mbean": "kafka.network:type=Acceptor,name=AcceptorIdlePercent,listener=CONTROLLER",'
           ' "attribute": "MeanRate", "value": 0.0}', "AcceptorBlockedPercent", _ACCEPTOR, "MeanRate", 0.0, T0,
           "json", raw_name="kafka.network:type=Acceptor,name=AcceptorIdlePercent,listener=CONTROLLER",
           listener="CONTROLLER"),
    sample('{"ts": 1614672000000, "mbean": "' + _HANDLER + '", "value": 5}', "RequestHandlerAvgIdlePercent",
           _HANDLER, "Count", 5.0, T0, "json", raw_name=_HANDLER),
    sample('{"ts": 1614672000000, "mbean": "kafka.server:type=broker-metadata-metrics", "attribute": '
           '"last-applied-record-lag-ms", "value": 3}', "MetadataApplyLagMs",
           "kafka.server:type=broker-metadata-metrics", "Value", 3.0, T0, "json",
           raw_name="kafka.server:type=broker-metadata-metrics"),
    # Kafka's app-info start-time-ms (AppInfoParser), as the reference broker's JSON reporter writes it
    sample('{"ts": 1614672000000, "mbean": "kafka.server:type=app-info,id=1", "attribute": '
           '"start-time-ms", "value": 1614671990123.0}', "StartTimeMs", "kafka.server:type=app-info", "Value",
           1614671990123.0, T0, "json", raw_name="kafka.server:type=app-info,id=1", labels={"id": "1"}),
    sample("kafka_server_app_info_start_time_ms{id=\"1\",} 1.614671990123E12", "StartTimeMs",
           "kafka.server:type=app-info", "Value", 1614671990123.0, labels={"id": "1"}),
    sample('{"timestamp": 1614672000000, "name": "kafka.server:type=socket-server-metrics,listener=PLAINTEXT,'
           'networkProcessor=0", "attribute": "connection-count", "value": 3}', "ConnectionCount", _SSM, "Value", 3.0,
           T0, "json", raw_name="kafka.server:type=socket-server-metrics,listener=PLAINTEXT,networkProcessor=0",
           listener="PLAINTEXT", processor="0"),
    sample('{"metric": "kafka_network_requestchannel_requestqueuesize", "labels": {"host": "b1"}, "value": "7"}',
           "RequestQueueSize", _RQ, "Value", 7.0, fmt="json", raw_name="kafka_network_requestchannel_requestqueuesize",
           labels={"host": "b1"}),
    sample('{"ts": 1614672000000, "mbean": "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t", '
           '"attribute": "OneMinuteRate", "value": 10}', "BytesInPerSec",
           "kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", "OneMinuteRate", 10.0, T0, "json",
           raw_name="kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t", labels={"topic": "t"}),
    # not samples
    MCase("# HELP kafka_network_requestchannel_requestqueuesize Attribute exposed for management", "unused",
          {"reason": "comment (# HELP / # TYPE)"}),
    MCase("# TYPE kafka_network_requestchannel_requestqueuesize untyped", "unused",
          {"reason": "comment (# HELP / # TYPE)"}),
    MCase("   ", "unused", {"reason": "blank line"}),
    # Apache Kafka 3.9.1's JMX exporter without a control plane (kafka-produce-backlog-without-control-plane run)
    MCase("kafka_network_socketserver_controlplanenetworkprocessoravgidlepercent NaN", "unused",
          {"reason": "sample without a value (NaN: not measured)"}),
    MCase('{"ts": 1614672000000, "mbean": "' + _RQ + '", "attribute": "Value", "value": null}', "unused",
          {"reason": "sample without a value (null)"}),
    MCase("[1, 2, 3]", "rejected", {"reason": "JSON record is not an object"}),
    MCase('"just a string"', "rejected", {"reason": "JSON record is not an object"}, "json"),
    MCase('{"ts": 1, "mbean": ', "rejected", {"reason": "malformed JSON"}),
    MCase('{"value": 1}', "rejected", {"reason": "no metric name (mbean, name or metric)"}),
    MCase('{"mbean": "' + _RQ + '", "value": "high"}', "rejected", {"reason": "metric value is not a number"}),
    MCase("kafka_network_requestchannel_requestqueuesize abc", "rejected", {"reason": "metric value is not a number"}),
    MCase("kafka_network_requestchannel_requestqueuesize", "rejected", {"reason": "not a Prometheus exposition line"}),
    MCase("\x00\x01 binary \ufffd", "rejected", {"reason": "not a Prometheus exposition line"}),
    MCase('foo{a="1",a="2"} 1', "rejected", {"reason": "duplicate label or tag"}),
    MCase("foo 1 99999999999999999", "rejected", {"reason": "timestamp is not epoch milliseconds in range"}),
    # a failed read of a source (jobs.sources.scrape): quarantined whole, the first line is the reason, stage source
    MCase("scrape failed: connection refused", "rejected",
          {"reason": "scrape failed: connection refused", "stage": "source"}, "source-error"),
    MCase("scrape failed: answer is not Prometheus text (HTTP 200, Content-Type text/html)\n<html># x 1</html>",
          "rejected", {"reason": "scrape failed: answer is not Prometheus text (HTTP 200, Content-Type text/html)",
                       "stage": "source"}, "source-error"),
]
