"""The metric signals: one canonical name per Kafka metric, whatever exporter and naming convention reported it.

`metric_samples.signal` (and `metric_rollups_1m.signal`) hold these names; the metric parsers resolve every
spelling of a metric to one of them (:mod:`pipelines.parsing.metric_names` holds the lookup rules and the aliases),
detection reads them, the API reports them, and the dashboard's SQL and page name them (a test checks those name only
members of :class:`Signal`). A metric the parsers cannot resolve keeps its raw name as signal, so `signal` may hold
other values too; these are the ones planewatch understands.

Each signal comes from exactly one Kafka metric, declared in :data:`SOURCES` with its MBean (FACTS.md section 3),
its kind and its unit: what a sample's `value` means for the default attribute (gauge `Value`, meter/histogram
`Count`). Yammer meters of idle/blocked time count NANOSECONDS; their rate attributes (`MeanRate`,
`OneMinuteRate`) are fractions 0..1 of a second per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["BROKER_ACTIVE", "BROKER_REGISTRATION_STATES", "EVENT_QUEUE_ATTRIBUTE", "PER_BROKER_SIGNALS", "SOURCES",
           "START_SIGNALS", "SUBJECT_LABEL", "KafkaMetric", "Signal"]


class Signal(StrEnum):
    """The canonical signal names (Kafka's own metric names; see :data:`SOURCES` for each one's MBean and unit)."""

    RequestQueueSize = "RequestQueueSize"
    ControlPlaneRequestQueueSize = "ControlPlaneRequestQueueSize"
    ResponseQueueSize = "ResponseQueueSize"
    ControlPlaneResponseQueueSize = "ControlPlaneResponseQueueSize"
    NetworkProcessorAvgIdlePercent = "NetworkProcessorAvgIdlePercent"
    ControlPlaneNetworkProcessorAvgIdlePercent = "ControlPlaneNetworkProcessorAvgIdlePercent"
    ExpiredConnectionsKilledCount = "ExpiredConnectionsKilledCount"
    ControlPlaneExpiredConnectionsKilledCount = "ControlPlaneExpiredConnectionsKilledCount"
    MemoryPoolAvailable = "MemoryPoolAvailable"
    MemoryPoolUsed = "MemoryPoolUsed"
    ProcessorIdlePercent = "ProcessorIdlePercent"
    RequestHandlerAvgIdlePercent = "RequestHandlerAvgIdlePercent"
    ControlPlaneRequestHandlerAvgIdlePercent = "ControlPlaneRequestHandlerAvgIdlePercent"
    BrokerRequestHandlerAvgIdlePercent = "BrokerRequestHandlerAvgIdlePercent"
    ControllerRequestHandlerAvgIdlePercent = "ControllerRequestHandlerAvgIdlePercent"
    AcceptorBlockedPercent = "AcceptorBlockedPercent"
    ControlPlaneAcceptorBlockedPercent = "ControlPlaneAcceptorBlockedPercent"
    RequestQueueTimeMs = "RequestQueueTimeMs"
    LocalTimeMs = "LocalTimeMs"
    RemoteTimeMs = "RemoteTimeMs"
    ThrottleTimeMs = "ThrottleTimeMs"
    ResponseQueueTimeMs = "ResponseQueueTimeMs"
    ResponseSendTimeMs = "ResponseSendTimeMs"
    TotalTimeMs = "TotalTimeMs"
    RequestBytes = "RequestBytes"
    MessageConversionsTimeMs = "MessageConversionsTimeMs"
    TemporaryMemoryBytes = "TemporaryMemoryBytes"
    RequestsPerSec = "RequestsPerSec"
    ErrorsPerSec = "ErrorsPerSec"
    ControllerChannelQueueSize = "ControllerChannelQueueSize"
    ControllerChannelTotalQueueSize = "ControllerChannelTotalQueueSize"
    ControllerChannelRequestRateAndQueueTimeMs = "ControllerChannelRequestRateAndQueueTimeMs"
    EventQueueSize = "EventQueueSize"
    EventQueueTimeMs = "EventQueueTimeMs"
    EventQueueProcessingTimeMs = "EventQueueProcessingTimeMs"
    ActiveControllerCount = "ActiveControllerCount"
    OfflinePartitionsCount = "OfflinePartitionsCount"
    LastAppliedRecordLagMs = "LastAppliedRecordLagMs"
    UnderReplicatedPartitions = "UnderReplicatedPartitions"
    UnderMinIsrPartitionCount = "UnderMinIsrPartitionCount"
    PreferredReplicaImbalanceCount = "PreferredReplicaImbalanceCount"
    PartitionCount = "PartitionCount"
    LeaderCount = "LeaderCount"
    IsrShrinksPerSec = "IsrShrinksPerSec"
    IsrExpandsPerSec = "IsrExpandsPerSec"
    ReplicaFetcherMaxLag = "ReplicaFetcherMaxLag"
    LeaderElectionRateAndTimeMs = "LeaderElectionRateAndTimeMs"
    UncleanLeaderElectionsPerSec = "UncleanLeaderElectionsPerSec"
    ElectionFromEligibleLeaderReplicasPerSec = "ElectionFromEligibleLeaderReplicasPerSec"
    FetcherEventQueueSize = "FetcherEventQueueSize"
    FetcherEventQueueTimeMs = "FetcherEventQueueTimeMs"
    MetadataApplyLagMs = "MetadataApplyLagMs"
    MetadataLastAppliedOffset = "MetadataLastAppliedOffset"
    MetadataLastAppliedTimestamp = "MetadataLastAppliedTimestamp"
    MetadataApplyErrorCount = "MetadataApplyErrorCount"
    MetadataLoadErrorCount = "MetadataLoadErrorCount"
    FencedBrokerCount = "FencedBrokerCount"
    ActiveBrokerCount = "ActiveBrokerCount"
    TimedOutBrokerHeartbeatCount = "TimedOutBrokerHeartbeatCount"
    BrokerRegistrationState = "BrokerRegistrationState"
    TimeSinceLastHeartbeatReceivedMs = "TimeSinceLastHeartbeatReceivedMs"
    NewActiveControllersCount = "NewActiveControllersCount"
    EventQueueOperationsTimedOutCount = "EventQueueOperationsTimedOutCount"
    ControllerEventManagerAvgIdleRatio = "ControllerEventManagerAvgIdleRatio"
    MetadataLoaderAvgIdleRatio = "MetadataLoaderAvgIdleRatio"
    RaftCurrentEpoch = "RaftCurrentEpoch"
    RaftCurrentLeader = "RaftCurrentLeader"
    RaftCommitLatencyAvg = "RaftCommitLatencyAvg"
    ProcessStartTimeSeconds = "ProcessStartTimeSeconds"
    StartTimeMs = "StartTimeMs"


@dataclass(frozen=True)
class KafkaMetric:
    """The Kafka metric a signal comes from: MBean domain and type, the Yammer `name=` (for a Kafka-metrics MBean,
    kind `kafka`, the attribute, e.g. last-applied-record-lag-ms), kind (gauge | meter | histogram | timer |
    kafka), the unit of a sample's value, and what it measures."""

    domain: str
    type: str
    name: str
    kind: str
    unit: str
    meaning: str

    @property
    def mbean(self) -> str:
        """The MBean name without per-instance tags (`kafka.network:type=RequestChannel,name=RequestQueueSize`)."""
        if not self.type:  # not an MBean: the exporter's own metric (process_start_time_seconds)
            return f"{self.domain}_{self.name}"
        if self.kind == "kafka":
            return f"{self.domain}:type={self.type}"
        return f"{self.domain}:type={self.type},name={self.name}"


_S = Signal
_NET, _SRV, _CTL = "kafka.network", "kafka.server", "kafka.controller"
_IDLE_NS = "ns idle (meter Count); rates: fraction 0..1"
_MS_HIST = "ms (histogram; Count = requests)"


def _rm(name: str, meaning: str, unit: str = _MS_HIST, kind: str = "histogram") -> KafkaMetric:
    """A RequestMetrics histogram (per `request=` tag)."""
    return KafkaMetric(_NET, "RequestMetrics", name, kind, unit, meaning)


# One entry per Signal, in the order the metric parsers consult them (later aliases may not shadow earlier keys).
SOURCES: dict[Signal, KafkaMetric] = {
    _S.RequestQueueSize: KafkaMetric(_NET, "RequestChannel", "RequestQueueSize", "gauge", "requests",
                                    "requests waiting in the data-plane queue (capacity queued.max.requests)"),
    _S.ControlPlaneRequestQueueSize: KafkaMetric(
        _NET, "RequestChannel", "ControlPlaneRequestQueueSize", "gauge", "requests",
        "controller requests waiting in the control-plane queue (KIP-291; capacity 20)"),
    _S.ResponseQueueSize: KafkaMetric(_NET, "RequestChannel", "ResponseQueueSize", "gauge", "responses",
                                     "responses waiting for the data-plane network processors"),
    _S.ControlPlaneResponseQueueSize: KafkaMetric(_NET, "RequestChannel", "ControlPlaneResponseQueueSize", "gauge",
                                                 "responses", "responses waiting for the control-plane processor"),
    _S.NetworkProcessorAvgIdlePercent: KafkaMetric(_NET, "SocketServer", "NetworkProcessorAvgIdlePercent", "gauge",
                                                  "fraction 0..1", "average idle share of the data-plane processors"),
    _S.ControlPlaneNetworkProcessorAvgIdlePercent: KafkaMetric(
        _NET, "SocketServer", "ControlPlaneNetworkProcessorAvgIdlePercent", "gauge", "fraction 0..1",
        "idle share of the control-plane processor"),
    _S.ExpiredConnectionsKilledCount: KafkaMetric(_NET, "SocketServer", "ExpiredConnectionsKilledCount", "gauge",
                                                 "connections", "data-plane connections closed as expired"),
    _S.ControlPlaneExpiredConnectionsKilledCount: KafkaMetric(
        _NET, "SocketServer", "ControlPlaneExpiredConnectionsKilledCount", "gauge", "connections",
        "control-plane connections closed as expired"),
    _S.MemoryPoolAvailable: KafkaMetric(_NET, "SocketServer", "MemoryPoolAvailable", "gauge", "bytes",
                                       "free bytes of the request memory pool (queued.max.request.bytes)"),
    _S.MemoryPoolUsed: KafkaMetric(_NET, "SocketServer", "MemoryPoolUsed", "gauge", "bytes",
                                  "bytes of the request memory pool in use"),
    _S.ProcessorIdlePercent: KafkaMetric(_NET, "Processor", "IdlePercent", "gauge", "fraction 0..1",
                                        "idle share of one network processor (per `networkProcessor` tag)"),
    _S.RequestHandlerAvgIdlePercent: KafkaMetric(_SRV, "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent",
                                                "meter", _IDLE_NS, "idle time of the data-plane request handlers"),
    _S.ControlPlaneRequestHandlerAvgIdlePercent: KafkaMetric(
        _SRV, "KafkaRequestHandlerPool", "ControlPlaneRequestHandlerAvgIdlePercent", "meter", _IDLE_NS,
        "idle time of the control-plane request handler"),
    # Kafka 4.x (KRaft): one meter per handler pool beside the node-wide RequestHandlerAvgIdlePercent (which a
    # combined broker+controller node marks from both pools)
    _S.BrokerRequestHandlerAvgIdlePercent: KafkaMetric(
        _SRV, "KafkaRequestHandlerPool", "BrokerRequestHandlerAvgIdlePercent", "meter", _IDLE_NS,
        "idle time of a KRaft broker's request handlers (Kafka 4.x)"),
    _S.ControllerRequestHandlerAvgIdlePercent: KafkaMetric(
        _SRV, "KafkaRequestHandlerPool", "ControllerRequestHandlerAvgIdlePercent", "meter", _IDLE_NS,
        "idle time of a KRaft controller's request handlers (Kafka 4.x)"),
    _S.AcceptorBlockedPercent: KafkaMetric(
        _NET, "Acceptor", "AcceptorBlockedPercent", "meter", "ns blocked (meter Count); rates: fraction 0..1",
        "time the data-plane acceptor waited for a full processor queue (KIP-402; draft name AcceptorIdlePercent)"),
    _S.ControlPlaneAcceptorBlockedPercent: KafkaMetric(
        _NET, "Acceptor", "ControlPlaneAcceptorBlockedPercent", "meter",
        "ns blocked (meter Count); rates: fraction 0..1", "time the control-plane acceptor was blocked (KIP-402)"),
    _S.RequestQueueTimeMs: _rm("RequestQueueTimeMs", "time a request waited in the request queue"),
    _S.LocalTimeMs: _rm("LocalTimeMs", "time a request was processed by the handler (leader)"),
    _S.RemoteTimeMs: _rm("RemoteTimeMs", "time a request waited for other brokers (purgatory)"),
    _S.ThrottleTimeMs: _rm("ThrottleTimeMs", "time a request was throttled by quotas"),
    _S.ResponseQueueTimeMs: _rm("ResponseQueueTimeMs", "time a response waited in the response queue"),
    _S.ResponseSendTimeMs: _rm("ResponseSendTimeMs", "time sending a response took"),
    _S.TotalTimeMs: _rm("TotalTimeMs", "a request's total time, receive to response sent"),
    _S.RequestBytes: _rm("RequestBytes", "request sizes", "bytes (histogram; Count = requests)"),
    _S.MessageConversionsTimeMs: _rm("MessageConversionsTimeMs", "time spent converting record formats"),
    _S.TemporaryMemoryBytes: _rm("TemporaryMemoryBytes", "temporary memory per request (conversions)",
                                "bytes (histogram; Count = requests)"),
    _S.RequestsPerSec: _rm("RequestsPerSec", "requests received (per `request=` and `version=`)",
                          "requests (meter Count); rates: per second", "meter"),
    _S.ErrorsPerSec: _rm("ErrorsPerSec", "responses with an error (per `request=` and `error=`)",
                        "responses (meter Count); rates: per second", "meter"),
    _S.ControllerChannelQueueSize: KafkaMetric(_CTL, "ControllerChannelManager", "QueueSize", "gauge", "requests",
                                              "controller requests queued for one broker (per `broker-id` tag)"),
    _S.ControllerChannelTotalQueueSize: KafkaMetric(_CTL, "ControllerChannelManager", "TotalQueueSize", "gauge",
                                                   "requests", "controller requests queued for all brokers"),
    _S.ControllerChannelRequestRateAndQueueTimeMs: KafkaMetric(
        _CTL, "ControllerChannelManager", "RequestRateAndQueueTimeMs", "timer", "ms (timer; Count = requests)",
        "time a controller request waited in the controller's queue for its broker"),
    _S.EventQueueSize: KafkaMetric(_CTL, "ControllerEventManager", "EventQueueSize", "gauge", "events",
                                  "events waiting in the controller's event queue"),
    _S.EventQueueTimeMs: KafkaMetric(_CTL, "ControllerEventManager", "EventQueueTimeMs", "histogram",
                                    "ms (histogram; Count = events)", "time a controller event waited to be processed"),
    _S.EventQueueProcessingTimeMs: KafkaMetric(_CTL, "ControllerEventManager", "EventQueueProcessingTimeMs",
                                              "histogram", "ms (histogram; Count = events)",
                                              "time the controller took to process an event"),
    _S.ActiveControllerCount: KafkaMetric(_CTL, "KafkaController", "ActiveControllerCount", "gauge", "controllers",
                                         "1 on the active controller, else 0"),
    _S.OfflinePartitionsCount: KafkaMetric(_CTL, "KafkaController", "OfflinePartitionsCount", "gauge", "partitions",
                                          "partitions without a live leader"),
    _S.LastAppliedRecordLagMs: KafkaMetric(_CTL, "KafkaController", "LastAppliedRecordLagMs", "gauge", "ms",
                                          "KRaft controller: age of the newest applied metadata record"),
    _S.UnderReplicatedPartitions: KafkaMetric(_SRV, "ReplicaManager", "UnderReplicatedPartitions", "gauge",
                                             "partitions", "led partitions whose ISR is smaller than the replicas"),
    _S.UnderMinIsrPartitionCount: KafkaMetric(_SRV, "ReplicaManager", "UnderMinIsrPartitionCount", "gauge",
                                             "partitions", "led partitions whose ISR is below min.insync.replicas: "
                                             "acks=all producers fail on them"),
    _S.PreferredReplicaImbalanceCount: KafkaMetric(_CTL, "KafkaController", "PreferredReplicaImbalanceCount",
                                                  "gauge", "partitions", "partitions whose leader is not their "
                                                  "preferred replica (the active controller's count)"),
    _S.PartitionCount: KafkaMetric(_SRV, "ReplicaManager", "PartitionCount", "gauge", "partitions",
                                  "partitions on the broker"),
    _S.LeaderCount: KafkaMetric(_SRV, "ReplicaManager", "LeaderCount", "gauge", "partitions",
                               "partitions the broker leads"),
    _S.IsrShrinksPerSec: KafkaMetric(_SRV, "ReplicaManager", "IsrShrinksPerSec", "meter",
                                    "shrinks (meter Count); rates: per second", "ISR shrinks"),
    _S.IsrExpandsPerSec: KafkaMetric(_SRV, "ReplicaManager", "IsrExpandsPerSec", "meter",
                                    "expansions (meter Count); rates: per second", "ISR expansions"),
    _S.ReplicaFetcherMaxLag: KafkaMetric(_SRV, "ReplicaFetcherManager", "MaxLag", "gauge", "messages",
                                        "largest lag of the broker's follower replicas"),
    _S.LeaderElectionRateAndTimeMs: KafkaMetric(_CTL, "ControllerStats", "LeaderElectionRateAndTimeMs", "timer",
                                               "ms (timer; Count = elections)", "leader elections and their time"),
    # the active controller's (ZooKeeper mode: a broker; KRaft: a controller node; names verified on Apache Kafka
    # 4.4.0's controller: tests/fixtures/kafka/kafka-4.4.0-kraft-scrapes/controller-100.prom)
    _S.UncleanLeaderElectionsPerSec: KafkaMetric(_CTL, "ControllerStats", "UncleanLeaderElectionsPerSec", "meter",
                                                 "elections (meter Count); rates: per second",
                                                 "leaders elected from outside the ISR (committed data may be lost)"),
    _S.ElectionFromEligibleLeaderReplicasPerSec: KafkaMetric(
        _CTL, "ControllerStats", "ElectionFromEligibleLeaderReplicasPerSec", "meter",
        "elections (meter Count); rates: per second",
        "KRaft 4.1+ (KIP-966): leaders elected from the eligible leader replicas of a partition whose ISR had "
        "fallen below min.insync.replicas"),
    # LinkedIn's event-based fetcher (KAFKA-6974 fork): FetcherEventManager queue metrics
    _S.FetcherEventQueueSize: KafkaMetric(_SRV, "FetcherEventManager", "EventQueueSize", "gauge", "events",
                                         "events waiting in a fetcher's event queue (KAFKA-6974)"),
    _S.FetcherEventQueueTimeMs: KafkaMetric(_SRV, "FetcherEventManager", "EventQueueTimeMs", "histogram",
                                           "ms (histogram; Count = events)",
                                           "time a fetcher event waited in its queue (KAFKA-6974)"),
    # KRaft: the broker's metadata loader (documented name MetadataApplyLagMs)
    _S.MetadataApplyLagMs: KafkaMetric(_SRV, "broker-metadata-metrics", "last-applied-record-lag-ms", "kafka", "ms",
                                      "KRaft broker: age of the newest applied metadata record when read"),
    _S.MetadataLastAppliedOffset: KafkaMetric(_SRV, "broker-metadata-metrics", "last-applied-record-offset", "kafka",
                                             "offset", "KRaft broker: offset of the newest applied metadata record"),
    _S.MetadataLastAppliedTimestamp: KafkaMetric(_SRV, "broker-metadata-metrics", "last-applied-record-timestamp",
                                                "kafka", "epoch ms",
                                                "KRaft broker: timestamp of the newest applied metadata record"),
    _S.MetadataApplyErrorCount: KafkaMetric(_SRV, "broker-metadata-metrics", "metadata-apply-error-count", "kafka",
                                           "errors", "KRaft broker: metadata deltas it failed to apply"),
    _S.MetadataLoadErrorCount: KafkaMetric(_SRV, "broker-metadata-metrics", "metadata-load-error-count", "kafka",
                                          "errors", "KRaft broker: metadata images it failed to load"),
    # KRaft controller nodes (names verified on Apache Kafka 4.4.0: tests/fixtures/kafka/kafka-4.4.0-kraft-scrapes).
    # FencedBrokerCount counts brokers fenced by a controlled shutdown too; only the active controller moves the
    # heartbeat and broker counts.
    _S.FencedBrokerCount: KafkaMetric(_CTL, "KafkaController", "FencedBrokerCount", "gauge", "brokers",
                                      "KRaft: registered brokers that are fenced (session timeout or shutdown)"),
    _S.ActiveBrokerCount: KafkaMetric(_CTL, "KafkaController", "ActiveBrokerCount", "gauge", "brokers",
                                      "KRaft: registered brokers that are not fenced"),
    _S.TimedOutBrokerHeartbeatCount: KafkaMetric(_CTL, "KafkaController", "TimedOutBrokerHeartbeatCount", "gauge",
                                                 "heartbeats since start",
                                                 "KRaft: broker heartbeats timed out in the controller's queue"),
    # KIP-1131 (Kafka 4.1+): one gauge per registered broker, tagged `broker=N` (jmx_exporter: a `broker` label;
    # the sample's node is the controller that exported it). Names and values verified on Apache Kafka 4.4.0's
    # controller (tests/fixtures/kafka/kafka-4.4.0-kraft-scrapes/controller-100.prom): BROKER_REGISTRATION_STATES.
    _S.BrokerRegistrationState: KafkaMetric(_CTL, "KafkaController", "BrokerRegistrationState", "gauge", "state code",
                                            "KRaft 4.1+ (KIP-1131): broker N's registration on the controller: -1 "
                                            "unregistered, 10 fenced, 20 in controlled shutdown, 30 active"),
    _S.TimeSinceLastHeartbeatReceivedMs: KafkaMetric(
        _CTL, "KafkaController", "TimeSinceLastHeartbeatReceivedMs", "gauge",
        "ms (capped at broker.session.timeout.ms)",
        "KRaft 4.1+ (KIP-1131): since the active controller last heard broker N's heartbeat"),
    _S.NewActiveControllersCount: KafkaMetric(_CTL, "KafkaController", "NewActiveControllersCount", "gauge",
                                              "elections since start", "KRaft: times a new active controller rose"),
    _S.EventQueueOperationsTimedOutCount: KafkaMetric(
        _CTL, "KafkaController", "EventQueueOperationsTimedOutCount", "gauge", "operations since start",
        "KRaft: controller event queue operations that timed out before they ran"),
    _S.ControllerEventManagerAvgIdleRatio: KafkaMetric(_CTL, "ControllerEventManager", "AvgIdleRatio", "gauge",
                                                       "fraction", "KRaft: idle share of the controller's event "
                                                       "thread"),
    _S.MetadataLoaderAvgIdleRatio: KafkaMetric(_SRV, "MetadataLoader", "AvgIdleRatio", "gauge", "fraction",
                                               "KRaft controller: idle share of its metadata loader thread "
                                               "(4.4.0 brokers export none)"),
    _S.RaftCurrentEpoch: KafkaMetric(_SRV, "raft-metrics", "current-epoch", "kafka", "epoch",
                                     "KRaft: the metadata quorum's current epoch (a rise is a new leader)"),
    _S.RaftCurrentLeader: KafkaMetric(_SRV, "raft-metrics", "current-leader", "kafka", "node id",
                                      "KRaft: the metadata quorum's leader as this node sees it (-1: none)"),
    _S.RaftCommitLatencyAvg: KafkaMetric(_SRV, "raft-metrics", "commit-latency-avg", "kafka", "ms",
                                         "KRaft: average time to commit a metadata record"),
    # not an MBean: jmx_exporter's process collector (`process_start_time_seconds`, exported beside every rule set);
    # it tells a broker's incarnations apart and how young each is (metric_detectors.WINDOWED_RATE_WARMUP_S)
    _S.ProcessStartTimeSeconds: KafkaMetric("process", "", "start_time_seconds", "gauge", "s since the Unix epoch",
                                            "when the broker's JVM started (jmx_exporter's process collector)"),
    # Kafka's own record of the same (AppInfoParser: kafka.server:type=app-info,id=N start-time-ms, every version
    # this project reads); the reference broker's JSON reporter writes it
    _S.StartTimeMs: KafkaMetric(_SRV, "app-info", "start-time-ms", "kafka", "ms since the Unix epoch",
                                "when the broker started (Kafka's app-info metrics)"),
}

# KIP-1131's BrokerRegistrationState values (org.apache.kafka.controller.metrics.BrokerRegistrationState, Apache
# Kafka 4.4.0), value -> state.
BROKER_REGISTRATION_STATES: dict[int, str] = {-1: "UNREGISTERED", 10: "FENCED", 20: "CONTROLLED_SHUTDOWN",
                                              30: "ACTIVE"}
# The state of a broker the controller counts as up.
BROKER_ACTIVE = 30
# The per-broker controller gauges: the broker they are about is their `broker` tag (label), not the node that
# exported them.
PER_BROKER_SIGNALS: tuple[str, ...] = (Signal.BrokerRegistrationState.value,
                                       Signal.TimeSinceLastHeartbeatReceivedMs.value)
# The label naming the broker a per-broker gauge is about.
SUBJECT_LABEL = "broker"
# How long controller events wait (EventQueueTimeMs) is read at the histogram's median. Its percentiles come from
# an exponentially decaying reservoir of recent events, and a ZooKeeper-mode controller handles few events in a
# steady cluster: one slow event stays its 99th percentile until ~100 newer ones replace it. On Apache Kafka 3.9.1,
# the failover of a healthy Strimzi-gated roll left one event of 1,520 ms as the new controller's 99th percentile
# 59 events later (medians 5-134 ms), and a gated roll waited on such a percentile for 5 minutes; the median moves
# with the bulk of the events.
EVENT_QUEUE_ATTRIBUTE = "50thPercentile"

# A broker's start, seconds since the epoch per unit of each signal's value, the first listed preferred:
# jmx_exporter's process collector, or Kafka's own app-info start-time-ms (the reference broker's JSON reporter writes
# only that). Detection leaves out a young broker's windowed ratios; roll-safety tells a restarted broker's requests
# from its earlier incarnation's.
START_SIGNALS: dict[str, float] = {Signal.ProcessStartTimeSeconds.value: 1.0, Signal.StartTimeMs.value: 1e-3}
