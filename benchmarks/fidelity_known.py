"""What the fidelity comparison knows in advance: the differences between the reference broker and Apache Kafka
that are on purpose (each with its reason), and Kafka 2.8's own line templates the live runs cannot always show."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DIFFERS_ON_PURPOSE", "KAFKA_28_KNOWN_TEMPLATES", "Intended", "classify"]


@dataclass(frozen=True, slots=True)
class Intended:
    """A difference that is on purpose: ``kind`` (api, case, template, metric), a regex on the row's key, why."""

    kind: str
    pattern: str
    reason: str
    category: str = "design"  # "version" (2.8 vs 3.9) or "design" (a design Kafka never shipped / not implemented)

    def matches(self, kind: str, key: str) -> bool:
        return kind == self.kind and re.search(self.pattern, key) is not None


_V = "version"
# APIs the reference broker does not implement (their request-log lines exist only on Kafka).
_NOT_IMPLEMENTED = "CONTROLLED_SHUTDOWN|ALTER_PARTITION|ALLOCATE_PRODUCER_IDS|DESCRIBE_CLUSTER|OFFSET_FOR_LEADER_EPOCH"
#: The differences between the reference broker and Apache Kafka 3.9 that are on purpose, with the reason. A row's
#: key: the API name (api), the probe name (case), ``<log> <status>: <template>`` (template; status only-reference
#: or only-kafka), the metric name (metric).
DIFFERS_ON_PURPOSE: tuple[Intended, ...] = (
    # --- ApiVersions: the versions a 2.8-era client or controller needs, not Kafka 3.9's newest
    Intended("api", r"^Produce$", "Produce 3-9: v0-2 carry message sets v0/v1, which the reference log never "
             "writes (no down-conversion); v10-11 are 3.7+/3.8+ (KIP-951 leader hints, KIP-890 transactions)", _V),
    Intended("api", r"^Fetch$", "Fetch 4-12: v0-3 need message-set down-conversion; v13+ address topics by id "
             "(KIP-516, 3.1+), v15+ replica state (KIP-903), v17 KIP-951", _V),
    Intended("api", r"^ListOffsets$", "ListOffsets 1-7: v0 has the old offsets arrays; v8-9 are 3.x (KIP-405 "
             "tiered storage, KIP-1005)", _V),
    Intended("api", r"^(OffsetCommit|OffsetFetch)$", "v9 is the 3.7+ consumer group protocol (KIP-848)", _V),
    Intended("api", r"^FindCoordinator$", "v5-6 are 3.8+ (KIP-890 transactions v2, KIP-932 share groups)", _V),
    Intended("api", r"^(JoinGroup|LeaveGroup|ListGroups|InitProducerId)$", "the newest version is 3.x "
             "(KIP-848 / KIP-890 / KIP-1043 fields the reference does not implement)", _V),
    Intended("api", r"^(Metadata|LeaderAndIsr|StopReplica|UpdateMetadata|DescribeAcls|CreateAcls|DeleteAcls|"
             r"DescribeLogDirs)$", "the reference advertises Kafka 2.8's newest version (inter.broker.protocol."
             "version 2.8, the release its logs imitate, so clients infer the Kafka the logs claim); 3.x added "
             "Metadata v12 (topics requested by id), LeaderAndIsr v6-7 / UpdateMetadata v8 / StopReplica v4 (KRaft "
             "migration), the ACL APIs' v3 and DescribeLogDirs v3-4 (a top-level error code, total and usable "
             "bytes)", _V),
    Intended("api", r"^ApiVersions$", "ApiVersions v4 (3.9, KIP-1064) only widens what a client may send; the "
             "reference answers up to v3 as Kafka 2.8 does", _V),
    # --- templates
    Intended("template", r"^controller\.log only-kafka: ", "controller.log: the reference controller (its own "
             "process, planewatch's stand-in for ZooKeeper plus the controller) logs elections, broker changes, new "
             "topics and request sends, not every ZooKeeper, feature, deletion or reassignment step of "
             "KafkaController"),
    Intended("template", r"\"maxBrokerEpoch\"", "the reference controller's control requests carry max_broker_epoch "
             "(tagged field 100: the cacheable UpdateMetadata design from the LinkedIn fork, which Apache Kafka "
             "never shipped)"),
    Intended("template", r"\"abortedTransactions\":null", "Kafka 2.8 answers AbortedTransactions null for a "
             "read-uncommitted fetch and for a partition in error, as the reference does; 3.x answers [] for a "
             "partition in error", _V),
    Intended("template", r"\"requestApiKeyName\":\"(" + _NOT_IMPLEMENTED + r")\"", "an API the reference does not "
             "implement: its brokers register with the controller over HTTP/JSON (no ControlledShutdown, "
             "AlterPartition, AllocateProducerIds), replicas truncate by the high watermark (no "
             "OffsetForLeaderEpoch), no DescribeCluster"),
    # --- transactions: out of scope
    Intended("case", r"^(FindCoordinator v3 transaction coordinator|InitProducerId v4 with a transactional id)$",
             "transactions are out of scope: no transaction coordinator, and a transactional id is refused at once "
             "with TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53, fatal in every client) instead of Kafka's "
             "COORDINATOR_NOT_AVAILABLE while its coordinator loads (or a producer id once it has), which a client "
             "without a coordinator would retry until max.block.ms (60 s)"),
    Intended("template", r"__transaction_state|\"requestApiKeyName\":\"(FIND_COORDINATOR|INIT_PRODUCER_ID)\".*"
             r"\"(keyType\":1|transactionalId\":\"<s>)", "transactions are out of scope: Kafka creates and leads "
             "__transaction_state for the transactional lookups; the reference refuses them (53)"),
    Intended("template", r"Sending UpdateMetadata request to brokers (Hash)?Set\(\) for ", "on a broker start-up "
             "the reference controller sends one UpdateMetadata with every partition to all live brokers (one "
             "serialized request per change); Kafka sends one without partitions to the brokers already there (logged "
             "with an empty set when there are none) and one with every partition to the new broker"),
    # --- metrics
    Intended("metric", r"^(jvm|jmx|process)_", "the JVM's and the JMX exporter agent's own metrics (the reference is a "
             "Python process rendering its own endpoint)"),
    Intended("metric", r"^kafka_network_socketserver_memorypool(available|used)$", "no queued.max.request.bytes "
             "memory pool: the reference bounds the request queue by count (queued.max.requests) only"),
    Intended("metric", r"^kafka_network_requestmetrics_(messageconversionstimems|temporarymemorybytes)(_count)?$",
             "no message-format conversion in the reference (Produce 3+ / Fetch 4+ only), so no conversion time or "
             "temporary memory"),
)

#: Templates Kafka 2.8.2 writes in situations a one-broker run does not reach (its controller dies with its only
#: broker), seen in ``python -m benchmarks.fidelity --brokers 2`` (a broker killed while another one is the
#: controller); the ERROR line is ``logFailedStateChange`` (PartitionStateMachine.scala 2.8) for an offline partition
#: with no live replica, the bounced-broker line ``processBrokerChange`` (KafkaController.scala 2.2+) for a broker
#: that registers again before its session expired. A reference template found here is a Kafka 2.8 format.
KAFKA_28_KNOWN_TEMPLATES: frozenset[str] = frozenset({
    "INFO [Controller id=<n>] Broker failure callback for <n> (kafka.controller.KafkaController)",
    "INFO [Controller id=<n>] Newly added brokers: <n>, deleted brokers: , bounced brokers: , all live brokers: <n> "
    "(kafka.controller.KafkaController)",
    "INFO [Controller id=<n>] Newly added brokers: , deleted brokers: <n>, bounced brokers: , all live brokers: <n> "
    "(kafka.controller.KafkaController)",
    "INFO [Controller id=<n>] Newly added brokers: , deleted brokers: , bounced brokers: <n>, all live brokers: <n> "
    "(kafka.controller.KafkaController)",
    "TRACE [Controller id=<n> epoch=<n>] Changed partition <tp> state from OnlinePartition to OfflinePartition "
    "(state.change.logger)",
    "INFO [Controller id=<n> epoch=<n>] Changed partition <tp> from OfflinePartition to OnlinePartition with state "
    "LeaderAndIsr(leader=<n>, leaderEpoch=<n>, isr=List(<n>), zkVersion=<n>) (state.change.logger)",
    "INFO [Controller id=<n> epoch=<n>] Partition <tp> state changed to (Leader:<n>,ISR:<n>,LeaderEpoch:<n>,"
    "ZkVersion:<n>,ControllerEpoch:<n>) after removing replica <n> from the ISR as part of transition to "
    "OfflineReplica (state.change.logger)",
    "TRACE [Controller id=<n> epoch=<n>] Changed state of replica <n> for partition <tp> from OfflineReplica to "
    "OnlineReplica (state.change.logger)",
    "TRACE [Controller id=<n> epoch=<n>] Changed state of replica <n> for partition <tp> from OnlineReplica to "
    "OfflineReplica (state.change.logger)",
    "TRACE [Controller id=<n> epoch=<n>] Changed state of replica <n> for partition <tp> from "
    "ReplicaDeletionIneligible to OfflineReplica (state.change.logger)",
    "ERROR [Controller id=<n> epoch=<n>] Controller <n> epoch <n> failed to change state for partition <tp> from "
    "OfflinePartition to OnlinePartition (state.change.logger)",
})


def classify(kind: str, key: str, intended: Sequence[Intended] = DIFFERS_ON_PURPOSE) -> Intended | None:
    """The first :class:`Intended` entry explaining a difference of ``kind`` at ``key``, else None."""
    for entry in intended:
        if entry.matches(kind, key):
            return entry
    return None


