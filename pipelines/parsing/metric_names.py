"""One canonical signal per Kafka metric, whatever the naming convention (FACTS.md section 3), declared as data.

Resolution of a name (both engines do exactly this):

1. A Prometheus name is lower-cased. ``EXACT`` (special spellings whose attribute is implied, e.g. Strimzi/kafka-2_0_0
   ``..._requesthandleravgidle_percent`` = MeanRate) is consulted first.
2. Candidates, in order: the whole name; the name without jmx_exporter 1.x's ``_total`` counter suffix; that name
   without an attribute suffix (``_count``, ``_value``, ``_oneminuterate``, ... as Confluent and Bitnami rules emit).
   Each candidate is *compacted* (``_ : . -`` and spaces removed) and looked up in ``KEYS``, which holds, for every
   known metric, the compacted ``domain + type + name`` (Yammer) or ``domain + type + attribute`` (Kafka metrics),
   plus aliases (``AcceptorIdlePercent`` of the KIP-402 draft -> AcceptorBlockedPercent; ``requests`` ->
   RequestsPerSec, the kafka-2_0_0 rule's name).
3. The attribute is the suffix's (``_count`` -> Count), else a ``quantile`` label's percentile (0.99 ->
   99thPercentile), else the kind's default (gauge -> Value, meter/histogram -> Count; jmx_exporter drops the other
   attributes or names them).
4. ``socket-server-metrics`` (Kafka metrics, one attribute per metric) become CamelCase signals
   (``connection-count`` -> ConnectionCount). A name that resolves to nothing keeps its raw name as signal.

A JSON record naming an MBean (``kafka.network:type=RequestChannel,name=RequestQueueSize``) is looked up by the same
compacted key; its ``attribute`` field is the attribute.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ATTRIBUTE_SUFFIXES",
    "EXACT",
    "FAMILIES",
    "KEYS",
    "KIND_DEFAULT_ATTRIBUTE",
    "SIGNALS",
    "Metric",
    "compact",
]


@dataclass(frozen=True)
class Metric:
    """A known metric: canonical signal, its MBean (without per-instance tags), kind, and extra lookup aliases."""

    signal: str
    domain: str
    type: str
    name: str  # Yammer `name=`; for Kafka metrics the attribute (e.g. last-applied-record-lag-ms)
    kind: str  # gauge | meter | histogram | timer | kafka
    aliases: tuple[str, ...] = ()

    @property
    def mbean(self) -> str:
        if self.kind == "kafka":
            return f"{self.domain}:type={self.type}"
        return f"{self.domain}:type={self.type},name={self.name}"


def _g(signal: str, domain: str, type_: str, name: str | None = None, kind: str = "gauge", *aliases: str) -> Metric:
    return Metric(signal, domain, type_, name or signal, kind, aliases)


_RM = "kafka.network", "RequestMetrics"
METRICS: tuple[Metric, ...] = (
    _g("RequestQueueSize", "kafka.network", "RequestChannel"),
    _g("ControlPlaneRequestQueueSize", "kafka.network", "RequestChannel"),
    _g("ResponseQueueSize", "kafka.network", "RequestChannel"),
    _g("ControlPlaneResponseQueueSize", "kafka.network", "RequestChannel"),
    _g("NetworkProcessorAvgIdlePercent", "kafka.network", "SocketServer"),
    _g("ControlPlaneNetworkProcessorAvgIdlePercent", "kafka.network", "SocketServer"),
    _g("ExpiredConnectionsKilledCount", "kafka.network", "SocketServer"),
    _g("ControlPlaneExpiredConnectionsKilledCount", "kafka.network", "SocketServer"),
    _g("MemoryPoolAvailable", "kafka.network", "SocketServer"),
    _g("MemoryPoolUsed", "kafka.network", "SocketServer"),
    _g("ProcessorIdlePercent", "kafka.network", "Processor", "IdlePercent"),
    _g("RequestHandlerAvgIdlePercent", "kafka.server", "KafkaRequestHandlerPool", None, "meter"),
    _g("ControlPlaneRequestHandlerAvgIdlePercent", "kafka.server", "KafkaRequestHandlerPool", None, "meter"),
    _g("AcceptorBlockedPercent", "kafka.network", "Acceptor", None, "meter",
       "kafka.network.Acceptor.AcceptorIdlePercent"),
    _g("ControlPlaneAcceptorBlockedPercent", "kafka.network", "Acceptor", None, "meter",
       "kafka.network.Acceptor.ControlPlaneAcceptorIdlePercent"),
    *(_g(n, *_RM, None, "histogram") for n in (
        "RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ThrottleTimeMs", "ResponseQueueTimeMs",
        "ResponseSendTimeMs", "TotalTimeMs", "RequestBytes", "MessageConversionsTimeMs", "TemporaryMemoryBytes")),
    _g("RequestsPerSec", *_RM, None, "meter", "kafka.network.RequestMetrics.requests"),
    _g("ErrorsPerSec", *_RM, None, "meter", "kafka.network.RequestMetrics.errors"),
    _g("ControllerChannelQueueSize", "kafka.controller", "ControllerChannelManager", "QueueSize"),
    _g("ControllerChannelTotalQueueSize", "kafka.controller", "ControllerChannelManager", "TotalQueueSize"),
    _g("ControllerChannelRequestRateAndQueueTimeMs", "kafka.controller", "ControllerChannelManager",
       "RequestRateAndQueueTimeMs", "timer"),
    _g("EventQueueSize", "kafka.controller", "ControllerEventManager"),
    _g("EventQueueTimeMs", "kafka.controller", "ControllerEventManager", None, "histogram"),
    _g("EventQueueProcessingTimeMs", "kafka.controller", "ControllerEventManager", None, "histogram"),
    _g("ActiveControllerCount", "kafka.controller", "KafkaController"),
    _g("OfflinePartitionsCount", "kafka.controller", "KafkaController"),
    _g("LastAppliedRecordLagMs", "kafka.controller", "KafkaController"),
    _g("UnderReplicatedPartitions", "kafka.server", "ReplicaManager"),
    _g("PartitionCount", "kafka.server", "ReplicaManager"),
    _g("LeaderCount", "kafka.server", "ReplicaManager"),
    _g("IsrShrinksPerSec", "kafka.server", "ReplicaManager", None, "meter"),
    _g("IsrExpandsPerSec", "kafka.server", "ReplicaManager", None, "meter"),
    _g("ReplicaFetcherMaxLag", "kafka.server", "ReplicaFetcherManager", "MaxLag"),
    _g("LeaderElectionRateAndTimeMs", "kafka.controller", "ControllerStats", None, "timer"),
    # LinkedIn's event-based fetcher (KAFKA-6974 fork): FetcherEventManager queue metrics
    _g("FetcherEventQueueSize", "kafka.server", "FetcherEventManager", "EventQueueSize"),
    _g("FetcherEventQueueTimeMs", "kafka.server", "FetcherEventManager", "EventQueueTimeMs", "histogram"),
    # KRaft: broker metadata loader lag (documented name MetadataApplyLagMs)
    Metric("MetadataApplyLagMs", "kafka.server", "broker-metadata-metrics", "last-applied-record-lag-ms", "kafka"),
    Metric("MetadataLastAppliedOffset", "kafka.server", "broker-metadata-metrics", "last-applied-record-offset",
           "kafka"),
    Metric("MetadataLastAppliedTimestamp", "kafka.server", "broker-metadata-metrics", "last-applied-record-timestamp",
           "kafka"),
    Metric("MetadataApplyErrorCount", "kafka.server", "broker-metadata-metrics", "metadata-apply-error-count", "kafka"),
    Metric("MetadataLoadErrorCount", "kafka.server", "broker-metadata-metrics", "metadata-load-error-count", "kafka"),
)

SIGNALS: tuple[str, ...] = tuple(m.signal for m in METRICS)

_COMPACT_DROP = "_:.- "


def compact(text: str) -> str:
    """Lower-case without `_ : . -` and spaces: kafka_network_requestchannel_requestqueuesize and
    kafka.network:type=RequestChannel,name=RequestQueueSize (as domain+type+name) meet here."""
    return "".join(ch for ch in text.lower() if ch not in _COMPACT_DROP)


def _entry(m: Metric) -> str:
    return f"{m.signal}|{m.mbean}|{m.kind}"


KEYS: dict[str, str] = {}
for _m in METRICS:
    for _k in (_m.domain + _m.type + _m.name, *_m.aliases):
        KEYS[compact(_k)] = _entry(_m)

# Spellings whose attribute the exporter's rule implies (FACTS.md section 3 table).
EXACT: dict[str, tuple[str, str]] = {
    "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent": ("RequestHandlerAvgIdlePercent", "MeanRate"),
    "kafka_server_kafkarequesthandlerpool_controlplanerequesthandleravgidle_percent": (
        "ControlPlaneRequestHandlerAvgIdlePercent", "MeanRate"),
}

ATTRIBUTE_SUFFIXES: dict[str, str] = {
    "count": "Count",
    "value": "Value",
    "meanrate": "MeanRate",
    "oneminuterate": "OneMinuteRate",
    "fiveminuterate": "FiveMinuteRate",
    "fifteenminuterate": "FifteenMinuteRate",
    "mean": "Mean",
    "min": "Min",
    "max": "Max",
    "stddev": "StdDev",
    "50thpercentile": "50thPercentile",
    "75thpercentile": "75thPercentile",
    "95thpercentile": "95thPercentile",
    "98thpercentile": "98thPercentile",
    "99thpercentile": "99thPercentile",
    "999thpercentile": "999thPercentile",
}
KIND_DEFAULT_ATTRIBUTE = {"gauge": "Value", "kafka": "Value", "meter": "Count", "histogram": "Count", "timer": "Count"}

# Kafka-metrics groups exported attribute by attribute: (lower-case name prefix, MBean). The rest of the name is the
# attribute; the signal is its CamelCase (connection_count / connection-count -> ConnectionCount).
FAMILIES: tuple[tuple[str, str], ...] = (
    ("kafka_server_socket_server_metrics_", "kafka.server:type=socket-server-metrics"),
    ("kafka_server_socketservermetrics_", "kafka.server:type=socket-server-metrics"),
)
