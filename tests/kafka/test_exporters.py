"""The JMX exporter set-ups planewatch runs Apache Kafka with (planewatch.kafka.exporters): the names each gives the
MBeans planewatch reads, as the stacks' own configurations give them, and the signal the parser makes of each
(pure: jmx_exporter's matching as the reference broker applies it, no process)."""

from __future__ import annotations

import pytest
import yaml

from broker.metrics.prometheus import prometheus_name
from broker.metrics.registry import MetricName
from pipelines.parsing.engine_metrics import resolve_prometheus
from planewatch.kafka.exporters import EXPORTERS, JMX_INCLUDE, exporter_yaml

_QUEUE = MetricName("kafka.network", "RequestChannel", "RequestQueueSize")
_HANDLER = MetricName("kafka.server", "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent")
_ACCEPTOR = MetricName("kafka.network", "Acceptor", "AcceptorBlockedPercent", (("listener", "PLAINTEXT"),))
_NETWORK = MetricName("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent")
_QUEUE_TIME = MetricName("kafka.network", "RequestMetrics", "RequestQueueTimeMs", (("request", "LeaderAndIsr"),))
_FENCED = MetricName("kafka.controller", "KafkaController", "FencedBrokerCount")
_LEADER = MetricName("kafka.server", "raft-metrics", "")
_LAG = MetricName("kafka.server", "broker-metadata-metrics", "")
_UNCLEAN = MetricName("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec")

# (MBean, attribute) -> per set-up: the exported name, or None when the set-up drops it
CASES: list[tuple[MetricName, str, dict[str, str | None]]] = [
    (_QUEUE, "Value", {"kafka-2_0_0": "kafka_network_requestchannel_requestqueuesize",
                       "strimzi": "kafka_network_requestchannel_requestqueuesize",
                       "confluent": "kafka_network_requestchannel_requestqueuesize"}),
    (_HANDLER, "MeanRate", {"kafka-2_0_0": "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
                            "strimzi": "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent",
                            "confluent": None}),
    (_HANDLER, "OneMinuteRate", {
        "kafka-2_0_0": None, "strimzi": None,
        "confluent": "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_total"}),
    (_HANDLER, "Count", {"kafka-2_0_0": "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count",
                         "strimzi": "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count",
                         "confluent": "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent"}),
    (_ACCEPTOR, "Count", {"kafka-2_0_0": "kafka_network_acceptor_acceptorblockedpercent_count",
                          "strimzi": "kafka_network_acceptor_acceptorblockedpercent_count",
                          "confluent": "kafka_network_acceptor_acceptorblockedpercent"}),
    (_NETWORK, "Value", {"kafka-2_0_0": "kafka_network_socketserver_networkprocessoravgidlepercent",
                         "strimzi": "kafka_network_socketserver_networkprocessoravgidle_percent",
                         "confluent": "kafka_network_socketserver_networkprocessoravgidlepercent"}),
    (_QUEUE_TIME, "Count", {"kafka-2_0_0": "kafka_network_requestmetrics_requestqueuetimems_count",
                            "strimzi": None,  # Strimzi's rules skip RequestMetrics
                            "confluent": "kafka_network_requestmetrics_requestqueuetimems"}),
    (_QUEUE_TIME, "99thPercentile", {"kafka-2_0_0": "kafka_network_requestmetrics_requestqueuetimems",
                                     "strimzi": None, "confluent": "kafka_network_requestmetrics_requestqueuetimems"}),
    (_FENCED, "Value", {"kafka-2_0_0": "kafka_controller_kafkacontroller_fencedbrokercount",
                        "strimzi": "kafka_controller_kafkacontroller_fencedbrokercount",
                        "confluent": "kafka_controller_kafkacontroller_fencedbrokercount"}),
    (_LEADER, "current-leader", {"kafka-2_0_0": "kafka_server_raft_metrics_current_leader",
                                 "strimzi": "kafka_server_raftmetrics_current_leader",
                                 "confluent": None}),  # excluded with every `kafka.server:type=*`
    (_LAG, "last-applied-record-lag-ms", {
        "kafka-2_0_0": "kafka_server_broker_metadata_metrics_last_applied_record_lag_ms",
        "strimzi": "kafka_server_brokermetadatametrics_last_applied_record_lag_ms", "confluent": None}),
    # a `...PerSec` meter: kafka-2_0_0 and Strimzi drop the suffix (`name=(.+)PerSec\w*`), Confluent keeps it
    (_UNCLEAN, "Count", {"kafka-2_0_0": "kafka_controller_controllerstats_uncleanleaderelections_total",
                         "strimzi": "kafka_controller_controllerstats_uncleanleaderelections_total",
                         "confluent": "kafka_controller_controllerstats_uncleanleaderelectionspersec"}),
]
SIGNAL = {_QUEUE: "RequestQueueSize", _HANDLER: "RequestHandlerAvgIdlePercent", _ACCEPTOR: "AcceptorBlockedPercent",
          _NETWORK: "NetworkProcessorAvgIdlePercent", _QUEUE_TIME: "RequestQueueTimeMs",
          _FENCED: "FencedBrokerCount", _LEADER: "RaftCurrentLeader", _LAG: "MetadataApplyLagMs",
          _UNCLEAN: "UncleanLeaderElectionsPerSec"}


def _value_attribute(attribute: str) -> str:
    """The attribute the parser gives a Kafka-metrics attribute (one metric per attribute: Value)."""
    return "Value" if attribute[0].islower() else attribute


@pytest.mark.parametrize("exporter", sorted(EXPORTERS))
@pytest.mark.parametrize(("mbean", "attribute", "names"), CASES,
                         ids=[f"{m.type}.{m.name or a}.{a}" for m, a, _ in CASES])
def test_each_setup_names_the_mbean_as_its_stack_does_and_the_parser_resolves_it(
        exporter: str, mbean: MetricName, attribute: str, names: dict[str, str | None]) -> None:
    setup = EXPORTERS[exporter]
    excluded = any(x == f"{mbean.domain}:type=*" and not mbean.name and not mbean.tags for x in setup.exclude)
    got = None if excluded else prometheus_name(mbean, attribute, 0.5, setup.rules)
    assert (got[0] if got else None) == names[exporter]
    if got is None:
        return
    metric, kind, labels = got
    if setup.lowercase_labels:
        labels = {k.lower(): v for k, v in labels.items()}
    # jmx_exporter 1.x appends _total to a COUNTER not named so already; the parser reads the name either way
    suffixed = metric if metric.endswith("_total") else f"{metric}_total"
    for name in (metric, suffixed) if kind == "COUNTER" else (metric,):
        signal, _, parsed_attribute = resolve_prometheus(name, labels)
        assert (signal, parsed_attribute) == (SIGNAL[mbean], _value_attribute(attribute)), name


def test_the_agent_configuration_carries_the_setups_choices() -> None:
    confluent = yaml.safe_load(exporter_yaml(EXPORTERS["confluent"]))
    assert confluent["startDelaySeconds"] == 120
    assert confluent["lowercaseOutputLabelNames"] is True
    assert confluent["excludeObjectNames"] == ["kafka.server:type=*"]
    assert "startDelaySeconds" not in yaml.safe_load(exporter_yaml(EXPORTERS["confluent"], start_delay_s=0))
    plain = yaml.safe_load(exporter_yaml(EXPORTERS["kafka-2_0_0"]))
    assert plain["includeObjectNames"] == list(JMX_INCLUDE)
    assert plain["rules"][-1]["name"] == "kafka_server_$1_$2"  # KRaft's metrics after the kafka-2_0_0 set
    assert {"startDelaySeconds", "excludeObjectNames", "lowercaseOutputLabelNames"}.isdisjoint(plain)
