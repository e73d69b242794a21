"""Value types of a broker's replica and metadata state, and the hooks the data plane plugs into.

The control requests arrive here already normalised (:class:`LeaderAndIsrRequestModel` and friends), so the state
logic does not depend on the wire layout of a particular version. ``to_kafka_string`` methods reproduce the
``toString`` of Kafka 2.4+ generated message classes (``LeaderAndIsrPartitionState(topicName='t', ...)``), which the
TRACE state-change lines print.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from broker.topic_partition import TopicPartition

__all__ = [
    "EPOCH_DURING_DELETE",
    "LEADER_DURING_DELETE",
    "NO_EPOCH",
    "UNKNOWN_BROKER_EPOCH",
    "BrokerEndPoint",
    "CachedPartition",
    "Endpoint",
    "FetcherManager",
    "InitialFetchState",
    "LeaderAndIsrPartition",
    "LeaderAndIsrRequestModel",
    "LiveBroker",
    "LocalLog",
    "NullFetcherManager",
    "NullLocalLog",
    "PartitionState",
    "Role",
    "StopReplicaPartition",
    "StopReplicaRequestModel",
    "TopicPartition",
    "UpdateMetadataRequestModel",
    "kafka_list",
]

UNKNOWN_BROKER_EPOCH = -1  # AbstractControlRequest.UNKNOWN_BROKER_EPOCH: controller without KIP-380
NO_EPOCH = -1  # LeaderAndIsr.NoEpoch: StopReplica < v3 carries no leader epoch -> no epoch validation
EPOCH_DURING_DELETE = -2  # LeaderAndIsr.EpochDuringDelete: StopReplica for a topic being deleted
LEADER_DURING_DELETE = -2  # LeaderAndIsr.LeaderDuringDelete: UpdateMetadata removes the partition from the cache
INITIAL_LEADER_EPOCH = -1  # a partition this broker has never hosted (LeaderAndIsr.initialLeaderEpoch - 1)


def kafka_list(values: Sequence[int]) -> str:
    """``MessageUtil.deepToString`` of an int array: ``[1, 2]``."""
    return "[" + ", ".join(str(v) for v in values) + "]"


def _bool(value: bool) -> str:
    return "true" if value else "false"


class Role(Enum):
    """The local replica's role for a partition."""

    LEADER = "leader"
    FOLLOWER = "follower"


@dataclass(frozen=True, slots=True)
class PartitionState:
    """What this broker holds for one partition it hosts (Kafka's ``Partition``)."""

    tp: TopicPartition
    role: Role
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int  # zkVersion in 2.x
    controller_epoch: int  # epoch of the controller that made the last leadership decision
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    topic_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaderAndIsrPartition:
    """One ``LeaderAndIsrPartitionState`` of a request."""

    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False

    @property
    def tp(self) -> TopicPartition:
        """The partition."""
        return TopicPartition(self.topic, self.partition)

    def to_kafka_string(self) -> str:
        """2.4-2.8 generated ``LeaderAndIsrPartitionState.toString``."""
        return (f"LeaderAndIsrPartitionState(topicName='{self.topic}', partitionIndex={self.partition}, "
                f"controllerEpoch={self.controller_epoch}, leader={self.leader}, leaderEpoch={self.leader_epoch}, "
                f"isr={kafka_list(self.isr)}, zkVersion={self.partition_epoch}, replicas={kafka_list(self.replicas)}, "
                f"addingReplicas={kafka_list(self.adding_replicas)}, "
                f"removingReplicas={kafka_list(self.removing_replicas)}, isNew={_bool(self.is_new)})")


@dataclass(frozen=True, slots=True)
class LeaderAndIsrRequestModel:
    """A LeaderAndIsr request, independent of its wire version."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[LeaderAndIsrPartition, ...]
    topic_ids: Mapping[str, str] = field(default_factory=dict)  # v5+: topic name -> topic id (uuid text)
    max_broker_epoch: int | None = None  # LinkedIn-fork tagged field, when present


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One listener endpoint of a live broker (``UpdateMetadataEndpoint``)."""

    listener: str
    host: str
    port: int
    security_protocol: int  # SecurityProtocol id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL


@dataclass(frozen=True, slots=True)
class LiveBroker:
    """A broker the controller says is alive (``UpdateMetadataBroker``)."""

    id: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None

    def endpoint(self, listener: str) -> Endpoint | None:
        """This broker's endpoint on ``listener``, if it has one."""
        for ep in self.endpoints:
            if ep.listener == listener:
                return ep
        return None


@dataclass(frozen=True, slots=True)
class CachedPartition:
    """One ``UpdateMetadataPartitionState`` as the metadata cache keeps it."""

    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()

    @property
    def tp(self) -> TopicPartition:
        """The partition."""
        return TopicPartition(self.topic, self.partition)

    def to_kafka_string(self) -> str:
        """2.4-2.8 generated ``UpdateMetadataPartitionState.toString``."""
        return (f"UpdateMetadataPartitionState(topicName='{self.topic}', partitionIndex={self.partition}, "
                f"controllerEpoch={self.controller_epoch}, leader={self.leader}, leaderEpoch={self.leader_epoch}, "
                f"isr={kafka_list(self.isr)}, zkVersion={self.zk_version}, replicas={kafka_list(self.replicas)}, "
                f"offlineReplicas={kafka_list(self.offline_replicas)})")


@dataclass(frozen=True, slots=True)
class UpdateMetadataRequestModel:
    """An UpdateMetadata request, independent of its wire version."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[CachedPartition, ...]
    live_brokers: tuple[LiveBroker, ...]
    topic_ids: Mapping[str, str] = field(default_factory=dict)
    max_broker_epoch: int | None = None


@dataclass(frozen=True, slots=True)
class StopReplicaPartition:
    """One ``StopReplicaPartitionState`` (versions < 3 are normalised: leader epoch -1, delete flag per request)."""

    topic: str
    partition: int
    leader_epoch: int = NO_EPOCH
    delete: bool = False

    @property
    def tp(self) -> TopicPartition:
        """The partition."""
        return TopicPartition(self.topic, self.partition)

    def to_kafka_string(self) -> str:
        """2.6-2.8 generated ``StopReplicaPartitionState.toString``."""
        return (f"StopReplicaPartitionState(partitionIndex={self.partition}, leaderEpoch={self.leader_epoch}, "
                f"deletePartition={_bool(self.delete)})")


@dataclass(frozen=True, slots=True)
class StopReplicaRequestModel:
    """A StopReplica request, independent of its wire version."""

    controller_id: int
    controller_epoch: int
    broker_epoch: int
    partitions: tuple[StopReplicaPartition, ...]
    max_broker_epoch: int | None = None


# ---------------------------------------------------------------------------------------------------------------------
# Hooks for the data plane (logs, replica fetchers) that later issues plug in
# ---------------------------------------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class BrokerEndPoint:
    """Kafka's ``BrokerEndPoint``: the leader a follower fetches from."""

    id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"BrokerEndPoint(id={self.id}, host={self.host}:{self.port})"


@dataclass(frozen=True, slots=True)
class InitialFetchState:
    """Where a new follower starts fetching (Kafka's ``InitialFetchState``)."""

    leader: BrokerEndPoint
    leader_epoch: int
    init_offset: int


class FetcherManager(Protocol):
    """The replica-fetcher manager as ReplicaManager drives it (called under ``replicaStateChangeLock``)."""

    def remove_fetcher_for_partitions(self, partitions: Collection[TopicPartition]) -> None:
        """Stop fetching these partitions (become-leader, become-follower, StopReplica)."""
        ...

    def add_fetcher_for_partitions(self, fetches: Mapping[TopicPartition, InitialFetchState]) -> None:
        """Start fetching these partitions from their leaders (become-follower)."""
        ...

    def shutdown_idle_fetcher_threads(self) -> None:
        """Stop fetcher threads that have no partitions left."""
        ...


class NullFetcherManager:
    """No data plane yet: remembers which partitions would be fetched, and from whom."""

    def __init__(self) -> None:
        self.fetching: dict[TopicPartition, InitialFetchState] = {}

    def remove_fetcher_for_partitions(self, partitions: Collection[TopicPartition]) -> None:
        """Forget these partitions."""
        for tp in partitions:
            self.fetching.pop(tp, None)

    def add_fetcher_for_partitions(self, fetches: Mapping[TopicPartition, InitialFetchState]) -> None:
        """Remember these partitions."""
        self.fetching.update(fetches)

    def shutdown_idle_fetcher_threads(self) -> None:
        """Nothing to stop."""


class LocalLog(Protocol):
    """The local logs as the partition state machine needs them (offsets for the Leader/Follower lines)."""

    def log_end_offset(self, tp: TopicPartition) -> int:
        """The log end offset of a hosted partition (0 for a new one). Raises ``OSError`` or
        ``broker.log.LogError`` when its log cannot be created or read (the partition is then offline)."""
        ...

    def high_watermark(self, tp: TopicPartition) -> int:
        """The high watermark of a hosted partition (0 for a new one)."""
        ...

    def delete_partitions(self, partitions: Collection[TopicPartition]) -> None:
        """Delete the logs of these partitions (StopReplica with delete)."""
        ...


class NullLocalLog:
    """No logs yet: every offset is 0; deletions are remembered."""

    def __init__(self) -> None:
        self.deleted: list[TopicPartition] = []

    def log_end_offset(self, tp: TopicPartition) -> int:
        """0."""
        del tp
        return 0

    def high_watermark(self, tp: TopicPartition) -> int:
        """0."""
        del tp
        return 0

    def delete_partitions(self, partitions: Collection[TopicPartition]) -> None:
        """Remember the deletions."""
        self.deleted.extend(partitions)
